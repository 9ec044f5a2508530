#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# First contact with a FUSE filesystem that serializes lookups in a directory (no
# FUSE_PARALLEL_DIROPS, as sshfs): the sentinel reads that from the FUSE connection, and a cold
# `ls -l` there does not even arm the syscall hooks (sentinel_signals.ignored_serial); with the
# hooks attached ([detect] arm = always) the daemon sends no lookup into the directory `ls -l`
# stats (skips.serial_lookups).  Either way `ls -l` looks its entries up itself, as without the
# daemon.  A walk there still arms (it blocks listing a second directory) and fetches the entries
# of the directories ahead of find (sshfs: its lookups, not its listings, are what waits), none
# in one find got to first.
# Controls: on a slowfs that negotiates parallel dirops the daemon still prefetches (ls -l sends
# under 10% of the lookups itself); on one whose listing brings the attributes (readdirplus),
# ls -l waits for nothing and the daemon sends (almost) nothing.  A run of stats by path (no
# listing: the daemon resolves its directory) on the serial mount: none either (what the kernel
# said of the filesystem is kept with it).  A walker whose first listing the hooks missed (they
# attach while it is blocked in it): its stats there by a dirfd are a run without a listing, and
# the walk still follows it.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd find python3

N=1000
make_files "$T/back/flat" $N
make_files "$T/back/bypath" $N
# a tree deep enough that find blocks listing a second directory (signals: one per 200 ms) and
# a walk still follows
NDIRS=16
for ((d = 1; d <= NDIRS; d++)); do make_files "$T/back/tree/d$d" 100; done
for ((d = 1; d <= NDIRS; d++)); do make_files "$T/back/tree2/d$d" 100; done

# The tools under names of their own: with arming on a blocked call, [filter] lets only them arm
# (not whatever else on the machine blocks after a drop_caches).
ln -s "$(realpath "$(command -v ls)")" "$T/dra-ls"
ln -s "$(realpath "$(command -v find)")" "$T/dra-find"

# ls -l of DIR under the watch: prints "own others" (lookups by ls, by everyone else)
ls_lookups() {
	local pid
	slowfs_ctl watch "$(basename "$1")" >/dev/null
	"$T/dra-ls" -l "$1" >/dev/null &
	pid=$!
	wait $pid
	local all own
	all=$(slowfs_stat watch.total.lookup)
	own=$(slowfs_stat "watch.pid.$pid.lookup")
	echo "$own $((all - own))"
}

slowfs_mount "$T/back" "$T/serial" --no-parallel-dirops --latency-us 500
assert_eq "$(slowfs_stat parallel_dirops)" 0 "slowfs negotiated no parallel dirops"

info "serial lookups, hooks attached: no lookups by the daemon into the directory ls -l stats"
printf '[metrics]\naddress =\n[detect]\narm = always\n' >"$DAEMON_CONF"
daemon_start
read -r own others < <(ls_lookups "$T/serial/flat")
info "ls -l: $own lookups of its own, $others by others; $(daemon_stat skips.serial_lookups) serial_lookups skips"
assert_ge "$(daemon_stat skips.serial_lookups)" 1 "scans skipped for serial lookups"
assert_eq "$others" 0 "lookups by the daemon into the directory ls -l stats"
assert_ge "$own" $((N * 95 / 100)) "ls -l looks its entries up itself"
# (not scans_started: the daemon serves every process of the machine)
assert_eq "$(slowfs_stat "pid.$DAEMON_PID.lookup")" 0 "lookups by the daemon on the serial mount"

info "serial lookups: a run of stats by path (nothing listed) sends none either"
slowfs_ctl watch bypath >/dev/null
(cd "$T/back/bypath" && ls) | sed "s|^|$T/serial/bypath/|" >"$T/list"
python3 -c 'import os, sys
for line in open(sys.argv[1]): os.lstat(line.rstrip("\n"))' "$T/list" &
pid=$!
wait $pid
all=$(slowfs_stat watch.total.lookup)
own=$(slowfs_stat "watch.pid.$pid.lookup")
info "stats by path: $own lookups of its own, $((all - own)) by others; $(daemon_stat skips.serial_lookups) serial_lookups skips, $(daemon_stat scans_unlisted) unlisted scans"
assert_eq "$((all - own))" 0 "lookups by the daemon into the directory stat'ed by path"
assert_ge "$own" $((N * 95 / 100)) "the run looks its names up itself"
assert_eq "$(slowfs_stat "pid.$DAEMON_PID.lookup")" 0 "lookups by the daemon on the serial mount (run by path)"

