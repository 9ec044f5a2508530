/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * Memory across restarts (daemon/diraheadd/persist*.c): mountinfo lines and the keys made of
 * them, the state document's round trip through the policy (export, encode, decode, import,
 * adoption by the first mount), ageing, every kind of bad document refused, mutated documents
 * never crashing nor passing anything out of range, and the file's save and restore against a
 * mount table of the test's own.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "persist.h"

#define SEC 1000000000ull
#define T0 (1000 * SEC)
#define NOW_S 1800000000ll
#define FUSE 0x65735546ull
#define EXT4 0xef53ull

static struct dd_config defaults(void)
{
	return (struct dd_config){
		.depth_per_scan = 64, .depth_total = 128, .policy_enabled = true, .probe_stats = 8,
		.start_factor = 4.0, .entry_cost_us = 10, .gain_stats = 64, .min_gain = 1.3,
		.reprobe_s = 60, .mute_ms = 2000, .depth_min = 4, .max_filesystems = 256,
	};
}

static struct pol_cost gap(double ns) { return (struct pol_cost){ .lat_ns = -1, .gap_ns = ns, .gap_n = 64 }; }

static void test_mountinfo(void **state)
{
	(void)state;
	struct persist_mount m;
	char a[] = "27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard\n";
	assert_int_equal(persist_parse_mountinfo(a, &m), 0);
	assert_int_equal(m.dev_major, 254);
	assert_int_equal(m.dev_minor, 0);
	assert_string_equal(m.fstype, "ext4");
	assert_string_equal(m.source, "/dev/vda");
	assert_string_equal(m.super_opts, "rw,discard");
	assert_string_equal(m.mountpoint, "/");
	char b[] = "90 27 0:55 / /mnt/s rw,nosuid - fuse.slowfs slowfs rw,user_id=0,group_id=0";
	assert_int_equal(persist_parse_mountinfo(b, &m), 0);
	assert_int_equal(m.dev_minor, 55);
	assert_string_equal(m.fstype, "fuse.slowfs");
	char c[] = "90 27 0:55 / /mnt/s rw,nosuid fuse.slowfs slowfs rw"; /* no separator */
	assert_int_equal(persist_parse_mountinfo(c, &m), -1);
	char d[] = "90 27 zz / /mnt/s rw - ext4 /dev/x rw";
	assert_int_equal(persist_parse_mountinfo(d, &m), -1);
	char e[] = "90 27 0:1 / /m rw - ext4 /dev/x"; /* no superblock options */
	assert_int_equal(persist_parse_mountinfo(e, &m), -1);
	char f[] = "";
	assert_int_equal(persist_parse_mountinfo(f, &m), -1);
}

/* A mount point as mountinfo escapes it, undone (the kernel UUID is read from it); a UUID as
 * udev writes it, so that a key read from the kernel is the one udev's gave before. */
static void test_mountpoint_uuid(void **state)
{
	(void)state;
	char out[64], tiny[4];
	assert_int_equal(persist_unescape("/mnt/a\\040b\\134c", out, sizeof(out)), 0);
	assert_string_equal(out, "/mnt/a b\\c");
	assert_int_equal(persist_unescape("/x\\000y", out, sizeof(out)), -1); /* a NUL */
	assert_int_equal(persist_unescape("/mnt/long", tiny, sizeof(tiny)), -1);
	assert_int_equal(persist_unescape("/a\\9", out, sizeof(out)), 0); /* not an escape */
	assert_string_equal(out, "/a\\9");
	const uint8_t u[16] = { 0xa7, 0x66, 0x67, 0x58, 0x30, 0x66, 0x4c, 0x90,
				0x88, 0x6b, 0x73, 0xa1, 0xec, 0x73, 0xac, 0x97 };
	char t[64];
	assert_true(persist_uuid_text(u, 16, t, sizeof(t)));
	assert_string_equal(t, "a7666758-3066-4c90-886b-73a1ec73ac97");
	const uint8_t zero[16] = { 0 };
	assert_false(persist_uuid_text(zero, 16, t, sizeof(t))); /* an image made without one */
	assert_false(persist_uuid_text(u, 8, t, sizeof(t)));
	assert_false(persist_uuid_text(u, 16, t, 36));
}

