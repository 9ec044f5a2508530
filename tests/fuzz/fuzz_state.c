/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * libFuzzer target: the state file (daemon/diraheadd/persist_format.c), as the daemon reads it
 * at start.  Besides the sanitizers' reports: a document is refused with a reason, or every
 * entry it gives is in range (policy_memory_valid, key length), and writing those entries out
 * and reading them back gives the same entries.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "persist.h"

#define CHECK(cond)                                                                            \
	do {                                                                                   \
		if (!(cond)) {                                                                 \
			fprintf(stderr, "fuzz_state: %s:%d: broken: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                               \
		}                                                                              \
	} while (0)

#define NOW_S 1800000000ll

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct persist_entry *e, *again;
	unsigned n, n2;
	char err[256] = "";
	if (persist_decode((const char *)data, size, NOW_S, 30, &e, &n, err, sizeof(err)) < 0) {
		CHECK(!e && !n && err[0]);
		return 0;
	}
	CHECK(n <= PERSIST_MAX_ENTRIES);
	for (unsigned i = 0; i < n; i++) {
		CHECK(policy_memory_valid(&e[i].mem));
		CHECK(e[i].key && strlen(e[i].key) < PERSIST_MAX_KEY);
	}
	char *text = persist_encode(e, n, NOW_S);
	CHECK(text);
	CHECK(persist_decode(text, strlen(text), NOW_S, 30, &again, &n2, err, sizeof(err)) == 0);
	CHECK(n2 == n);
	for (unsigned i = 0; i < n; i++) {
		CHECK(strcmp(e[i].key, again[i].key) == 0 && e[i].seen == again[i].seen);
		CHECK(e[i].mem.verdict == again[i].mem.verdict && e[i].mem.depth == again[i].mem.depth);
	}
	persist_entries_free(again, n2);
	persist_entries_free(e, n);
	free(text);
	return 0;
}
