/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
#include "httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "daemon.h"
#include "hostcheck.h"
#include "log.h"
#include "metrics.h"
#include "monoclock.h"
#include "peer.h"

/*
 * Connections are counted per peer: per uid for a process of this machine (the unix socket's
 * SO_PEERCRED, or the owner of the client's TCP socket: another loopback address is still the
 * same user), per address for a remote client.  Prometheus scrapes over one kept-alive
 * connection; a few more per peer leave room for a curl or two beside it.  The last
 * CONN_RESERVE of the total are root's, so that users together (or a user with subordinate
 * uids) cannot shut root's scraper out.  Past these, a connection is closed at once.
 */
#define CONN_PER_PEER 4u
#define CONN_TOTAL 32u
#define CONN_RESERVE CONN_PER_PEER
/* Idle connections (kept alive, or a client that never finishes its request) close after this. */
#define CONN_TIMEOUT_S 5u
/* And any connection, however busy, after this: a client trickling its request a byte at a
 * time (slowloris), or reading the answer as slowly, holds its slot no longer.  A scrape takes
 * milliseconds. */
#define CONN_LIFETIME_USEC 10000000ull
/* Connections not accepted yet: a flood must fill this (as fast as they are accepted and closed)
 * before a new one finds the queue full (unix sockets: refused at once, EAGAIN). */
#define BACKLOG SOMAXCONN
/* A scrape renders every metric: scrapers that come together (several Prometheus servers, a
 * dashboard) share one rendering per this long. */
#define CACHE_USEC 1000000ull

struct slot {
	bool used, cut;
	int fd;                     /* libmicrohttpd's from MHD_add_connection on */
	struct dd_peer peer;
	uint64_t since;             /* CLOCK_MONOTONIC at accept */
};

/* libmicrohttpd runs in "external epoll" mode inside our sd-event loop: one thread, so the
 * handlers read the statistics without locks.  We accept the connections (to know who is
 * calling before one is taken) and hand those admitted to it. */
struct httpd {
	struct daemon *d;
	struct MHD_Daemon *mhd;
	sd_event_source *io, *timer, *listen_src;
	int lfd;
	char *address;              /* as configured */
	char *unix_path;            /* unix:PATH: the socket file made here, removed at the end */
	dev_t unix_dev;
	ino_t unix_ino;
	struct MHD_Response *cache; /* the last /metrics response (libmicrohttpd counts its users) */
	uint64_t cache_usec;        /* CLOCK_MONOTONIC when it was rendered */
	struct slot slots[CONN_TOTAL];
	struct slot *pending;       /* being handed to libmicrohttpd */
	bool diag_warned;
};

static struct MHD_Response *text_response(char *body, const char *type)
{
	struct MHD_Response *r;
	if (!body)
		return NULL;
	r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return NULL;
	}
	MHD_add_response_header(r, "Content-Type", type);
	return r;
}

/* The /metrics response: the cached one while it is fresh, else a new rendering. */
static struct MHD_Response *metrics_response(struct httpd *h)
{
	uint64_t now = mono_us();
	if (h->cache && now - h->cache_usec < CACHE_USEC)
		return h->cache;
	struct MHD_Response *r = text_response(metrics_text(h->d), "text/plain; version=0.0.4; charset=utf-8");
	if (!r)
		return NULL;
	if (h->cache)
		MHD_destroy_response(h->cache); /* freed once the connections sending it are done */
	h->cache = r;
	h->cache_usec = now;
	return r;
}

static bool host_ok(struct httpd *h, struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	if (!ci || getsockname(ci->connect_fd, (struct sockaddr *)&ss, &len) < 0)
		return false;
	return dd_host_allowed(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST),
			       (struct sockaddr *)&ss, &h->d->cfg.metrics_hosts);
}

static bool same_peer(const struct dd_peer *a, const struct dd_peer *b)
{
	if ((a->kind == DD_PEER_REMOTE) != (b->kind == DD_PEER_REMOTE))
		return false;
	return a->kind == DD_PEER_REMOTE ? !memcmp(a->addr, b->addr, sizeof(a->addr)) : a->uid == b->uid;
}

