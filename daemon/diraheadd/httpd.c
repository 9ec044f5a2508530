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

#include "daemon.h"
#include "log.h"
#include "metrics.h"

/* libmicrohttpd runs in "external epoll" mode inside our sd-event loop: one thread, so the
 * handlers read the statistics without locks. */
static struct MHD_Daemon *mhd;
static sd_event_source *io_src, *timer_src;

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
			       const char *method, const char *version, const char *upload_data,
			       size_t *upload_data_size, void **con_cls)
{
	struct daemon *d = cls;
	struct MHD_Response *resp;
	enum MHD_Result ret;
	unsigned status = MHD_HTTP_OK;
	char *body;
	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)con_cls;

	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		body = strdup("only GET\n");
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
	} else if (!strcmp(url, "/metrics")) {
		body = metrics_text(d);
	} else if (!strcmp(url, "/")) {
		body = strdup("dirahead: metrics at /metrics\n");
	} else {
		body = strdup("not found\n");
		status = MHD_HTTP_NOT_FOUND;
	}
	if (!body)
		return MHD_NO;
	resp = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", status == MHD_HTTP_OK && !strcmp(url, "/metrics")
		? "text/plain; version=0.0.4; charset=utf-8" : "text/plain; charset=utf-8");
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static void rearm(void)
{
	MHD_UNSIGNED_LONG_LONG ms;
	if (MHD_get_timeout(mhd, &ms) == MHD_YES) {
		sd_event_source_set_time_relative(timer_src, ms * 1000);
		sd_event_source_set_enabled(timer_src, SD_EVENT_ONESHOT);
	} else {
		sd_event_source_set_enabled(timer_src, SD_EVENT_OFF);
	}
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	(void)s; (void)fd; (void)revents; (void)userdata;
	MHD_run(mhd);
	rearm();
	return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	(void)s; (void)usec; (void)userdata;
	MHD_run(mhd);
	rearm();
	return 0;
}

/* "127.0.0.1:9567", "[::1]:9567", ":9567" (loopback is the default for a bare port). */
static int parse_addr(const char *a, struct sockaddr_storage *ss, char *err, size_t errlen)
{
	char host[128];
	const char *colon;
	memset(ss, 0, sizeof(*ss));
	if (a[0] == '[') {
		const char *end = strchr(a, ']');
		if (!end || end[1] != ':' || (size_t)(end - a - 1) >= sizeof(host))
			goto bad;
		memcpy(host, a + 1, (size_t)(end - a - 1));
		host[end - a - 1] = '\0';
		colon = end + 1;
	} else {
		colon = strrchr(a, ':');
		if (!colon || (size_t)(colon - a) >= sizeof(host))
			goto bad;
		memcpy(host, a, (size_t)(colon - a));
		host[colon - a] = '\0';
		if (!host[0])
			strcpy(host, "127.0.0.1");
	}
	char *end;
	long port = strtol(colon + 1, &end, 10);
	if (*end || port <= 0 || port > 65535)
		goto bad;
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
	} else if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
	} else {
		goto bad;
	}
	return 0;
bad:
	snprintf(err, errlen, "'%s' is not ADDRESS:PORT (e.g. 127.0.0.1:9567 or [::1]:9567)", a);
	return -1;
}

int httpd_start(struct daemon *d, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	const char *a = d->cfg.metrics_address;
	if (!a || !a[0])
		return 0;
	if (parse_addr(a, &ss, err, errlen) < 0)
		return -1;
	unsigned flags = MHD_USE_EPOLL | (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
	mhd = MHD_start_daemon(flags, 0, NULL, NULL, handler, d,
			       MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
			       MHD_OPTION_CONNECTION_LIMIT, (unsigned)16,
			       MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
			       MHD_OPTION_END);
	if (!mhd) {
		snprintf(err, errlen, "cannot listen on %s (in use?)", a);
		return -1;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info || sd_event_add_io(d->loop, &io_src, info->epoll_fd, EPOLLIN, on_io, NULL) < 0 ||
	    sd_event_add_time_relative(d->loop, &timer_src, CLOCK_MONOTONIC, 1000000, 0, on_timer, NULL) < 0) {
		snprintf(err, errlen, "cannot add the metrics endpoint to the event loop");
		httpd_stop();
		return -1;
	}
	rearm();
	return 0;
}

void httpd_stop(void)
{
	io_src = sd_event_source_disable_unref(io_src);
	timer_src = sd_event_source_disable_unref(timer_src);
	if (mhd)
		MHD_stop_daemon(mhd);
	mhd = NULL;
}
