/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * Memory across restarts (persist.h): the host's mount table turned into filesystem keys, the
 * state file read at start and written atomically when the memory changed.  Every file it reads
 * is local (procfs, udev's tmpfs, the state directory): nothing here waits on a program's
 * filesystem.
 */
#include "persist.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "log.h"
#include "monoclock.h"

#define STATE_FILE "state.json"
#define UDEV_DATA "/run/udev/data"
#define MAX_UUID 128

struct persist {
	char *dir, *path, *tmp, *mountinfo;
	unsigned days;
	struct persist_entry *known; /* what the file held or the last write wrote */
	unsigned nknown;
	char *sig;                   /* what the last write was made of (persist_save) */
	int warned;                  /* errno of the last write error warned about */
};

/* A device and the key of the filesystem on it. */
struct mnt_key {
	uint32_t major, minor;
	char *key;
};

const char *persist_dir(const char *cfg_dir)
{
	static char env[4096];
	if (!cfg_dir || !cfg_dir[0])
		return NULL;
	const char *s = getenv("STATE_DIRECTORY");
	if (s && s[0] == '/' && strlen(s) < sizeof(env)) {
		strcpy(env, s);
		env[strcspn(env, ":")] = '\0'; /* several StateDirectory= paths: the first */
		return env;
	}
	return cfg_dir;
}

static char *path_join(const char *dir, const char *name)
{
	char *p;
	return asprintf(&p, "%s/%s", dir, name) < 0 ? NULL : p;
}

struct persist *persist_new(const char *dir, const char *mountinfo, unsigned remember_days)
{
	struct persist *ps = calloc(1, sizeof(*ps));
	if (!ps)
		return NULL;
	ps->dir = strdup(dir);
	ps->path = path_join(dir, STATE_FILE);
	ps->tmp = path_join(dir, STATE_FILE ".tmp");
	ps->mountinfo = strdup(mountinfo);
	ps->days = remember_days;
	if (!ps->dir || !ps->path || !ps->tmp || !ps->mountinfo) {
		persist_free(ps);
		return NULL;
	}
	return ps;
}

void persist_free(struct persist *ps)
{
	if (!ps)
		return;
	persist_entries_free(ps->known, ps->nknown);
	free(ps->dir);
	free(ps->path);
	free(ps->tmp);
	free(ps->mountinfo);
	free(ps->sig);
	free(ps);
}

void persist_set_days(struct persist *ps, unsigned remember_days)
{
	ps->days = remember_days;
}

/* udev's record of a block device's filesystem UUID into out, or "". */
static void udev_uuid(uint32_t major, uint32_t minor, char out[MAX_UUID])
{
	char path[64], line[512];
	out[0] = '\0';
	snprintf(path, sizeof(path), UDEV_DATA "/b%u:%u", major, minor);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "E:ID_FS_UUID=", 13))
			continue;
		char *v = line + 13;
		size_t n = strspn(v, "0123456789abcdefABCDEF-");
		if (n && n < MAX_UUID && (v[n] == '\n' || !v[n])) {
			memcpy(out, v, n);
			out[n] = '\0';
		}
		break;
	}
	fclose(f);
}

#ifndef FS_IOC_GETFSUUID /* Linux 6.5 */
struct fsuuid2 {
	uint8_t len;
	uint8_t uuid[16];
};
#define FS_IOC_GETFSUUID _IOR(0x15, 0, struct fsuuid2)
#endif

/* The filesystem UUID the kernel knows for the filesystem of M, mounted at its mount point below
 * ROOT (an O_PATH descriptor of PID 1's root, or of ours), into out, or "".  Resolved from the
 * dentry cache alone (RESOLVE_CACHED: a mount point is always there), so that a hung filesystem
 * above it never blocks the daemon; what it opens must be M's device (our root may not be PID
 * 1's: a container given the host's /proc); the descriptor is closed at once. */
static void kernel_uuid(int root, const struct persist_mount *m, char out[MAX_UUID])
{
	char path[PATH_MAX];
	struct fsuuid2 u = { 0 };
	struct stat st;
	out[0] = '\0';
	if (root < 0 || persist_unescape(m->mountpoint, path, sizeof(path)) < 0)
		return;
	const char *rel = path + strspn(path, "/");
	struct open_how how = {
		.flags = O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
		.resolve = RESOLVE_CACHED | RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int fd = (int)syscall(SYS_openat2, root, rel[0] ? rel : ".", &how, sizeof(how));
	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && st.st_dev == makedev(m->dev_major, m->dev_minor) &&
	    ioctl(fd, FS_IOC_GETFSUUID, &u) == 0)
		persist_uuid_text(u.uuid, u.len, out, MAX_UUID);
	close(fd);
}

/* Whether a filesystem is a block device's whose UUID identifies it (FUSE on a block device is
 * answered by its server: never opened here). */
static bool uuid_named(const struct persist_mount *m)
{
	return m->dev_major != 0 && strncmp(m->fstype, "fuse", 4) != 0;
}

