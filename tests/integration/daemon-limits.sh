#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# The global limits: with max_scans = 2 and depth_total = 12, five concurrent `ls -l` of five
# directories on slowfs get at most two scans at a time; the others are skipped and counted
# (skips.busy), and the requests slowfs sees in flight never exceed depth_total plus the apps'
# own (each `ls -l` has one stat at a time in flight).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root

N=1000
APPS=5
MAX_SCANS=2
DEPTH_TOTAL=12
for i in $(seq $APPS); do make_files "$T/back/d$i" $N; done
slowfs_mount "$T/back" "$T/mnt" --latency-us 2000
cat >"$DAEMON_CONF" <<EOF
[metrics]
address =
[prefetch]
max_scans = $MAX_SCANS
depth_per_scan = 8
depth_total = $DEPTH_TOTAL
EOF
daemon_start
others() { pgrep -x diraheadd | awk -v p="$DAEMON_PID" '$1 != p' | wc -l; }
others0=$(others)

busy0=$(daemon_stat skips.busy)
slowfs_ctl reset >/dev/null
pids=()
for i in $(seq $APPS); do
	ls -l "$T/mnt/d$i" >/dev/null &
	pids+=($!)
done
# While they run: the daemon's own view of its limits.
max_active=0 max_req=0
while kill -0 "${pids[@]}" 2>/dev/null; do
	a=$(daemon_stat active_scans)
	r=$(daemon_stat requests_in_flight)
	[ "$a" -gt $max_active ] && max_active=$a
	[ "$r" -gt $max_req ] && max_req=$r
	sleep 0.05
done
for p in "${pids[@]}"; do wait "$p"; done
info "lookups each app sent itself: $(for p in "${pids[@]}"; do echo -n "$(slowfs_stat "pid.$p.lookup") "; done)"

busy=$(($(daemon_stat skips.busy) - busy0))
peak=$(slowfs_stat max_inflight_lookup_getattr)
info "$APPS concurrent ls -l: $busy skipped as busy; the daemon showed at most $max_active active" \
	"scans and $max_req requests in flight; slowfs saw at most $peak lookups in flight"
assert_ge "$busy" $((APPS - MAX_SCANS)) "scans skipped as busy"
assert_le "$max_active" $MAX_SCANS "active scans"
assert_le "$max_req" $DEPTH_TOTAL "requests in flight (the daemon's count)"
assert_ge "$(daemon_stat entries_prefetched)" $N "entries prefetched"
if [ "$others0" = 0 ] && [ "$(others)" = 0 ]; then
	assert_le "$peak" $((DEPTH_TOTAL + APPS)) "lookups in flight at slowfs (depth_total + apps)"
else
	info "another diraheadd is running (it prefetches for these apps too): slowfs's peak not judged"
fi
daemon_stop
echo PASS
