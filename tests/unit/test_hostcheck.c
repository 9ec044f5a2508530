/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * The metrics endpoint's Host check (daemon/diraheadd/hostcheck.c), against DNS rebinding: a
 * request is answered only under the address it arrived on, localhost, 127.0.0.1 or [::1], or a
 * name of [metrics] allowed_hosts, each with the port it arrived on (80 when none is written);
 * unix-socket requests always.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/un.h>

#include "hostcheck.h"

static struct sockaddr_storage v4(const char *ip, unsigned port)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *s = (struct sockaddr_in *)&ss;
	memset(&ss, 0, sizeof(ss));
	s->sin_family = AF_INET;
	s->sin_port = htons((uint16_t)port);
	assert_int_equal(inet_pton(AF_INET, ip, &s->sin_addr), 1);
	return ss;
}

static struct sockaddr_storage v6(const char *ip, unsigned port)
{
	struct sockaddr_storage ss;
	struct sockaddr_in6 *s = (struct sockaddr_in6 *)&ss;
	memset(&ss, 0, sizeof(ss));
	s->sin6_family = AF_INET6;
	s->sin6_port = htons((uint16_t)port);
	assert_int_equal(inet_pton(AF_INET6, ip, &s->sin6_addr), 1);
	return ss;
}

#define OK(host, ss, extra) assert_true(dd_host_allowed(host, (struct sockaddr *)&(ss), extra))
#define NO(host, ss, extra) assert_false(dd_host_allowed(host, (struct sockaddr *)&(ss), extra))

static void test_parse(void **state)
{
	struct dd_host h;
	(void)state;
	assert_int_equal(dd_host_parse("localhost:9567", &h), 0);
	assert_string_equal(h.name, "localhost");
	assert_int_equal(h.port, 9567);
	assert_int_equal(dd_host_parse("[::1]:80", &h), 0);
	assert_string_equal(h.name, "::1");
	assert_true(h.ipv6);
	assert_int_equal(dd_host_parse("example.org", &h), 0);
	assert_int_equal(h.port, 0);
	assert_int_equal(dd_host_parse("example.org:", &h), 0); /* empty port: the default */
	assert_int_equal(h.port, 0);
	static const char *bad[] = { "", ":80", "a:b", "a:0", "a:65536", "a:123456", "a:80:80",
				     "user@host", "a b", "[::1", "[::1]x", "[1.2.3.4]", "[]",
				     "[fe80::1%25eth0]:80", "h\x1b", "a/b" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(dd_host_parse(bad[i], &h), -1);
}

static void test_loopback_v4(void **state)
{
	struct sockaddr_storage l = v4("127.0.0.1", 9567);
	(void)state;
	OK("127.0.0.1:9567", l, NULL);
	OK("localhost:9567", l, NULL);
	OK("LocalHost:9567", l, NULL);
	OK("[::1]:9567", l, NULL);
	NO(NULL, l, NULL); /* no Host over TCP: refused (a parser may have read it otherwise) */
	NO("evil.example:9567", l, NULL);
	NO("localhost.:9567", l, NULL);
	NO("127.0.0.2:9567", l, NULL);
	NO("127.1:9567", l, NULL);
	NO("localhost:9568", l, NULL);
	NO("localhost", l, NULL);       /* port 80 */
	NO("localhost:", l, NULL);
	NO("", l, NULL);
	NO("localhost:9567 ", l, NULL);
	struct sockaddr_storage l80 = v4("127.0.0.1", 80);
	OK("localhost", l80, NULL);
	OK("127.0.0.1:80", l80, NULL);
}

static void test_listen_address(void **state)
{
	struct sockaddr_storage a = v4("192.0.2.7", 9567), b = v6("2001:db8::7", 9567),
				m = v6("::ffff:192.0.2.7", 9567);
	(void)state;
	OK("192.0.2.7:9567", a, NULL);
	NO("192.0.2.8:9567", a, NULL);
	OK("localhost:9567", a, NULL);
	OK("[2001:db8::7]:9567", b, NULL);
	OK("[2001:DB8:0::7]:9567", b, NULL);
	NO("[2001:db8::8]:9567", b, NULL);
	OK("[::1]:9567", b, NULL);
	OK("127.0.0.1:9567", b, NULL);
	OK("192.0.2.7:9567", m, NULL); /* IPv4 client of a dual-stack listener */
	NO("192.0.2.8:9567", m, NULL);
	NO("myhost.example:9567", a, NULL);
}

static void test_allowed_hosts(void **state)
{
	char n1[] = "myhost.example", n2[] = "proxy.example:8080", n3[] = "[2001:db8::9]";
	struct dd_strlist extra = { 3, { n1, n2, n3 } };
	struct sockaddr_storage a = v4("0.0.0.0", 9567);
	(void)state;
	OK("myhost.example:9567", a, &extra);
	OK("MYHOST.example:9567", a, &extra);
	NO("myhost.example:9568", a, &extra);
	NO("myhost.example", a, &extra);
	OK("proxy.example:8080", a, &extra);
	NO("proxy.example:9567", a, &extra);
	OK("[2001:db8::9]:9567", a, &extra);
	NO("other.example:9567", a, &extra);
}

static void test_unix(void **state)
{
	struct sockaddr_un u = { .sun_family = AF_UNIX };
	(void)state;
	assert_true(dd_host_allowed("anything:1", (struct sockaddr *)&u, NULL));
	assert_true(dd_host_allowed(NULL, (struct sockaddr *)&u, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_loopback_v4),
		cmocka_unit_test(test_listen_address),
		cmocka_unit_test(test_allowed_hosts),
		cmocka_unit_test(test_unix),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
