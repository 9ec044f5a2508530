/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * libFuzzer target: one control request as a client sends it (daemon/diraheadd/control.c, the
 * protocol of ctlproto.h).  The input is the bytes the daemon reads from the socket: they are
 * framed by control_request_line() as they arrive, once in a single read and once a byte at a
 * time (both must come to the same line), and the line is answered by control_answer() over a
 * status snapshot (snapshot.h).  The bytes after the first newline, which the daemon never reads
 * as a request, name the snapshot's scan (program and directory names are what a user controls
 * in a live daemon's replies).  Checked besides the sanitizers' reports: a line ended by a
 * newline within the limit is answered at once; known commands answer ok with valid JSON (status,
 * stats, scans: the scan's names read back as they were; explain [PID]: an array), anything else
 * an error of one line.
 */
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "ctlproto.h"
#include "snapshot.h"

#define CHECK(cond)                                                                            \
	do {                                                                                   \
		if (!(cond)) {                                                                 \
			fprintf(stderr, "fuzz_control: %s:%d: broken: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                               \
		}                                                                              \
	} while (0)

static struct daemon d;

/* As on_conn_io() reads: up to the buffer's room, `step` bytes per read (0: all at once).
 * Returns control_request_line()'s last answer, or 0 if the client sent all and then closed. */
static int frame(const uint8_t *data, size_t size, size_t step, char *buf, size_t bufsize)
{
	size_t len = 0, off = 0;
	while (off < size) {
		size_t n = size - off, room = bufsize - 1 - len;
		if (step && n > step)
			n = step;
		if (n > room)
			n = room;
		CHECK(n > 0); /* a full buffer is -1, never another read */
		memcpy(buf + len, data + off, n);
		len += n;
		off += n;
		int r = control_request_line(buf, len, bufsize);
		if (r)
			return r;
	}
	return 0;
}

static void check_json(const char *cmd, const char *body)
{
	json_object *o = json_tokener_parse(body);
	CHECK(o);
	if (!strcmp(cmd, "scans")) {
		json_object *s, *v;
		CHECK(json_object_is_type(o, json_type_array) && json_object_array_length(o) == 1);
		s = json_object_array_get_idx(o, 0);
		CHECK(json_object_object_get_ex(s, "directory", &v));
		CHECK(!strcmp(json_object_get_string(v), snapshot_scan_path()));
		CHECK(json_object_object_get_ex(s, "comm", &v));
		CHECK(!strcmp(json_object_get_string(v), snapshot_scan_comm()));
	} else {
		CHECK(json_object_is_type(o, json_type_object));
	}
	json_object_put(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char whole[DD_CTL_MAX_REQUEST], bytewise[DD_CTL_MAX_REQUEST];

	if (!d.config_path)
		snapshot_daemon_init(&d);
	const uint8_t *nl = memchr(data, '\n', size);
	if (nl)
		snapshot_set_scan(nl + 1, size - (size_t)(nl + 1 - data));

	int r = frame(data, size, 0, whole, sizeof(whole));
	CHECK(frame(data, size, 1, bytewise, sizeof(bytewise)) == r);
	if (nl && nl - data < DD_CTL_MAX_REQUEST - 1)
		CHECK(r == 1); /* complete: no waiting for the timeout */
	if (r != 1)
		return 0; /* closed without an answer (too long) or left for more */
	CHECK(!strcmp(whole, bytewise));

	bool ok;
	char *body = control_answer(&d, whole, &ok);
	CHECK(body);
	bool known = !strcmp(whole, "status") || !strcmp(whole, "stats") || !strcmp(whole, "scans") ||
		     !strcmp(whole, "metrics");
	if (known) {
		CHECK(ok);
		if (strcmp(whole, "metrics"))
			check_json(whole, body);
		else
			CHECK(body[0] == '#' && body[strlen(body) - 1] == '\n');
	} else if (ok) {
		/* explain [PID]: the decision log, an array (empty here) */
		CHECK(!strncmp(whole, "explain", 7));
		json_object *o = json_tokener_parse(body);
		CHECK(o && json_object_is_type(o, json_type_array));
		json_object_put(o);
	} else {
		/* reload fails in the snapshot, explain with what is not a PID; the rest is unknown */
		CHECK(body[0] && !strchr(body, '\n') && strcmp(whole, "explain"));
	}
	free(body);
	return 0;
}