/* Whether a new connection from p is taken: DD_HTTP_OK, or the limit that refuses it. */
static enum dd_http_result admit(const struct httpd *h, const struct dd_peer *p)
{
	unsigned mine = 0, total = 0;
	bool root = p->kind != DD_PEER_REMOTE && p->uid == 0;
	for (unsigned i = 0; i < CONN_TOTAL; i++) {
		if (!h->slots[i].used)
			continue;
		total++;
		mine += same_peer(&h->slots[i].peer, p);
	}
	if (mine >= CONN_PER_PEER)
		return DD_HTTP_PEER_LIMIT;
	if (total >= CONN_TOTAL - (root ? 0 : CONN_RESERVE))
		return DD_HTTP_TOTAL_LIMIT;
	return DD_HTTP_OK;
}

/* [metrics] access: everyone, or root and the [control] group (looked up now: a reload or a
 * change of the group applies to the next request, kept-alive connections too). */
static bool access_ok(struct httpd *h, struct MHD_Connection *conn)
{
	const struct dd_config *cfg = &h->d->cfg;
	if (cfg->metrics_access == DD_METRICS_ALL)
		return true;
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	const struct slot *sl = ci ? ci->socket_context : NULL;
	const struct group *g = cfg->socket_group[0] ? getgrnam(cfg->socket_group) : NULL;
	return sl && dd_peer_member(&sl->peer, sl->fd, g ? g->gr_gid : (gid_t)-1);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
			       const char *method, const char *version, const char *upload_data,
			       size_t *upload_data_size, void **con_cls)
{
	struct httpd *h = cls;
	struct MHD_Response *resp;
	enum dd_http_result result = DD_HTTP_OK;
	unsigned status = MHD_HTTP_OK;
	const char *plain = "text/plain; charset=utf-8";
	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)con_cls;

	if (!access_ok(h, conn)) {
		/* First: someone not let in learns nothing, not even which paths exist. */
		result = DD_HTTP_FORBIDDEN;
		status = MHD_HTTP_FORBIDDEN;
		resp = text_response(strdup("dirahead: root and the [control] group only (see access in dirahead.conf(5))\n"), plain);
	} else if (!host_ok(h, conn)) {
		/* DNS rebinding: a browser sent here under another name.  Checked before the path, so
		 * that such a page learns nothing, not even which paths exist. */
		result = DD_HTTP_BAD_HOST;
		status = MHD_HTTP_FORBIDDEN;
		resp = text_response(strdup("dirahead: Host not allowed (see allowed_hosts in dirahead.conf(5))\n"), plain);
	} else if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		result = DD_HTTP_BAD_METHOD;
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
		resp = text_response(strdup("only GET\n"), plain);
	} else if (!strcmp(url, "/metrics")) {
		h->d->stats.http_requests[result]++; /* before rendering: the text counts this one */
		resp = metrics_response(h);
		if (!resp)
			return MHD_NO;
		return MHD_queue_response(conn, status, resp); /* the cache keeps its reference */
	} else if (!strcmp(url, "/")) {
		resp = text_response(strdup("dirahead: metrics at /metrics\n"), plain);
	} else {
		result = DD_HTTP_NOT_FOUND;
		status = MHD_HTTP_NOT_FOUND;
		resp = text_response(strdup("not found\n"), plain);
	}
	h->d->stats.http_requests[result]++;
	if (!resp)
		return MHD_NO;
	enum MHD_Result ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* libmicrohttpd tells us when it takes a connection (within MHD_add_connection: the pending
 * slot becomes the connection's) and when it lets one go (its slot is free again). */
static void on_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
		      enum MHD_ConnectionNotificationCode toe)
{
	struct httpd *h = cls;
	(void)conn;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		*socket_context = h->pending;
		h->pending = NULL;
	} else if (*socket_context) {
		((struct slot *)*socket_context)->used = false;
		*socket_context = NULL;
	}
}

/* Connections open past their lifetime are shut down (libmicrohttpd then sees them end and
 * closes them).  The next deadline, or 0 if none is open. */
