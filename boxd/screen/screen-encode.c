/* screen-encode.c: PNG (screen-png.c) and JPEG (libavcodec), scaled by
 * libswscale when asked.
 *
 * PNG settings were chosen by measurement on a 1280x800 desktop (a terminal
 * with text, a drawing, flat areas); the table is in docs/performance.md. */
#include "screen-encode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavcodec/avcodec.h>
#include <libavutil/frame.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>

#include "av-lazy.h"
#include "screen-png.h"
#include "text.h"
#include "xalloc.h"

struct screen_encoder {
	struct SwsContext *scaler;
	/* JPEG: libavcodec's MJPEG and its frame. */
	AVCodecContext *codec;
	int quality;
	AVFrame *frame;
	AVPacket *packet;
	/* PNG: our writer, and an RGB frame for a scaled picture. */
	struct screen_png *png;
	AVFrame *scaled;
};

struct screen_encoder *screen_encoder_new(void)
{
	struct screen_encoder *encoder = xcalloc(1, sizeof *encoder);
	encoder->png = screen_png_new();
	return encoder;
}

static void screen_encoder_close_codec(struct screen_encoder *encoder)
{
	if (encoder->codec) /* else libavcodec may not even be loaded */
		avcodec_free_context(&encoder->codec);
	av_frame_free(&encoder->frame);
}

void screen_encoder_free(struct screen_encoder *encoder)
{
	if (!encoder)
		return;
	screen_encoder_close_codec(encoder);
	screen_png_free(encoder->png);
	av_frame_free(&encoder->scaled);
	sws_freeContext(encoder->scaler);
	if (encoder->packet)
		av_packet_free(&encoder->packet);
	free(encoder);
}

/* JPEG quality 1..100 onto the MJPEG quantiser scale 31..2. */
static int screen_jpeg_qscale(int quality)
{
	return 2 + ((100 - quality) * 29 + 49) / 99;
}

static bool screen_encoder_open_jpeg(struct screen_encoder *encoder, int quality, int width,
				     int height, char *error, size_t error_size)
{
	if (encoder->codec && encoder->quality == quality && encoder->codec->width == width &&
	    encoder->codec->height == height)
		return true;
	screen_encoder_close_codec(encoder);
	/* libavcodec is loaded by the first JPEG (av-lazy.h). */
	if (!av_lazy_load(error, error_size))
		return false;
	if (!encoder->packet && !(encoder->packet = av_packet_alloc()))
		abort();
	const AVCodec *codec = avcodec_find_encoder(AV_CODEC_ID_MJPEG);
	if (!codec)
		return text_fail(error, error_size, "this FFmpeg has no JPEG encoder");
	AVCodecContext *context = avcodec_alloc_context3(codec);
	context->width = width;
	context->height = height;
	context->time_base = (AVRational){1, 25};
	context->pix_fmt = AV_PIX_FMT_YUVJ420P;
	context->color_range = AVCOL_RANGE_JPEG;
	context->flags |= AV_CODEC_FLAG_QSCALE;
	context->global_quality = FF_QP2LAMBDA * screen_jpeg_qscale(quality);
	int status = avcodec_open2(context, codec, NULL);
	if (status < 0) {
		char reason[AV_ERROR_MAX_STRING_SIZE];
		av_strerror(status, reason, sizeof reason);
		snprintf(error, error_size, "cannot open the image encoder: %s", reason);
		avcodec_free_context(&context);
		return false;
	}
	AVFrame *frame = av_frame_alloc();
	frame->format = context->pix_fmt;
	frame->width = width;
	frame->height = height;
	if (!frame || av_frame_get_buffer(frame, 0) < 0)
		abort();
	encoder->codec = context;
	encoder->frame = frame;
	encoder->quality = quality;
	return true;
}