static void test_key(void **state)
{
	(void)state;
	char key[PERSIST_MAX_KEY], small[16];
	struct persist_mount m = { .dev_major = 254, .mountpoint = "/", .fstype = "ext4",
				   .source = "/dev/vda", .super_opts = "rw,discard" };
	assert_int_equal(persist_key(&m, "0b6f-11aa", key, sizeof(key)), 0);
	assert_string_equal(key, "uuid:ext4:0b6f-11aa");
	/* no UUID: type, source and options, so that a remount with the same ones is the same */
	assert_int_equal(persist_key(&m, NULL, key, sizeof(key)), 0);
	assert_string_equal(key, "mount:ext4 /dev/vda rw,discard");
	assert_int_equal(persist_key(&m, "", key, sizeof(key)), 0);
	assert_string_equal(key, "mount:ext4 /dev/vda rw,discard");
	struct persist_mount n = { .dev_minor = 55, .mountpoint = "/m", .fstype = "fuse.sshfs",
				   .source = "u@h:/srv", .super_opts = "rw,user_id=0" };
	assert_int_equal(persist_key(&n, NULL, key, sizeof(key)), 0);
	assert_string_equal(key, "mount:fuse.sshfs u@h:/srv rw,user_id=0");
	assert_int_equal(persist_key(&n, NULL, small, sizeof(small)), -1);
	/* a user's FUSE fsname with a control character: not remembered */
	struct persist_mount h = { .dev_minor = 56, .mountpoint = "/m", .fstype = "fuse.x",
				   .source = "a\001b", .super_opts = "rw,user_id=1000" };
	assert_int_equal(persist_key(&h, NULL, key, sizeof(key)), -1);
	char big[PERSIST_MAX_KEY + 8];
	memset(big, 'o', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	n.super_opts = big;
	char huge[2 * PERSIST_MAX_KEY];
	assert_int_equal(persist_key(&n, NULL, huge, sizeof(huge)), -1);
}

/* A policy knowing: fuse on 0:55 pays (depth raised), ext4 on 254:0 fast. */
static struct policy *judged_policy(void)
{
	struct dd_config c = defaults();
	struct policy *p = policy_new(&c);
	struct pol_fs *s = policy_fs_mount(p, 0, 55, FUSE, 77, T0);
	struct pol_cost b = gap(100000), a = gap(10000), fast = gap(2000);
	assert_int_equal(policy_on_scan(p, s, &b, T0), POL_PROBE);
	assert_int_equal(policy_after_probe(p, s, &b, T0), POL_START);
	policy_account_cpu(p, s, 40 * 1000 * 256, 256);
	assert_true(policy_judge(p, s, &b, &a, 0.5, false, T0));
	struct pol_fs *e = policy_fs_mount(p, 254, 0, EXT4, 12, T0);
	assert_int_equal(policy_on_scan(p, e, &fast, T0), POL_PROBE);
	assert_int_equal(policy_after_probe(p, e, &fast, T0), POL_SKIP_FAST);
	return p;
}

static void test_round_trip(void **state)
{
	(void)state;
	struct policy *p = judged_policy();
	struct persist_entry e[2] = { { .key = "mount:fuse.slowfs slowfs rw", .seen = NOW_S - 5 },
				      { .key = "uuid:ext4:0b6f", .seen = NOW_S } };
	assert_true(policy_export(policy_fs_mount(p, 0, 55, FUSE, 77, T0 + SEC), T0 + SEC, &e[0].mem));
	assert_true(policy_export(policy_fs_mount(p, 254, 0, EXT4, 12, T0 + SEC), T0 + SEC, &e[1].mem));
	assert_int_equal(e[0].mem.verdict, POL_PAYS);
	assert_int_equal(e[1].mem.verdict, POL_FAST);
	/* a filesystem judged nothing is not worth a line */
	struct pol_memory none;
	assert_false(policy_export(policy_fs_mount(p, 0, 60, FUSE, 1, T0), T0, &none));

	char *text = persist_encode(e, 2, NOW_S);
	assert_non_null(text);
	struct persist_entry *d;
	unsigned n;
	char err[256];
	assert_int_equal(persist_decode(text, strlen(text), NOW_S, 30, &d, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 2);
	assert_string_equal(d[0].key, e[0].key);
	assert_int_equal(d[0].seen, e[0].seen);
	assert_int_equal(d[0].mem.verdict, POL_PAYS);
	assert_int_equal(d[0].mem.depth, e[0].mem.depth);
	assert_true(d[0].mem.cost_ns > 0 && d[0].mem.cost_ns == e[0].mem.cost_ns);
	assert_true(d[0].mem.before_ns == e[0].mem.before_ns);
	assert_int_equal(d[1].mem.verdict, POL_FAST);
	assert_int_equal(d[1].mem.magic, EXT4);

	/* into a new daemon: the filesystem now on 0:70 (another device number), mount 91 */
	struct dd_config c = defaults();
	struct policy *q = policy_new(&c);
	uint64_t t1 = 5 * T0; /* another boot's clock */
	struct pol_fs *r = policy_import(q, 0, 70, &d[0].mem, t1);
	assert_non_null(r);
	assert_non_null(policy_import(q, 254, 3, &d[1].mem, t1));
	/* the first mount of the device the detector reports adopts it */
	struct pol_fs *f = policy_fs_mount(q, 0, 70, FUSE, 91, t1 + SEC);
	assert_ptr_equal(f, r);
	assert_int_equal(f->mnt_id, 91);
	assert_int_equal(f->verdict, POL_PAYS);
	assert_int_equal(policy_depth(q, f), e[0].mem.depth);
	struct pol_cost slow = gap(100000), fast = gap(2000);
	assert_int_equal(policy_on_scan(q, f, &slow, t1 + SEC), POL_START); /* no probe */
	struct pol_fs *x = policy_fs_mount(q, 254, 3, EXT4, 5, t1 + SEC);
	assert_int_equal(policy_on_scan(q, x, &fast, t1 + SEC), POL_SKIP_FAST); /* not probed */
	/* a later new mount of that device is another filesystem again */
	struct pol_fs *g = policy_fs_mount(q, 0, 70, FUSE, 92, t1 + 2 * SEC);
	assert_int_equal(g->verdict, POL_UNKNOWN);

	persist_entries_free(d, n);
	free(text);
	policy_free(p);
	policy_free(q);
}

static void test_no_gain_delay(void **state)
{
	(void)state;
	struct dd_config c = defaults();
	struct policy *p = policy_new(&c);
	struct pol_memory m = { .magic = FUSE, .verdict = POL_NO_GAIN, .backoff = 4, .list_backoff = 1,
				.reprobe_in_ns = 1000000 * SEC, .no_gain_cost_ns = 50000 };
	/* a delay longer than the backoff allows is cut to it (reprobe_s x backoff) */
	struct pol_fs *f = policy_import(p, 0, 9, &m, T0);
	assert_non_null(f);
	assert_int_equal(f->reprobe_ns, T0 + 240 * SEC);
	struct pol_cost same = gap(50000);
	assert_int_equal(policy_on_scan(p, f, &same, T0 + SEC), POL_SKIP_NO_GAIN);
	m.backoff = 3; /* not a power of two */
	assert_null(policy_import(p, 0, 10, &m, T0));
	m.backoff = 1;
	m.before_ns = -1;
	assert_null(policy_import(p, 0, 10, &m, T0));
	policy_free(p);
}

/* The fast verdict's re-judgment backoff (policy_blocked) survives a restart: a daemon restarted
 * often would otherwise arm on the first sleep of every warm filesystem after each start. */
static void test_fast_backoff(void **state)
{
	(void)state;
	struct policy *p = judged_policy();
	struct pol_fs *e = policy_fs_mount(p, 254, 0, EXT4, 12, T0);
	struct pol_cost fast = gap(2000);
	assert_true(policy_blocked(p, 254, 0, EXT4, T0 + SEC));
	assert_int_equal(policy_on_scan(p, e, &fast, T0 + 2 * SEC), POL_PROBE);
	assert_int_equal(policy_after_probe(p, e, &fast, T0 + 2 * SEC), POL_SKIP_FAST);
	assert_int_equal(e->fast_backoff, 2); /* re-judge after 20 s */
	struct persist_entry x = { .key = "uuid:ext4:0b6f", .seen = NOW_S };
	assert_true(policy_export(e, T0 + 7 * SEC, &x.mem));
	assert_int_equal(x.mem.fast_backoff, 2);
	assert_int_equal(x.mem.rejudge_in_ns, 15 * SEC);
	char *text = persist_encode(&x, 1, NOW_S);
	struct persist_entry *d;
	unsigned n;
	char err[256];
	assert_int_equal(persist_decode(text, strlen(text), NOW_S, 30, &d, &n, err, sizeof(err)), 0);
	assert_int_equal(d[0].mem.fast_backoff, 2);
	assert_int_equal(d[0].mem.rejudge_in_ns, 15 * SEC);
	struct dd_config c = defaults();
	struct policy *q = policy_new(&c);
	uint64_t t1 = 5 * T0;
	assert_non_null(policy_import(q, 254, 3, &d[0].mem, t1));
	/* blocked calls within the 15 s left do not re-judge it; arming says fast */
	assert_false(policy_blocked(q, 254, 3, EXT4, t1 + 14 * SEC));
	assert_int_equal(policy_arm_verdict(q, 254, 3, EXT4, t1 + 14 * SEC), POL_ARM_FAST);
	assert_true(policy_blocked(q, 254, 3, EXT4, t1 + 16 * SEC));
	/* a backoff out of range is refused, and one longer than it allows is cut */
	d[0].mem.fast_backoff = 3;
	assert_null(policy_import(q, 254, 4, &d[0].mem, t1));
	d[0].mem.fast_backoff = 128;
	assert_null(policy_import(q, 254, 4, &d[0].mem, t1));
	d[0].mem.fast_backoff = 4;
	d[0].mem.rejudge_in_ns = 3600 * SEC;
	struct pol_fs *g = policy_import(q, 254, 4, &d[0].mem, t1);
	assert_non_null(g);
	assert_int_equal(g->rejudge_after_ns, t1 + 40 * SEC);
	persist_entries_free(d, n);
	free(text);
	policy_free(p);
	policy_free(q);
}

static const char *valid_doc(void)
{
	return "{\"format\":\"dirahead-state\",\"version\":1,\"saved\":1800000000,\"filesystems\":["
	       "{\"key\":\"mount:fuse.slowfs slowfs rw\",\"seen\":1800000000,\"magic\":1702057286,"
	       "\"verdict\":\"pays\",\"depth\":16,\"backoff\":1,\"reprobe_in_s\":0,"
	       "\"no_gain_cost_ns\":0,\"before_ns\":90000.5,\"after_ns\":9000,\"cost_ns\":30000,"
	       "\"pf_lat_ns\":80000,\"listing\":{\"verdict\":\"unknown\",\"backoff\":1,"
	       "\"reprobe_in_s\":0,\"wall_ns\":0,\"cpu_ns\":0,\"first_ns\":0,\"ahead_ns\":0,"
	       "\"own_ns\":0}}]}\n";
}

static int decode(const char *s, unsigned days, unsigned *n)
{
	struct persist_entry *d;
	char err[256];
	int r = persist_decode(s, strlen(s), NOW_S, days, &d, n, err, sizeof(err));
	persist_entries_free(d, *n);
	return r;
}

/* valid_doc() with one substring replaced. */
static int decode_with(const char *from, const char *to)
{
	char buf[4096];
	const char *v = valid_doc(), *at = strstr(v, from);
	unsigned n;
	assert_non_null(at);
	snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - v), v, to, at + strlen(from));
	return decode(buf, 30, &n);
}

