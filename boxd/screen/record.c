/* record.c: the recording thread: grab (none while DAMAGE says nothing
 * was drawn and the pointer stayed), convert what changed, encode
 * (libx264), mux (fragmented MP4). */
#include "record.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/opt.h>

#include "clock.h"
#include "h264.h"
#include "log.h"
#include "screen-yuv.h"
#include "text.h"
#include "xalloc.h"

/* The encoder is h264.c's. A keyframe every ten seconds of coded frames for
 * seeking: near x264's own 250 frames. A keyframe of a page costs as much
 * as a hundred frames that change a little: every two seconds made a
 * moving screen's file 2.8 times as large for no CPU saved
 * (docs/performance.md). Fragments are cut each second anyway. */
#define RECORD_KEYFRAME_SECONDS 10
#define RECORD_FRAGMENT_US 1000000
#define RECORD_NICE 5

struct record {
	struct screen *screen;
	struct screen_grabber *grabber;
	char *path;
	int fps, max_seconds, wake_fd;
	AVFormatContext *output;
	AVCodecContext *codec;
	AVFrame *frame;
	AVPacket *packet;
	/* The file again, to fdatasync each fragment once written: a box that
	 * loses power keeps what the page cache had not written back otherwise
	 * (measured: 5 of 9 s lost). -1 when it could not be opened. */
	int sync_fd;
	int64_t synced_bytes;
	struct yuv_tracker *changes; /* the last grab, to convert only what changed */
	/* What the last grab showed, to skip the next one when nothing moved:
	 * the damage generation read before it and the pointer drawn into it. */
	bool grabbed;
	uint64_t generation;
	int pointer_x, pointer_y;
	unsigned long pointer_serial;
	int64_t start_us;        /* monotonic time of slot 0 */
	int64_t last_slot;       /* the last slot grabbed */
	int64_t last_coded_slot; /* the last slot handed to the encoder */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop, thread_started;
	struct record_stats stats; /* under `lock` */
};

static void record_fail(char *error, size_t error_size, const char *what, int status)
{
	char reason[AV_ERROR_MAX_STRING_SIZE];
	av_strerror(status, reason, sizeof reason);
	snprintf(error, error_size, "%s: %s", what, reason);
}

static bool record_open_encoder(struct record *record, int width, int height, char *error,
				size_t error_size)
{
	struct h264_settings settings = {
		.width = width,
		.height = height,
		.fps = record->fps,
		.time_base = {1, record->fps},
		.keyframe_seconds = RECORD_KEYFRAME_SECONDS,
	};
	record->codec = h264_open(&settings, error, error_size);
	if (!record->codec)
		return false;
	record->frame = h264_frame_new(record->codec);
	record->packet = av_packet_alloc();
	return true;
}

/* Makes what the muxer has written so far durable (a fragment, about once
 * a second; nothing to do between fragments). */
static void record_sync(struct record *record)
{
	int64_t bytes = avio_tell(record->output->pb);
	if (record->sync_fd < 0 || bytes <= record->synced_bytes)
		return;
	if (fdatasync(record->sync_fd) == 0)
		record->synced_bytes = bytes;
}

static bool record_open_output(struct record *record, char *error, size_t error_size)
{
	int status = avformat_alloc_output_context2(&record->output, NULL, "mp4", record->path);
	if (status < 0) {
		record_fail(error, error_size, "cannot set up the MP4 writer", status);
		return false;
	}
	AVStream *stream = avformat_new_stream(record->output, NULL);
	avcodec_parameters_from_context(stream->codecpar, record->codec);
	stream->time_base = record->codec->time_base;
	status = avio_open(&record->output->pb, record->path, AVIO_FLAG_WRITE);
	if (status < 0) {
		record_fail(error, error_size, "cannot create the recording file", status);
		return false;
	}
	AVDictionary *options = NULL;
	/* Fragments (a moof+mdat per second, the moov up front and empty) make
	 * every written second playable even if the writer dies; each is handed
	 * to the kernel as soon as it is complete. */
	av_dict_set(&options, "movflags", "frag_keyframe+empty_moov+default_base_moof", 0);
	av_dict_set_int(&options, "frag_duration", RECORD_FRAGMENT_US, 0);
	av_dict_set(&options, "flush_packets", "1", 0);
	status = avformat_write_header(record->output, &options);
	av_dict_free(&options);
	if (status < 0) {
		record_fail(error, error_size, "cannot write the MP4 header", status);
		return false;
	}
	avio_flush(record->output->pb);
	record->sync_fd = open(record->path, O_RDONLY | O_CLOEXEC);
	record_sync(record);
	return true;
}

