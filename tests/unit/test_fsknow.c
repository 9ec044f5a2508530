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

/* Arming for a blocked program: where no lookup may be sent, only on a walk's first sign (a
 * second directory listed); anywhere else at once. */
static void test_arm(void **state)
{
	const uint32_t sshfs = DIRAHEAD_FSI_FUSE | DIRAHEAD_FSI_SERIAL_LOOKUPS |
			       DIRAHEAD_FSI_READDIRPLUS;
	(void)state;
	assert_false(fsknow_arm(sshfs, 0));
	assert_false(fsknow_arm(sshfs, 1));
	assert_true(fsknow_arm(sshfs, 2));
	assert_false(fsknow_arm(DIRAHEAD_FSI_FUSE | DIRAHEAD_FSI_SERIAL_LOOKUPS, 1));
	assert_true(fsknow_arm(DIRAHEAD_FSI_FUSE | DIRAHEAD_FSI_READDIRPLUS, 0));
	assert_true(fsknow_arm(DIRAHEAD_FSI_FUSE, 0));
	assert_true(fsknow_arm(0, 0));
	/* the serial bit means nothing without FUSE's */
	assert_true(fsknow_arm(DIRAHEAD_FSI_SERIAL_LOOKUPS, 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_fuse),
		cmocka_unit_test(test_fuse),
		cmocka_unit_test(test_arm),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
