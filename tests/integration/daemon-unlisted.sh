#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Runs of stats without a listing, end to end: a program that stats every file of a slowfs tree
# (20 directories x 50 files, 1 ms per request) by name from a list, never listing anything, as
# `stat $(cat list)`, a version-control status or an rsync receiver do.  With the daemon it
# sends about 5% of the lookups it sends alone: the daemon lists each directory itself once the
# program has stat'ed unlisted_stats names there, and prefetches ahead (not those names: its list
# is sorted, the daemon fetches in name order from where it is); from its second directory on, a
# walk follows its runs and fetches the directories ahead of it (walk-runs.sh).  A program that
# stats one name over and over, two in turn, or a few names here and there, causes no prefetch.
# A program whose runs by path on one filesystem were judged fast and muted (Python's imports on
# /) still has its runs on another filesystem reported and prefetched: a mute of runs by path
# holds for the device their stats return (under load, Python's start-up had been judged fast
# before its list was read, and the whole list went unhelped).  And stat(1) itself over a list
# (it stats /etc/localtime between the files) is helped as much.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd python3

DIRS=20 FILES=50
for s in off on again st; do
	for i in $(seq -w 1 $DIRS); do make_files "$T/back/$s/d$i" $FILES; done
done
make_files "$T/local" 300
make_files "$T/back/arm" 1
slowfs_mount "$T/back" "$T/mnt" --latency-us 1000
# the lists, sorted by path (as a version-control index is), made from the backing store
for s in off on again st; do
	(cd "$T/back/$s" && find . -type f | sort | sed "s|^\.|$T/mnt/$s|") >"$T/$s.list"
done
cat >"$T/statlist.py" <<'EOF'
import os, sys
for line in open(sys.argv[1]):
    os.lstat(line.rstrip("\n"))
EOF
cat >"$T/noise.py" <<'EOF'
import os, sys
top = sys.argv[1]
def d(i):
    return os.path.join(top, "d%02d" % i)
for i in range(500):
    os.lstat(os.path.join(d(1), "f000001"))          # one name over and over
for i in range(500):
    os.lstat(os.path.join(d(2), "f%06d" % (1 + i % 2)))  # two names in turn
for x in range(1, 4):
    os.lstat(os.path.join(d(3), "f%06d" % x))        # a few names
for i in range(4, 21):
    os.lstat(os.path.join(d(i), "f000010"))          # one name in each directory
EOF

PY=$(python3 -c 'import sys; print(sys.executable)')

off=$(slowfs_own_lookups "$PY" "$T/statlist.py" "$T/off.list")
info "stat from a list without the daemon: $off lookups of its own"
assert_ge "$off" $((DIRS * FILES)) "lookups without the daemon"

# (other processes on the machine may have runs too: count what concerns ours, by pid and by
# what the daemon fetched from slowfs)
daemon_start
"$PY" "$T/noise.py" "$T/mnt/on" &
npid=$!
wait $npid || fail "noise.py failed"
sleep 0.5
assert_eq "$(grep -c "pid $npid .*$T/mnt" "$DAEMON_LOG")" 0 "the same name, two names, a few names: no run"
assert_eq "$(slowfs_stat "pid.$DAEMON_PID.lookup")" 0 "the same name, two names, a few names: no prefetch"

t0=$(now_ms)
on=$(slowfs_own_lookups "$PY" "$T/statlist.py" "$T/on.list")
info "stat from a list with the daemon: $on lookups of its own, $(($(now_ms) - t0)) ms"
ctl stats | grep -E '^(scans|skips|entries_prefetched|hits|misses)' || true
assert_ge "$(daemon_stat scans_unlisted)" $((DIRS / 2)) "runs reported"
assert_ge "$(slowfs_stat "pid.$DAEMON_PID.lookup")" $((DIRS * FILES / 2)) "entries prefetched"
# the names of each run before it was seen (sorted, so the first ones of the directory in name
# order) are not fetched again (they were a whole first round of requests in each directory);
# the directories after the first few are the walk's that follows the runs (walk-runs.sh)
wait_for 10 eval '[ "$(daemon_stat active_scans)" = 0 ]'
fetched=$(grep -E "scan of $T/mnt/on/d[0-9]+ by pid $(cat "$T/pid") .*: ended [a-z_]+: [0-9]+ prefetched" \
	"$DAEMON_LOG" | sed -E 's/.*: ended [a-z_]+: ([0-9]+) prefetched.*/\1/' | sort -n | tail -1)
info "most entries the daemon fetched for one run: ${fetched:-none}"
[ -n "$fetched" ] || fail "no scan of a run of the list ended (log)"
assert_le "$fetched" $((FILES - 8)) "entries fetched for a run: none of the names stat'ed before it was seen"
# without the walk: unlisted_stats (8) stats before each run is seen, and ~4 round trips (open,
# read to the end, the first lookups) before its prefetch arrives, 12 of 50 at best (measured
# 28-30%, 35.7% beside three busy loops); with it 4-6% (its first directories are its own)
assert_le $((on * 100)) $((off * 40)) "lookups with the daemon: 40% of those without at most"

# 2. the same kind of program, its runs by path first judged fast on / (cached files), then its
# list on slowfs
cat >"$T/twofs.py" <<'EOF'
import os, sys, time
local, lst, cold = sys.argv[1], sys.argv[2], sys.argv[3]
os.lstat(cold)  # blocks (the hooks are attached, whatever came before)
for _ in range(3):
    for i in range(1, 301):
        os.lstat(os.path.join(local, "f%06d" % i))
    time.sleep(0.3)
for line in open(lst):
    os.lstat(line.rstrip("\n"))
EOF
runs0=$(daemon_stat scans_unlisted)
"$PY" "$T/twofs.py" "$T/local" "$T/again.list" "$T/mnt/arm/f000001" &
pid=$!
wait $pid || fail "twofs.py failed"
again=$(slowfs_stat "pid.$pid.lookup")
info "stat from a list after runs judged fast on /: $again lookups of its own"
qgrep "pid $pid .*fast_stats" "$DAEMON_LOG" || fail "the precondition: a run of it on / judged fast"
assert_ge $(($(daemon_stat scans_unlisted) - runs0)) $((DIRS / 2)) "runs reported after a mute on /"
assert_le $((again * 100)) $((off * 40)) "lookups after a mute on /: 40% of those without at most"

# 3. stat(1) itself over the list: glibc's localtime() stats /etc/localtime after each file it
# prints, which ended every run at its first name (never reported, 1,000 lookups of its own)
mapfile -t names <"$T/st.list"
stat "${names[@]}" >/dev/null &
pid=$!
wait $pid || fail "stat of the list failed"
st=$(slowfs_stat "pid.$pid.lookup")
info "stat(1) of the list with the daemon: $st lookups of its own"
assert_le $((st * 100)) $((off * 35)) "stat(1) of a list: 35% of the lookups without the daemon at most"
daemon_stop
echo "PASS"
