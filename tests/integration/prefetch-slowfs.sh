#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# On slowfs (1 ms per request, 2,000 entries), for each engine on a fresh (cold) mount:
# `diraheadctl prefetch DIR` keeps many lookups in flight, and a following `ls -l DIR` sends no
# lookup or getattr of its own.  A cold `ls -l` is the control (it does send 2,000 lookups).
# Also: the engine lets go of a finished directory while still working on another (its
# filesystem unmounts at once, mid-run), and slowfs unmounts right after the prefetch.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/prefetch.sh"
need_root

N=2000
make_files "$T/back" $N

for engine in io_uring threads; do
	M=$T/mnt-$engine
	slowfs_mount "$T/back" "$M" --latency-us 1000
	slowfs_ctl reset >/dev/null
	expect_exit 0 "$CTL" prefetch --engine=$engine "$M"
	info "$engine: $OUT"
	assert_eq "$(field_n entries)" $N "$engine entries"
	assert_eq "$(field_n errors)" 0 "$engine errors"
	assert_ge "$(slowfs_stat total.lookup)" $N "$engine: lookups sent by the prefetch"
	# concurrency: at least 16 at once (serially 2,000 x 1 ms would take 2 s)
	assert_ge "$(slowfs_stat max_inflight_lookup_getattr)" 16 "$engine: requests in flight"
	elapsed_ms=$(awk -v s="$(field_n elapsed)" 'BEGIN { printf "%d", s * 1000 }')
	assert_le "$elapsed_ms" 1000 "$engine: prefetch elapsed ms"

	slowfs_ctl reset >/dev/null
	ls -l "$M" >/dev/null &
	pid=$!
	wait $pid
	assert_ge "$(slowfs_stat pid.$pid.all)" 1 "slowfs counted ls at all"
	assert_eq "$(slowfs_stat pid.$pid.lookup)" 0 "$engine: lookups by ls -l after the prefetch"
	assert_eq "$(slowfs_stat pid.$pid.getattr)" 0 "$engine: getattrs by ls -l after the prefetch"

	# nothing held open: a plain (not lazy) unmount succeeds right away
	fusermount3 -u "$M" || fail "$engine: unmount right after the prefetch failed"
done

info "control: a cold ls -l looks every entry up itself"
slowfs_mount "$T/back" "$T/mnt-cold" --latency-us 1000
slowfs_ctl reset >/dev/null
ls -l "$T/mnt-cold" >/dev/null &
pid=$!
wait $pid
assert_ge "$(slowfs_stat pid.$pid.lookup)" $N "lookups by a cold ls -l"

info "a finished directory is let go while the engine works on another"
mkdir -p "$T/tmpfs"
mount -t tmpfs -o size=16m dirahead-test "$T/tmpfs"
on_exit "umount -l '$T/tmpfs'"
make_files "$T/tmpfs/d" $N
slowfs_mount "$T/back" "$T/mnt-slow" --lookup-us 5000   # 2,000 x 5 ms / depth 4: 2.5 s
"$CTL" prefetch --depth=4 "$T/mnt-slow" "$T/tmpfs/d" >"$T/out" 2>&1 &
cpid=$!
on_exit "kill $cpid"
lookups_ge() { [ "$(slowfs_stat total.lookup)" -ge "$1" ]; }
slowfs_ctl reset >/dev/null
wait_for 5 lookups_ge 1           # both directories are submitted by now
wait_for 5 umount "$T/tmpfs"
kill -0 $cpid 2>/dev/null || fail "diraheadctl finished before the tmpfs could be unmounted"
wait $cpid || fail "diraheadctl failed: $(cat "$T/out")"
OUT=$(cat "$T/out")
assert_eq "$(field_n entries)" $((2 * N)) "entries of both directories"
fusermount3 -u "$T/mnt-slow" || fail "unmount of slowfs right after the prefetch failed"
echo PASS
