#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# A list-driven run (names stat'ed from a sorted list, nothing listed: a version-control status,
# a build tool, an rsync receiver) over a tree of 30 directories of 50 files on slowfs (500 us):
# once its runs are in a second directory of one parent, a walk follows them (walk.h,
# walk_mgr_on_run) and fetches the directories ahead of it, so that it finds them fetched instead
# of waiting unlisted_stats names and a few round trips in each.  Five runs, each on a tree of
# its own (cold): every one is followed and helped alike (the program's own lookups, not time:
# this test holds on a busy machine; `make bench` shows the time).  Before the walk a run sent
# ~30% of its lookups itself.  A run in a directory the walk knows is placed by its path's names
# below the walk's top (not resolved, each resolution an open of the directory).  The walk ends with its program (BPF reports no exit of a
# program it does not know as a walker).  Control: the same program over an unsorted list
# (names shuffled) starts no walk of its runs.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd python3

DIRS=30 FILES=50 RUNS=5
for r in $(seq 0 $RUNS) shuf; do
	for ((d = 0; d < DIRS; d++)); do make_files "$T/back/t$r/d$(printf %04d $d)" $FILES; done
done
slowfs_mount "$T/back" "$T/mnt" --latency-us 500
for r in $(seq 0 $RUNS) shuf; do
	(cd "$T/back/t$r" && find . -type f | sort | sed "s|^\.|$T/mnt/t$r|") >"$T/t$r.list"
done
shuf "$T/tshuf.list" -o "$T/tshuf.list"
cat >"$T/statlist.py" <<'EOF'
import os, sys
for line in open(sys.argv[1]):
    os.lstat(line.rstrip("\n"))
EOF
PY=$(python3 -c 'import sys; print(sys.executable)')


off=$(slowfs_own_lookups "$PY" "$T/statlist.py" "$T/t0.list")
info "without the daemon: $off lookups of its own"
assert_ge "$off" $((DIRS * FILES)) "lookups without the daemon"

daemon_start
# (counters, not the log: a run's directories past the walk are logged each, and the log's
# rate limit may drop any line)
min=$off max=0
for r in $(seq 1 $RUNS); do
	exited=$(daemon_stat walks_ended.process_exited)
	own=$(slowfs_own_lookups "$PY" "$T/statlist.py" "$T/t$r.list")
	info "run $r: $own lookups of its own ($((own * 100 / off))%), walks by runs $(daemon_stat walks_by_runs)"
	assert_eq "$(daemon_stat walks_by_runs)" "$r" "run $r: a walk followed its runs"
	assert_le $((own * 100)) $((off * 20)) "run $r: lookups of its own, 20% of those without at most"
	((own < min)) && min=$own
	((own > max)) && max=$own
	# the walk is over with its program (its tick), not after the idle time (5 s)
	wait_for 3 eval '[ "$(daemon_stat walks_ended.process_exited)" -gt "$exited" ]'
done
opened=$(slowfs_stat "pid.$DAEMON_PID.opendir")
info "runs: $min to $max lookups of their own; the daemon opened $opened directories"
assert_le $(((max - min) * 100)) $((off * 10)) "spread of the runs: 10% of the lookups without the daemon at most"
# a run in a directory the walk knows is placed by its names, not resolved (opened) again: the
# walk's own opening of each directory, and a few before it started (resolving each: ~290)
assert_le "$opened" $((RUNS * (DIRS + 10))) "directories the daemon opened"

info "control: names in no order, no walk of its runs"
slowfs_own_lookups "$PY" "$T/statlist.py" "$T/tshuf.list" >/dev/null
assert_eq "$(daemon_stat walks_by_runs)" "$RUNS" "walks of runs in no order"
daemon_stop
echo PASS
