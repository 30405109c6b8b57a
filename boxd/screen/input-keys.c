/* input-keys.c: key names and Unicode text to X keysyms. */
#include "input-keys.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <X11/Xlib.h>
#include <X11/keysym.h>

struct input_key_alias {
	const char *name;
	KeySym keysym;
};

/* What people and agents type, beside X's own names. */
static const struct input_key_alias input_key_aliases[] = {
	{"ctrl", XK_Control_L},
	{"control", XK_Control_L},
	{"shift", XK_Shift_L},
	{"alt", XK_Alt_L},
	{"meta", XK_Meta_L},
	{"super", XK_Super_L},
	{"win", XK_Super_L},
	{"windows", XK_Super_L},
	{"cmd", XK_Super_L},
	{"command", XK_Super_L},
	{"altgr", XK_ISO_Level3_Shift},
	{"enter", XK_Return},
	{"return", XK_Return},
	{"esc", XK_Escape},
	{"escape", XK_Escape},
	{"tab", XK_Tab},
	{"space", XK_space},
	{"backspace", XK_BackSpace},
	{"del", XK_Delete},
	{"delete", XK_Delete},
	{"ins", XK_Insert},
	{"insert", XK_Insert},
	{"home", XK_Home},
	{"end", XK_End},
	{"pgup", XK_Page_Up},
	{"pageup", XK_Page_Up},
	{"page_up", XK_Page_Up},
	{"pgdn", XK_Page_Down},
	{"pagedown", XK_Page_Down},
	{"page_down", XK_Page_Down},
	{"up", XK_Up},
	{"down", XK_Down},
	{"left", XK_Left},
	{"right", XK_Right},
	{"menu", XK_Menu},
	{"capslock", XK_Caps_Lock},
	{"printscreen", XK_Print},
	{"print", XK_Print},
	{"pause", XK_Pause},
	{"plus", XK_plus},
	{"minus", XK_minus},
};

static KeySym input_keys_lookup(const char *name)
{
	KeySym keysym = XStringToKeysym(name);
	if (keysym != NoSymbol)
		return keysym;
	for (size_t i = 0; i < sizeof input_key_aliases / sizeof input_key_aliases[0]; i++)
		if (strcasecmp(name, input_key_aliases[i].name) == 0)
			return input_key_aliases[i].keysym;
	uint32_t codepoint;
	size_t length = strlen(name);
	if (input_keys_utf8_next(name, length, &codepoint) == length)
		return input_keys_for_codepoint(codepoint);
	/* "f5" -> "F5", "kp_enter" -> "KP_Enter", "return" -> "Return". */
	char fixed[64];
	if (length >= sizeof fixed)
		return NoSymbol;
	bool word_start = true;
	for (size_t i = 0; i <= length; i++) {
		char c = name[i];
		fixed[i] = word_start ? (char)toupper((unsigned char)c)
				      : (char)tolower((unsigned char)c);
		word_start = c == '_';
	}
	keysym = XStringToKeysym(fixed);
	if (keysym == NoSymbol && strncasecmp(name, "kp_", 3) == 0) {
		fixed[1] = 'P';
		keysym = XStringToKeysym(fixed);
	}
	return keysym;
}

int input_keys_parse(const char *combo, KeySym keysyms[INPUT_KEYS_MAX_COMBO], char *error,
		     size_t error_size)
{
	int count = 0;
	const char *part = combo;
	while (*part) {
		/* A "+" right at a part's start is the plus key itself ("ctrl++"). */
		const char *end = part[0] == '+' ? part + 1 : strchr(part, '+');
		if (!end)
			end = part + strlen(part);
		size_t length = (size_t)(end - part);
		char name[64];
		if (length == 0 || length >= sizeof name) {
			snprintf(error, error_size,
				 "the key combination \"%.80s\" has an empty or overlong part",
				 combo);
			return 0;
		}
		if (count == INPUT_KEYS_MAX_COMBO) {
			snprintf(error, error_size,
				 "the key combination \"%.80s\" has more than %d keys", combo,
				 INPUT_KEYS_MAX_COMBO);
			return 0;
		}
		memcpy(name, part, length);
		name[length] = '\0';
		KeySym keysym = input_keys_lookup(name);
		if (keysym == NoSymbol) {
			snprintf(error, error_size, "unknown key name \"%s\" in \"%.80s\"", name,
				 combo);
			return 0;
		}
		keysyms[count++] = keysym;
		part = end;
		if (*part == '+') {
			part++;
			if (!*part) {
				snprintf(error, error_size,
					 "the key combination \"%.80s\" ends with a \"+\"", combo);
				return 0;
			}
		}
	}
	if (count == 0)
		snprintf(error, error_size, "the key combination is empty");
	return count;
}

KeySym input_keys_for_codepoint(uint32_t codepoint)
{
	switch (codepoint) {
	case '\n':
	case '\r': return XK_Return;
	case '\t': return XK_Tab;
	case '\b': return XK_BackSpace;
	case 0x1b: return XK_Escape;
	}
	/* Latin-1 keysyms equal their code points; the rest of Unicode is
	 * 0x01000000 + code point (X11 keysym encoding, appendix A). */
	if ((codepoint >= 0x20 && codepoint <= 0x7e) || (codepoint >= 0xa0 && codepoint <= 0xff))
		return codepoint;
	return 0x01000000 + codepoint;
}

size_t input_keys_utf8_next(const char *text, size_t length, uint32_t *codepoint)
{
	const unsigned char *bytes = (const unsigned char *)text;
	if (length == 0)
		return 0;
	unsigned char first = bytes[0];
	size_t need;
	uint32_t value, minimum;
	if (first < 0x80) {
		*codepoint = first;
		return 1;
	} else if ((first & 0xe0) == 0xc0) {
		need = 2, value = first & 0x1f, minimum = 0x80;
	} else if ((first & 0xf0) == 0xe0) {
		need = 3, value = first & 0x0f, minimum = 0x800;
	} else if ((first & 0xf8) == 0xf0) {
		need = 4, value = first & 0x07, minimum = 0x10000;
	} else {
		return 0;
	}
	if (length < need)
		return 0;
	for (size_t i = 1; i < need; i++) {
		if ((bytes[i] & 0xc0) != 0x80)
			return 0;
		value = (value << 6) | (bytes[i] & 0x3f);
	}
	if (value < minimum || value > 0x10ffff || (value >= 0xd800 && value <= 0xdfff))
		return 0;
	*codepoint = value;
	return need;
}
