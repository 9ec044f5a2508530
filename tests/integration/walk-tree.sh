#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Tree-ahead (daemon/diraheadd/walk.c): find, du, rsync, tar and os.walk over a slowfs tree.
# With the daemon each sends fewer than 10% of the lookups it sends alone, and the directories
# were listed by the walk before the program got there (walk_dirs_ahead).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd rsync tar python3

D=100 F=40
for i in $(seq 1 $D); do make_files "$T/back/tree/d$i" $F; done
mkdir -p "$T/back/tree/d1/sub1" "$T/back/tree/d1/sub2"
make_files "$T/back/tree/d1/sub1" 20
for t in find du rsync tar; do
	ln -s "$(realpath "$(command -v $t)")" "$T/dra-$t"
done
# the system's interpreter itself: a version manager's shim would exec another name
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
ln -s "$(realpath "$py")" "$T/dra-python3"
cat >"$T/walk.py" <<'PY'
import os, sys
for r, ds, fs in os.walk(sys.argv[1]):
    for f in fs:
        os.lstat(os.path.join(r, f))
PY
printf '[metrics]\naddress =\n[filter]\ncomm_include = dra-*\n[daemon]\nlog_level = debug\n' >"$DAEMON_CONF"
slowfs_mount "$T/back" "$T/mnt" --latency-us 200
M=$T/mnt/tree

run() { # TOOL: runs it over the tree with cold caches; prints the lookups it sent itself
	local pid
	drop_caches
	slowfs_ctl reset >/dev/null
	case $1 in
	find) "$T/dra-find" "$M" -ls >/dev/null & ;;
	du) "$T/dra-du" -s "$M" >/dev/null & ;;
	rsync) rm -rf "$T/dst"; "$T/dra-rsync" -an "$M/" "$T/dst/" >/dev/null & ;;
	tar) "$T/dra-tar" cf /dev/null -C "$M" . & ;;
	os.walk) "$T/dra-python3" "$T/walk.py" "$M" & ;;
	esac
	pid=$!
	wait $pid || fail "$1 failed"
	LAST_PID=$pid
	slowfs_stat "pid.$pid.lookup" >"$T/own"
}

TOOLS="find du rsync tar os.walk"
declare -A off
for t in $TOOLS; do run $t; off[$t]=$(cat "$T/own"); done
daemon_start
for t in $TOOLS; do
	a0=$(daemon_stat walk_dirs_ahead)
	run $t
	on=$(cat "$T/own")
	ahead=$(($(daemon_stat walk_dirs_ahead) - a0))
	info "$t: $on lookups with the daemon, ${off[$t]} without; $ahead directories listed ahead of it"
	[ $((on * 10)) -le "${off[$t]}" ] || grep -E "pid $LAST_PID\b" "$DAEMON_LOG" | head -20
	assert_ge "${off[$t]}" $((D * F)) "$t: lookups without the daemon"
	assert_le $((on * 10)) "${off[$t]}" "$t: its own lookups with the daemon x10"
	assert_ge "$ahead" $((D * 8 / 10)) "$t: directories the walk listed before it did"
done
ctl stats | grep -E 'walk|wasted' || true
assert_ge "$(daemon_stat walks_started)" 5 "walks started"
assert_eq "$(daemon_stat walks_ended.process_exited)" "$(daemon_stat walks_started)" "walks ended by exit"
assert_eq "$(daemon_stat active_walks)" 0 "walks left running"
daemon_stop
