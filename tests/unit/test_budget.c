/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * The request budget (daemon/diraheadd/budget.c), driven directly: rules as the config gives
 * them, the token bucket with its own clock, the matching by type, source and path, one bucket
 * per filesystem and rule, and the mount facts read from a mountinfo file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "budget.h"

#define SEC 1000000000ull
#define T0 (1000 * SEC)

static struct budget_rule rule(const char *text)
{
	struct budget_rule r;
	char why[256] = "";
	int rc = budget_rule_parse(text, &r, why, sizeof(why));
	if (rc)
		fail_msg("'%s': %s", text, why);
	return r;
}

static void test_parse(void **state)
{
	(void)state;
	struct budget_rule r = rule("fstype:fuse.rclone 50");
	assert_int_equal(r.sel, BUDGET_FSTYPE);
	assert_string_equal(r.pattern, "fuse.rclone");
	assert_true(r.rate == 50 && r.burst == 50);   /* a second's worth */
	r = rule("source:b2:* 2.5 10");
	assert_int_equal(r.sel, BUDGET_SOURCE);
	assert_string_equal(r.pattern, "b2:*");        /* the first colon ends the selector */
	assert_true(r.rate == 2.5 && r.burst == 10);
	r = rule("path:/mnt/b2   0.5");
	assert_int_equal(r.sel, BUDGET_PATH);
	assert_true(r.rate == 0.5 && r.burst == 1);     /* never less than one request */
}

static void bad(const char *text, const char *words)
{
	struct budget_rule r;
	char why[256] = "";
	assert_int_equal(budget_rule_parse(text, &r, why, sizeof(why)), -1);
	if (!strstr(why, words))
		fail_msg("'%s': error '%s' does not say '%s'", text, why, words);
}

static void test_parse_errors(void **state)
{
	(void)state;
	bad("fstype:fuse -5", "rate '-5'");
	bad("fstype:fuse 0", "rate '0'");
	bad("fstype:fuse lots", "rate 'lots'");
	bad("fstype:fuse 1e9", "rate '1e9'");
	bad("fstype:fuse 10 0.5", "burst '0.5'");
	bad("fstype:fuse 10 -1", "burst '-1'");
	bad("device:8:1 10", "unknown selector 'device'");
	bad("fuse 10", "unknown selector 'fuse'");
	bad("fstype: 10", "empty");
	bad("path:relative/dir 10", "not an absolute path");
	bad("fstype:fuse", "SELECTOR:PATTERN RATE");
	bad("fstype:fuse 1 2 3", "SELECTOR:PATTERN RATE");
}

static void test_bucket(void **state)
{
	(void)state;
	struct budget_rule r = rule("fstype:x 100 20");
	struct budget_bucket b = { 0 };
	assert_int_equal(budget_bucket_take(&b, &r, 64, T0), 20);      /* the burst, at once */
	assert_int_equal(budget_bucket_take(&b, &r, 64, T0), 0);       /* then nothing */
	assert_int_equal(budget_bucket_take(&b, &r, 64, T0 + SEC / 10), 10); /* 100/s for 0.1 s */
	assert_int_equal(budget_bucket_take(&b, &r, 3, T0 + SEC / 5), 3);    /* asked for less */
	assert_int_equal(budget_bucket_take(&b, &r, 64, T0 + SEC / 5), 7);   /* the rest of 0.1 s */
	/* idle for long: full again, never above the burst */
	assert_int_equal(budget_bucket_take(&b, &r, 1000, T0 + 100 * SEC), 20);
	/* fractions add up: 0.5 requests per 5 ms call of a 100/s rule, one every other call */
	uint64_t t = T0 + 100 * SEC, got = 0;
	for (int i = 1; i <= 200; i++)
		got += budget_bucket_take(&b, &r, 1000, t + (uint64_t)i * SEC / 200);
	assert_int_equal(got, 100);
	/* whatever the callers do, what a bucket grants over a span is at most burst + rate x span */
	struct budget_bucket c = { 0 };
	got = 0;
	for (uint64_t ns = 0; ns <= 3 * SEC; ns += 7 * SEC / 1000)
		got += budget_bucket_take(&c, &r, 13, T0 + ns);
	assert_true(got <= 20 + 300);
	assert_true(got >= 300 - 2);
}

static struct dd_strlist lines(int n, const char **v)
{
	struct dd_strlist l = { .n = n };
	for (int i = 0; i < n; i++)
		l.v[i] = (char *)v[i];
	return l;
}

static void test_match(void **state)
{
	(void)state;
	struct budget_rule rs[] = { rule("path:/srv/cold 5"), rule("fstype:fuse.rclone 50"),
				    rule("source:nas:/export/* 20"), rule("fstype:nfs* 100") };
	struct budget_fs rclone = { .fstype = "fuse.rclone", .magic_name = "fuse",
				    .source = "b2:bucket", .path = "/mnt/b2/photos" };
	assert_int_equal(budget_match(rs, 4, &rclone), 1);
	struct budget_fs nfs = { .fstype = "nfs4", .magic_name = "nfs", .source = "nas:/export/home",
				 .path = "/home/u" };
	assert_int_equal(budget_match(rs, 4, &nfs), 2);      /* the first that matches wins */
	nfs.path = "/srv/cold/x";
	assert_int_equal(budget_match(rs, 4, &nfs), 0);
	nfs.path = "/srv/colder";                           /* a prefix ends at a slash */
	assert_int_equal(budget_match(rs, 4, &nfs), 2);
	struct budget_fs ext4 = { .fstype = "ext4", .magic_name = "ext4", .source = "/dev/sda1",
				  .path = "/srv" };
	assert_int_equal(budget_match(rs, 4, &ext4), -1);
	/* the superblock's name selects too: fuse covers every FUSE mount */
	struct budget_rule fuse = rule("fstype:fuse 10");
	assert_int_equal(budget_match(&fuse, 1, &rclone), 0);
	/* nothing known of the mount: only a path rule can match */
	struct budget_fs bare = { .path = "/srv/cold" };
	assert_int_equal(budget_match(rs, 4, &bare), 0);
	bare.path = NULL;
	assert_int_equal(budget_match(rs, 4, &bare), -1);
	assert_false(budget_needs_mount(rs, 1));
	assert_true(budget_needs_mount(rs, 2));
}

