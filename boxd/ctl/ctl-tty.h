/* ctl-tty.h: boxctl's local terminal for an interactive session: its size,
 * and raw mode on and off. Raw mode must never outlive boxctl (a shell left
 * without echo or line editing is a broken shell), so it is restored at
 * exit as well as where the session ends. */
#ifndef BOXD_CTL_TTY_H
#define BOXD_CTL_TTY_H

#include <stdbool.h>

/* The terminal's size on `fd` (TIOCGWINSZ); 80x24 when unknown. */
void ctl_tty_size(int fd, int *cols, int *rows);
/* Puts the terminal on `fd` in raw mode: every byte as typed, no echo, no
 * signals from keys (^C is a byte for the command), no output processing
 * (the box's terminal does its own). False with errno when it cannot. */
bool ctl_tty_raw(int fd);
/* Puts back the mode ctl_tty_raw found; nothing when it changed none.
 * Safe to call more than once. */
void ctl_tty_restore(void);

#endif