static void test_refused(void **state)
{
	(void)state;
	unsigned n;
	assert_int_equal(decode(valid_doc(), 30, &n), 0);
	assert_int_equal(n, 1);
	/* aged out: not used for longer than remember_days */
	assert_int_equal(decode_with("\"seen\":1800000000", "\"seen\":1700000000"), 0);
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", valid_doc());
	assert_int_equal(decode(buf, 30, &n), 0);
	const char *swap[][2] = {
		{ "\"version\":1", "\"version\":2" },
		{ "\"version\":1", "\"version\":\"1\"" },
		{ "dirahead-state", "other-state" },
		{ "\"pays\"", "\"great\"" },
		{ "\"depth\":16", "\"depth\":-1" },
		{ "\"depth\":16", "\"depth\":99999999" },
		{ "\"backoff\":1,\"r", "\"backoff\":3,\"r" },
		{ "\"before_ns\":90000.5", "\"before_ns\":1e300" },
		{ "\"before_ns\":90000.5", "\"before_ns\":NaN" },
		{ "\"before_ns\":90000.5", "\"before_ns\":-5" },
		{ "\"cost_ns\":30000,", "" },
		{ "\"magic\":1702057286", "\"magic\":0" },
		{ "\"magic\":1702057286", "\"magic\":99999999999999" },
		{ "\"seen\":1800000000", "\"seen\":1900000000" },
		{ "mount:fuse", "disk:fuse" },
		{ "mount:fuse.slowfs slowfs rw", "" },
		{ "mount:fuse.slowfs", "mount:fuse\\u0000x" },
		{ "mount:fuse.slowfs", "mount:fuse\\nx" },
		{ "\"listing\":{", "\"listing\":[{" },
		{ "}}]}", "}}]}}" },
		{ "}}]}", "}}]},{}" },
		{ "\"filesystems\":[", "\"filesystems\":{\"a\":" },
		{ "\"pf_lat_ns\"", "\"fast_backoff\":3,\"rejudge_in_s\":1,\"pf_lat_ns\"" },
		{ "\"pf_lat_ns\"", "\"fast_backoff\":128,\"rejudge_in_s\":1,\"pf_lat_ns\"" },
		{ "\"pf_lat_ns\"", "\"fast_backoff\":4,\"pf_lat_ns\"" },
		{ "\"pf_lat_ns\"", "\"rejudge_in_s\":1,\"pf_lat_ns\"" },
		{ "\"pf_lat_ns\"", "\"fast_backoff\":4,\"rejudge_in_s\":-1,\"pf_lat_ns\"" },
	};
	for (size_t i = 0; i < sizeof(swap) / sizeof(swap[0]); i++)
		if (decode_with(swap[i][0], swap[i][1]) != -1)
			fail_msg("accepted with %s -> %s", swap[i][0], swap[i][1]);
	assert_int_equal(decode("", 30, &n), -1);
	assert_int_equal(decode("null", 30, &n), -1);
	assert_int_equal(decode("[]", 30, &n), -1);
	/* too many entries */
	size_t cap = 64 + (PERSIST_MAX_ENTRIES + 1) * 8;
	char *many = malloc(cap);
	size_t off = (size_t)snprintf(many, cap, "{\"format\":\"dirahead-state\",\"version\":1,"
					   "\"saved\":0,\"filesystems\":[");
	for (int i = 0; i <= PERSIST_MAX_ENTRIES; i++)
		off += (size_t)snprintf(many + off, cap - off, "%s{}", i ? "," : "");
	snprintf(many + off, cap - off, "]}");
	assert_int_equal(decode(many, 30, &n), -1);
	free(many);
}

