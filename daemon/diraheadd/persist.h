/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * Memory across restarts: the cost model's per-filesystem judgments (policy.h pol_memory) saved
 * to STATE_DIR/state.json and restored at start, so that a restarted daemon neither probes again a
 * filesystem where prefetch was found to pay nor one found fast.
 *
 * A filesystem is known by what survives remounts and reboots, never by its device number:
 *   uuid:FSTYPE:UUID           a block device's filesystem UUID, from the kernel
 *                              (FS_IOC_GETFSUUID on its mount point, Linux 6.5 and later) or
 *                              else as udev recorded it (/run/udev/data/bMAJ:MIN; the unit's
 *                              PrivateDevices= hides /dev).  Without either, loop devices and
 *                              machines without udev named every image attached in turn to
 *                              /dev/loop0 one filesystem: a slow volume inherited a fast one's
 *                              verdict.
 *   mount:FSTYPE SOURCE OPTS   anything else (network, FUSE, tmpfs): type, source and superblock
 *                              options from the host's mountinfo (PID 1's: the unit's own mount
 *                              namespace is a copy)
 * The file is a small versioned JSON document written atomically (temp file, fsync, rename), at
 * most every PERSIST_INTERVAL_S while scans run and at stop; entries not used for remember_days
 * are dropped.  A file that is not exactly what this version writes (syntax, version, any field
 * out of range, too big) is ignored with one warning: the daemon then starts knowing nothing.
 */
#ifndef DIRAHEAD_PERSIST_H
#define DIRAHEAD_PERSIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "policy.h"

#define PERSIST_VERSION 1
#define PERSIST_INTERVAL_S 30
#define PERSIST_MAX_ENTRIES 1024
#define PERSIST_MAX_KEY 1024
/* What PERSIST_MAX_ENTRIES of the longest keys (escaped) with their figures take, and more:
 * whatever this version writes, it reads back. */
#define PERSIST_MAX_FILE (4 * 1024 * 1024)

/* One line of mountinfo, the fields a key is made of (pointers into the parsed line). */
struct persist_mount {
	uint32_t dev_major, dev_minor;
	const char *mountpoint;     /* as mountinfo escapes it (\040 for a space) */
	const char *fstype, *source, *super_opts;
};
/* Parses a mountinfo line in place: 0, or -1 if malformed. */
int persist_parse_mountinfo(char *line, struct persist_mount *m);
/* A mountinfo field (a mount point) with its \ooo escapes undone into out: 0, or -1 if it does
 * not fit or holds a NUL. */
int persist_unescape(const char *in, char *out, size_t len);
/* A filesystem UUID of n bytes as udev writes it (8-4-4-4-12, lower case) into out; false if
 * it is not 16 bytes or all zero (no UUID at all). */
bool persist_uuid_text(const uint8_t *u, unsigned n, char *out, size_t len);
/* The filesystem's key into out; uuid: NULL or "" if none is known.  -1 if it does not fit or
 * holds a control character (such a filesystem is not remembered). */
int persist_key(const struct persist_mount *m, const char *uuid, char *out, size_t len);

struct persist_entry {
	char *key;
	int64_t seen;          /* CLOCK_REALTIME seconds it was last used */
	struct pol_memory mem;
};
/* The document for n entries, malloc'ed (NULL: out of memory). */
char *persist_encode(const struct persist_entry *e, unsigned n, int64_t now_s);
/* Parses and validates a document: the entries (malloc'ed, persist_entries_free) used within
 * remember_days of now_s, their count in *n; -1 with err filled if anything is wrong. */
int persist_decode(const char *text, size_t len, int64_t now_s, unsigned remember_days,
		   struct persist_entry **out, unsigned *n, char *err, size_t errlen);
void persist_entries_free(struct persist_entry *e, unsigned n);

/* The state directory: $STATE_DIRECTORY (its first path) when systemd set it, else cfg_dir;
 * NULL if persistence is off (cfg_dir empty). */
const char *persist_dir(const char *cfg_dir);

struct persist;
/* mountinfo: the host's mount table (e.g. /proc/1/mountinfo). */
struct persist *persist_new(const char *dir, const char *mountinfo, unsigned remember_days);
void persist_free(struct persist *ps);
void persist_set_days(struct persist *ps, unsigned remember_days);
/* Reads the file and gives the policy what it knew about the filesystems mounted now: their
 * number (0 if none or no file; a bad file is warned about and counts 0). */
unsigned persist_restore(struct persist *ps, struct policy *p, uint64_t now);
/* Writes what the policy knows now, if it changed since the last write (force: even if not).
 * 0, 1 if written, -1 on error (warned once per kind of error). */
int persist_save(struct persist *ps, struct policy *p, uint64_t now, bool force);

#endif
