/* av-lazy.c: the libavcodec and libavformat functions the worker uses,
 * forwarded to the libraries once av_lazy_load has opened them (av-lazy.h).
 * The prototypes are FFmpeg's own (from its headers), so the compiler
 * checks that each definition here matches. */
#include "av-lazy.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>

#include "log.h"

#define AV_LAZY_TEXT(x) #x
#define AV_LAZY_NUMBER(x) AV_LAZY_TEXT(x)
#define AV_LAZY_AVCODEC "libavcodec.so." AV_LAZY_NUMBER(LIBAVCODEC_VERSION_MAJOR)
#define AV_LAZY_AVFORMAT "libavformat.so." AV_LAZY_NUMBER(LIBAVFORMAT_VERSION_MAJOR)

/* X(library, return type, name, (parameters), (arguments)) */
#define AV_LAZY_FUNCTIONS(X, V)                                                                   \
	X(codec, const AVCodec *, avcodec_find_encoder, (enum AVCodecID id), (id))                \
	X(codec, const AVCodec *, avcodec_find_encoder_by_name, (const char *name), (name))       \
	X(codec, AVCodecContext *, avcodec_alloc_context3, (const AVCodec *codec), (codec))       \
	V(codec, avcodec_free_context, (AVCodecContext * *context), (context))                    \
	X(codec, int, avcodec_open2,                                                              \
	  (AVCodecContext * context, const AVCodec *codec, AVDictionary **options),               \
	  (context, codec, options))                                                              \
	X(codec, int, avcodec_parameters_from_context,                                            \
	  (AVCodecParameters * parameters, const AVCodecContext *context), (parameters, context)) \
	X(codec, int, avcodec_receive_packet, (AVCodecContext * context, AVPacket * packet),      \
	  (context, packet))                                                                      \
	X(codec, int, avcodec_send_frame, (AVCodecContext * context, const AVFrame *frame),       \
	  (context, frame))                                                                       \
	X(codec, AVPacket *, av_packet_alloc, (void), ())                                         \
	V(codec, av_packet_free, (AVPacket * *packet), (packet))                                  \
	V(codec, av_packet_rescale_ts, (AVPacket * packet, AVRational from, AVRational to),       \
	  (packet, from, to))                                                                     \
	V(codec, av_packet_unref, (AVPacket * packet), (packet))                                  \
	X(format, int, av_write_frame, (AVFormatContext * context, AVPacket * packet),            \
	  (context, packet))                                                                      \
	X(format, int, av_write_trailer, (AVFormatContext * context), (context))                  \
	X(format, int, avformat_alloc_output_context2,                                            \
	  (AVFormatContext * *context, const AVOutputFormat *format, const char *format_name,     \
	   const char *path),                                                                     \
	  (context, format, format_name, path))                                                   \
	V(format, avformat_free_context, (AVFormatContext * context), (context))                  \
	X(format, AVStream *, avformat_new_stream,                                                \
	  (AVFormatContext * context, const AVCodec *codec), (context, codec))                    \
	X(format, int, avformat_write_header,                                                     \
	  (AVFormatContext * context, AVDictionary * *options), (context, options))               \
	X(format, AVIOContext *, avio_alloc_context,                                              \
	  (unsigned char *buffer, int size, int write_flag, void *opaque,                         \
	   int (*read)(void *opaque, uint8_t *buf, int size),                                     \
	   int (*write)(void *opaque, uint8_t *buf, int size),                                    \
	   int64_t (*seek)(void *opaque, int64_t offset, int whence)),                            \
	  (buffer, size, write_flag, opaque, read, write, seek))                                  \
	V(format, avio_context_free, (AVIOContext * *io), (io))                                   \
	X(format, int, avio_closep, (AVIOContext * *io), (io))                                    \
	V(format, avio_flush, (AVIOContext * io), (io))                                           \
	X(format, int, avio_open, (AVIOContext * *io, const char *url, int flags),                \
	  (io, url, flags))                                                                       \
	X(format, int64_t, avio_seek, (AVIOContext * io, int64_t offset, int whence),             \
	  (io, offset, whence))

/* The real functions, filled by av_lazy_load. */
#define AV_LAZY_POINTER(library, type, name, parameters, arguments) \
	static type(*real_##name) parameters;
#define AV_LAZY_VOID_POINTER(library, name, parameters, arguments) \
	static void(*real_##name) parameters;
AV_LAZY_FUNCTIONS(AV_LAZY_POINTER, AV_LAZY_VOID_POINTER)

static bool loaded;

/* A forwarded function called before av_lazy_load: a bug in the worker. */
static void av_lazy_unloaded(const char *name)
{
	log_msg(LOG_LEVEL_ERROR, "%s called before FFmpeg was loaded", name);
	abort();
}

#define AV_LAZY_FORWARD(library, type, name, parameters, arguments) \
	type name parameters                                        \
	{                                                           \
		if (!real_##name)                                   \
			av_lazy_unloaded(#name);                    \
		return real_##name arguments;                       \
	}
#define AV_LAZY_VOID_FORWARD(library, name, parameters, arguments) \
	void name parameters                                       \
	{                                                          \
		if (!real_##name)                                  \
			av_lazy_unloaded(#name);                   \
		real_##name arguments;                             \
	}
AV_LAZY_FUNCTIONS(AV_LAZY_FORWARD, AV_LAZY_VOID_FORWARD)

#define AV_LAZY_RESOLVE(library, type, name, parameters, arguments)                    \
	if (ok && !(*(void **)&real_##name = dlsym(library, #name))) {                 \
		snprintf(error, error_size, "FFmpeg has no %s: %s", #name, dlerror()); \
		ok = false;                                                            \
	}
#define AV_LAZY_VOID_RESOLVE(library, name, parameters, arguments) \
	AV_LAZY_RESOLVE(library, void, name, parameters, arguments)

bool av_lazy_load(char *error, size_t error_size)
{
	if (loaded)
		return true;
	/* Kept open for the worker's life: nothing is ever unloaded. */
	void *codec = dlopen(AV_LAZY_AVCODEC, RTLD_NOW | RTLD_LOCAL);
	void *format = codec ? dlopen(AV_LAZY_AVFORMAT, RTLD_NOW | RTLD_LOCAL) : NULL;
	if (!codec || !format) {
		snprintf(error, error_size, "cannot load %s: %s",
			 codec ? AV_LAZY_AVFORMAT : AV_LAZY_AVCODEC, dlerror());
		return false;
	}
	bool ok = true;
	AV_LAZY_FUNCTIONS(AV_LAZY_RESOLVE, AV_LAZY_VOID_RESOLVE)
	loaded = ok;
	return ok;
}
