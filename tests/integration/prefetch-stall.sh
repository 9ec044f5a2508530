#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Hung filesystems, both engines:
# 1. slowfs stalled (no reply at all): `diraheadctl prefetch MNT LOCAL` still warms LOCAL, and
#    SIGTERM cancels at once (summary within 1 s).  The process itself can only be reaped once
#    slowfs answers: a thread inside a FUSE request the server has already read waits
#    uninterruptibly, even through SIGKILL (so does a plain `stat`).  After `release` it exits
#    within 1 s.
# 2. lookups that never return (readdir fast): the hung directory's requests fill the whole
#    depth, yet after the stall timeout (1 s) they stop counting and LOCAL is fetched; SIGINT
#    then cancels at once.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/prefetch.sh"
need_root

inflight_ge() { [ "$(slowfs_stat inflight)" -ge "$1" ]; }
has_summary() { grep -q '^prefetch:' "$1"; }
# reaped: every thread of the process has exited (a zombie leader alone is not enough: the
# leader turns Z as soon as it exits, while threads stuck in the kernel keep the process alive)
reaped() {
	kill -0 "$1" 2>/dev/null || return 0
	[ "$(find "/proc/$1/task" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)" -le 1 ] &&
		[ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" = Z ]
}
# within_ms MS CMD...: CMD becomes true within MS milliseconds; prints how long it took
within_ms() {
	local limit=$1 start; shift
	start=$(now_ms)
	until "$@"; do
		[ $(($(now_ms) - start)) -le "$limit" ] || return 1
		sleep 0.01
	done
	echo $(($(now_ms) - start))
}

make_files "$T/back" 2000
make_files "$T/local" 3000

info "1. stalled slowfs"
slowfs_mount "$T/back" "$T/mnt" --latency-us 1000
for engine in io_uring threads; do
	slowfs_ctl stall >/dev/null
	"$CTL" prefetch --engine=$engine "$T/mnt" "$T/local" >"$T/out" 2>&1 &
	pid=$!
	on_exit "kill -KILL $pid"
	wait_for 5 inflight_ge 1          # the engine's open of MNT is held by slowfs
	sleep 0.3
	kill -0 $pid 2>/dev/null || fail "$engine: finished although slowfs is stalled: $(cat "$T/out")"
	kill -TERM $pid
	ms=$(within_ms 1000 has_summary "$T/out") || fail "$engine: no summary within 1 s of SIGTERM"
	OUT=$(cat "$T/out")
	info "$engine: cancelled in ${ms} ms: $OUT"
	assert_contains "$OUT" "interrupted"
	assert_eq "$(field_n directories)" 1 "$engine: LOCAL done while MNT hangs"
	assert_eq "$(field_n entries)" 3000 "$engine: LOCAL entries"
	sleep 0.2
	reaped $pid && info "$engine: already gone before the release" ||
		info "$engine: threads left before the release: $(ls /proc/$pid/task | wc -l)"
	slowfs_ctl release >/dev/null
	ms=$(within_ms 1000 reaped $pid) || fail "$engine: still running 1 s after release"
	info "$engine: exited ${ms} ms after release"
	rc=0
	wait $pid || rc=$?
	assert_eq $rc 143 "$engine: exit status after SIGTERM"
done

info "2. lookups that never return"
slowfs_mount "$T/back" "$T/hung" --lookup-us 60000000
pids=()
for engine in io_uring threads; do
	"$CTL" prefetch --engine=$engine --depth=8 "$T/hung" "$T/local" >"$T/out" 2>&1 &
	pid=$!
	pids+=($pid)
	on_exit "kill -KILL $pid"
	# 8 = the whole depth stuck (more each round: the previous engine's are still held)
	wait_for 5 inflight_ge 8
	sleep 2.5                         # stall timeout 1 s, then LOCAL takes milliseconds
	kill -0 $pid 2>/dev/null || fail "$engine: finished although lookups hang: $(cat "$T/out")"
	kill -INT $pid
	ms=$(within_ms 1000 has_summary "$T/out") || fail "$engine: no summary within 1 s of SIGINT"
	OUT=$(cat "$T/out")
	info "$engine: cancelled in ${ms} ms: $OUT"
	assert_eq "$(field_n directories)" 1 "$engine: LOCAL done despite a full depth of hung requests"
	assert_eq "$(field_n entries)" 3000 "$engine: LOCAL entries"
	assert_contains "$OUT" "interrupted"
done
# The hung lookups end when slowfs goes away (the kernel aborts the connection): then every
# diraheadctl exits.
kill -TERM "$SLOWFS_PID"
for pid in "${pids[@]}"; do
	ms=$(within_ms 3000 reaped $pid) || fail "diraheadctl $pid still running after slowfs exited"
	info "diraheadctl $pid exited within ${ms} ms after slowfs went away"
done
echo PASS
