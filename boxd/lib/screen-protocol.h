/* screen-protocol.h: the frames boxd and its screen worker (boxd-screen)
 * exchange over their socketpair. docs/screen.md describes the messages.
 *
 * A frame is a header, a JSON object of header.json_length bytes, then
 * header.payload_length bytes of payload (an encoded image, a clipboard
 * value, or nothing).
 * Both ends are on one machine, so the header is in host byte order.
 *
 * boxd sends requests, {"id": N, "op": ..., ...}; each gets one answer with
 * its id: {"id": N, "ok": true, ...} or {"id": N, "error": {"code",
 * "message"}}. The code is a failure's (failure.h: failure_code() on the
 * worker's side, failure_from_code() on boxd's); no HTTP status travels,
 * boxd's router alone maps failures to statuses. The worker's reports come
 * unasked and without an id: {"event": ..., ...}. */
#ifndef BOXD_SCREEN_PROTOCOL_H
#define BOXD_SCREEN_PROTOCOL_H

#include <stdint.h>

struct screen_frame_header {
	uint32_t json_length;
	uint32_t payload_length;
};

/* Larger frames are a protocol error: the receiver ends the connection. */
#define SCREEN_FRAME_MAX_JSON (1u << 20)
#define SCREEN_FRAME_MAX_PAYLOAD (256u << 20)
/* A request's payload (a value for the clipboard) is at most this. */
#define SCREEN_REQUEST_MAX_PAYLOAD (16u << 20)

/* The worker's end of the socketpair, as boxd hands it over. */
#define SCREEN_WORKER_FD 3

/* The worker's exit status when the X server it was connected to went
 * away: boxd answers the calls left with display_unavailable. */
#define SCREEN_EXIT_X_LOST 3

#endif
