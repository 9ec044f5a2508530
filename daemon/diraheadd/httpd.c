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

#include "config.h"
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

int httpd_start(struct daemon *d, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	const char *a = d->cfg.metrics_address;
	if (!a || !a[0])
		return 0;
	if (da_parse_address(a, &ss) < 0) {
		snprintf(err, errlen, "'%s' is not ADDRESS:PORT (e.g. 127.0.0.1:9567 or [::1]:9567)", a);
		return -1;
	}
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
