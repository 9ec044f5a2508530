/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * The state file's format (persist.h): filesystem keys from mountinfo, and the versioned JSON
 * document with its validation.  Pure: no I/O, unit tested over mutated documents.
 */
#include "persist.h"

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FORMAT_NAME "dirahead-state"
#define MAX_DELAY_S (86400.0 * 16)
#define FUTURE_SLACK_S 86400

int persist_parse_mountinfo(char *line, struct persist_mount *m)
{
	/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTS */
	char *save = NULL, *tok;
	unsigned field = 0;
	bool dash = false;
	*m = (struct persist_mount){ 0 };
	line[strcspn(line, "\n")] = '\0';
	for (tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save), field++) {
		if (field == 2 && sscanf(tok, "%u:%u", &m->dev_major, &m->dev_minor) != 2)
			return -1;
		if (field == 4)
			m->mountpoint = tok;
		if (field < 6)
			continue;
		if (!dash) {
			dash = strcmp(tok, "-") == 0;
			continue;
		}
		if (!m->fstype)
			m->fstype = tok;
		else if (!m->source)
			m->source = tok;
		else if (!m->super_opts)
			m->super_opts = tok;
	}
	return m->mountpoint && m->fstype && m->source && m->super_opts ? 0 : -1;
}

int persist_unescape(const char *in, char *out, size_t len)
{
	size_t o = 0;
	for (const char *c = in; *c; c++) {
		char ch = *c;
		/* mountinfo writes space, tab, newline and backslash as \ooo */
		if (c[0] == '\\' && c[1] >= '0' && c[1] <= '3' && c[2] >= '0' && c[2] <= '7' &&
		    c[3] >= '0' && c[3] <= '7') {
			ch = (char)((c[1] - '0') * 64 + (c[2] - '0') * 8 + (c[3] - '0'));
			c += 3;
		}
		if (!ch || o + 1 >= len)
			return -1;
		out[o++] = ch;
	}
	if (!len)
		return -1;
	out[o] = '\0';
	return 0;
}

bool persist_uuid_text(const uint8_t *u, unsigned n, char *out, size_t len)
{
	bool any = false;
	for (unsigned i = 0; i < n; i++)
		any |= u[i] != 0;
	/* an all-zero UUID (an image made without one) names no filesystem in particular */
	if (n != 16 || !any || len < 37)
		return false;
	snprintf(out, len,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
		 u[13], u[14], u[15]);
	return true;
}

int persist_key(const struct persist_mount *m, const char *uuid, char *out, size_t len)
{
	int n = uuid && uuid[0] ? snprintf(out, len, "uuid:%s:%s", m->fstype, uuid)
				: snprintf(out, len, "mount:%s %s %s", m->fstype, m->source, m->super_opts);
	if (n < 0 || (size_t)n >= len || (size_t)n >= PERSIST_MAX_KEY)
		return -1;
	/* mountinfo escapes only space, tab, newline and backslash: a source with other control
	 * characters (a user's FUSE fsname) is not remembered, rather than written into a file the
	 * next start would refuse whole */
	for (int i = 0; i < n; i++)
		if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
			return -1;
	return 0;
}

static void add_num(json_object *o, const char *k, double v)
{
	json_object_object_add(o, k, json_object_new_double(v));
}

static void add_u(json_object *o, const char *k, uint64_t v)
{
	json_object_object_add(o, k, json_object_new_uint64(v));
}

static json_object *entry_json(const struct persist_entry *e)
{
	const struct pol_memory *m = &e->mem;
	json_object *o = json_object_new_object(), *l = json_object_new_object();
	json_object_object_add(o, "key", json_object_new_string(e->key));
	json_object_object_add(o, "seen", json_object_new_int64(e->seen));
	add_u(o, "magic", m->magic);
	json_object_object_add(o, "verdict", json_object_new_string(pol_verdict_names[m->verdict]));
	add_u(o, "depth", m->depth);
	add_u(o, "backoff", m->backoff);
	add_num(o, "reprobe_in_s", (double)m->reprobe_in_ns / 1e9);
	add_num(o, "no_gain_cost_ns", m->no_gain_cost_ns);
	add_num(o, "before_ns", m->before_ns);
	add_num(o, "after_ns", m->after_ns);
	add_num(o, "cost_ns", m->cost_ns);
	add_num(o, "pf_lat_ns", m->pf_lat_ns);
	if (m->fast_backoff) {
		add_u(o, "fast_backoff", m->fast_backoff);
		add_num(o, "rejudge_in_s", (double)m->rejudge_in_ns / 1e9);
	}
	json_object_object_add(l, "verdict", json_object_new_string(pol_verdict_names[m->list_verdict]));
	add_u(l, "backoff", m->list_backoff);
	add_num(l, "reprobe_in_s", (double)m->list_reprobe_in_ns / 1e9);
	add_num(l, "wall_ns", m->list_wall_ns);
	add_num(l, "cpu_ns", m->list_cpu_ns);
	add_num(l, "first_ns", m->list_first_ns);
	add_num(l, "ahead_ns", m->list_ahead_ns);
	add_num(l, "own_ns", m->list_own_ns);
	json_object_object_add(o, "listing", l);
	return o;
}

