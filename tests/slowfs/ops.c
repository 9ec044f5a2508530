// SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
/*
 * The filesystem operations and the inode table.
 *
 * A node is remembered by its parent and name, not by an open fd: a large benchmark tree would
 * otherwise pin one descriptor per cached inode.  The backing path is rebuilt on each request
 * (relative to sf_rootfd) under the table lock.  Nodes are keyed both by nodeid and by backing
 * (st_dev, st_ino), so every name of a file maps to the same nodeid, and live while the kernel
 * holds lookups on them or a live child still names them as parent.
 */
#define SLOWFS_WANT_FUSE
#include "slowfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

struct node {
	uint64_t id;
	dev_t dev;
	ino_t ino;
	uint64_t nlookup;	/* kernel references (lookups not yet forgotten) */
	uint64_t refs;		/* live children + (nlookup > 0) */
	struct node *parent;
	char *name;
	struct node *id_next;
	struct node *key_next;
	uint64_t listed_until_ns;	/* --cache-listing: a listing of it ended; valid until then */
};

static pthread_mutex_t nodes_lock = PTHREAD_MUTEX_INITIALIZER;
static struct node root_node;
static struct node **by_id, **by_key;
static size_t nbuckets, nnodes;
static uint64_t next_id = FUSE_ROOT_ID + 1;

static size_t hash_id(uint64_t id)
{
	return (size_t)((id * 0x9e3779b97f4a7c15ULL) >> 17) & (nbuckets - 1);
}

static size_t hash_key(dev_t dev, ino_t ino)
{
	uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ULL ^ (uint64_t)dev * 0xc2b2ae3d27d4eb4fULL;

	return (size_t)(h >> 17) & (nbuckets - 1);
}

static void table_insert(struct node *n)
{
	size_t i = hash_id(n->id), k = hash_key(n->dev, n->ino);

	n->id_next = by_id[i];
	by_id[i] = n;
	n->key_next = by_key[k];
	by_key[k] = n;
}

static void table_grow(void)
{
	size_t old = nbuckets, i;
	struct node **oid = by_id;
	struct node **nid = calloc(old * 2, sizeof(*nid));
	struct node **nkey = calloc(old * 2, sizeof(*nkey));

	if (!nid || !nkey) {	/* keep the old, fuller table */
		free(nid);
		free(nkey);
		return;
	}
	free(by_key);
	by_id = nid;
	by_key = nkey;
	nbuckets = old * 2;
	for (i = 0; i < old; i++) {
		struct node *n = oid[i], *next;

		for (; n; n = next) {
			next = n->id_next;
			table_insert(n);
		}
	}
	free(oid);
}

static void table_remove(struct node *n)
{
	struct node **p;

	for (p = &by_id[hash_id(n->id)]; *p; p = &(*p)->id_next)
		if (*p == n) {
			*p = n->id_next;
			break;
		}
	for (p = &by_key[hash_key(n->dev, n->ino)]; *p; p = &(*p)->key_next)
		if (*p == n) {
			*p = n->key_next;
			break;
		}
}

static struct node *find_id(uint64_t id)
{
	struct node *n;

	if (id == FUSE_ROOT_ID)
		return &root_node;
	for (n = by_id[hash_id(id)]; n; n = n->id_next)
		if (n->id == id)
			return n;
	return NULL;
}

static struct node *find_key(dev_t dev, ino_t ino)
{
	struct node *n;

	if (root_node.dev == dev && root_node.ino == ino)
		return &root_node;
	for (n = by_key[hash_key(dev, ino)]; n; n = n->key_next)
		if (n->dev == dev && n->ino == ino)
			return n;
	return NULL;
}

/* Drop one reference; frees the node (and walks up the parents it pinned) at zero. */
static void node_unref(struct node *n)
{
	while (n && n != &root_node && --n->refs == 0) {
		struct node *parent = n->parent;

		table_remove(n);
		nnodes--;
		free(n->name);
		free(n);
		n = parent;
	}
}

void sf_nodes_init(const struct stat *root)
{
	nbuckets = 1024;
	by_id = calloc(nbuckets, sizeof(*by_id));
	by_key = calloc(nbuckets, sizeof(*by_key));
	if (!by_id || !by_key) {
		sf_log("out of memory");
		exit(1);
	}
	root_node.id = FUSE_ROOT_ID;
	root_node.dev = root->st_dev;
	root_node.ino = root->st_ino;
	root_node.nlookup = 1;
	root_node.refs = 1;
}