info "serial lookups: a walker whose first listing was not seen is still followed"
# it stats its top's subdirectories by a dirfd without listing the top (as when the hooks
# attached while it was blocked listing it), then lists and stats each of them
python3 -c 'import os, sys
top = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
names = ["d%d" % d for d in range(1, int(sys.argv[2]) + 1)]
for n in names: os.stat(n, dir_fd=top, follow_symlinks=False)
for n in names:
    sub = os.open(n, os.O_RDONLY | os.O_DIRECTORY, dir_fd=top)
    for e in os.listdir(sub): os.stat(e, dir_fd=sub, follow_symlinks=False)
    os.close(sub)' "$T/serial/tree2" $NDIRS &
pid=$!
wait $pid
wait_for 10 eval '[ "$(daemon_stat active_walks)" = 0 ]'
own=$(slowfs_stat "pid.$pid.lookup") others=$(slowfs_stat "pid.$DAEMON_PID.lookup")
info "walker: walks $(daemon_stat walks_started), ahead only $(daemon_stat walks_ahead_only); lookups by it $own, by the daemon $others"
assert_ge "$(daemon_stat walks_ahead_only)" 1 "walks fetching ahead of the walker"
assert_ge "$others" 100 "lookups by the daemon ahead of the walker"
daemon_stop

info "serial lookups, armed on a blocked call: a cold ls -l does not arm"
printf '[metrics]\naddress =\n[filter]\ncomm_include = dra-*\n' >"$DAEMON_CONF"
daemon_start
drop_caches
read -r own others < <(ls_lookups "$T/serial/flat")
info "ls -l: $own lookups of its own; arms $(daemon_stat arms), signals ignored_serial $(daemon_stat sentinel_signals.ignored_serial)"
assert_ge "$(daemon_stat sentinel_signals.ignored_serial)" 1 "ls -l's blocked calls ignored for serial lookups"
assert_eq "$(daemon_stat arms)" 0 "arms by a cold ls -l on the serial mount"
assert_eq "$others" 0 "lookups by the daemon into the directory ls -l stats"

info "serial lookups: a walk arms, and fetches ahead of find"
slowfs_ctl reset >/dev/null
drop_caches
"$T/dra-find" "$T/serial/tree" -ls >/dev/null &
pid=$!
wait $pid
wait_for 10 eval '[ "$(daemon_stat walks_started)" -ge 1 ] && [ "$(daemon_stat active_walks)" = 0 ]'
own=$(slowfs_stat "pid.$pid.lookup") others=$(slowfs_stat "pid.$DAEMON_PID.lookup")
info "find: arms $(daemon_stat arms), walks $(daemon_stat walks_started), list only $(daemon_stat walks_list_only); lookups by find $own, by the daemon $others"
assert_ge "$(daemon_stat arms)" 1 "arms by find (blocked listing a second directory)"
assert_eq "$(daemon_stat walks_list_only)" 0 "walks listing only (where lookups serialize, listing ahead saves nothing)"
assert_ge "$(daemon_stat walks_ahead_only)" 1 "walks fetching only ahead of find"
# (find's first directories are its own: it arms at its second)
assert_ge "$others" $((NDIRS * 100 / 4)) "lookups by the daemon ahead of find"
assert_le "$own" $((NDIRS * 100 * 3 / 4)) "lookups by find itself"

info "control: parallel dirops, the daemon prefetches"
# 2 ms a lookup, not 500 us: beside two busy loops a lookup with prefetch took 1,575 us of a
# starved CPU against 1,235 us without, and the cost model rightly judged no_gain (a CI run)
slowfs_mount "$T/back" "$T/par" --latency-us 2000
assert_eq "$(slowfs_stat parallel_dirops)" 1 "slowfs negotiated parallel dirops"
read -r own others < <(ls_lookups "$T/par/flat")
info "ls -l: $own lookups of its own, $others by others"
assert_le "$own" $((N / 10)) "ls -l with prefetch: lookups of its own"
assert_ge "$others" $((N / 2)) "lookups by the daemon"

info "control: readdirplus, the listing brings the attributes"
slowfs_mount "$T/back" "$T/plus" --readdirplus --latency-us 500
assert_eq "$(slowfs_stat readdirplus)" 1 "slowfs negotiated readdirplus"
read -r own others < <(ls_lookups "$T/plus/flat")
info "ls -l: $own lookups of its own, $others by others"
assert_le "$own" $((N / 20)) "ls -l after readdirplus: lookups of its own"
assert_le "$others" $((N / 20)) "lookups by the daemon where the listing brought the attributes"
daemon_stop
echo PASS
