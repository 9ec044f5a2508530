#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# The daemon never tracks, let alone confirms a scan of, its own thread group: its prefetches
# list directories (reader threads) and stat every entry (io_uring workers, or with the thread
# engine plain statx() calls from worker threads), which is exactly a scan.  With each engine,
# and after a reload (which rewrites the detector's config): ls -l, find -ls and du -s on slowfs
# are helped (the app sends at most 20% of the lookups), `diraheadctl scans` never lists the
# daemon's pid, and none of the detector's per-process maps (procs, scans, names, lastopen) holds
# an entry for it, while a process still holding a listing does have one (the check works).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd bpftool python3 find du

PY=$(python3 -c 'import sys; print(sys.executable)') # not a pyenv shim: it lists dirs itself
N=1000
TOOLS=(ls find du)
for e in io_uring threads; do
	for t in "${TOOLS[@]}"; do make_files "$T/back/$e-$t" $N; done
	make_files "$T/back/$e-hold" 50
done
slowfs_mount "$T/back" "$T/mnt" --latency-us 1000

# tgids_in_maps PID: the tgids found in the keys of PID's detector maps named procs, scans,
# names and lastopen (their keys all start with the tgid, a __u32), one per line.
tgids_in_maps() {
	local id
	for id in $(cat /proc/"$1"/fdinfo/* 2>/dev/null | awk '$1 == "map_id:" { print $2 }' | sort -u); do
		bpftool -j map show id "$id" | "$PY" -c '
import json, sys
sys.exit(json.load(sys.stdin).get("name") not in ("procs", "scans", "names", "lastopen"))' ||
			continue
		bpftool -j map dump id "$id" | "$PY" -c '
import json, sys
for e in json.load(sys.stdin):
    k = e.get("key")
    if isinstance(k, list):
        print(int.from_bytes(bytes(int(b, 16) for b in k[:4]), "little"))
    elif isinstance(k, dict):
        print(k.get("tgid"))
    else:
        print(k)'
	done | sort -un
}

for engine in io_uring threads; do
	printf '[metrics]\naddress =\n[prefetch]\nengine = %s\n' "$engine" >"$DAEMON_CONF"
	daemon_start
	expect_exit 0 ctl reload
	ctl status | qgrep "$engine engine" || fail "the daemon does not use the $engine engine: $(ctl status)"

	# Watch `diraheadctl scans` for the daemon's own pid while the tools run.
	(while :; do ctl scans 2>/dev/null | awk -v p="$DAEMON_PID" '$1 == p'; sleep 0.02; done) \
		>"$T/self-$engine" &
	watcher=$!
	on_exit "kill $watcher"
	for t in "${TOOLS[@]}"; do
		dir=$T/mnt/$engine-$t
		slowfs_ctl reset >/dev/null
		case $t in
		ls) ls -l "$dir" >/dev/null & ;;
		find) find "$dir" -ls >/dev/null & ;;
		du) du -s "$dir" >/dev/null & ;;
		esac
		app=$!
		wait $app
		own=$(slowfs_stat "pid.$app.lookup")
		ours=$(slowfs_stat "pid.$DAEMON_PID.lookup")
		info "$engine: $t sent $own of $N lookups itself, the daemon $ours"
		assert_le "$own" $((N / 5)) "$engine: lookups $t sent itself"
	done
	kill $watcher
	wait $watcher 2>/dev/null || true
	[ -s "$T/self-$engine" ] && fail "$engine: diraheadctl scans listed the daemon itself: $(cat "$T/self-$engine")"

	# A process that listed a directory and stat'ed entries, still alive: it must be in the maps.
	"$PY" -c 'import os, sys, time
d = sys.argv[1]
for n in os.listdir(d)[:5]: os.stat(os.path.join(d, n))
print("ready", flush=True)
time.sleep(30)' "$T/mnt/$engine-hold" >"$T/hold.out" &
	hold=$!
	on_exit "kill $hold"
	wait_for 10 grep -q ready "$T/hold.out"
	tgids_in_maps "$DAEMON_PID" >"$T/tgids"
	grep -qx "$hold" "$T/tgids" || fail "$engine: the detector maps do not show the process that listed ($hold)"
	grep -qx "$DAEMON_PID" "$T/tgids" && fail "$engine: the detector tracks the daemon itself ($DAEMON_PID)"
	info "$engine: the detector's maps hold $(wc -l <"$T/tgids") processes, not the daemon"
	kill $hold
	wait $hold 2>/dev/null || true
	grep -E "(scan|scan skipped|scan \(dry run\)): pid $DAEMON_PID " "$DAEMON_LOG" &&
		fail "$engine: the daemon logged a scan of its own"
	daemon_stop
done
echo PASS