size_t sf_nodes_count(void)
{
	size_t n;

	pthread_mutex_lock(&nodes_lock);
	n = nnodes;
	pthread_mutex_unlock(&nodes_lock);
	return n;
}

/* Write the path of @n (relative to the backing root) into buf[0..size); "." for the root. */
static int path_of_locked(const struct node *n, const char *child, char *buf, size_t size)
{
	size_t pos = size, len;
	const struct node *p;

	buf[--pos] = '\0';
	if (child) {
		len = strlen(child);
		if (len + 1 > pos)
			return -ENAMETOOLONG;
		pos -= len;
		memcpy(buf + pos, child, len);
	}
	for (p = n; p != &root_node; p = p->parent) {
		if (!p)
			return -ESTALE;
		if (pos < size - 1) {
			if (pos < 1)
				return -ENAMETOOLONG;
			buf[--pos] = '/';
		}
		len = strlen(p->name);
		if (len > pos)
			return -ENAMETOOLONG;
		pos -= len;
		memcpy(buf + pos, p->name, len);
	}
	if (pos == size - 1) {
		if (pos < 1)
			return -ENAMETOOLONG;
		buf[--pos] = '.';
	}
	memmove(buf, buf + pos, size - pos);
	return 0;
}

/* Backing path (relative to sf_rootfd) of node @id, plus "/child" if @child is set. */
static int node_path(uint64_t id, const char *child, char *buf, size_t size)
{
	struct node *n;
	int err;

	pthread_mutex_lock(&nodes_lock);
	n = find_id(id);
	err = n ? path_of_locked(n, child, buf, size) : -ESTALE;
	pthread_mutex_unlock(&nodes_lock);
	return err;
}

/*
 * Take one kernel reference on the node for (@st->st_dev, @st->st_ino), found as @name in
 * directory @parent_id; creates it if needed.  The node is (re)attached to the name just looked
 * up, so a file renamed or recreated in the backing tree stays reachable.  Returns the nodeid or
 * 0 (ENOMEM / stale parent).
 */
static uint64_t node_ref(uint64_t parent_id, const char *name, const struct stat *st)
{
	struct node *parent, *n;
	uint64_t id = 0;

	pthread_mutex_lock(&nodes_lock);
	parent = find_id(parent_id);
	if (!parent)
		goto out;
	n = find_key(st->st_dev, st->st_ino);
	if (n == &root_node) {	/* e.g. a bind loop back to the root */
		n->nlookup++;
		id = n->id;
		goto out;
	}
	if (n && (n->parent != parent || strcmp(n->name, name) != 0)) {
		char *nn = strdup(name);
		struct node *p;

		/* Never make a node its own ancestor (directory hard links, bind mounts). */
		for (p = parent; p && p != n; p = p->parent)
			;
		if (nn && !p) {
			struct node *old = n->parent;

			free(n->name);
			n->name = nn;
			parent->refs++;
			n->parent = parent;
			node_unref(old);
		} else {
			free(nn);
		}
	}
	if (!n) {
		n = calloc(1, sizeof(*n));
		if (!n || !(n->name = strdup(name))) {
			free(n);
			goto out;
		}
		n->id = next_id++;
		n->dev = st->st_dev;
		n->ino = st->st_ino;
		n->parent = parent;
		parent->refs++;
		if (nnodes >= nbuckets)
			table_grow();
		table_insert(n);
		nnodes++;
	}
	if (n->nlookup++ == 0)
		n->refs++;
	id = n->id;
out:
	pthread_mutex_unlock(&nodes_lock);
	return id;
}

void sf_node_forget(uint64_t id, uint64_t nlookup)
{
	struct node *n;

	pthread_mutex_lock(&nodes_lock);
	n = find_id(id);
	if (n && n != &root_node && n->nlookup) {
		if (nlookup > n->nlookup)
			nlookup = n->nlookup;
		n->nlookup -= nlookup;
		if (n->nlookup == 0)
			node_unref(n);
	}
	pthread_mutex_unlock(&nodes_lock);
}

/* --depth-latency: the depth of the entries a request on node `id` reaches (the root is 0, its
 * entries 1): of the node itself, or one deeper with `below` (a lookup in it, its listing).
 * -1 without depth rules or for a node not known. */
