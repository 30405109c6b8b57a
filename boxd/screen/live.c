/* live.c: the live screen's capture thread: damage, grab, convert (the
 * changed bands only, unscaled), encode
 * (libx264), mux (fragmented MP4 into memory), hand out.
 *
 * Timestamps. The stream's clock is the wall clock: a frame grabbed t ms
 * after the capture started has pts t (boxd tells viewers the start in
 * X-Started-At), so a player and the tests can tell when a picture was on
 * the screen. Every fragment is sent as soon as its frame is coded, before
 * the next frame exists, so a frame's duration is written as one frame
 * interval. When the next frame comes later than that (the screen was
 * still), the gap is filled first: the unchanged picture is coded again (a
 * P-frame of skipped blocks, some dozens of bytes) lasting until the new
 * frame. So the timeline has no holes (Media Source Extensions stall at a
 * hole) and the new frame keeps its true time. A frame that comes less
 * than half an interval late starts where the previous one ends instead
 * (the throttle aims at exactly that moment, so this is scheduling jitter,
 * a millisecond or two). */
#include "live.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>

#include "clock.h"
#include "h264.h"
#include "log.h"
#include "screen-yuv.h"
#include "text.h"
#include "xalloc.h"

#define LIVE_IO_BUFFER (64 * 1024)
/* While the main thread works, how often the damage generation is read. */
#define LIVE_BUSY_CHECK_MS 50

struct live {
	struct screen *screen;
	struct screen_grabber *grabber;
	int id, fps;
	double scale;
	int width, height; /* of the stream */
	int source_width, source_height;
	enum screen_layout layout;
	int64_t interval_us;
	int interval_ms;
	AVCodecContext *codec;
	AVFrame *frame; /* the picture last coded, in YUV */
	AVFrame *spare; /* the next one, converted before a gap is filled */
	AVPacket *packet;
	struct SwsContext *scaler;
	/* Unscaled, only the bands that changed are converted, into the frame
	 * in turn (`spare` and `frame` take turns: the tracker's two). */
	struct yuv_tracker *changes;
	AVFormatContext *output;
	/* What the muxer wrote since the last hand-out. */
	uint8_t *bytes;
	size_t length, capacity;
	live_emit_fn emit;
	void *emit_arg;
	int64_t start_us;     /* monotonic time of pts 0 */
	int64_t started_at;   /* the same moment, ms since the epoch */
	int64_t previous_end; /* pts (ms) where the last coded frame ends */
	int64_t last_key_pts;
	uint64_t generation; /* damage generation of the last grab */
	int64_t frames, fillers, sent_bytes;
	int wake_fd; /* eventfd: a keyframe wanted, main idle, stop */
	atomic_bool stop, want_key, main_busy, ended;
	pthread_t thread;
	bool thread_started;
};

static bool live_fail(char *error, size_t error_size, const char *what, int status)
{
	char reason[AV_ERROR_MAX_STRING_SIZE];
	av_strerror(status, reason, sizeof reason);
	return text_fail(error, error_size, "%s: %s", what, reason);
}

static int64_t live_now_ms(const struct live *live)
{
	return (clock_monotonic_us() - live->start_us) / 1000;
}

static void live_wake(struct live *live)
{
	uint64_t one = 1;
	ssize_t unused = write(live->wake_fd, &one, sizeof one);
	(void)unused;
}

/* ---- the muxer's output, collected in memory ---- */

/* FFmpeg 7 made the buffer const. */
#if LIBAVFORMAT_VERSION_MAJOR >= 61
#define LIVE_IO_CONST const
#else
#define LIVE_IO_CONST
#endif

static int live_io_write(void *opaque, LIVE_IO_CONST uint8_t *data, int length)
{
	struct live *live = opaque;
	if (live->length + (size_t)length > live->capacity) {
		live->capacity = (live->length + (size_t)length) * 2;
		live->bytes = xrealloc(live->bytes, live->capacity);
	}
	memcpy(live->bytes + live->length, data, (size_t)length);
	live->length += (size_t)length;
	return length;
}