/* Drains the encoder's packets into the file. */
static bool record_write_packets(struct record *record, char *error, size_t error_size)
{
	for (;;) {
		int status = avcodec_receive_packet(record->codec, record->packet);
		if (status == AVERROR(EAGAIN) || status == AVERROR_EOF)
			return true;
		if (status < 0) {
			record_fail(error, error_size, "the H.264 encoder failed", status);
			return false;
		}
		/* A frame lasts until the next one; the last one, a slot. */
		record->packet->duration = 1;
		av_packet_rescale_ts(record->packet, record->codec->time_base,
				     record->output->streams[0]->time_base);
		record->packet->stream_index = 0;
		status = av_write_frame(record->output, record->packet);
		av_packet_unref(record->packet);
		if (status < 0) {
			record_fail(error, error_size, "cannot write the recording", status);
			return false;
		}
	}
}

/* Hands the current picture to the encoder as the frame shown from `slot`. */
static bool record_code_frame(struct record *record, int64_t slot, char *error, size_t error_size)
{
	record->frame->pts = slot;
	int status = avcodec_send_frame(record->codec, record->frame);
	if (status < 0) {
		record_fail(error, error_size, "the H.264 encoder refused a frame", status);
		return false;
	}
	if (!record_write_packets(record, error, error_size))
		return false;
	record_sync(record);
	record->last_coded_slot = slot;
	pthread_mutex_lock(&record->lock);
	record->stats.frames++;
	record->stats.bytes = avio_tell(record->output->pb);
	pthread_mutex_unlock(&record->lock);
	return true;
}

/* Brings the frame up to `image`, converting only the bands that changed.
 * True when any did. */
static bool record_take_changes(struct record *record, const struct screen_image *image)
{
	AVFrame *frame = record->frame;
	/* Copies the planes first only if the encoder still holds them. */
	if (av_frame_make_writable(frame) < 0)
		abort();
	struct yuv_planes planes = {
		.data = {frame->data[0], frame->data[1], frame->data[2]},
		.linesize = {frame->linesize[0], frame->linesize[1], frame->linesize[2]},
		.width = frame->width,
		.height = frame->height,
	};
	return yuv_tracker_update(record->changes, image, &planes);
}

/* Encodes one grab at `slot`, unless the screen is unchanged (`image` NULL:
 * known without a grab): then the previous frame simply lasts longer
 * (timestamps are the wall clock's), and only once a second is it coded
 * again, so that fragments keep flowing and a cut file still reaches its
 * last second. */
static bool record_encode(struct record *record, const struct screen_image *image, int64_t slot,
			  char *error, size_t error_size)
{
	bool unchanged = !image || !record_take_changes(record, image);
	record->last_slot = slot;
	pthread_mutex_lock(&record->lock);
	record->stats.duration_ms = (slot + 1) * 1000 / record->fps;
	pthread_mutex_unlock(&record->lock);
	if (unchanged && slot - record->last_coded_slot < record->fps)
		return true;
	return record_code_frame(record, slot, error, error_size);
}

/* True when the screen still shows what the last grab got: no drawing
 * since (DAMAGE; without it, never known) and the pointer where it was,
 * with the same sprite. Two round trips to the server instead of a 4 MB
 * grab and its comparison. Remembers this reading for the next grab. */