static int node_depth(uint64_t id, bool below)
{
	int d = -1;

	if (!sf_cfg.n_depth_lat)
		return -1;
	pthread_mutex_lock(&nodes_lock);
	const struct node *n = find_id(id);
	if (n) {
		d = below;
		for (; n && n != &root_node; n = n->parent)
			d++;
		if (!n)
			d = -1; /* detached from the root: stale */
	}
	pthread_mutex_unlock(&nodes_lock);
	return d;
}

/* --cache-listing: is the listing of directory `id` (or, with of_parent, of the directory
 * holding `id`) cached?  Then the reply goes out at once, as from a client's cache. */
static bool listing_cached(uint64_t id, bool of_parent)
{
	bool hit = false;

	if (!sf_cfg.cache_listing_ns)
		return false;
	pthread_mutex_lock(&nodes_lock);
	struct node *n = find_id(id);
	if (n && of_parent)
		n = n->parent;
	hit = n && sf_now_ns() < n->listed_until_ns;
	pthread_mutex_unlock(&nodes_lock);
	return hit;
}

static void listing_ended(uint64_t id)
{
	pthread_mutex_lock(&nodes_lock);
	struct node *n = find_id(id);
	if (n)
		n->listed_until_ns = sf_now_ns() + sf_cfg.cache_listing_ns;
	pthread_mutex_unlock(&nodes_lock);
}

/* Answer without the delay: the listing cache has it. */
static void from_cache(struct sf_reply *r)
{
	r->due_ns = sf_now_ns();
	sf_stats_cached(fuse_req_ctx(r->req)->pid);
}

/* The watch (stats.c): a request on node ino (plus /name: a lookup) counts if it reaches into
 * the watched directory.  Paths are only rebuilt while a watch is set. */
static void watch_req(fuse_req_t req, enum sf_op op, fuse_ino_t ino, const char *name)
{
	char path[PATH_MAX];

	if (sf_stats_watching() && node_path(ino, name, path, sizeof(path)) == 0)
		sf_stats_watch(op, fuse_req_ctx(req)->pid, path);
}

/* ---------------------------------------------------------------------------------------- */

static void fill_entry(struct fuse_entry_param *e, uint64_t id, const struct stat *st)
{
	struct stat copy = *st;	/* st may point into *e */

	memset(e, 0, sizeof(*e));
	e->ino = id;
	e->attr = copy;
	e->attr_timeout = sf_cfg.attr_timeout;
	e->entry_timeout = sf_cfg.entry_timeout;
}

static void undo_entry(struct sf_reply *r)
{
	sf_node_forget(r->u.entry.ino, 1);
}

static void sf_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	/* Splice would bypass the custom read/writev hooks that patch the INIT reply. */
	conn->want &= ~(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
	if (sf_cfg.readdirplus)
		conn->want |= conn->capable & FUSE_CAP_READDIRPLUS;
	else
		conn->want &= ~(FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO);
	/* libfuse >= 3.16 forwards this itself; 3.14 ignores it and devio.c adds the bit. */
	if (sf_cfg.parallel_dirops)
		conn->want |= conn->capable & FUSE_CAP_PARALLEL_DIROPS;
	else
		conn->want &= ~FUSE_CAP_PARALLEL_DIROPS;
	/* --acl: the kernel reads system.posix_acl_access through getxattr and, with
	 * default_permissions, enforces it as for a local filesystem */
	if (sf_cfg.acl)
		conn->want |= conn->capable & FUSE_CAP_POSIX_ACL;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	/* Background requests (readahead, async release) beyond this queue in the kernel. */
	conn->max_background = 128;
	conn->congestion_threshold = 96;
}

static void sf_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct sf_reply *r = sf_reply_new_at(req, SF_OP_LOOKUP, node_depth(parent, true));
	char path[PATH_MAX];
	struct stat st;
	int fail = sf_fail_lookups;
	uint64_t id;

	if (!r)
		return;
	if (listing_cached(parent, false))
		from_cache(r);
	watch_req(req, SF_OP_LOOKUP, parent, name);
	if (fail) {
		r->err = fail;
	} else if ((r->err = -node_path(parent, name, path, sizeof(path))) != 0) {
		;
	} else if (fstatat(sf_rootfd, path, &st, AT_SYMLINK_NOFOLLOW) != 0) {
		r->err = errno;
		if (r->err == ENOENT && sf_cfg.negative_timeout > 0) {
			/* nodeid 0 = negative entry the kernel may cache */
			r->kind = SF_R_ENTRY;
			r->u.entry.entry_timeout = sf_cfg.negative_timeout;
		}
	} else if ((id = node_ref(parent, name, &st)) == 0) {
		r->err = ENOMEM;
	} else {
		r->kind = SF_R_ENTRY;
		fill_entry(&r->u.entry, id, &st);
		r->undo = undo_entry;
	}
	sf_reply_submit(r);
}