static void mnt_keys_free(struct mnt_key *k, unsigned n)
{
	for (unsigned i = 0; k && i < n; i++)
		free(k[i].key);
	free(k);
}

/* The host's mounts, one key per device (the first mount of it: bind mounts say the same). */
static struct mnt_key *mount_table(const struct persist *ps, unsigned *n)
{
	FILE *f = fopen(ps->mountinfo, "re");
	if (!f)
		f = fopen("/proc/self/mountinfo", "re");
	struct mnt_key *k = NULL;
	unsigned cap = 0;
	char *line = NULL, key[PERSIST_MAX_KEY], uuid[MAX_UUID], rootp[PATH_MAX];
	size_t len = 0;
	*n = 0;
	/* PID 1's root beside its mountinfo: the mount points are its namespace's */
	const char *slash = strrchr(ps->mountinfo, '/');
	int root = -1;
	if (slash && (size_t)snprintf(rootp, sizeof(rootp), "%.*sroot",
				      (int)(slash + 1 - ps->mountinfo), ps->mountinfo) < sizeof(rootp))
		root = open(rootp, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0) /* (PID 1 may be closed to us: a VM's init) */
		root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	while (f && getline(&line, &len, f) > 0) {
		struct persist_mount m;
		bool dup = false;
		if (persist_parse_mountinfo(line, &m) < 0)
			continue;
		for (unsigned i = 0; i < *n && !dup; i++)
			dup = k[i].major == m.dev_major && k[i].minor == m.dev_minor;
		if (dup)
			continue;
		uuid[0] = '\0';
		if (uuid_named(&m))
			kernel_uuid(root, &m, uuid);
		if (uuid_named(&m) && !uuid[0])
			udev_uuid(m.dev_major, m.dev_minor, uuid);
		if (persist_key(&m, uuid, key, sizeof(key)) < 0)
			continue;
		if (*n == cap) {
			struct mnt_key *nk = realloc(k, (cap = cap ? cap * 2 : 64) * sizeof(*k));
			if (!nk)
				break;
			k = nk;
		}
		k[*n] = (struct mnt_key){ m.dev_major, m.dev_minor, strdup(key) };
		if (k[*n].key)
			(*n)++;
	}
	free(line);
	if (f)
		fclose(f);
	if (root >= 0)
		close(root);
	return k;
}

/* The state file's text (NUL-terminated), or NULL: absent (errno ENOENT) or unreadable. */
static char *read_state(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	char *buf = NULL;
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > PERSIST_MAX_FILE) {
		errno = S_ISDIR(st.st_mode) ? EISDIR : S_ISREG(st.st_mode) ? EFBIG : EINVAL;
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	ssize_t r = buf ? read(fd, buf, (size_t)st.st_size + 1) : -1;
	if (r < 0 || r > st.st_size) { /* an error, or it grew while read */
		free(buf);
		buf = NULL;
		errno = r < 0 ? errno : EINVAL;
		goto out;
	}
	buf[r] = '\0';
	*len = (size_t)r;
out:
	close(fd);
	return buf;
}

static const struct persist_entry *find_known(const struct persist *ps, const char *key)
{
	for (unsigned i = 0; i < ps->nknown; i++)
		if (strcmp(ps->known[i].key, key) == 0)
			return &ps->known[i];
	return NULL;
}

unsigned persist_restore(struct persist *ps, struct policy *p, uint64_t now)
{
	size_t len = 0;
	char err[256];
	if (!ps->days)
		return 0;
	char *text = read_state(ps->path, &len);
	if (!text) {
		if (errno != ENOENT)
			log_warn("state file %s ignored: %s", ps->path, strerror(errno));
		return 0;
	}
	int r = persist_decode(text, len, wall_us() / 1000000, ps->days, &ps->known, &ps->nknown,
			       err, sizeof(err));
	free(text);
	if (r < 0) {
		log_warn("state file %s ignored: %s", ps->path, err);
		return 0;
	}
	unsigned nm, restored = 0;
	struct mnt_key *mk = mount_table(ps, &nm);
	for (unsigned i = 0; i < nm; i++) {
		const struct persist_entry *e = find_known(ps, mk[i].key);
		if (e && policy_import(p, mk[i].major, mk[i].minor, &e->mem, now)) {
			restored++;
			log_debug("remembered %s on %u:%u: %s", mk[i].key, mk[i].major, mk[i].minor,
				  pol_verdict_names[e->mem.verdict]);
		}
	}
	mnt_keys_free(mk, nm);
	log_info("state: %u mounted filesystems known from %u remembered in %s", restored,
		 ps->nknown, ps->path);
	return restored;
}

/* What a save is made of: the policy's filesystems with their keys, then the rest known. */
struct collect {
	const struct mnt_key *mk;
	unsigned nm;
	uint64_t now;
	int64_t now_s;
	struct persist_entry *e;
	unsigned n, cap;
};

