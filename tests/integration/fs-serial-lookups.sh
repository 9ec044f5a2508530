#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# First contact with a FUSE filesystem that serializes lookups in a directory (no
# FUSE_PARALLEL_DIROPS, as sshfs): the detector reads that from the FUSE connection, and the
# daemon sends no lookup into the directory `ls -l` stats (skips.serial_lookups); `ls -l` looks
# its entries up itself, as without the daemon.  A walk there still lists ahead (list only).
# Controls: on a slowfs that negotiates parallel dirops the daemon still prefetches (ls -l sends
# under 10% of the lookups itself); on one whose listing brings the attributes (readdirplus),
# ls -l waits for nothing and the daemon sends (almost) nothing.  A run of stats by path (no
# listing: the daemon resolves its directory) on the serial mount: none either (what the kernel
# said of the filesystem is kept with it).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd find python3

N=1000
make_files "$T/back/flat" $N
make_files "$T/back/bypath" $N
for d in 1 2 3 4 5 6; do make_files "$T/back/tree/d$d" 100; done

# ls -l of DIR under the watch: prints "own others" (lookups by ls, by everyone else)
ls_lookups() {
	local pid
	slowfs_ctl watch "$(basename "$1")" >/dev/null
	ls -l "$1" >/dev/null &
	pid=$!
	wait $pid
	local all own
	all=$(slowfs_stat watch.total.lookup)
	own=$(slowfs_stat "watch.pid.$pid.lookup")
	echo "$own $((all - own))"
}

daemon_start

info "serial lookups: no lookups by the daemon into the directory ls -l stats"
slowfs_mount "$T/back" "$T/serial" --no-parallel-dirops --latency-us 500
assert_eq "$(slowfs_stat parallel_dirops)" 0 "slowfs negotiated no parallel dirops"
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

info "serial lookups: a walk still lists ahead"
slowfs_ctl reset >/dev/null
find "$T/serial/tree" -ls >/dev/null &
pid=$!
wait $pid
wait_for 10 eval '[ "$(daemon_stat walks_list_only)" -ge 1 ]'
info "find: walks $(daemon_stat walks_started), list only $(daemon_stat walks_list_only); readdirs by find $(slowfs_stat pid.$pid.readdir), in all $(slowfs_stat total.readdir)"
# listing ahead looks up only what may be a subdirectory: the 6 of tree/, no file
assert_le "$(slowfs_stat "pid.$DAEMON_PID.lookup")" 12 "lookups by the daemon during the walk"

info "control: parallel dirops, the daemon prefetches"
slowfs_mount "$T/back" "$T/par" --latency-us 500
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