/* Hands out what the muxer wrote as one event of `kind`. */
static void live_hand_out(struct live *live, const char *kind, bool key, int64_t pts)
{
	avio_flush(live->output->pb);
	if (!live->length)
		return;
	cJSON *event = cJSON_CreateObject();
	cJSON_AddStringToObject(event, "event", "live");
	cJSON_AddNumberToObject(event, "live", live->id);
	cJSON_AddStringToObject(event, "kind", kind);
	if (strcmp(kind, "fragment") == 0) {
		cJSON_AddBoolToObject(event, "key", key);
		cJSON_AddNumberToObject(event, "pts", (double)pts);
	}
	live->sent_bytes += (int64_t)live->length;
	live->emit(live->emit_arg, event, live->bytes, live->length);
	live->length = 0;
}

/* ---- encoder and muxer ---- */

static bool live_open_encoder(struct live *live, char *error, size_t error_size)
{
	/* Milliseconds: frames come when the screen changes, not on a grid. */
	struct h264_settings settings = {
		.width = live->width,
		.height = live->height,
		.fps = live->fps,
		.time_base = {1, 1000},
		.keyframe_seconds = LIVE_KEYFRAME_SECONDS,
		.forced_idr = true,
	};
	live->codec = h264_open(&settings, error, error_size);
	if (!live->codec)
		return false;
	live->frame = h264_frame_new(live->codec);
	live->spare = h264_frame_new(live->codec);
	live->packet = av_packet_alloc();
	return true;
}

static bool live_open_output(struct live *live, char *error, size_t error_size)
{
	int status = avformat_alloc_output_context2(&live->output, NULL, "mp4", NULL);
	if (status < 0)
		return live_fail(error, error_size, "cannot set up the MP4 writer", status);
	AVStream *stream = avformat_new_stream(live->output, NULL);
	avcodec_parameters_from_context(stream->codecpar, live->codec);
	stream->time_base = live->codec->time_base;
	uint8_t *buffer = av_malloc(LIVE_IO_BUFFER);
	live->output->pb =
		avio_alloc_context(buffer, LIVE_IO_BUFFER, 1, live, NULL, live_io_write, NULL);
	if (!live->output->pb)
		abort();
	live->output->flags |= AVFMT_FLAG_CUSTOM_IO;
	AVDictionary *options = NULL;
	/* The moov up front and empty, then a moof+mdat per frame (cut by hand,
	 * see live_write), each with its own decode time: what Media Source
	 * Extensions take as they come. */
	av_dict_set(&options, "movflags", "frag_keyframe+empty_moov+default_base_moof", 0);
	status = avformat_write_header(live->output, &options);
	av_dict_free(&options);
	if (status < 0)
		return live_fail(error, error_size, "cannot write the MP4 header", status);
	live_hand_out(live, "init", false, 0);
	return true;
}

/* Codes the picture in live->frame at `pts` lasting `duration` ms, as one
 * fragment handed out at once. */
static bool live_code(struct live *live, int64_t pts, int64_t duration, bool key, char *error,
		      size_t error_size)
{
	live->frame->pts = pts;
	live->frame->pict_type = key ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE;
	int status = avcodec_send_frame(live->codec, live->frame);
	if (status < 0)
		return live_fail(error, error_size, "the H.264 encoder refused a frame", status);
	bool coded_key = false;
	for (;;) {
		status = avcodec_receive_packet(live->codec, live->packet);
		if (status == AVERROR(EAGAIN) || status == AVERROR_EOF)
			break;
		if (status < 0)
			return live_fail(error, error_size, "the H.264 encoder failed", status);
		coded_key |= (live->packet->flags & AV_PKT_FLAG_KEY) != 0;
		live->packet->duration = duration;
		live->packet->stream_index = 0;
		av_packet_rescale_ts(live->packet, live->codec->time_base,
				     live->output->streams[0]->time_base);
		status = av_write_frame(live->output, live->packet);
		av_packet_unref(live->packet);
		if (status < 0)
			return live_fail(error, error_size, "cannot write the stream", status);
	}
	/* Cut the fragment now rather than at the next keyframe. */
	status = av_write_frame(live->output, NULL);
	if (status < 0)
		return live_fail(error, error_size, "cannot write the stream", status);
	if (coded_key)
		live->last_key_pts = pts;
	live->frames++;
	live->previous_end = pts + duration;
	live_hand_out(live, "fragment", coded_key, pts);
	return true;
}

