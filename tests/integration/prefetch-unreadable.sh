#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Directories that cannot be read.  Root bypasses permission checks, so the prefetch runs as
# nobody (setpriv): with -r, a mode-000 subdirectory is counted as one error and skipped, the
# rest of the tree is warmed, exit 0; an unreadable DIR argument gives exit 1 and the other DIR
# is still warmed.  On slowfs, lookups failing with EIO are counted as errors too.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/prefetch.sh"
need_root
need_cmd setpriv

as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

chmod 755 "$T"
as_nobody test -x "$CTL" || skip "nobody cannot run $CTL (its path is not world-accessible)"
R=$T/tree
make_files "$R/ok1/deep" 20
make_files "$R/ok2" 30
make_files "$R/locked" 40
make_files "$R" 10
chmod 000 "$R/locked"
# what nobody can see: everything except the 40 entries inside locked
want=$(( $(find "$R" -mindepth 1 | wc -l) - 40 ))

for engine in io_uring threads; do
	expect_exit 0 as_nobody "$CTL" prefetch -r --engine=$engine "$R"
	info "$engine: $OUT"
	assert_contains "$OUT" "locked: Permission denied"
	assert_eq "$(field_n errors)" 1 "$engine: the locked subdirectory"
	assert_eq "$(field_n directories)" 4 "$engine: tree, ok1, ok1/deep, ok2"
	assert_eq "$(field_n entries)" "$want" "$engine: entries"

	expect_exit 1 as_nobody "$CTL" prefetch --engine=$engine "$R/locked" "$R/ok2"
	assert_contains "$OUT" "locked: Permission denied"
	assert_eq "$(field_n entries)" 30 "$engine: the readable DIR is still warmed"

	# the premise: root reads it (so the errors above are permissions, nothing else)
	expect_exit 0 "$CTL" prefetch -r --engine=$engine "$R"
	assert_eq "$(field_n errors)" 0 "$engine: as root"
done

info "slowfs: failing lookups"
make_files "$T/back/sub" 10
make_files "$T/back" 100
slowfs_mount "$T/back" "$T/mnt" --latency-us 100
slowfs_ctl fail-lookups EIO >/dev/null
expect_exit 0 "$CTL" prefetch -r "$T/mnt"
info "$OUT"
assert_eq "$(field_n entries)" 101 "entries tried"
assert_eq "$(field_n errors)" 101 "each lookup failed"
assert_eq "$(field_n directories)" 1 "the top directory itself is fine"
slowfs_ctl fail-lookups 0 >/dev/null
echo PASS
