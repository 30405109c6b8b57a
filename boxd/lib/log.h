/* log.h: one logging function with a level.
 *
 * Lines go to stderr with a journald priority prefix ("<3>", "<6>", ...), so
 * under systemd the journal files them at the right level and a person reading
 * `journalctl -u boxd -p err` sees only what went wrong. Safe to call from any
 * thread; a line is written with one write(2) so lines never interleave.
 * Every line passes through redact_text() (redact.h) first. */
#ifndef BOXD_LOG_H
#define BOXD_LOG_H

enum log_level {
	LOG_LEVEL_ERROR = 3,
	LOG_LEVEL_WARNING = 4,
	LOG_LEVEL_NOTICE = 5,
	LOG_LEVEL_INFO = 6,
	LOG_LEVEL_DEBUG = 7,
};

/* Lines above this level are dropped (default LOG_LEVEL_INFO). */
void log_set_level(enum log_level level);

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