static void sf_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	sf_stats_begin(SF_OP_FORGET, fuse_req_ctx(req)->pid, fuse_req_ctx(req)->uid);
	sf_node_forget(ino, nlookup);
	sf_stats_done(SF_OP_FORGET);
	fuse_reply_none(req);
}

static void sf_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	size_t i;

	sf_stats_begin(SF_OP_FORGET, fuse_req_ctx(req)->pid, fuse_req_ctx(req)->uid);
	for (i = 0; i < count; i++)
		sf_node_forget(forgets[i].ino, forgets[i].nlookup);
	sf_stats_done(SF_OP_FORGET);
	fuse_reply_none(req);
}

static void sf_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct sf_reply *r = sf_reply_new_at(req, SF_OP_GETATTR, node_depth(ino, false));
	char path[PATH_MAX];

	(void)fi;
	if (!r)
		return;
	if (listing_cached(ino, true))
		from_cache(r);
	watch_req(req, SF_OP_GETATTR, ino, NULL);
	if ((r->err = -node_path(ino, NULL, path, sizeof(path))) == 0) {
		if (fstatat(sf_rootfd, path, &r->u.attr.st, AT_SYMLINK_NOFOLLOW) != 0) {
			r->err = errno;
		} else {
			r->kind = SF_R_ATTR;
			r->u.attr.timeout = sf_cfg.attr_timeout;
		}
	}
	sf_reply_submit(r);
}

static void sf_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct sf_reply *r = sf_reply_new_at(req, SF_OP_READLINK, node_depth(ino, false));
	char path[PATH_MAX];
	ssize_t n;

	if (!r)
		return;
	watch_req(req, SF_OP_READLINK, ino, NULL);
	if ((r->err = -node_path(ino, NULL, path, sizeof(path))) == 0) {
		r->buf = malloc(PATH_MAX);
		if (!r->buf) {
			r->err = ENOMEM;
		} else if ((n = readlinkat(sf_rootfd, path, r->buf, PATH_MAX)) < 0) {
			r->err = errno;
		} else if (n == PATH_MAX) {
			r->err = ENAMETOOLONG;
		} else {
			r->kind = SF_R_BUF;
			r->len = (size_t)n;
		}
	}
	sf_reply_submit(r);
}

static void undo_open(struct sf_reply *r)
{
	close((int)r->u.fi.fh);
}

static void sf_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct sf_reply *r = sf_reply_new_at(req, SF_OP_OPEN, node_depth(ino, false));
	char path[PATH_MAX];
	int fd;

	if (!r)
		return;
	watch_req(req, SF_OP_OPEN, ino, NULL);
	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		r->err = EROFS;
	} else if ((r->err = -node_path(ino, NULL, path, sizeof(path))) == 0) {
		fd = openat(sf_rootfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0) {
			r->err = errno;
		} else {
			r->kind = SF_R_OPEN;
			r->u.fi = *fi;
			r->u.fi.fh = (uint64_t)fd;
			r->undo = undo_open;
		}
	}
	sf_reply_submit(r);
}

static void sf_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct sf_reply *r = sf_reply_new(req, SF_OP_READ);
	ssize_t n;

	if (!r)
		return;
	watch_req(req, SF_OP_READ, ino, NULL);
	r->buf = malloc(size ? size : 1);
	if (!r->buf) {
		r->err = ENOMEM;
	} else if ((n = pread((int)fi->fh, r->buf, size, off)) < 0) {
		r->err = errno;
	} else {
		r->kind = SF_R_BUF;
		r->len = (size_t)n;
	}
	sf_reply_submit(r);
}

static void sf_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	sf_reply_err(req, SF_OP_FLUSH, 0);
}

static void sf_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	close((int)fi->fh);
	sf_reply_err(req, SF_OP_RELEASE, 0);
}

/* ---------------------------------------------------------------------------------------- */

struct dirh {
	pthread_mutex_t lock;
	DIR *dp;
	off_t offset;		/* position of the stream, as the kernel names it */
	struct dirent *entry;	/* read but did not fit into the last reply */
};

