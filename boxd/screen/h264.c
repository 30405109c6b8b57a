/* h264.c: libx264's settings for screen video (h264.h).
 *
 * ultrafast with zerolatency: no lookahead and no B-frames, so a frame is
 * coded as it comes (the first answers record_start and live_start at once,
 * a live fragment leaves as soon as its frame is grabbed). One thread: a
 * second core does not lower the total CPU, and commands come first. CRF
 * 23, x264's default quality. */
#include "h264.h"

#include <stdio.h>
#include <stdlib.h>

#include <libavutil/frame.h>

#define H264_CRF "23"

AVCodecContext *h264_open(const struct h264_settings *settings, char *error, size_t error_size)
{
	const AVCodec *codec = avcodec_find_encoder_by_name("libx264");
	if (!codec) {
		snprintf(error, error_size,
			 "this FFmpeg has no libx264 encoder; install libavcodec59 with x264");
		return NULL;
	}
	AVCodecContext *context = avcodec_alloc_context3(codec);
	context->width = settings->width;
	context->height = settings->height;
	context->pix_fmt = AV_PIX_FMT_YUV420P;
	context->time_base = settings->time_base;
	context->framerate = (AVRational){settings->fps, 1};
	context->gop_size = settings->fps * settings->keyframe_seconds;
	context->max_b_frames = 0;
	context->thread_count = 1;
	context->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
	AVDictionary *options = NULL;
	av_dict_set(&options, "preset", "ultrafast", 0);
	av_dict_set(&options, "tune", "zerolatency", 0);
	av_dict_set(&options, "crf", H264_CRF, 0);
	if (settings->forced_idr)
		av_dict_set(&options, "forced-idr", "1", 0);
	int status = avcodec_open2(context, codec, &options);
	av_dict_free(&options);
	if (status < 0) {
		char reason[AV_ERROR_MAX_STRING_SIZE];
		av_strerror(status, reason, sizeof reason);
		snprintf(error, error_size, "cannot open the H.264 encoder: %s", reason);
		avcodec_free_context(&context);
		return NULL;
	}
	return context;
}

AVFrame *h264_frame_new(const AVCodecContext *codec)
{
	AVFrame *frame = av_frame_alloc();
	if (!frame)
		abort();
	frame->format = AV_PIX_FMT_YUV420P;
	frame->width = codec->width;
	frame->height = codec->height;
	if (av_frame_get_buffer(frame, 0) < 0)
		abort();
	return frame;
}
