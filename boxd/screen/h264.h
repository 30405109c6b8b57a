/* h264.h: the worker's one H.264 encoder setup (libx264 through libavcodec),
 * for the recording (record.c) and the live screen (live.c), which differ
 * only in their clock, their keyframe spacing and whether keyframes are
 * asked for. Call after av_lazy_load. */
#ifndef BOXD_H264_H
#define BOXD_H264_H

#include <stdbool.h>
#include <stddef.h>

#include <libavcodec/avcodec.h>

struct h264_settings {
	int width, height;    /* even */
	int fps;              /* the most frames a second */
	AVRational time_base; /* of the frames' pts: 1/fps (slots) or 1/1000 (ms) */
	int keyframe_seconds; /* a keyframe at least every fps * this coded frames */
	/* Frames sent as AV_PICTURE_TYPE_I become IDR frames, where a decoder
	 * can start (a live viewer joining). */
	bool forced_idr;
};

/* Opens the encoder, SPS and PPS in its extradata (what MP4 keeps in
 * avcC). NULL with a sentence in `error`. */
AVCodecContext *h264_open(const struct h264_settings *settings, char *error, size_t error_size);

/* A yuv420p frame of the encoder's size, its planes allocated. */
AVFrame *h264_frame_new(const AVCodecContext *codec);

#endif