static void dirh_free(struct dirh *d)
{
	closedir(d->dp);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

static void undo_opendir(struct sf_reply *r)
{
	dirh_free((struct dirh *)(uintptr_t)r->u.fi.fh);
}

static void sf_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct sf_reply *r = sf_reply_new_at(req, SF_OP_OPENDIR, node_depth(ino, true));
	char path[PATH_MAX];
	struct dirh *d;
	int fd;

	if (!r)
		return;
	if (listing_cached(ino, false))
		from_cache(r);
	watch_req(req, SF_OP_OPENDIR, ino, NULL);
	if ((r->err = -node_path(ino, NULL, path, sizeof(path))) != 0)
		goto out;
	d = calloc(1, sizeof(*d));
	if (!d) {
		r->err = ENOMEM;
		goto out;
	}
	fd = openat(sf_rootfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || !(d->dp = fdopendir(fd))) {
		r->err = errno;
		if (fd >= 0)
			close(fd);
		free(d);
		goto out;
	}
	pthread_mutex_init(&d->lock, NULL);
	r->kind = SF_R_OPEN;
	r->u.fi = *fi;
	r->u.fi.fh = (uint64_t)(uintptr_t)d;
	/* --cache-readdir: the kernel keeps what was read of it, across opens (as a local
	 * filesystem's page cache keeps a directory's blocks) */
	r->u.fi.cache_readdir = sf_cfg.cache_readdir;
	r->u.fi.keep_cache = sf_cfg.cache_readdir;
	r->undo = undo_opendir;
out:
	sf_reply_submit(r);
}

static void do_readdir(fuse_req_t req, fuse_ino_t dir, size_t size, off_t off,
		       struct fuse_file_info *fi, bool plus)
{
	struct sf_reply *r = sf_reply_new_at(req, plus ? SF_OP_READDIRPLUS : SF_OP_READDIR,
					     node_depth(dir, true));
	struct dirh *d = (struct dirh *)(uintptr_t)fi->fh;
	size_t pos = 0;

	if (!r)
		return;
	if (listing_cached(dir, false))
		from_cache(r);
	watch_req(req, plus ? SF_OP_READDIRPLUS : SF_OP_READDIR, dir, NULL);
	r->buf = malloc(size ? size : 1);
	if (!r->buf) {
		r->err = ENOMEM;
		sf_reply_submit(r);
		return;
	}
	pthread_mutex_lock(&d->lock);
	if (off != d->offset) {
		seekdir(d->dp, off);
		d->entry = NULL;
		d->offset = off;
	}
	for (;;) {
		struct dirent *de = d->entry;
		size_t n;

		if (!de) {
			errno = 0;
			de = d->entry = readdir(d->dp);
			if (!de) {
				if (errno && pos == 0)
					r->err = errno;
				break;
			}
		}
		if (!plus) {
			struct stat st = { .st_ino = de->d_ino, .st_mode = (mode_t)de->d_type << 12 };

			n = fuse_add_direntry(req, r->buf + pos, size - pos, de->d_name, &st, de->d_off);
		} else {
			struct fuse_entry_param e;
			bool dots = strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0;
			uint64_t id = 0;

			memset(&e, 0, sizeof(e));
			/* Check the fit first: a node reference for an entry we drop would leak. */
			n = fuse_add_direntry_plus(req, NULL, 0, de->d_name, &e, de->d_off);
			if (n > size - pos)
				break;
			if (dots || fstatat(dirfd(d->dp), de->d_name, &e.attr, AT_SYMLINK_NOFOLLOW)) {
				/* The kernel does not link "." and ".." (nodeid 0 = name only);
				 * an entry that vanished is passed on the same way. */
				e.attr.st_ino = de->d_ino;
				e.attr.st_mode = (mode_t)de->d_type << 12;
			} else if ((id = node_ref(dir, de->d_name, &e.attr)) != 0) {
				fill_entry(&e, id, &e.attr);
			}
			n = fuse_add_direntry_plus(req, r->buf + pos, size - pos, de->d_name, &e,
						   de->d_off);
		}
		if (n > size - pos)
			break;
		pos += n;
		d->offset = de->d_off;
		d->entry = NULL;
	}
	pthread_mutex_unlock(&d->lock);
	if (!r->err) {
		r->kind = SF_R_BUF;
		r->len = pos;
		/* an empty reply is the end of the listing: from now on it is in the cache */
		if (!pos && sf_cfg.cache_listing_ns)
			listing_ended(dir);
	}
	sf_reply_submit(r);
}

