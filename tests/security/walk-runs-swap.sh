#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# A walk that follows a list-driven run (walk.c, by_runs: a program that stats names from a
# sorted list and lists nothing) never reads what its program may not.  Such a walk is placed by
# the names of the program's paths (walk_mgr_run_at), not by resolving them, so a user who
# swaps a directory of the tree while it runs must not lead it anywhere the user could not go:
# user nobody stats a tree of 30 directories by name; after 3 of them, a directory ahead of the
# walk is renamed away and root's directory (0700, the same names) put in its place.  The walk
# goes on (it lists the tree as nobody), the program's stats there fail, and no request of anyone
# but the program reaches into that directory (slowfs watch).  Control: the same swap with a
# directory nobody may read, which the walk then lists (so the watch sees the daemon there).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd python3 setpriv

U=65534 # nobody
DIRS=30 FILES=40 SWAP=d0020
chmod 0711 "$T"
for c in 1 2; do
	for ((d = 0; d < DIRS; d++)); do make_files "$T/back/t$c/d$(printf %04d $d)" $FILES; done
	make_files "$T/back/s$c" $FILES # what is swapped in: the same names
	(cd "$T/back/t$c" && find . -type f | sort | sed "s|^\.|$T/mnt/t$c|") >"$T/t$c.list"
done
chmod 0700 "$T/back/s1" # root's
chmod 0644 "$T"/t?.list
mkdir -p "$T/bin"
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
ln -s "$(realpath "$py")" "$T/bin/drs-python3"
cat >"$T/statstep.py" <<'PY'
# statstep.py LIST PAUSE: lstat the names of LIST in turn; after PAUSE of them write "paused"
# and wait for a line on stdin; at the end write "done STATS FAILED"
import os, sys
names = [l.rstrip("\n") for l in open(sys.argv[1])]
pause, failed = int(sys.argv[2]), 0
for i, n in enumerate(names):
    if i == pause:
        print("paused", flush=True)
        sys.stdin.readline()
    try:
        os.lstat(n)
    except OSError:
        failed += 1
print("done", len(names), failed, flush=True)
PY
chmod 0755 "$T/bin" "$T/statstep.py"
# every confirmed run prefetched (no verdicts), and a walk a few directories ahead, far from the
# directory swapped while the program pauses
printf '[metrics]\naddress =\n[filter]\ncomm_include = drs-*\n[policy]\nenabled = no\n[walk]\nahead_dirs = 4\n[daemon]\nlog_level = debug\n' >"$DAEMON_CONF"
# (entry timeout 0: the walk fetched the top's entries, the swapped one too, before the swap, and
# a cached entry would lead the program and the walk to the directory renamed away)
slowfs_mount "$T/back" "$T/mnt" --latency-us 500 --entry-timeout 0
daemon_start
mkfifo "$T/go"
exec {go}<>"$T/go" # held open both ways: the program's open of it does not block

# swap C: runs the program over tree tC, swaps tC/$SWAP for sC after 3 directories; sets FAILED
# (the program's failed stats) and OTHERS (the requests into the swapped-in directory of anyone
# but the program)
swap() {
	local c=$1 pid stats
	slowfs_ctl reset >/dev/null
	setpriv --reuid=$U --regid=$U --clear-groups -- "$T/bin/drs-python3" "$T/statstep.py" \
		"$T/t$c.list" $((3 * FILES)) <"$T/go" >"$T/out$c" &
	pid=$!
	on_exit "kill $pid 2>/dev/null"
	paused() { grep -q paused "$T/out$c"; }
	wait_for 60 paused
	# its runs are followed: a walk lists the tree ahead of it
	wait_for 10 eval '[ "$(daemon_stat walks_by_runs)" -ge '"$c"' ]'
	mv -T "$T/back/t$c/$SWAP" "$T/back/t$c/$SWAP.old"
	mv -T "$T/back/s$c" "$T/back/t$c/$SWAP"
	slowfs_ctl reset >/dev/null
	slowfs_ctl watch "t$c/$SWAP" >/dev/null
	echo go >&$go
	wait $pid || fail "the program failed: $(cat "$T/out$c")"
	sleep 0.5 # the daemon's last requests, if any
	stats=$(slowfs_ctl stats)
	key() { awk -F= -v k="$1" '$1 == k { v = $2 } END { print v + 0 }' <<<"$stats"; }
	info "tree t$c: the program: $(tail -1 "$T/out$c"); requests into t$c/$SWAP:" \
		"$(key watch.total.all), the program's $(key "watch.pid.$pid.all"), the daemon's" \
		"$(key "watch.pid.$DAEMON_PID.all"); walks by runs $(daemon_stat walks_by_runs)," \
		"dirs opened $(daemon_stat walk_dirs_opened), not entered $(daemon_stat walk_not_entered)"
	FAILED=$(tail -1 "$T/out$c" | awk '$1 == "done" { print $3 }')
	OTHERS=$(($(key watch.total.all) - $(key "watch.pid.$pid.all")))
}

info "1. root's directory swapped in ahead of the walk"
swap 1
assert_eq "$FAILED" "$FILES" "the program's stats in root's directory: all refused"
assert_eq "$OTHERS" 0 "requests of others than the program into root's directory"
assert_eq "$(daemon_stat walks_by_runs)" 1 "walks that followed the runs"

info "2. control: a directory the program may read swapped in"
swap 2
assert_eq "$FAILED" 0 "the program's failed stats"
assert_ge "$OTHERS" 1 "requests of others than the program into the directory (the walk's)"
assert_eq "$(daemon_stat walks_by_runs)" 2 "walks that followed the runs"
daemon_stop
echo PASS