/* Converts (and scales) a grab into `frame`. */
static bool live_convert(struct live *live, const struct screen_image *image, AVFrame *frame,
			 char *error, size_t error_size)
{
	if (av_frame_make_writable(frame) < 0)
		abort();
	/* The screen may change size (RandR): the stream keeps its own. */
	if (live->width == (image->width & ~1) && live->height == (image->height & ~1)) {
		struct yuv_planes planes = {
			.data = {frame->data[0], frame->data[1], frame->data[2]},
			.linesize = {frame->linesize[0], frame->linesize[1], frame->linesize[2]},
			.width = live->width,
			.height = live->height,
		};
		yuv_tracker_update(live->changes, image, &planes);
		return true;
	}
	int flags = live->width < image->width ? SWS_AREA : SWS_BILINEAR;
	live->scaler = sws_getCachedContext(
		live->scaler, image->width, image->height,
		image->layout == SCREEN_LAYOUT_BGR0 ? AV_PIX_FMT_BGR0 : AV_PIX_FMT_RGB0,
		live->width, live->height, AV_PIX_FMT_YUV420P, flags, NULL, NULL, NULL);
	if (!live->scaler)
		return text_fail(error, error_size, "cannot convert %dx%d to %dx%d", image->width,
				 image->height, live->width, live->height);
	const uint8_t *source[4] = {image->pixels};
	int source_stride[4] = {image->stride};
	sws_scale(live->scaler, source, source_stride, 0, image->height, frame->data,
		  frame->linesize);
	/* This frame now holds a scaled picture the tracker knows nothing of. */
	yuv_tracker_forget(live->changes);
	return true;
}

/* One frame: grabs (the caller read the damage generation `generation`
 * and the pointer's `cursor` first, screen_look), and codes it at its place
 * on the timeline, filling a gap first (see the top of this file). */
static bool live_frame(struct live *live, uint64_t generation, const struct screen_cursor *cursor,
		       bool key, char *error, size_t error_size)
{
	struct screen_image image;
	if (!screen_grab(live->grabber, &image, error, error_size))
		return false;
	int64_t now = live_now_ms(live);
	if (cursor)
		screen_cursor_draw(cursor, &image, 0, 0);
	if (!live_convert(live, &image, live->spare, error, error_size))
		return false;
	live->generation = generation;
	int64_t pts = now;
	if (live->frames > 0) {
		if (now - live->previous_end <= live->interval_ms / 2) {
			pts = live->previous_end;
		} else {
			/* The picture shown so far lasts until this one. */
			live->fillers++;
			if (!live_code(live, live->previous_end, now - live->previous_end, false,
				       error, error_size))
				return false;
		}
	}
	AVFrame *coded = live->spare;
	live->spare = live->frame;
	live->frame = coded;
	return live_code(live, pts, live->interval_ms, key, error, error_size);
}

/* Sleeps until `due_ms` on the stream's clock; false when told to stop. */
static bool live_sleep_until(struct live *live, int64_t due_ms)
{
	for (;;) {
		if (atomic_load(&live->stop))
			return false;
		int64_t left_us = live->start_us + due_ms * 1000 - clock_monotonic_us();
		if (left_us <= 0)
			return true;
		struct pollfd wake = {.fd = live->wake_fd, .events = POLLIN};
		if (poll(&wake, 1, (int)((left_us + 999) / 1000)) > 0) {
			uint64_t count;
			ssize_t unused = read(live->wake_fd, &count, sizeof count);
			(void)unused;
		}
	}
}

/* Waits until the screen may have changed (the X connection has news, or
 * the main thread handled some), a keyframe is wanted, or a stop. */
