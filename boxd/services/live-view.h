/* live-view.h: the live screen's viewers. The worker captures and encodes
 * (boxd/screen/live.c), one capture per set of settings (fps, scale), and
 * sends each fragment once; here it is fanned out to that capture's viewers.
 * A viewer that joins gets the init segment, then fragments from a keyframe
 * made for it (asked for at once; the worker makes one within
 * LIVE_KEY_MIN_GAP_MS). A viewer whose connection holds more than
 * LIVE_VIEW_MAX_PENDING bytes unsent skips fragments until the next
 * keyframe, so boxd's memory stays bounded whatever the viewer does. The
 * last viewer to leave stops the capture. Loop thread only.
 *
 * A viewer is a connection the route owns (api-screen-live.c): the live
 * view reaches it through `struct live_viewer_ops`, never a request. */
#ifndef BOXD_LIVE_VIEW_H
#define BOXD_LIVE_VIEW_H

#include <stddef.h>

#include "failure.h"
#include "screen-client.h"

/* Past this many bytes unsent to a viewer, it skips to the next keyframe. */
#define LIVE_VIEW_MAX_PENDING (1024 * 1024)

struct live_viewer;

/* How the live view reaches one viewer (`arg` is the viewer's own). */
struct live_viewer_ops {
	/* The stream starts (its size, time 0, codec: the answer's head);
	 * writes follow. */
	void (*begin)(void *arg, const struct screen_live_stream *stream);
	void (*write)(void *arg, const void *data, size_t length);
	/* Bytes written that its connection has not taken yet. */
	size_t (*pending)(void *arg);
	/* The stream is over (the capture failed, the worker went away): after
	 * begin. The viewer has left the live view (it is freed). */
	void (*end)(void *arg);
	/* The stream never began: why. The viewer has left (it is freed). */
	void (*fail)(void *arg, enum failure failure, const char *message);
};

/* A new viewer of the live screen at `fps` and `scale` (the caller checked
 * them: 1..60, above 0 and at most 1), sharing the capture of those
 * settings when one runs (then `begin` runs before this returns), else
 * starting one. `ops` is kept. NULL when `fail` ran before this returned
 * (the worker could not be started). */
struct live_viewer *live_view_join(int fps, double scale, const struct live_viewer_ops *ops,
				   void *arg);
/* The viewer's connection has taken everything written to it. */
void live_view_drained(struct live_viewer *viewer);
/* The viewer went away: it leaves (and is freed) without `end` or `fail`;
 * the last one stops its capture. */
void live_view_leave(struct live_viewer *viewer);

#endif
