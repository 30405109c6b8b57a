/* input-keys.h: names and text to X keysyms, without a display connection
 * (pure, unit-tested in tests/unit/test-input-keys.c). */
#ifndef BOXD_INPUT_KEYS_H
#define BOXD_INPUT_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <X11/X.h>

#define INPUT_KEYS_MAX_COMBO 8

/* Parses a combination such as "ctrl+shift+t", "Return", "F5", "alt+plus"
 * into keysyms in pressing order (a lone "+" is the plus key). Names are X
 * keysym names, common aliases (ctrl, alt, super, win, cmd, esc, enter, del,
 * pgup, ...) and single characters, matched without regard to case where X's
 * names are not ambiguous. Returns the count, or 0 with a sentence in `error`. */
int input_keys_parse(const char *combo, KeySym keysyms[INPUT_KEYS_MAX_COMBO], char *error,
		     size_t error_size);

/* The keysym that types Unicode `codepoint` (newline is Return, tab is Tab). */
KeySym input_keys_for_codepoint(uint32_t codepoint);

/* Decodes the UTF-8 character at `text`; returns the bytes it takes, or 0
 * for an invalid or overlong sequence or a surrogate. */
size_t input_keys_utf8_next(const char *text, size_t length, uint32_t *codepoint);

#endif