static void live_wait(struct live *live)
{
	struct pollfd fds[2] = {
		{.fd = ConnectionNumber(screen_display(live->screen)), .events = POLLIN},
		{.fd = live->wake_fd, .events = POLLIN},
	};
	int timeout = atomic_load(&live->main_busy) ? LIVE_BUSY_CHECK_MS : -1;
	if (poll(fds, 2, timeout) > 0 && (fds[1].revents & POLLIN)) {
		uint64_t count;
		ssize_t unused = read(live->wake_fd, &count, sizeof count);
		(void)unused;
	}
}

static void live_end_by_itself(struct live *live, const char *why)
{
	log_msg(LOG_LEVEL_WARNING, "live view %d stopped: %s", live->id, why);
	atomic_store(&live->ended, true);
	cJSON *event = cJSON_CreateObject();
	cJSON_AddStringToObject(event, "event", "live");
	cJSON_AddNumberToObject(event, "live", live->id);
	cJSON_AddStringToObject(event, "kind", "ended");
	cJSON_AddStringToObject(event, "error", why);
	live->emit(live->emit_arg, event, NULL, 0);
}

static void *live_thread(void *argument)
{
	struct live *live = argument;
	/* After a frame the screen is looked at again one interval later:
	 * whatever moved meanwhile is in the next frame. */
	bool changed = true;
	while (!atomic_load(&live->stop)) {
		bool want_key = atomic_load(&live->want_key);
		if (!changed && !want_key) {
			live_wait(live);
			if (atomic_load(&live->stop))
				break;
			changed = screen_damage_generation(live->screen) != live->generation;
			continue;
		}
		/* At most fps frames a second; a keyframe alone waits its turn. */
		int64_t due = live->previous_end;
		if (!changed && live->last_key_pts + LIVE_KEY_MIN_GAP_MS > due)
			due = live->last_key_pts + LIVE_KEY_MIN_GAP_MS;
		if (!live_sleep_until(live, due))
			break;
		bool key = atomic_load(&live->want_key) &&
			   live_now_ms(live) >= live->last_key_pts + LIVE_KEY_MIN_GAP_MS;
		struct screen_cursor *cursor;
		uint64_t generation = screen_look(live->screen, &cursor);
		changed = generation != live->generation;
		if (!changed && !key) {
			screen_cursor_free(cursor);
			continue;
		}
		if (key)
			atomic_store(&live->want_key, false);
		char error[256];
		bool ok = live_frame(live, generation, cursor, key, error, sizeof error);
		screen_cursor_free(cursor);
		if (!ok) {
			live_end_by_itself(live, error);
			break;
		}
		changed = true;
	}
	return NULL;
}

/* ---- start and stop ---- */

static void live_free(struct live *live)
{
	if (live->output) {
		if (live->output->pb) {
			av_freep(&live->output->pb->buffer);
			avio_context_free(&live->output->pb);
		}
		avformat_free_context(live->output);
	}
	avcodec_free_context(&live->codec);
	av_frame_free(&live->frame);
	av_frame_free(&live->spare);
	av_packet_free(&live->packet);
	sws_freeContext(live->scaler);
	yuv_tracker_free(live->changes);
	screen_grabber_free(live->grabber);
	if (live->wake_fd >= 0)
		close(live->wake_fd);
	free(live->bytes);
	free(live);
}

/* Sizes the stream from a first grab, opens its encoder and output, and
 * codes the first frame. */
static bool live_start_stream(struct live *live, uint64_t generation,
			      const struct screen_cursor *cursor, char *error, size_t error_size)
{
	struct screen_image image;
	if (!screen_grab(live->grabber, &image, error, error_size))
		return false;
	live->width = (int)lround(image.width * live->scale) & ~1;
	live->height = (int)lround(image.height * live->scale) & ~1;
	if (live->width < LIVE_MIN_SIDE || live->height < LIVE_MIN_SIDE)
		return text_fail(error, error_size,
				 "a %dx%d screen at scale %g is too small to stream (at least %d "
				 "pixels a side)",
				 image.width, image.height, live->scale, LIVE_MIN_SIDE);
	if (!live_open_encoder(live, error, error_size) ||
	    !live_open_output(live, error, error_size))
		return false;
	live->start_us = clock_monotonic_us();
	live->started_at = clock_now_ms();
	return live_frame(live, generation, cursor, true, error, error_size);
}

