/* SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause */
/*
 * fsknow_entries (daemon/diraheadd/fsknow.c): what the kernel's view of a filesystem implies.
 * Serialized FUSE lookups forbid per-entry lookups whatever else is known; readdirplus alone
 * asks for evidence first; nothing known (not FUSE, or its connection not read) leaves it to
 * the cost model.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "dirahead_event.h"
#include "fsknow.h"

static void test_not_fuse(void **state)
{
	(void)state;
	assert_int_equal(fsknow_entries(0), FSKNOW_FETCH);
	/* bits without the FUSE bit were not read from a connection: ignored */
	assert_int_equal(fsknow_entries(DIRAHEAD_FSI_SERIAL_LOOKUPS), FSKNOW_FETCH);
	assert_int_equal(fsknow_entries(DIRAHEAD_FSI_READDIRPLUS), FSKNOW_FETCH);
}

static void test_fuse(void **state)
{
	(void)state;
	assert_int_equal(fsknow_entries(DIRAHEAD_FSI_FUSE), FSKNOW_FETCH);
	assert_int_equal(fsknow_entries(DIRAHEAD_FSI_FUSE | DIRAHEAD_FSI_SERIAL_LOOKUPS),
			 FSKNOW_NO_LOOKUPS);
	assert_int_equal(fsknow_entries(DIRAHEAD_FSI_FUSE | DIRAHEAD_FSI_READDIRPLUS),
			 FSKNOW_PROBE_FIRST);
	/* sshfs: both; serialized lookups decide */
	assert_int_equal(fsknow_entries(DIRAHEAD_FSI_FUSE | DIRAHEAD_FSI_SERIAL_LOOKUPS |
					DIRAHEAD_FSI_READDIRPLUS),
			 FSKNOW_NO_LOOKUPS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_fuse),
		cmocka_unit_test(test_fuse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