static bool collected(const struct collect *c, const char *key)
{
	for (unsigned i = 0; i < c->n; i++)
		if (strcmp(c->e[i].key, key) == 0)
			return true;
	return false;
}

static void collect_one(struct collect *c, const char *key, int64_t seen, const struct pol_memory *m)
{
	if (c->n == c->cap || collected(c, key))
		return;
	char *k = strdup(key);
	if (k)
		c->e[c->n++] = (struct persist_entry){ k, seen, *m };
}

static void collect_fs(const struct pol_fs *fs, void *ctx)
{
	struct collect *c = ctx;
	struct pol_memory m;
	if (!policy_export(fs, c->now, &m))
		return;
	for (unsigned i = 0; i < c->nm; i++)
		if (c->mk[i].major == fs->dev_major && c->mk[i].minor == fs->dev_minor) {
			uint64_t idle_s = fs->last_ns < c->now ? (c->now - fs->last_ns) / 1000000000ull : 0;
			collect_one(c, c->mk[i].key, c->now_s - (int64_t)idle_s, &m);
			return;
		}
	/* unmounted since: its memory stays under the key it had when restored, if any */
}

/* A cost's bucket: steps of about a quarter (no libm for this). */
static unsigned bucket(double x)
{
	unsigned b = 0;
	for (x += 1; x >= 1.26 && b < 400; x /= 1.26)
		b++;
	return b;
}

/* Bucketed figures: a save is due when a verdict, a backoff, depth or key changed, or a cost
 * moved by a quarter or so, not at every EWMA step. */
static char *signature(const struct persist_entry *e, unsigned n)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);
	if (!f)
		return NULL;
	for (unsigned i = 0; i < n; i++) {
		const struct pol_memory *m = &e[i].mem;
		const double c[] = { m->before_ns, m->after_ns, m->cost_ns, m->pf_lat_ns,
				     m->list_wall_ns, m->list_ahead_ns, m->list_own_ns };
		fprintf(f, "%s|%d|%u|%u|%d|%u|%u", e[i].key, m->verdict, m->depth, m->backoff,
			m->list_verdict, m->list_backoff, m->fast_backoff);
		for (unsigned j = 0; j < sizeof(c) / sizeof(c[0]); j++)
			fprintf(f, "|%u", bucket(c[j]));
		fputc('\n', f);
	}
	fclose(f);
	return s;
}

/* temp file, fsync, rename, fsync of the directory: the file is the old or the new one. */
static int write_atomic(struct persist *ps, const char *text)
{
	if (mkdir(ps->dir, 0700) < 0 && errno != EEXIST)
		return -1;
	int fd = open(ps->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	size_t len = strlen(text), off = 0;
	while (off < len) {
		ssize_t w = write(fd, text + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			close(fd);
			unlink(ps->tmp);
			return -1;
		}
		off += (size_t)w;
	}
	if (fsync(fd) < 0 || close(fd) < 0 || rename(ps->tmp, ps->path) < 0) {
		unlink(ps->tmp);
		return -1;
	}
	int dfd = open(ps->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}

static int save_entries(struct persist *ps, struct persist_entry *e, unsigned n, int64_t now_s)
{
	char *text = persist_encode(e, n, now_s);
	int r = text ? write_atomic(ps, text) : (errno = ENOMEM, -1);
	free(text);
	if (r < 0 && ps->warned != errno) {
		ps->warned = errno;
		log_warn("state file %s not written: %s", ps->path, strerror(errno));
	} else if (r == 0) {
		ps->warned = 0;
	}
	return r;
}

int persist_save(struct persist *ps, struct policy *p, uint64_t now, bool force)
{
	if (!ps->days)
		return 0;
	struct collect c = { .now = now, .now_s = (int64_t)(wall_us() / 1000000),
			     .cap = PERSIST_MAX_ENTRIES };
	c.e = calloc(c.cap, sizeof(*c.e));
	if (!c.e)
		return -1;
	struct mnt_key *mk = mount_table(ps, &c.nm);
	c.mk = mk;
	policy_foreach(p, collect_fs, &c);
	mnt_keys_free(mk, c.nm);
	for (unsigned i = 0; i < ps->nknown; i++)
		if (ps->known[i].seen + (int64_t)ps->days * 86400 >= c.now_s)
			collect_one(&c, ps->known[i].key, ps->known[i].seen, &ps->known[i].mem);
	char *sig = signature(c.e, c.n);
	if (!force && sig && ps->sig && strcmp(sig, ps->sig) == 0) {
		free(sig);
		persist_entries_free(c.e, c.n);
		return 0;
	}
	int r = save_entries(ps, c.e, c.n, c.now_s);
	if (r == 0) {
		free(ps->sig);
		ps->sig = sig;
		persist_entries_free(ps->known, ps->nknown);
		ps->known = c.e;
		ps->nknown = c.n;
		log_debug("state: %u filesystems written to %s", c.n, ps->path);
		return 1;
	}
	free(sig);
	persist_entries_free(c.e, c.n);
	return -1;
}