/* A fake mountinfo: 0:50 is rclone, 0:51 slowfs; anything else unknown.  Counts its calls. */
static int lookups;
static bool fake_lookup(void *ctx, uint32_t major, uint32_t minor, char *fstype, size_t tlen,
			char *source, size_t slen)
{
	(void)ctx;
	lookups++;
	if (major != 0 || (minor != 50 && minor != 51))
		return false;
	snprintf(fstype, tlen, "%s", minor == 50 ? "fuse.rclone" : "fuse.slowfs");
	snprintf(source, slen, "%s", minor == 50 ? "b2:bucket" : "slowfs");
	return true;
}

static void test_grant(void **state)
{
	(void)state;
	const char *v[] = { "fstype:fuse.rclone 100 10", "path:/srv/cold 1" };
	struct dd_strlist l = lines(2, v);
	lookups = 0;
	struct budget *b = budget_new(&l, fake_lookup, NULL);
	assert_non_null(b);
	assert_false(budget_empty(b));
	bool ruled;
	struct budget_fs a = { .dev_major = 0, .dev_minor = 50, .magic_name = "fuse", .path = "/mnt/a" };
	struct budget_fs a2 = { .dev_major = 0, .dev_minor = 50, .magic_name = "fuse", .path = "/mnt/a/sub" };
	struct budget_fs other = { .dev_major = 0, .dev_minor = 51, .magic_name = "fuse", .path = "/mnt/s" };
	assert_int_equal(budget_grant(b, &a, 64, T0, &ruled), 10);
	assert_true(ruled);
	/* one bucket per filesystem: another directory there shares it */
	assert_int_equal(budget_grant(b, &a2, 64, T0, &ruled), 0);
	assert_true(ruled);
	/* a filesystem under no rule gets what it asks for */
	assert_int_equal(budget_grant(b, &other, 64, T0, &ruled), 64);
	assert_false(ruled);
	assert_int_equal(lookups, 2);                        /* once per device */
	assert_int_equal(budget_grant(b, &a, 64, T0 + SEC / 20, &ruled), 5);
	assert_int_equal(lookups, 2);
	/* the same rule on another filesystem of that type: a bucket of its own */
	struct budget_fs ext = { .dev_major = 8, .dev_minor = 1, .magic_name = "ext4", .path = "/srv/cold/x" };
	assert_int_equal(budget_grant(b, &ext, 64, T0, &ruled), 1);
	assert_true(ruled);
	assert_int_equal(budget_grant(b, &ext, 64, T0 + SEC / 2, &ruled), 0);
	assert_int_equal(budget_grant(b, &ext, 64, T0 + SEC, &ruled), 1);
	assert_int_equal(budget_grant(b, &a, 0, T0, &ruled), 0);
	/* what walks ask: does a rule hold it (no tokens taken) */
	assert_true(budget_holds(b, &a));
	assert_true(budget_holds(b, &ext));
	assert_false(budget_holds(b, &other));
	assert_int_equal(budget_grant(b, &ext, 64, T0 + 2 * SEC, &ruled), 1);
	budget_free(b);
	/* no rules: nothing is looked up, everything goes */
	struct dd_strlist none = { 0 };
	lookups = 0;
	b = budget_new(&none, fake_lookup, NULL);
	assert_true(budget_empty(b));
	assert_int_equal(budget_grant(b, &a, 64, T0, &ruled), 64);
	assert_false(ruled);
	assert_false(budget_holds(b, &a));
	assert_int_equal(lookups, 0);
	budget_free(b);
	/* many filesystems: buckets are reused, the least recently used first */
	const char *any[] = { "path:/ 10 1" };
	l = lines(1, any);
	b = budget_new(&l, NULL, NULL);
	for (uint32_t i = 0; i < 1000; i++) {
		struct budget_fs f = { .dev_major = 9, .dev_minor = i, .path = "/x" };
		assert_int_equal(budget_grant(b, &f, 5, T0, &ruled), 1);
	}
	struct budget_fs f999 = { .dev_major = 9, .dev_minor = 999, .path = "/x" };
	assert_int_equal(budget_grant(b, &f999, 5, T0, &ruled), 0); /* still its own bucket */
	budget_free(b);
}

static void test_mount_facts(void **state)
{
	(void)state;
	char path[] = "/tmp/test_budget_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fputs("22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
	      "90 22 0:50 / /mnt/b2 rw,nosuid,nodev shared:40 - fuse.rclone b2:bucket rw,user_id=0\n"
	      "garbage line\n", f);
	fclose(f);
	char type[64], src[256];
	assert_true(budget_mount_facts(path, 0, 50, type, sizeof(type), src, sizeof(src)));
	assert_string_equal(type, "fuse.rclone");
	assert_string_equal(src, "b2:bucket");
	assert_true(budget_mount_facts(path, 8, 1, type, sizeof(type), src, sizeof(src)));
	assert_string_equal(type, "ext4");
	assert_false(budget_mount_facts(path, 0, 99, type, sizeof(type), src, sizeof(src)));
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),       cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_bucket),      cmocka_unit_test(test_match),
		cmocka_unit_test(test_grant),       cmocka_unit_test(test_mount_facts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
