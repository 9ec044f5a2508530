#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# dirahead_app_stat_latency_seconds from a running daemon: `ls -l` of N files on slowfs (1 ms per
# lookup) while diraheadd prefetches them moves the histogram's count by at least 90% of N (the
# stats before the first scan attached the timing program are not timed), most of them fast
# (prefetched: at most 131 us); the series is a well-formed cumulative histogram; the timing
# program is attached after a scan and detached when the daemon is disabled by a reload.
# Other processes' stats count too, so the counts are checked as lower bounds.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root

N=300
make_files "$T/back/a" $N
make_files "$T/back/b" $N
slowfs_mount "$T/back" "$T/mnt" --latency-us 1000

# metric FILE NAME: the value of one sample line (NAME with its labels, exactly)
metric() { awk -v n="$2" '$1 == n { print $2; f = 1 } END { if (!f) print "missing" }' "$1"; }
H=dirahead_app_stat_latency_seconds
FAST="${H}_bucket{le=\"0.000131072\"}"

printf '[metrics]\naddress =\n[detect]\narm = always\n' >"$DAEMON_CONF"
daemon_start
ctl metrics >"$T/m0" || fail "diraheadctl metrics"
grep -q "^# TYPE $H histogram$" "$T/m0" || fail "no $H histogram: $(grep "$H" "$T/m0")"

ls -l "$T/mnt/a" >/dev/null &
pid=$!
wait $pid
wait_for 5 grep -q "^diraheadd: scan: pid $pid (ls) " "$DAEMON_LOG"
ctl metrics >"$T/m1"
count0=$(metric "$T/m0" "${H}_count")
count1=$(metric "$T/m1" "${H}_count")
fast0=$(metric "$T/m0" "$FAST")
fast1=$(metric "$T/m1" "$FAST")
info "ls -l of $N files: ${H}_count $count0 -> $count1, at most 131 us: $fast0 -> $fast1"
assert_ge $((count1 - count0)) $((N * 9 / 10)) "stats timed during ls -l"
assert_ge $((fast1 - fast0)) $((N / 2)) "fast (prefetched) stats"
attached() { ctl metrics | awk -v n="$1" '$1 == "dirahead_bpf_programs_attached" { exit $2 != n }'; }
wait_for 6 attached 3 # the timing program goes once nothing probes

# Cumulative buckets: never decreasing, +Inf equal to _count, _sum present.
python3 - "$T/m1" "$H" <<'PY' || fail "malformed $H"
import re, sys
text, h = open(sys.argv[1]).read(), sys.argv[2]
b = [(float(m.group(1)), int(m.group(2))) for m in
     re.finditer(r'^%s_bucket\{le="([^"]+)"\} (\d+)$' % h, text, re.M)]
assert len(b) > 10 and b[-1][0] == float("inf"), b
assert all(x[0] < y[0] and x[1] <= y[1] for x, y in zip(b, b[1:])), b
count = int(re.search(r'^%s_count (\d+)$' % h, text, re.M).group(1))
total = float(re.search(r'^%s_sum (\S+)$' % h, text, re.M).group(1))
assert b[-1][1] == count, (b[-1], count)
assert count == 0 or total > 0, total
PY

printf '[daemon]\nenabled = no\n[metrics]\naddress =\n[detect]\narm = always\n' >"$DAEMON_CONF"
ctl reload >/dev/null || fail "reload failed"
ctl metrics >"$T/m2"
assert_eq "$(metric "$T/m2" dirahead_bpf_programs_attached)" 3 "programs attached while disabled"

printf '[metrics]\naddress =\n[detect]\narm = always\n' >"$DAEMON_CONF"
ctl reload >/dev/null || fail "reload failed"
ls -l "$T/mnt/b" >/dev/null &
pid=$!
wait $pid
wait_for 5 grep -q "^diraheadd: scan: pid $pid (ls) " "$DAEMON_LOG"
ctl metrics >"$T/m3"
count3=$(metric "$T/m3" "${H}_count")
# (slowfs pays by now: this scan starts without a probe, and untimed)
assert_ge "$count3" "$count1" "histogram count after the second ls -l"
daemon_stop
echo "PASS"