static bool record_still(struct record *record, const struct screen_cursor *cursor,
			 uint64_t generation)
{
	int x = 0, y = 0;
	unsigned long serial = 0;
	if (cursor)
		screen_cursor_where(cursor, &x, &y, &serial);
	bool still = record->grabbed && screen_has_damage(record->screen) &&
		     generation == record->generation && x == record->pointer_x &&
		     y == record->pointer_y && serial == record->pointer_serial;
	record->generation = generation;
	record->pointer_x = x;
	record->pointer_y = y;
	record->pointer_serial = serial;
	return still;
}

/* The picture at `slot`; `*still` tells whether the screen was known
 * unchanged since the last grab (then no grab was made). */
static bool record_grab_and_encode(struct record *record, int64_t slot, bool *still, char *error,
				   size_t error_size)
{
	/* Read before the grab: whatever is drawn after it moves it on. */
	struct screen_cursor *cursor;
	uint64_t generation = screen_look(record->screen, &cursor);
	*still = record_still(record, cursor, generation);
	if (*still) {
		screen_cursor_free(cursor);
		return record_encode(record, NULL, slot, error, error_size);
	}
	struct screen_image image;
	if (!screen_grab(record->grabber, &image, error, error_size)) {
		screen_cursor_free(cursor);
		return false;
	}
	record->grabbed = true;
	if (image.width < record->frame->width || image.height < record->frame->height) {
		screen_cursor_free(cursor);
		return text_fail(error, error_size,
				 "the screen shrank to %dx%d during the recording", image.width,
				 image.height);
	}
	if (cursor)
		screen_cursor_draw(cursor, &image, 0, 0);
	screen_cursor_free(cursor);
	return record_encode(record, &image, slot, error, error_size);
}

/* Waits until monotonic `deadline_us` or a stop; true when stopped. */
static bool record_wait(struct record *record, int64_t deadline_us)
{
	struct timespec until = {deadline_us / 1000000, (deadline_us % 1000000) * 1000};
	pthread_mutex_lock(&record->lock);
	while (!record->stop &&
	       pthread_cond_timedwait(&record->wake, &record->lock, &until) != ETIMEDOUT)
		;
	bool stop = record->stop;
	pthread_mutex_unlock(&record->lock);
	return stop;
}

static void record_end_by_itself(struct record *record, const char *why, const char *error)
{
	pthread_mutex_lock(&record->lock);
	record->stats.ended_by = why;
	if (error)
		snprintf(record->stats.error, sizeof record->stats.error, "%s", error);
	pthread_mutex_unlock(&record->lock);
	uint64_t one = 1;
	ssize_t unused = write(record->wake_fd, &one, sizeof one);
	(void)unused;
}

static void *record_thread(void *argument)
{
	struct record *record = argument;
	/* A recording is background work: commands and boxd come first (Linux
	 * nice values are per thread). A busy box drops frames, counted. */
	setpriority(PRIO_PROCESS, (id_t)gettid(), RECORD_NICE);
	int64_t interval_us = 1000000 / record->fps;
	int64_t limit_slot = (int64_t)record->max_seconds * record->fps;
	int64_t slot = 1;
	while (slot < limit_slot) {
		if (record_wait(record, record->start_us + slot * interval_us))
			return NULL;
		/* Late (a busy machine): go to the slot we are in. */
		int64_t now_slot = (clock_monotonic_us() - record->start_us) / interval_us;
		int64_t missed = now_slot > slot ? now_slot - slot : 0;
		if (now_slot >= limit_slot)
			break;
		slot += missed;
		char error[256];
		bool still;
		if (!record_grab_and_encode(record, slot, &still, error, sizeof error)) {
			log_msg(LOG_LEVEL_WARNING, "recording %s stopped: %s", record->path, error);
			record_end_by_itself(record, "error", error);
			return NULL;
		}
		/* The slots missed are dropped frames only if the screen changed
		 * meanwhile: on a still screen they showed the picture the file
		 * already has, which simply lasts longer. */
		if (missed && !still) {
			pthread_mutex_lock(&record->lock);
			record->stats.dropped += missed;
			pthread_mutex_unlock(&record->lock);
		}
		slot++;
	}
	record_end_by_itself(record, "maxSec", NULL);
	return NULL;
}