/* PERSIST_MAX_ENTRIES entries with the longest keys, quotes and backslashes in them (escaped
 * twice as long): written, then read back whole. */
static void test_largest(void **state)
{
	(void)state;
	struct persist_entry *e = calloc(PERSIST_MAX_ENTRIES, sizeof(*e));
	assert_non_null(e);
	for (unsigned i = 0; i < PERSIST_MAX_ENTRIES; i++) {
		e[i].key = malloc(PERSIST_MAX_KEY);
		int n = snprintf(e[i].key, PERSIST_MAX_KEY, "mount:fuse.x %u ", i);
		memset(e[i].key + n, i % 2 ? '"' : '\\', PERSIST_MAX_KEY - 1 - (size_t)n);
		e[i].key[PERSIST_MAX_KEY - 1] = '\0';
		e[i].seen = NOW_S;
		e[i].mem = (struct pol_memory){ .magic = FUSE, .verdict = POL_PAYS, .backoff = 16,
						.list_backoff = 16, .before_ns = 3599e9 / 7,
						.after_ns = 1e9 / 3, .reprobe_in_ns = 86400 * SEC };
	}
	char *text = persist_encode(e, PERSIST_MAX_ENTRIES, NOW_S);
	assert_non_null(text);
	assert_true(strlen(text) <= PERSIST_MAX_FILE);
	struct persist_entry *d;
	unsigned n;
	char err[256];
	assert_int_equal(persist_decode(text, strlen(text), NOW_S, 30, &d, &n, err, sizeof(err)), 0);
	assert_int_equal(n, PERSIST_MAX_ENTRIES);
	assert_string_equal(d[7].key, e[7].key);
	persist_entries_free(d, n);
	persist_entries_free(e, PERSIST_MAX_ENTRIES);
	free(text);
}