static uint64_t cut_old(struct httpd *h)
{
	uint64_t now = mono_us(), next = 0;
	for (unsigned i = 0; i < CONN_TOTAL; i++) {
		struct slot *sl = &h->slots[i];
		if (!sl->used || sl->cut)
			continue;
		if (now - sl->since >= CONN_LIFETIME_USEC) {
			shutdown(sl->fd, SHUT_RDWR);
			sl->cut = true;
			h->d->stats.http_requests[DD_HTTP_TOO_SLOW]++;
		} else if (!next || sl->since + CONN_LIFETIME_USEC < next) {
			next = sl->since + CONN_LIFETIME_USEC;
		}
	}
	return next;
}

static void rearm(struct httpd *h)
{
	MHD_UNSIGNED_LONG_LONG ms;
	uint64_t next = cut_old(h), now = mono_us(), usec = UINT64_MAX;
	if (MHD_get_timeout(h->mhd, &ms) == MHD_YES)
		usec = ms * 1000;
	if (next && next - now < usec)
		usec = next > now ? next - now : 0;
	if (usec != UINT64_MAX) {
		sd_event_source_set_time_relative(h->timer, usec);
		sd_event_source_set_enabled(h->timer, SD_EVENT_ONESHOT);
	} else {
		sd_event_source_set_enabled(h->timer, SD_EVENT_OFF);
	}
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct httpd *h = userdata;
	(void)s; (void)fd; (void)revents;
	MHD_run(h->mhd);
	rearm(h);
	return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct httpd *h = userdata;
	(void)s; (void)usec;
	cut_old(h);
	MHD_run(h->mhd);
	rearm(h);
	return 0;
}

/* One accepted connection: counted and closed if a limit refuses it, else libmicrohttpd's. */
static void take(struct httpd *h, int fd, const struct sockaddr_storage *ss, socklen_t len)
{
	struct dd_peer p;
	struct slot *sl = NULL;
	if (dd_peer_identify(fd, &p) < 0) { /* gone already */
		close(fd);
		return;
	}
	if (p.kind == DD_PEER_REMOTE && p.diag_errno != ENOENT && !h->diag_warned) {
		h->diag_warned = true; /* then every local TCP peer counts as one: say why, once */
		log_warn("metrics: cannot tell which user a TCP connection comes from (sock_diag: %s)",
			 strerror(p.diag_errno));
	}
	enum dd_http_result r = admit(h, &p);
	if (r != DD_HTTP_OK) {
		h->d->stats.http_requests[r]++;
		close(fd);
		return;
	}
	for (unsigned i = 0; i < CONN_TOTAL && !sl; i++)
		if (!h->slots[i].used)
			sl = &h->slots[i];
	if (!sl) { /* admit() saw one free: cannot happen */
		close(fd);
		return;
	}
	*sl = (struct slot){ .used = true, .fd = fd, .peer = p, .since = mono_us() };
	h->pending = sl;
	MHD_add_connection(h->mhd, fd, (const struct sockaddr *)ss, len); /* closes fd on failure */
	if (h->pending) { /* not taken: no notification came */
		h->pending->used = false;
		h->pending = NULL;
	}
}

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct httpd *h = userdata;
	(void)s; (void)revents;
	for (int i = 0; i < 1024; i++) { /* then the loop's other sources get their turn */
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		int cfd = accept4(fd, (struct sockaddr *)&ss, &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (cfd < 0)
			break;
		take(h, cfd, &ss, len);
	}
	MHD_run(h->mhd);
	rearm(h);
	return 0;
}

