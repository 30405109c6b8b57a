/* report.h: the health stream boxd writes to the control plane.
 *
 * With --report ADDR (vsock:CID:PORT or unix:PATH) boxd connects out and
 * writes one JSON line per event: {"event":"ready",...health} once it serves,
 * then {"event":"health",...health} every --report-interval seconds and when
 * report_now() is called (a background command ended). When the peer goes
 * away boxd reconnects after 1 s, doubling to 30 s; a reconnect is greeted
 * with a health event at once (a "thawed" one after an init). */
#ifndef BOXD_REPORT_H
#define BOXD_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

struct event_base;

/* Checks the address and starts connecting; false with a sentence in `error`
 * when the address is malformed. */
bool report_start(struct event_base *base, const char *address, int interval_sec, char *error,
		  size_t error_size);
/* Sends {"event": event, ...fields} now, if connected and greeted (takes
 * `fields`): an event lost while the peer is away is not kept, the health
 * event that greets the next connection says how things are then. */
void report_event(const char *event, cJSON *fields);
/* Sends a health event now, if connected. */
void report_now(void);
/* After an init (claim, thaw, restore): drops the connection, which may
 * lead nowhere after a restore, connects again at once, and sends a
 * {"event":"thawed",...health} first. */
void report_thawed(void);
void report_stop(void);

#endif