/* Mutations of a valid document (flips, truncations, insertions, deletions): never a crash,
 * and whatever is accepted passes the policy's own range checks. */
static void test_fuzz(void **state)
{
	(void)state;
	const char *v = valid_doc();
	size_t len = strlen(v);
	char buf[8192];
	unsigned seed = 12345, accepted = 0;
	static const char bytes[] = "{}[]\",:0123456789-.eE \\u\nabcxyz\x01\xff";
	for (int it = 0; it < 200000; it++) {
		memcpy(buf, v, len + 1);
		size_t n = len;
		int muts = 1 + rand_r(&seed) % 4;
		for (int k = 0; k < muts && n > 0; k++) {
			size_t at = (size_t)rand_r(&seed) % n;
			char ch = bytes[rand_r(&seed) % (sizeof(bytes) - 1)];
			switch (rand_r(&seed) % 4) {
			case 0: buf[at] = ch; break;
			case 1: n = at; buf[n] = '\0'; break;
			case 2:
				if (n + 1 < sizeof(buf)) {
					memmove(buf + at + 1, buf + at, n - at + 1);
					buf[at] = ch;
					n++;
				}
				break;
			default: memmove(buf + at, buf + at + 1, n - at); n--; break;
			}
		}
		struct persist_entry *d;
		unsigned cnt;
		char err[256];
		if (persist_decode(buf, n, NOW_S, 30, &d, &cnt, err, sizeof(err)) == 0) {
			accepted++;
			for (unsigned i = 0; i < cnt; i++) {
				assert_true(policy_memory_valid(&d[i].mem));
				assert_true(strlen(d[i].key) < PERSIST_MAX_KEY);
			}
			persist_entries_free(d, cnt);
		} else {
			assert_null(d);
			assert_int_equal(cnt, 0);
			assert_true(err[0] != '\0');
		}
	}
	assert_true(accepted > 0); /* some mutations are harmless (spaces, digits) */
}