static bool live_prepare(struct live *live, char *error, size_t error_size)
{
	struct screen_cursor *cursor;
	uint64_t generation = screen_look(live->screen, &cursor);
	bool ok = live_start_stream(live, generation, cursor, error, error_size);
	screen_cursor_free(cursor);
	return ok;
}

/* The RFC 6381 name of the stream, avc1.PPCCLL (profile, constraints,
 * level from the SPS), that a Media Source Extensions player gives
 * addSourceBuffer. libx264's extradata is the SPS and PPS in Annex B form. */
static void live_name_codec(const struct live *live, cJSON *figures)
{
	const uint8_t *data = live->codec->extradata;
	int size = live->codec->extradata_size;
	for (int i = 0; i + 6 < size; i++) {
		if (data[i] == 0 && data[i + 1] == 0 && data[i + 2] == 1 &&
		    (data[i + 3] & 0x1f) == 7) {
			char name[16];
			snprintf(name, sizeof name, "avc1.%02x%02x%02x", data[i + 4], data[i + 5],
				 data[i + 6]);
			cJSON_AddStringToObject(figures, "codec", name);
			return;
		}
	}
}

struct live *live_start(struct screen *screen, int id, int fps, double scale, live_emit_fn emit,
			void *arg, cJSON *figures, char *error, size_t error_size)
{
	struct live *live = xcalloc(1, sizeof *live);
	live->screen = screen;
	live->grabber = screen_grabber_new(screen);
	live->changes = yuv_tracker_new(2);
	live->id = id;
	live->fps = fps;
	live->scale = scale;
	live->interval_us = 1000000 / fps;
	live->interval_ms = 1000 / fps;
	live->emit = emit;
	live->emit_arg = arg;
	live->last_key_pts = -LIVE_KEY_MIN_GAP_MS;
	live->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	bool ok = live->wake_fd >= 0 && live_prepare(live, error, error_size);
	if (live->wake_fd < 0)
		text_fail(error, error_size, "cannot make an eventfd: %s", strerror(errno));
	if (ok) {
		int status = pthread_create(&live->thread, NULL, live_thread, live);
		if (status != 0) {
			snprintf(error, error_size, "cannot start the live thread: %s",
				 strerror(status));
			ok = false;
		}
		live->thread_started = ok;
	}
	if (!ok) {
		live_free(live);
		return NULL;
	}
	cJSON_AddNumberToObject(figures, "width", live->width);
	cJSON_AddNumberToObject(figures, "height", live->height);
	cJSON_AddNumberToObject(figures, "fps", live->fps);
	cJSON_AddNumberToObject(figures, "scale", live->scale);
	cJSON_AddNumberToObject(figures, "startedAt", (double)live->started_at);
	live_name_codec(live, figures);
	return live;
}

int live_id(const struct live *live)
{
	return live->id;
}

void live_want_keyframe(struct live *live)
{
	atomic_store(&live->want_key, true);
	live_wake(live);
}

void live_main_busy(struct live *live, bool busy)
{
	bool was = atomic_exchange(&live->main_busy, busy);
	/* Back to idle: whatever the main thread read off the connection is
	 * handled now; the live thread looks at the generation. */
	if (was != busy)
		live_wake(live);
}

void live_poke(struct live *live)
{
	live_wake(live);
}

void live_stop(struct live *live)
{
	atomic_store(&live->stop, true);
	live_wake(live);
	if (live->thread_started)
		pthread_join(live->thread, NULL);
	log_msg(LOG_LEVEL_DEBUG,
		"live view %d: %lld frames (%lld to fill still spells), %lld bytes", live->id,
		(long long)live->frames, (long long)live->fillers, (long long)live->sent_bytes);
	live_free(live);
}
