#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# A path swapped between a program's stats and the daemon's resolution is a counted skip, and
# nothing reaches the directory it now names.  User nobody stats names of slowfs mount A by path
# through a symbolic link; right after the stat that makes it a run (the 8th name), while the
# daemon is stopped (SIGSTOP: the event waits in the ring buffer, so the order is certain), the
# link is swapped to slowfs mount B, which holds the same names.  The daemon, resolving the path
# afterwards, finds B, which does not hold the file the program's stat returned: skipped as
# path_mismatch, and B saw no request from the daemon.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd setpriv
STATNAMES=$BUILD/tests/tools/statnames
[ -x "$STATNAMES" ] || skip "$STATNAMES not built (make tests)"

U=65534 N=300
chmod 0711 "$T"
make_files "$T/back-a" $N
make_files "$T/back-b" $N
mkdir -p "$T/bin"
cp "$STATNAMES" "$T/bin/dps-stat"
chmod 0755 "$T/bin" "$T/bin/dps-stat"
slowfs_mount "$T/back-a" "$T/mnt-a" --latency-us 1000
CTL_A=$SLOWFS_CTL
slowfs_mount "$T/back-b" "$T/mnt-b" --latency-us 1000
CTL_B=$SLOWFS_CTL
b_stat() { SLOWFS_CTL=$CTL_B slowfs_stat "$1"; }
ln -s "$T/mnt-a" "$T/link"

# The hooks attached from the start (arm = always): armed at the first blocked stat, the daemon
# could be stopped below before it had attached them, and the run was never seen (once in a
# fresh-clone CI run: "armed", then nothing dealt).  Arming is arm-*'s subject, not this one's.
printf '[metrics]\naddress =\n[filter]\ncomm_include = dps-*\n[detect]\narm = always\n[policy]\nenabled = no\n[daemon]\nlog_level = debug\n' >"$DAEMON_CONF"
daemon_start
on_exit "kill -CONT $DAEMON_PID 2>/dev/null"
SLOWFS_CTL=$CTL_B slowfs_ctl reset >/dev/null

coproc STAT { setpriv --reuid=$U --regid=$U --clear-groups -- "$T/bin/dps-stat" "$T/link"; }
stat_pid=$STAT_PID # (bash unsets STAT_PID once it has reaped the coprocess)
on_exit "kill $stat_pid 2>/dev/null"
step() { # FIRST LAST: the program stats those names; they all exist
	echo "$1 $2" >&"${STAT[1]}"
	read -r -t 30 line <&"${STAT[0]}" || fail "the program did not stat $1..$2"
	assert_eq "$line" "ok $(($2 - $1 + 1))" "the program's stats $1..$2"
}
step 1 7
kill -STOP "$DAEMON_PID"
step 8 8 # a run now: its SCAN waits for the daemon
ln -s "$T/mnt-b" "$T/link.new"
mv -T "$T/link.new" "$T/link"
kill -CONT "$DAEMON_PID"
# the daemon dealt with the run: skipped it, or (before the fix) started on what it found
dealt() { [ $(($(daemon_stat skips.path_mismatch) + $(daemon_stat scans_started))) -ge "$1" ]; }
wait_for 10 dealt 1
step 9 $N # on, through the swapped link: the daemon stays out of it
info "unlisted runs $(daemon_stat scans_unlisted), started $(daemon_stat scans_started)," \
	"path_mismatch $(daemon_stat skips.path_mismatch), open_failed $(daemon_stat skips.open_failed);" \
	"daemon requests to B $(b_stat "pid.$DAEMON_PID.all")"
assert_eq "$(b_stat "pid.$DAEMON_PID.all")" 0 "the daemon's requests to the directory swapped in"
assert_eq "$(daemon_stat skips.path_mismatch)" 1 "runs skipped: the path leads elsewhere now"
assert_eq "$(daemon_stat scans_started)" 0 "scans started"
exec {STAT[1]}>&-
wait "$stat_pid" || true

# The same on one filesystem: directory d renamed away and another one, with the same names,
# renamed in its place (slowfs C follows its backing store; no kernel caching, so the daemon's
# lookups see the swap).  The daemon's device check cannot tell them apart: it looks the name up
# there once, finds another inode, and neither opens nor lists that directory.
make_files "$T/back-c/d" $N
make_files "$T/back-c/e" $N
slowfs_mount "$T/back-c" "$T/mnt-c" --latency-us 1000 --entry-timeout 0 --attr-timeout 0
c_stat() { slowfs_stat "$1"; }
coproc STAT { setpriv --reuid=$U --regid=$U --clear-groups -- "$T/bin/dps-stat" "$T/mnt-c/d"; }
stat_pid=$STAT_PID # (bash unsets STAT_PID once it has reaped the coprocess)
on_exit "kill $stat_pid 2>/dev/null"
step 1 7
kill -STOP "$DAEMON_PID"
step 8 8
slowfs_ctl reset >/dev/null
mv -T "$T/back-c/d" "$T/back-c/d.old"
mv -T "$T/back-c/e" "$T/back-c/d"
kill -CONT "$DAEMON_PID"
wait_for 10 dealt 2
step 9 $N
info "path_mismatch $(daemon_stat skips.path_mismatch), started $(daemon_stat scans_started);" \
	"daemon requests to C:" $(slowfs_ctl stats | grep "^pid.$DAEMON_PID\.")
assert_eq "$(daemon_stat skips.path_mismatch)" 2 "runs skipped: the directory was swapped"
assert_eq "$(daemon_stat scans_started)" 0 "scans started"
for op in open opendir readdir readdirplus; do
	assert_eq "$(c_stat "pid.$DAEMON_PID.$op")" 0 "the daemon's $op requests to the swapped directory"
done
# the path's directory (its cached dentry revalidated, then looked up again) and the one name
# checked in it; a prefetch would look up hundreds
assert_le "$(c_stat "pid.$DAEMON_PID.lookup")" 4 "the daemon's lookups there"
exec {STAT[1]}>&-
wait "$stat_pid" || true
daemon_stop
echo "PASS"
