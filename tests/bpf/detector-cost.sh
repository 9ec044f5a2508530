#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# The detector's programs stay cheap: average run time per invocation (kernel BPF run-time
# accounting, turned on by the harness through BPF_ENABLE_STATS) under a load of unrelated
# syscalls (the fast path) and under a stat-heavy load (ls -l, find -ls, du of 2000 files), for
# both syscall programs (sys_exit: the detector; sys_enter: start times for the stat latency).
# The bounds are loose (shared 2-CPU machines); the figures are printed for the record.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/detector.bash"
need_cmd dd ls find du

D=$T/dir
make_files "$D" 2000

# prog_avg NAME: avg_ns of that program from the harness's final report
prog_avg() { sed -n "s/^PROG name=$1 .* avg_ns=\([0-9]*\).*/\1/p" "$TRACE_OUT"; }
prog_cnt() { sed -n "s/^PROG name=$1 .* run_cnt=\([0-9]*\) .*/\1/p" "$TRACE_OUT"; }

info "fast path: 400k read/write syscalls of a process that never lists a directory"
trace_start --stats -s 0
dd if=/dev/zero of=/dev/null bs=1 count=200000 2>/dev/null
trace_stop
for prog in dirahead_sys_exit dirahead_sys_enter; do
	fast=$(prog_avg $prog)
	info "$prog: run_cnt=$(prog_cnt $prog) avg_ns=$fast"
	assert_ge "$(prog_cnt $prog)" 400000 "$prog runs counted (stats on?)"
	assert_le "$fast" 1000 "$prog fast path average ns"
done

info "stat-heavy: ls -l x3, ls -lU, find -ls, du -s of $D"
trace_start --stats -s 64
for i in 1 2 3; do ls -l "$D" >/dev/null; done
ls -lU "$D" >/dev/null
find "$D" -ls >/dev/null
du -s "$D" >/dev/null
trace_stop
heavy=$(prog_avg dirahead_sys_exit)
c=$(grep '^COUNTERS' "$TRACE_OUT")
grep '^PROG name=' "$TRACE_OUT" | sed 's/^/# /'
info "$c"
assert_ge "$(field "$c" stats_matched)" 12000 "stats matched"
assert_le "$heavy" 10000 "stat-heavy average ns"
echo "PASS"
