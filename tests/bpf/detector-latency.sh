#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# The application stat latency histogram (the `app_lat` map behind
# dirahead_app_stat_latency_seconds), read through detector-trace's APPLAT line:
#   - `ls -l` of N cached files: the count grows by at least N, every stat the detector matched
#     was timed (count >= stats_matched), and at least 90% of N land at or below 2^17 ns (131 us);
#   - `ls -l` of M files on slowfs answering every request after 5 ms with nothing cached (attr
#     and entry timeouts 0, so no prefetch, ours or another daemon's, can make them fast): at
#     least 90% of M land in the slots above 2^22 ns (4.2 ms), and the sum grows by >= M x 5 ms.
#   - a start time noted before the timing program was detached (here by a failed stat, whose
#     exit takes nothing) never times a stat made while it is detached: with it detached the
#     count does not move at all.
# The map counts every process on the machine, so the other checks are lower bounds that other
# processes' stats can only raise, plus ratios that hold for every process.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/detector.bash"
need_cmd ls

N=2000
M=50
make_files "$T/fast" $N
make_files "$T/back/slow" $M

# applat KEY: count or sum_ns from the APPLAT line
applat() { sed -n "s/^APPLAT .*$1=\([0-9]*\).*/\1/p" "$TRACE_OUT"; }
# slots CMP K: stats in the slots k with k CMP K (le or gt)
slots() {
	sed -n 's/^APPLAT .* slots=//p' "$TRACE_OUT" | tr ',' '\n' |
		awk -F: -v cmp="$1" -v k="$2" '
			(cmp == "le" && $1 <= k) || (cmp == "gt" && $1 > k) { n += $2 }
			END { print n + 0 }'
}
counter() { field "$(grep '^COUNTERS' "$TRACE_OUT")" "$1"; }

info "cached: ls -l of $N files"
trace_start
ls -l "$T/fast" >/dev/null
trace_stop
grep '^APPLAT\|^COUNTERS' "$TRACE_OUT" | sed 's/^/# /'
count=$(applat count)
matched=$(counter stats_matched)
assert_ge "$count" "$N" "stats timed during ls -l of $N files"
assert_ge "$count" $((matched * 98 / 100)) "stats timed vs stats matched ($matched)"
# tar stats every entry twice (timed twice, matched once): nothing times a stat more than that
assert_le "$count" $((matched * 2 + 100)) "stats timed vs stats matched ($matched)"
assert_ge "$(slots le 17)" $((N * 9 / 10)) "cached stats at or below 2^17 ns"
assert_ge "$(applat sum_ns)" 1 "latency sum"

info "stale start times after a detach"
trace_start
# os.listdir gives the process state (so its stats are timed) and names the directory for
# os.stat(DIR/name); the failed stat leaves its start time behind.
"$PY" -c 'import os, sys, time
d, go = sys.argv[1], sys.argv[2]
os.listdir(d)
try:
    os.stat(d + "/no-such-entry")
except FileNotFoundError:
    pass
open(go + ".ready", "w").close()
while not os.path.exists(go):
    time.sleep(0.01)
for n in ("f000001", "f000002", "f000003"):
    os.stat(d + "/" + n)' "$T/fast" "$T/go" &
py=$!
wait_for 10 test -e "$T/go.ready"
kill -USR1 "$TRACE_PID"
wait_for 5 grep -q '^timing off' "$TRACE_OUT"
sleep 0.2
touch "$T/go"
wait "$py" || fail "python workload failed"
trace_stop
off=$(sed -n 's/^timing off count=//p' "$TRACE_OUT")
grep '^timing\|^APPLAT' "$TRACE_OUT" | sed 's/^/# /'
assert_eq "$(applat count)" "$off" "stats timed while the timing program was detached"

slowfs_mount "$T/back" "$T/mnt" --latency-us 5000 --attr-timeout 0 --entry-timeout 0
info "uncached: ls -l of $M files on slowfs, 5 ms per request"
trace_start
t0=$(now_ms)
ls -l "$T/mnt/slow" >/dev/null
info "ls -l took $(($(now_ms) - t0)) ms"
trace_stop
grep '^APPLAT\|^COUNTERS' "$TRACE_OUT" | sed 's/^/# /'
assert_ge "$(applat count)" "$M" "stats timed during ls -l of $M files"
assert_ge "$(slots gt 22)" $((M * 9 / 10)) "slow stats above 2^22 ns"
assert_ge "$(applat sum_ns)" $((M * 5000000)) "latency sum (ns)"
echo "PASS"