static void sf_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, false);
}

static void sf_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, true);
}

static void sf_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	dirh_free((struct dirh *)(uintptr_t)fi->fh);
	sf_reply_err(req, SF_OP_RELEASEDIR, 0);
}

static void sf_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct sf_reply *r = sf_reply_new(req, SF_OP_STATFS);

	(void)ino;
	if (!r)
		return;
	if (fstatvfs(sf_rootfd, &r->u.sv) != 0)
		r->err = errno;
	else
		r->kind = SF_R_STATFS;
	sf_reply_submit(r);
}

static void sf_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct sf_reply *r = sf_reply_new_at(req, SF_OP_ACCESS, node_depth(ino, false));
	char path[PATH_MAX];

	if (!r)
		return;
	watch_req(req, SF_OP_ACCESS, ino, NULL);
	if ((r->err = -node_path(ino, NULL, path, sizeof(path))) == 0) {
		if ((mask & W_OK))
			r->err = EROFS;
		else if (faccessat(sf_rootfd, path, mask, AT_SYMLINK_NOFOLLOW) != 0)
			r->err = errno;
	}
	sf_reply_submit(r);
}

/* --acl: xattrs as the backing file has them.  The *xattr calls take no directory fd: the path
 * goes through our root's fd in /proc. */
static int xattr_path(fuse_ino_t ino, char *buf, size_t size)
{
	char rel[PATH_MAX];
	int err = node_path(ino, NULL, rel, sizeof(rel));

	if (err)
		return err;
	if ((size_t)snprintf(buf, size, "/proc/self/fd/%d/%s", sf_rootfd, rel) >= size)
		return -ENAMETOOLONG;
	return 0;
}

/* One xattr call's outcome into r: the size alone (size 0) or the bytes in r->buf. */
static void xattr_reply(struct sf_reply *r, ssize_t n, size_t size)
{
	if (n < 0) {
		r->err = errno;
	} else {
		r->kind = size ? SF_R_BUF : SF_R_XATTR;
		r->len = (size_t)n;
	}
}

static void sf_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct sf_reply *r = sf_reply_new(req, SF_OP_GETXATTR);
	char path[PATH_MAX + 64];

	if (!r)
		return;
	watch_req(req, SF_OP_GETXATTR, ino, NULL);
	if ((r->err = -xattr_path(ino, path, sizeof(path))) != 0)
		;
	else if (size && !(r->buf = malloc(size)))
		r->err = ENOMEM;
	else
		xattr_reply(r, lgetxattr(path, name, r->buf, size), size);
	sf_reply_submit(r);
}

static void sf_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct sf_reply *r = sf_reply_new(req, SF_OP_LISTXATTR);
	char path[PATH_MAX + 64];

	if (!r)
		return;
	watch_req(req, SF_OP_LISTXATTR, ino, NULL);
	if ((r->err = -xattr_path(ino, path, sizeof(path))) != 0)
		;
	else if (size && !(r->buf = malloc(size)))
		r->err = ENOMEM;
	else
		xattr_reply(r, llistxattr(path, r->buf, size), size);
	sf_reply_submit(r);
}

struct fuse_lowlevel_ops sf_ops = {
	.init = sf_init,
	.lookup = sf_lookup,
	.forget = sf_forget,
	.forget_multi = sf_forget_multi,
	.getattr = sf_getattr,
	.readlink = sf_readlink,
	.open = sf_open,
	.read = sf_read,
	.flush = sf_flush,
	.release = sf_release,
	.opendir = sf_opendir,
	.readdir = sf_readdir,
	.releasedir = sf_releasedir,
	.statfs = sf_statfs,
	.access = sf_access,
	/* .readdirplus is set by sf_ops_setup() only with --readdirplus: libfuse advertises
	 * FUSE_CAP_READDIRPLUS whenever the operation exists.  The xattr operations only with
	 * --acl: without them the kernel stops asking after one ENOSYS (`ls -l` would otherwise
	 * send one per file). */
};

void sf_ops_setup(void)
{
	if (sf_cfg.readdirplus)
		sf_ops.readdirplus = sf_readdirplus;
	if (sf_cfg.acl) {
		sf_ops.getxattr = sf_getxattr;
		sf_ops.listxattr = sf_listxattr;
	}
}
