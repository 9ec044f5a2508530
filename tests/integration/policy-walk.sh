#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# The pay-off rule on a tree walk: while find descends into each subdirectory, the scan of the
# parent sees its stats far apart (the walk below happens between them).  That is not the cost
# of its stats: the parent must not be judged no_gain, which would mute the rest of the walk.
# slowfs at 200 us: every subdirectory is prefetched (by the walk, walk.c), no scan ends as
# no_gain, and find sends few of its own lookups.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root

D=120 F=40
for i in $(seq 1 $D); do make_files "$T/back/tree/d$i" $F; done
ln -s "$(realpath "$(command -v find)")" "$T/dra-find"
printf '[metrics]\naddress =\n[filter]\ncomm_include = dra-*\n' >"$DAEMON_CONF"
slowfs_mount "$T/back" "$T/mnt" --latency-us 200
daemon_start
for run in 1 2; do
	drop_caches
	slowfs_ctl reset >/dev/null
	"$T/dra-find" "$T/mnt/tree" -ls >/dev/null &
	pid=$!
	wait $pid
	own=$(slowfs_stat "pid.$pid.lookup")
	info "run $run: find sent $own of $((D * F + D)) lookups itself"
	assert_le "$own" $((D * F / 4)) "lookups find sent itself (run $run)"
done
ctl stats | grep -E 'started|no_gain|prefetched|muted' || true
assert_eq "$(daemon_stat scans_ended.no_gain)" 0 "scans ended as no_gain during the walks"
assert_ge "$(daemon_stat walk_dirs_opened)" $((2 * D * 9 / 10)) "subdirectories listed by the walks"
assert_ge "$(daemon_stat entries_prefetched)" $((2 * D * F * 9 / 10)) "entries prefetched"
daemon_stop
