/* Unit tests for input-keys.c: key names, combinations, UTF-8. */
#include <stdio.h>
#include <string.h>

#include <X11/keysym.h>

#include "input-keys.h"

#include "check.h"

static int parse(const char *combo, KeySym *keysyms)
{
	char error[200];
	return input_keys_parse(combo, keysyms, error, sizeof error);
}

static void test_combinations(void)
{
	KeySym k[INPUT_KEYS_MAX_COMBO];
	CHECK(parse("ctrl+shift+t", k) == 3 && k[0] == XK_Control_L && k[1] == XK_Shift_L &&
	      k[2] == XK_t);
	CHECK(parse("Return", k) == 1 && k[0] == XK_Return);
	CHECK(parse("return", k) == 1 && k[0] == XK_Return);
	CHECK(parse("enter", k) == 1 && k[0] == XK_Return);
	CHECK(parse("F5", k) == 1 && k[0] == XK_F5);
	CHECK(parse("f12", k) == 1 && k[0] == XK_F12);
	CHECK(parse("alt+F4", k) == 2 && k[0] == XK_Alt_L && k[1] == XK_F4);
	CHECK(parse("super", k) == 1 && k[0] == XK_Super_L);
	CHECK(parse("ctrl++", k) == 2 && k[1] == XK_plus);
	CHECK(parse("+", k) == 1 && k[0] == XK_plus);
	CHECK(parse("page_up", k) == 1 && k[0] == XK_Page_Up);
	CHECK(parse("kp_enter", k) == 1 && k[0] == XK_KP_Enter);
	CHECK(parse("ctrl+T", k) == 2 && k[1] == XK_T);
	CHECK(parse("€", k) == 1 && k[0] == 0x010020ac);
	CHECK(parse("", k) == 0);
	CHECK(parse("ctrl+", k) == 0);
	CHECK(parse("ctrl++shift", k) == 0 || k[1] == XK_plus);
	CHECK(parse("nosuchkey", k) == 0);
	CHECK(parse("a+b+c+d+e+f+g+h+i", k) == 0);
	char long_name[200];
	memset(long_name, 'x', sizeof long_name - 1);
	long_name[sizeof long_name - 1] = '\0';
	CHECK(parse(long_name, k) == 0);
}

static void test_codepoints(void)
{
	CHECK(input_keys_for_codepoint('a') == XK_a);
	CHECK(input_keys_for_codepoint('\n') == XK_Return);
	CHECK(input_keys_for_codepoint('\t') == XK_Tab);
	CHECK(input_keys_for_codepoint(0xf6) == XK_odiaeresis);
	CHECK(input_keys_for_codepoint(0x2713) == 0x01002713);
	CHECK(input_keys_for_codepoint(0x1f600) == 0x0101f600);
}

static void test_utf8(void)
{
	uint32_t c;
	CHECK(input_keys_utf8_next("a", 1, &c) == 1 && c == 'a');
	CHECK(input_keys_utf8_next("\xc3\xb6", 2, &c) == 2 && c == 0xf6);
	CHECK(input_keys_utf8_next("\xe2\x9c\x93", 3, &c) == 3 && c == 0x2713);
	CHECK(input_keys_utf8_next("\xf0\x9f\x98\x80", 4, &c) == 4 && c == 0x1f600);
	CHECK(input_keys_utf8_next("\xc3", 1, &c) == 0);             /* cut short */
	CHECK(input_keys_utf8_next("\xc0\x80", 2, &c) == 0);         /* overlong */
	CHECK(input_keys_utf8_next("\xed\xa0\x80", 3, &c) == 0);     /* surrogate */
	CHECK(input_keys_utf8_next("\xf4\x90\x80\x80", 4, &c) == 0); /* past U+10FFFF */
	CHECK(input_keys_utf8_next("\x80", 1, &c) == 0);
	CHECK(input_keys_utf8_next("\xff", 1, &c) == 0);
}

int main(void)
{
	test_combinations();
	test_codepoints();
	test_utf8();
	return check_done("input-keys");
}