/* A listening TCP socket on ss (IPv6: that only, as libmicrohttpd would make it). */
static int tcp_listen(const char *address, const struct sockaddr_storage *ss, char *err, size_t errlen)
{
	int one = 1;
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    (ss->ss_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0) ||
	    bind(fd, (const struct sockaddr *)ss, ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
									    : sizeof(struct sockaddr_in)) < 0 ||
	    listen(fd, BACKLOG) < 0) {
		snprintf(err, errlen, "cannot listen on %s: %s", address, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/*
 * A listening unix socket at path, mode 0666: the metrics are what the loopback TCP port shows
 * every local user, and a file mode is how a scraper in another container or user is let in
 * (restrict it with the directory's permissions).  A socket left by a killed daemon is replaced;
 * anything else at the path is an error.
 */
static int unix_listen(struct httpd *h, const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "%s: path too long", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "%s exists and is not a socket", path);
		return -1;
	}
	/* The directory: systemd's RuntimeDirectory= makes /run/dirahead; elsewhere, made here. */
	char *dir = strdup(path), *slash = dir ? strrchr(dir, '/') : NULL;
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
			free(dir);
			return -1;
		}
	}
	free(dir);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(path, 0666) < 0 ||
	    listen(fd, BACKLOG) < 0 || stat(path, &st) < 0) {
		snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	h->unix_path = strdup(path);
	h->unix_dev = st.st_dev;
	h->unix_ino = st.st_ino;
	return fd;
}

struct httpd *httpd_new(struct daemon *d, const char *address, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	const char *upath = dd_unix_address(address);
	struct httpd *h;
	if (errlen)
		err[0] = '\0';
	if (!address[0])
		return NULL;
	if (!upath && dd_parse_address(address, &ss) < 0) {
		snprintf(err, errlen, "'%s' is not ADDRESS:PORT (e.g. 127.0.0.1:9567 or [::1]:9567) or unix:/PATH", address);
		return NULL;
	}
	if (!(h = calloc(1, sizeof(*h))) || !(h->address = strdup(address))) {
		free(h);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	h->d = d;
	h->lfd = upath ? unix_listen(h, upath, err, errlen) : tcp_listen(address, &ss, err, errlen);
	if (h->lfd < 0)
		goto fail;
	h->mhd = MHD_start_daemon(MHD_USE_EPOLL | MHD_USE_NO_LISTEN_SOCKET |
				  (!upath && ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				  0, NULL, NULL, handler, h,
				  MHD_OPTION_CONNECTION_LIMIT, CONN_TOTAL,
				  MHD_OPTION_CONNECTION_TIMEOUT, CONN_TIMEOUT_S,
				  MHD_OPTION_NOTIFY_CONNECTION, on_notify, h,
				  MHD_OPTION_END);
	if (!h->mhd) {
		snprintf(err, errlen, "cannot serve HTTP on %s", address);
		goto fail;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info || sd_event_add_io(d->loop, &h->io, info->epoll_fd, EPOLLIN, on_io, h) < 0 ||
	    sd_event_add_io(d->loop, &h->listen_src, h->lfd, EPOLLIN, on_accept, h) < 0 ||
	    /* a flood of connections (each costs an accept, a lookup and a close) waits while
	     * the daemon has scans' events to handle */
	    sd_event_source_set_priority(h->listen_src, SD_EVENT_PRIORITY_NORMAL + 10) < 0 ||
	    sd_event_add_time_relative(d->loop, &h->timer, CLOCK_MONOTONIC, 1000000, 0, on_timer, h) < 0) {
		snprintf(err, errlen, "cannot add the metrics endpoint to the event loop");
		goto fail;
	}
	rearm(h);
	return h;
fail:
	httpd_free(h);
	return NULL;
}

const char *httpd_address(const struct httpd *h)
{
	return h ? h->address : "";
}

void httpd_free(struct httpd *h)
{
	struct stat st;
	if (!h)
		return;
	sd_event_source_disable_unref(h->io);
	sd_event_source_disable_unref(h->timer);
	sd_event_source_disable_unref(h->listen_src);
	if (h->mhd)
		MHD_stop_daemon(h->mhd); /* closes its connections (their slots are freed) */
	if (h->lfd >= 0)
		close(h->lfd);
	if (h->cache)
		MHD_destroy_response(h->cache);
	/* only our own socket: another daemon may have taken the path since */
	if (h->unix_path && lstat(h->unix_path, &st) == 0 && st.st_dev == h->unix_dev &&
	    st.st_ino == h->unix_ino)
		unlink(h->unix_path);
	free(h->unix_path);
	free(h->address);
	free(h);
}
