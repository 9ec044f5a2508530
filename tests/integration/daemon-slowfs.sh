#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# End to end: real tools scanning a 2,000-entry directory on slowfs (1 ms per lookup).
# Without the daemon the tool sends every lookup itself; with diraheadd running it sends at
# most 20% of them (the rest were prefetched).  The daemon then stops within 2 s with exit 0.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd python3 tar du find rsync

N=2000
TOOLS=(ls_l ls_lU du find tar rsync pywalk)
for t in "${TOOLS[@]}"; do
	make_files "$T/back/off-$t" $N
	make_files "$T/back/on-$t" $N
done
slowfs_mount "$T/back" "$T/mnt" --latency-us 1000

run_tool() { # TOOL DIR: runs it, prints the lookups its own process sent
	local dir=$2 pid
	case $1 in
	ls_l) ls -l "$dir" >/dev/null & ;;
	ls_lU) ls -lU "$dir" >/dev/null & ;;
	rsync) rsync -an "$dir/" "$T/rsync-dst/" & ;;
	du) du -s "$dir" >/dev/null & ;;
	find) find "$dir" -ls >/dev/null & ;;
	tar) tar cf /dev/null "$dir" & ;;
	pywalk) python3 -c 'import os,sys
for r, ds, fs in os.walk(sys.argv[1]):
    for f in fs: os.stat(os.path.join(r, f))' "$dir" & ;;
	esac
	pid=$!
	wait $pid
	slowfs_stat "pid.$pid.lookup"
}

declare -A off
for t in "${TOOLS[@]}"; do
	off[$t]=$(run_tool "$t" "$T/mnt/off-$t")
	info "$t without the daemon: ${off[$t]} lookups of its own"
	assert_ge "${off[$t]}" $((N * 95 / 100)) "$t without the daemon sends its own lookups"
done

daemon_start
for t in "${TOOLS[@]}"; do
	t0=$(now_ms)
	own=$(run_tool "$t" "$T/mnt/on-$t")
	info "$t with the daemon: $own lookups of its own, $(($(now_ms) - t0)) ms"
	assert_le "$own" $((N / 5)) "$t with the daemon: lookups the tool sent itself"
done
ctl stats
assert_ge "$(daemon_stat entries_prefetched)" $((N * 6)) "entries prefetched"
daemon_stop
