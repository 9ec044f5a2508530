/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
#include "httpd.h"

#include <arpa/inet.h>
#include <errno.h>
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

/* Prometheus scrapes over one kept-alive connection; a few more per client leave room for a
 * curl or two beside it.  Past these, libmicrohttpd closes new connections at once. */
#define CONN_PER_CLIENT 4u
#define CONN_TOTAL 16u
/* Idle connections (kept alive, or a client that never finishes its request) close after this. */
#define CONN_TIMEOUT_S 10u
/* A scrape renders every metric: scrapers that come together (several Prometheus servers, a
 * dashboard) share one rendering per this long. */
#define CACHE_USEC 1000000ull

/* libmicrohttpd runs in "external epoll" mode inside our sd-event loop: one thread, so the
 * handlers read the statistics without locks. */
struct httpd {
	struct daemon *d;
	struct MHD_Daemon *mhd;
	sd_event_source *io, *timer;
	char *address;              /* as configured */
	char *unix_path;            /* unix:PATH: the socket file made here, removed at the end */
	dev_t unix_dev;
	ino_t unix_ino;
	struct MHD_Response *cache; /* the last /metrics response (libmicrohttpd counts its users) */
	uint64_t cache_usec;        /* CLOCK_MONOTONIC when it was rendered */
};

static uint64_t now_usec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

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
	uint64_t now = now_usec();
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
	return da_host_allowed(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST),
			       (struct sockaddr *)&ss, &h->d->cfg.metrics_hosts);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
			       const char *method, const char *version, const char *upload_data,
			       size_t *upload_data_size, void **con_cls)
{
	struct httpd *h = cls;
	struct MHD_Response *resp;
	enum da_http_result result = DA_HTTP_OK;
	unsigned status = MHD_HTTP_OK;
	const char *plain = "text/plain; charset=utf-8";
	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)con_cls;

	if (!host_ok(h, conn)) {
		/* DNS rebinding: a browser sent here under another name.  Checked first, so that
		 * such a page learns nothing, not even which paths exist. */
		result = DA_HTTP_BAD_HOST;
		status = MHD_HTTP_FORBIDDEN;
		resp = text_response(strdup("dirahead: Host not allowed (see allowed_hosts in dirahead.conf(5))\n"), plain);
	} else if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		result = DA_HTTP_BAD_METHOD;
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
		result = DA_HTTP_NOT_FOUND;
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

static void rearm(struct httpd *h)
{
	MHD_UNSIGNED_LONG_LONG ms;
	if (MHD_get_timeout(h->mhd, &ms) == MHD_YES) {
		sd_event_source_set_time_relative(h->timer, ms * 1000);
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
	MHD_run(h->mhd);
	rearm(h);
	return 0;
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
	    listen(fd, 16) < 0 || stat(path, &st) < 0) {
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
	const char *upath = da_unix_address(address);
	struct httpd *h;
	int lfd = -1;
	if (errlen)
		err[0] = '\0';
	if (!address[0])
		return NULL;
	if (!upath && da_parse_address(address, &ss) < 0) {
		snprintf(err, errlen, "'%s' is not ADDRESS:PORT (e.g. 127.0.0.1:9567 or [::1]:9567) or unix:/PATH", address);
		return NULL;
	}
	if (!(h = calloc(1, sizeof(*h))) || !(h->address = strdup(address))) {
		free(h);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	h->d = d;
	if (upath) {
		if ((lfd = unix_listen(h, upath, err, errlen)) < 0)
			goto fail;
		h->mhd = MHD_start_daemon(MHD_USE_EPOLL, 0, NULL, NULL, handler, h,
					  MHD_OPTION_LISTEN_SOCKET, lfd,
					  MHD_OPTION_CONNECTION_LIMIT, CONN_TOTAL,
					  MHD_OPTION_CONNECTION_TIMEOUT, CONN_TIMEOUT_S,
					  MHD_OPTION_END);
		if (!h->mhd) {
			close(lfd);
			snprintf(err, errlen, "cannot serve HTTP on %s", upath);
			goto fail;
		}
	} else {
		unsigned flags = MHD_USE_EPOLL | (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
		errno = 0;
		h->mhd = MHD_start_daemon(flags, 0, NULL, NULL, handler, h,
					  MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
					  MHD_OPTION_CONNECTION_LIMIT, CONN_TOTAL,
					  MHD_OPTION_PER_IP_CONNECTION_LIMIT, CONN_PER_CLIENT,
					  MHD_OPTION_CONNECTION_TIMEOUT, CONN_TIMEOUT_S,
					  MHD_OPTION_END);
		if (!h->mhd) {
			snprintf(err, errlen, "cannot listen on %s%s%s", address, errno ? ": " : "",
				 errno ? strerror(errno) : "");
			goto fail;
		}
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info || sd_event_add_io(d->loop, &h->io, info->epoll_fd, EPOLLIN, on_io, h) < 0 ||
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
	if (h->mhd)
		MHD_stop_daemon(h->mhd); /* closes the listening socket too */
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