char *persist_encode(const struct persist_entry *e, unsigned n, int64_t now_s)
{
	json_object *doc = json_object_new_object(), *arr = json_object_new_array();
	if (!doc || !arr) {
		json_object_put(doc);
		json_object_put(arr);
		return NULL;
	}
	json_object_object_add(doc, "format", json_object_new_string(FORMAT_NAME));
	json_object_object_add(doc, "version", json_object_new_int(PERSIST_VERSION));
	json_object_object_add(doc, "saved", json_object_new_int64(now_s));
	for (unsigned i = 0; i < n; i++)
		json_object_array_add(arr, entry_json(&e[i]));
	json_object_object_add(doc, "filesystems", arr);
	const char *s = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
						       JSON_C_TO_STRING_NOSLASHESCAPE);
	char *out = s ? strdup(s) : NULL;
	json_object_put(doc);
	return out;
}

/* ---- decoding: every field present, of its type, in its range ---------------------------- */

static bool get_num(json_object *o, const char *k, double lo, double hi, double *v)
{
	json_object *j;
	if (!json_object_object_get_ex(o, k, &j) ||
	    (!json_object_is_type(j, json_type_double) && !json_object_is_type(j, json_type_int)))
		return false;
	*v = json_object_get_double(j);
	return isfinite(*v) && *v >= lo && *v <= hi;
}

static bool get_int(json_object *o, const char *k, int64_t lo, int64_t hi, int64_t *v)
{
	json_object *j;
	if (!json_object_object_get_ex(o, k, &j) || !json_object_is_type(j, json_type_int))
		return false;
	*v = json_object_get_int64(j);
	return *v >= lo && *v <= hi && *v != INT64_MAX && *v != INT64_MIN;
}

static bool get_verdict(json_object *o, const char *k, enum pol_verdict *v)
{
	json_object *j;
	if (!json_object_object_get_ex(o, k, &j) || !json_object_is_type(j, json_type_string))
		return false;
	for (int i = 0; i < POL_VERDICT_MAX; i++)
		if (strcmp(json_object_get_string(j), pol_verdict_names[i]) == 0) {
			*v = (enum pol_verdict)i;
			return true;
		}
	return false;
}

static bool get_key(json_object *o, char **key)
{
	json_object *j;
	if (!json_object_object_get_ex(o, "key", &j) || !json_object_is_type(j, json_type_string))
		return false;
	const char *s = json_object_get_string(j);
	size_t len = (size_t)json_object_get_string_len(j);
	if (!len || len >= PERSIST_MAX_KEY || strlen(s) != len)
		return false; /* empty, too long, or with a NUL inside */
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	if (strncmp(s, "uuid:", 5) && strncmp(s, "mount:", 6))
		return false;
	*key = strdup(s);
	return *key != NULL;
}

static bool decode_listing(json_object *l, struct pol_memory *m)
{
	int64_t b;
	double d;
	if (!json_object_is_type(l, json_type_object) || !get_verdict(l, "verdict", &m->list_verdict) ||
	    !get_int(l, "backoff", 1, 16, &b) || !get_num(l, "reprobe_in_s", 0, MAX_DELAY_S, &d) ||
	    !get_num(l, "wall_ns", 0, 3600e9, &m->list_wall_ns) ||
	    !get_num(l, "cpu_ns", 0, 3600e9, &m->list_cpu_ns) ||
	    !get_num(l, "first_ns", 0, 3600e9, &m->list_first_ns) ||
	    !get_num(l, "ahead_ns", 0, 3600e9, &m->list_ahead_ns) ||
	    !get_num(l, "own_ns", 0, 3600e9, &m->list_own_ns))
		return false;
	m->list_backoff = (unsigned)b;
	m->list_reprobe_in_ns = (uint64_t)(d * 1e9);
	return true;
}

/* Optional (absent in files from before it, and when no re-judgment found the filesystem fast
 * again): both or neither. */
static bool decode_fast_backoff(json_object *o, struct pol_memory *m)
{
	int64_t b;
	double d;
	m->fast_backoff = 0;
	m->rejudge_in_ns = 0;
	if (!json_object_object_get_ex(o, "fast_backoff", NULL))
		return !json_object_object_get_ex(o, "rejudge_in_s", NULL);
	if (!get_int(o, "fast_backoff", 2, 64, &b) || !get_num(o, "rejudge_in_s", 0, MAX_DELAY_S, &d))
		return false;
	m->fast_backoff = (unsigned)b;
	m->rejudge_in_ns = (uint64_t)(d * 1e9);
	return true;
}