/* Scales `image` into `frame` (its size and pixel format say what to). */
static bool screen_scale(struct screen_encoder *encoder, const struct screen_image *image,
			 AVFrame *frame, char *error, size_t error_size)
{
	if (av_frame_make_writable(frame) < 0)
		abort();
	enum AVPixelFormat source_format =
		image->layout == SCREEN_LAYOUT_BGR0 ? AV_PIX_FMT_BGR0 : AV_PIX_FMT_RGB0;
	/* Area averaging when shrinking keeps text readable; bilinear otherwise. */
	int flags = (frame->width < image->width) ? SWS_AREA : SWS_BILINEAR;
	encoder->scaler = sws_getCachedContext(encoder->scaler, image->width, image->height,
					       source_format, frame->width, frame->height,
					       frame->format, flags, NULL, NULL, NULL);
	if (!encoder->scaler)
		return text_fail(error, error_size, "cannot scale %dx%d to %dx%d", image->width,
				 image->height, frame->width, frame->height);
	const uint8_t *source[4] = {image->pixels};
	int source_stride[4] = {image->stride};
	sws_scale(encoder->scaler, source, source_stride, 0, image->height, frame->data,
		  frame->linesize);
	return true;
}

/* PNG: the grab itself when not scaled (no copy, no conversion pass), else
 * the picture scaled to RGB first. */
static bool screen_encode_png(struct screen_encoder *encoder, const struct screen_image *image,
			      int out_width, int out_height, uint8_t **data, size_t *length,
			      char *error, size_t error_size)
{
	if (out_width == image->width && out_height == image->height) {
		av_frame_free(&encoder->scaled);
		return screen_png_encode(encoder->png, image->pixels, image->width, image->height,
					 (size_t)image->stride,
					 image->layout == SCREEN_LAYOUT_BGR0 ? SCREEN_PNG_BGR0
									     : SCREEN_PNG_RGB0,
					 data, length, error, error_size);
	}
	AVFrame *frame = encoder->scaled;
	if (!frame || frame->width != out_width || frame->height != out_height) {
		av_frame_free(&encoder->scaled);
		frame = encoder->scaled = av_frame_alloc();
		if (!frame)
			abort();
		frame->format = AV_PIX_FMT_RGB24;
		frame->width = out_width;
		frame->height = out_height;
		if (av_frame_get_buffer(frame, 0) < 0)
			abort();
	}
	if (!screen_scale(encoder, image, frame, error, error_size))
		return false;
	return screen_png_encode(encoder->png, frame->data[0], out_width, out_height,
				 (size_t)frame->linesize[0], SCREEN_PNG_RGB24, data, length, error,
				 error_size);
}

bool screen_encode(struct screen_encoder *encoder, const struct screen_image *image,
		   enum shot_format format, int quality, int out_width, int out_height,
		   uint8_t **data, size_t *length, char *error, size_t error_size)
{
	if (format == SHOT_FORMAT_PNG)
		return screen_encode_png(encoder, image, out_width, out_height, data, length, error,
					 error_size);
	if (!screen_encoder_open_jpeg(encoder, quality, out_width, out_height, error, error_size))
		return false;
	AVFrame *frame = encoder->frame;
	if (!screen_scale(encoder, image, frame, error, error_size))
		return false;
	frame->pts++;
	/* With a fixed quantiser, libavcodec's MJPEG takes it from the frame. */
	frame->quality = encoder->codec->global_quality;
	int status = avcodec_send_frame(encoder->codec, frame);
	if (status >= 0)
		status = avcodec_receive_packet(encoder->codec, encoder->packet);
	if (status < 0) {
		char reason[AV_ERROR_MAX_STRING_SIZE];
		av_strerror(status, reason, sizeof reason);
		snprintf(error, error_size, "the image encoder failed: %s", reason);
		/* A codec in an unknown state is not reused. */
		screen_encoder_close_codec(encoder);
		return false;
	}
	*length = (size_t)encoder->packet->size;
	*data = xmalloc(*length ? *length : 1);
	memcpy(*data, encoder->packet->data, *length);
	av_packet_unref(encoder->packet);
	return true;
}
