/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * log_escape (daemon/diraheadd/log.c): what the daemon logs reaches terminals, and names in it
 * are chosen by users.  Control characters, DEL, C1 controls and invalid UTF-8 come out as \xNN,
 * a backslash as \\, valid UTF-8 unchanged; truncation never splits an escape or a character.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "log.h"

static void expect(const char *in, const char *out)
{
	char buf[256];
	size_t n = log_escape(buf, sizeof(buf), in);
	assert_string_equal(buf, out);
	assert_int_equal(n, strlen(out));
}

static void test_plain(void **state)
{
	(void)state;
	expect("", "");
	expect("scan: pid 42 (ls) /srv/data, readdir order", "scan: pid 42 (ls) /srv/data, readdir order");
	expect("a b~", "a b~");
}

static void test_controls(void **state)
{
	(void)state;
	expect("\x1b[31mred\x07", "\\x1b[31mred\\x07");
	expect("a\nb\rc\td", "a\\x0ab\\x0dc\\x09d");
	expect("\x01\x1f\x7f", "\\x01\\x1f\\x7f");
	expect("back\\slash", "back\\\\slash");
	/* the escaped form of a name cannot pass for a control character */
	expect("\\x1b", "\\\\x1b");
}

static void test_utf8(void **state)
{
	(void)state;
	expect("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x93\x81", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x93\x81");
	expect("\xc2\xa0", "\xc2\xa0");                 /* U+00A0: printable */
	expect("\xc2\x9b" "31m", "\\xc2\\x9b31m");      /* U+009B: CSI, a C1 control */
	expect("\xc2\x80", "\\xc2\\x80");
	expect("\xff\xfe", "\\xff\\xfe");               /* never valid */
	expect("\xc3", "\\xc3");                        /* cut short */
	expect("\xc3(", "\\xc3(");
	expect("\xc0\xaf", "\\xc0\\xaf");               /* overlong '/' */
	expect("\xe0\x80\xaf", "\\xe0\\x80\\xaf");      /* overlong */
	expect("\xed\xa0\x80", "\\xed\\xa0\\x80");      /* a surrogate */
	expect("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"); /* above U+10FFFF */
	expect("\xe2\x82", "\\xe2\\x82");
}

static void test_truncation(void **state)
{
	char buf[8];
	(void)state;
	/* "ab" + \x1b needs 2 + 4 + NUL: fits in 8 */
	assert_int_equal(log_escape(buf, sizeof(buf), "ab\x1b" "cd"), 7);
	assert_string_equal(buf, "ab\\x1bc");
	/* an escape that would not fit whole is left out */
	assert_int_equal(log_escape(buf, sizeof(buf), "abcd\x1b"), 4);
	assert_string_equal(buf, "abcd");
	/* so is a character */
	assert_int_equal(log_escape(buf, sizeof(buf), "abcde\xe2\x82\xac"), 5);
	assert_string_equal(buf, "abcde");
	assert_int_equal(log_escape(buf, 1, "abc"), 0);
	assert_string_equal(buf, "");
	assert_int_equal(log_escape(buf, 0, "abc"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_controls),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_truncation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