static bool decode_entry(json_object *o, int64_t now_s, struct persist_entry *e)
{
	struct pol_memory *m = &e->mem;
	int64_t magic, depth, backoff;
	double d;
	json_object *l;
	if (!json_object_is_type(o, json_type_object) ||
	    !get_int(o, "seen", 0, now_s + FUTURE_SLACK_S, &e->seen) ||
	    !get_int(o, "magic", 1, UINT32_MAX, &magic) || !get_verdict(o, "verdict", &m->verdict) ||
	    !get_int(o, "depth", 0, 65536, &depth) || !get_int(o, "backoff", 1, 16, &backoff) ||
	    !get_num(o, "reprobe_in_s", 0, MAX_DELAY_S, &d) ||
	    !get_num(o, "no_gain_cost_ns", 0, 3600e9, &m->no_gain_cost_ns) ||
	    !get_num(o, "before_ns", 0, 3600e9, &m->before_ns) ||
	    !get_num(o, "after_ns", 0, 3600e9, &m->after_ns) ||
	    !get_num(o, "cost_ns", 0, 3600e9, &m->cost_ns) ||
	    !get_num(o, "pf_lat_ns", 0, 3600e9, &m->pf_lat_ns) ||
	    !json_object_object_get_ex(o, "listing", &l) || !decode_listing(l, m))
		return false;
	m->magic = (uint64_t)magic;
	m->depth = (unsigned)depth;
	m->backoff = (unsigned)backoff;
	m->reprobe_in_ns = (uint64_t)(d * 1e9);
	if (!decode_fast_backoff(o, m))
		return false;
	/* policy's own rules last (backoffs powers of two ...); the key after, it allocates */
	return policy_memory_valid(m) && get_key(o, &e->key);
}

static json_object *parse_doc(const char *text, size_t len, char *err, size_t errlen)
{
	if (len > PERSIST_MAX_FILE || memchr(text, '\0', len)) {
		snprintf(err, errlen, len > PERSIST_MAX_FILE ? "too big" : "not text");
		return NULL;
	}
	json_tokener *tok = json_tokener_new_ex(16);
	if (!tok) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	json_object *doc = json_tokener_parse_ex(tok, text, (int)len);
	enum json_tokener_error je = json_tokener_get_error(tok);
	size_t used = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	while (doc && used < len && strchr(" \t\r\n", text[used]))
		used++;
	if (!doc || je != json_tokener_success || used != len) {
		snprintf(err, errlen, "not a JSON document (%s)",
			 doc ? "trailing data" : json_tokener_error_desc(je));
		json_object_put(doc);
		return NULL;
	}
	return doc;
}

int persist_decode(const char *text, size_t len, int64_t now_s, unsigned remember_days,
		   struct persist_entry **out, unsigned *n, char *err, size_t errlen)
{
	json_object *doc = parse_doc(text, len, err, errlen), *j, *arr;
	*out = NULL;
	*n = 0;
	if (!doc)
		return -1;
	int64_t version;
	if (!json_object_is_type(doc, json_type_object) ||
	    !json_object_object_get_ex(doc, "format", &j) || !json_object_is_type(j, json_type_string) ||
	    strcmp(json_object_get_string(j), FORMAT_NAME) ||
	    !get_int(doc, "version", 0, INT32_MAX, &version)) {
		snprintf(err, errlen, "not a dirahead state file");
		goto bad;
	}
	if (version != PERSIST_VERSION) {
		snprintf(err, errlen, "version %lld, this daemon reads %d", (long long)version,
			 PERSIST_VERSION);
		goto bad;
	}
	size_t count;
	if (!json_object_object_get_ex(doc, "filesystems", &arr) ||
	    !json_object_is_type(arr, json_type_array) ||
	    (count = json_object_array_length(arr)) > PERSIST_MAX_ENTRIES) {
		snprintf(err, errlen, "no list of at most %d filesystems", PERSIST_MAX_ENTRIES);
		goto bad;
	}
	struct persist_entry *e = calloc(count ? count : 1, sizeof(*e));
	if (!e) {
		snprintf(err, errlen, "out of memory");
		goto bad;
	}
	unsigned kept = 0;
	for (size_t i = 0; i < count; i++) {
		struct persist_entry x = { 0 };
		if (!decode_entry(json_object_array_get_idx(arr, i), now_s, &x)) {
			snprintf(err, errlen, "filesystem %zu: a field is missing or out of range", i);
			persist_entries_free(e, kept);
			goto bad;
		}
		if (x.seen + (int64_t)remember_days * 86400 >= now_s)
			e[kept++] = x;
		else
			free(x.key); /* aged out */
	}
	json_object_put(doc);
	*out = e;
	*n = kept;
	return 0;
bad:
	json_object_put(doc);
	return -1;
}

void persist_entries_free(struct persist_entry *e, unsigned n)
{
	for (unsigned i = 0; e && i < n; i++)
		free(e[i].key);
	free(e);
}