static char dir[] = "/tmp/test_persist.XXXXXX";

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_save_restore(void **state)
{
	(void)state;
	char mi[256], st[256];
	assert_non_null(mkdtemp(dir));
	snprintf(mi, sizeof(mi), "%s/mountinfo", dir);
	snprintf(st, sizeof(st), "%s/state/state.json", dir);
	write_file(mi, "27 1 254:0 / / rw - ext4 /dev/vda rw\n"
		       "90 27 0:55 / /mnt/s rw - fuse.slowfs slowfs rw,user_id=0\n");
	char sd[256];
	snprintf(sd, sizeof(sd), "%s/state", dir);
	struct persist *ps = persist_new(sd, mi, 30);
	struct policy *p = judged_policy();
	assert_int_equal(persist_save(ps, p, T0 + SEC, false), 1);
	assert_int_equal(access(st, R_OK), 0);
	/* nothing changed: not written again; forced: written */
	assert_int_equal(persist_save(ps, p, T0 + 2 * SEC, false), 0);
	assert_int_equal(persist_save(ps, p, T0 + 2 * SEC, true), 1);
	persist_free(ps);

	/* the slowfs remounted on another device number: known by its key */
	write_file(mi, "27 1 254:0 / / rw - ext4 /dev/vda rw\n"
		       "95 27 0:61 / /mnt/t rw - fuse.slowfs slowfs rw,user_id=0\n"
		       "96 27 0:61 / /mnt/u rw - fuse.slowfs slowfs rw,user_id=0\n");
	struct dd_config c = defaults();
	struct policy *q = policy_new(&c);
	ps = persist_new(sd, mi, 30);
	assert_int_equal(persist_restore(ps, q, 3 * T0), 2);
	assert_int_equal(policy_fs_mount(q, 0, 61, FUSE, 400, 3 * T0)->verdict, POL_PAYS);
	assert_int_equal(policy_fs_mount(q, 254, 0, EXT4, 401, 3 * T0)->verdict, POL_FAST);
	/* unmounted meanwhile: still kept in the file for when it comes back */
	write_file(mi, "27 1 254:0 / / rw - ext4 /dev/vda rw\n");
	assert_int_equal(persist_save(ps, q, 3 * T0, true), 1);
	persist_free(ps);
	policy_free(q);
	q = policy_new(&c);
	write_file(mi, "97 27 0:62 / /mnt/t rw - fuse.slowfs slowfs rw,user_id=0\n");
	ps = persist_new(sd, mi, 30);
	assert_int_equal(persist_restore(ps, q, 4 * T0), 1);
	persist_free(ps);
	policy_free(q);

	/* corrupt, truncated, a directory: nothing restored, no crash */
	q = policy_new(&c);
	write_file(st, "{\"format\":\"dirahead-state\",\"vers");
	ps = persist_new(sd, mi, 30);
	assert_int_equal(persist_restore(ps, q, 4 * T0), 0);
	persist_free(ps);
	/* remember_days = 0: neither read nor written */
	ps = persist_new(sd, mi, 0);
	assert_int_equal(persist_save(ps, p, T0, true), 0);
	persist_free(ps);
	unlink(st);
	assert_int_equal(mkdir(st, 0700), 0);
	ps = persist_new(sd, mi, 30);
	assert_int_equal(persist_restore(ps, q, 4 * T0), 0);
	assert_int_equal(persist_save(ps, p, T0, true), -1); /* cannot replace a directory */
	persist_free(ps);
	rmdir(st);
	policy_free(q);
	policy_free(p);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_dir(void **state)
{
	(void)state;
	unsetenv("STATE_DIRECTORY");
	assert_null(persist_dir(""));
	assert_string_equal(persist_dir("/var/lib/dirahead"), "/var/lib/dirahead");
	setenv("STATE_DIRECTORY", "/var/lib/x:/var/lib/y", 1);
	assert_string_equal(persist_dir("/var/lib/dirahead"), "/var/lib/x");
	assert_null(persist_dir("")); /* off is off */
	setenv("STATE_DIRECTORY", "relative", 1);
	assert_string_equal(persist_dir("/var/lib/dirahead"), "/var/lib/dirahead");
	unsetenv("STATE_DIRECTORY");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mountinfo),
		cmocka_unit_test(test_key),
		cmocka_unit_test(test_mountpoint_uuid),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_no_gain_delay),
		cmocka_unit_test(test_fast_backoff),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_largest),
		cmocka_unit_test(test_fuzz),
		cmocka_unit_test(test_save_restore),
		cmocka_unit_test(test_dir),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