static void record_free(struct record *record)
{
	if (record->sync_fd >= 0)
		close(record->sync_fd);
	if (record->output) {
		avio_closep(&record->output->pb);
		avformat_free_context(record->output);
	}
	avcodec_free_context(&record->codec);
	av_frame_free(&record->frame);
	av_packet_free(&record->packet);
	screen_grabber_free(record->grabber);
	pthread_mutex_destroy(&record->lock);
	pthread_cond_destroy(&record->wake);
	yuv_tracker_free(record->changes);
	free(record->path);
	free(record);
}

static bool record_prepare(struct record *record, char *error, size_t error_size)
{
	struct screen_image image;
	if (!screen_grab(record->grabber, &image, error, error_size))
		return false;
	int width = image.width & ~1, height = image.height & ~1;
	if (width < 2 || height < 2)
		return text_fail(error, error_size, "the screen is too small to record (%dx%d)",
				 image.width, image.height);
	if (!record_open_encoder(record, width, height, error, error_size) ||
	    !record_open_output(record, error, error_size))
		return false;
	record->stats.width = width;
	record->stats.height = height;
	record->stats.started_at = clock_now_ms();
	record->start_us = clock_monotonic_us();
	bool still;
	return record_grab_and_encode(record, 0, &still, error, error_size);
}

struct record *record_start(struct screen *screen, const char *path, int fps, int max_seconds,
			    int wake_fd, char *error, size_t error_size)
{
	struct record *record = xcalloc(1, sizeof *record);
	record->screen = screen;
	record->grabber = screen_grabber_new(screen);
	record->path = xstrdup(path);
	record->fps = fps;
	record->max_seconds = max_seconds;
	record->wake_fd = wake_fd;
	record->sync_fd = -1;
	record->changes = yuv_tracker_new(1);
	record->stats.path = record->path;
	record->stats.fps = fps;
	pthread_mutex_init(&record->lock, NULL);
	pthread_condattr_t attributes;
	pthread_condattr_init(&attributes);
	pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
	pthread_cond_init(&record->wake, &attributes);
	pthread_condattr_destroy(&attributes);
	bool ok = record_prepare(record, error, error_size);
	if (ok) {
		int status = pthread_create(&record->thread, NULL, record_thread, record);
		if (status != 0) {
			snprintf(error, error_size, "cannot start the recording thread: %s",
				 strerror(status));
			ok = false;
		}
		record->thread_started = ok;
	}
	if (!ok) {
		bool created = record->output && record->output->pb;
		record_free(record);
		if (created)
			unlink(path);
		return NULL;
	}
	return record;
}

bool record_ended(struct record *record)
{
	pthread_mutex_lock(&record->lock);
	bool ended = record->stats.ended_by != NULL;
	pthread_mutex_unlock(&record->lock);
	return ended;
}

void record_progress(struct record *record, struct record_stats *stats)
{
	pthread_mutex_lock(&record->lock);
	*stats = record->stats;
	pthread_mutex_unlock(&record->lock);
}

void record_finish(struct record *record, struct record_stats *stats)
{
	pthread_mutex_lock(&record->lock);
	record->stop = true;
	pthread_cond_signal(&record->wake);
	pthread_mutex_unlock(&record->lock);
	if (record->thread_started)
		pthread_join(record->thread, NULL);
	char error[256] = "";
	/* The last picture lasts until the last slot grabbed. */
	if (record->last_slot > record->last_coded_slot)
		record_code_frame(record, record->last_slot, error, sizeof error);
	/* Drain what the encoder holds, then close the last fragment. */
	if (avcodec_send_frame(record->codec, NULL) >= 0)
		record_write_packets(record, error, sizeof error);
	int status = av_write_trailer(record->output);
	if (status < 0)
		log_msg(LOG_LEVEL_WARNING, "recording %s: cannot finish the file", record->path);
	avio_flush(record->output->pb);
	record_sync(record);
	*stats = record->stats;
	stats->bytes = avio_tell(record->output->pb);
	if (!stats->ended_by)
		stats->ended_by = "stop";
	stats->path = xstrdup(record->path);
	record->stats.path = NULL;
	record_free(record);
}
