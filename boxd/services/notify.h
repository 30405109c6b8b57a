/* notify.h: talking to systemd (sd_notify protocol, without libsystemd).
 *
 * When NOTIFY_SOCKET is set, boxd sends READY=1 once it serves, STATUS=
 * lines, and WATCHDOG=1 at half of WATCHDOG_USEC. Outside systemd every
 * call is a no-op. */
#ifndef BOXD_NOTIFY_H
#define BOXD_NOTIFY_H

#include <stdbool.h>

struct event_base;

/* Reads the environment and starts the watchdog timer when asked for. */
void notify_init(struct event_base *base);
/* `tick` runs at every watchdog ping, before it (a check that must not wake
 * an idle boxd more often than the watchdog does already). */
void notify_on_watchdog(void (*tick)(void));
/* Sends one message, e.g. "READY=1\nSTATUS=serving". */
void notify_send(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void notify_stop(void);

#endif
