#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# The directory changes under a running prefetch (slowfs, 1 ms per lookup, depth 2 so that the
# run takes seconds), both engines: entries deleted mid-way are counted as errors (ENOENT), the
# run still ends with exit 0; the whole directory removed mid-way ends it sensibly too.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/prefetch.sh"
need_root

lookups_ge() { [ "$(slowfs_stat total.lookup)" -ge "$1" ]; }

N=3000
for engine in io_uring threads; do
	B=$T/back-$engine
	make_files "$B/d" $N
	slowfs_mount "$B" "$T/mnt-$engine" --latency-us 1000
	M=$T/mnt-$engine

	info "$engine: entries deleted mid-way"
	"$CTL" prefetch --engine=$engine --depth=2 --order=readdir "$M/d" >"$T/out" 2>&1 &
	pid=$!
	on_exit "kill -KILL $pid"
	wait_for 5 lookups_ge 100
	# the second half of the names, which (readdir order on ext4 is hashed) are spread over
	# the whole run: most of them are still to come
	(cd "$B/d" && seq -f "f%06g" $((N / 2 + 1)) $N | xargs rm -f)
	rc=0
	wait $pid || rc=$?
	OUT=$(cat "$T/out")
	info "exit $rc: $OUT"
	assert_eq $rc 0 "$engine: exit status"
	assert_eq "$(field_n entries)" $N "$engine: entries tried"
	assert_ge "$(field_n errors)" $((N / 4)) "$engine: deleted entries counted as errors"

	info "$engine: directory removed mid-way"
	make_files "$B/e" $N
	"$CTL" prefetch --engine=$engine --depth=2 "$M/e" >"$T/out" 2>&1 &
	pid=$!
	on_exit "kill -KILL $pid"
	slowfs_ctl reset >/dev/null
	wait_for 5 lookups_ge 100
	rm -rf "$B/e"
	rc=0
	wait $pid || rc=$?
	OUT=$(cat "$T/out")
	info "exit $rc: $OUT"
	[ $rc = 0 ] || [ $rc = 1 ] || fail "$engine: exit $rc after the directory was removed"
	assert_ge "$(field_n errors)" $((N / 2)) "$engine: entries gone with their directory"
done
echo PASS
