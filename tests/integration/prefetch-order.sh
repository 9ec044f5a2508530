#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# The daemon fetches in the order the program stats, learnt from its first stats: gnulib fts
# (find, du) sorts a directory of more than 10,000 entries by inode number; a program may sort
# by name; ls -l and rsync go in readdir order.  On slowfs (200 us a lookup), a 12,000-entry
# directory: `find -ls` and `du -s` are helped (their own lookups under 10% of the entries) and
# counted as inode order, a Python loop over sorted(os.listdir()) as name order, and ls -l
# learns nothing (readdir order, helped as before).  Its debug log is not flooded by the pay-off
# rule's judgments.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd find du shuf

PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(python3 -c 'import sys; print(sys.executable)')
N=12000
for t in find du ls; do make_files "$T/back/$t" $N; done
# created in random order, so that name order is not also inode order
mkdir "$T/back/py"
(cd "$T/back/py" && seq -f "f%06g" 1 $N | shuf | xargs touch)
slowfs_mount "$T/back" "$T/mnt" --latency-us 200
# (the hooks attached from the start: this is about the order learnt, not about arming)
printf '[metrics]\naddress =\n[filter]\ncomm_include = dao-*\n[detect]\narm = always\n' >"$DAEMON_CONF"
cp "$(command -v find)" "$T/dao-find"
cp "$(command -v du)" "$T/dao-du"
cp "$(command -v ls)" "$T/dao-ls"
cp "$PY" "$T/dao-py"
daemon_start

# run NAME CMD...: run CMD cold, print the lookups it sent itself
run() {
	local name=$1 pid; shift
	drop_caches
	"$@" >/dev/null &
	pid=$!
	wait $pid
	own=$(slowfs_stat "pid.$pid.lookup")
	info "$name: $own of $N lookups by the program itself"
}

inode0=$(daemon_stat order_inode)
run "find -ls" "$T/dao-find" "$T/mnt/find" -ls
assert_le "$own" $((N / 10)) "find -ls: its own lookups"
run "du -s" "$T/dao-du" -s "$T/mnt/du"
assert_le "$own" $((N / 10)) "du -s: its own lookups"
assert_eq $(($(daemon_stat order_inode) - inode0)) 2 "scans fetched in inode order"

name0=$(daemon_stat order_name)
run "sorted(os.listdir())" "$T/dao-py" -c '
import os, sys
d = sys.argv[1]
for n in sorted(os.listdir(d)):
    os.stat(os.path.join(d, n), follow_symlinks=False)' "$T/mnt/py"
assert_le "$own" $((N / 10)) "sorted listdir: its own lookups"
assert_eq $(($(daemon_stat order_name) - name0)) 1 "scans fetched in name order"

inode1=$(daemon_stat order_inode)
name1=$(daemon_stat order_name)
run "ls -l" "$T/dao-ls" -l "$T/mnt/ls"
assert_le "$own" $((N / 10)) "ls -l: its own lookups"
assert_eq "$(daemon_stat order_inode)/$(daemon_stat order_name)" "$inode1/$name1" \
	"ls -l learnt as readdir order"
daemon_stop
# The debug log says what was decided: a stretch that pays again at the same depth is no line of
# its own (one every 64 stats, some 750 for these scans, filled the log's rate limit and hid the rest).
assert_le "$(grep -c 'with prefetch: pays' "$DAEMON_LOG")" 40 "pay-off lines in the debug log"
assert_eq "$(grep -c 'suppressed (rate limit)' "$DAEMON_LOG")" 0 "log lines suppressed"
echo "PASS"
