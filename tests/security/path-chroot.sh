#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# A chrooted program's run of stats by path does not lead the daemon out of its root.  User
# nobody, chrooted in $T/top/jail (chroot(1) does chdir("/") there), stats ../outside/NAME, which
# for the program is /outside/NAME in its jail: ".." of its root is its root.  jail/outside is
# slowfs mount A; the jail's sibling $T/top/outside, which the same path names from the cwd
# without the root, is slowfs mount B with the same names.  The daemon's requests all go to A
# (the run is served, inside the root), none to B.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd chroot
STATNAMES=$BUILD/tests/tools/statnames
[ -x "$STATNAMES" ] || skip "$STATNAMES not built (make tests)"

U=65534 N=300
chmod 0711 "$T"
make_files "$T/back-in" $N
make_files "$T/back-out" $N
mkdir -p "$T/top/jail/outside" "$T/top/outside"
cp "$STATNAMES" "$T/top/jail/dps-stat"
chmod 0755 "$T/top" "$T/top/jail" "$T/top/jail/dps-stat"
slowfs_mount "$T/back-in" "$T/top/jail/outside" --latency-us 1000
CTL_IN=$SLOWFS_CTL
slowfs_mount "$T/back-out" "$T/top/outside" --latency-us 1000
CTL_OUT=$SLOWFS_CTL
in_stat() { SLOWFS_CTL=$CTL_IN slowfs_stat "$1"; }
out_stat() { SLOWFS_CTL=$CTL_OUT slowfs_stat "$1"; }

# every confirmed scan opened at once: this is about where the daemon goes, not the cost model
printf '[metrics]\naddress =\n[filter]\ncomm_include = dps-*\n[policy]\nenabled = no\n[daemon]\nlog_level = debug\n' >"$DAEMON_CONF"
daemon_start
SLOWFS_CTL=$CTL_IN slowfs_ctl reset >/dev/null
SLOWFS_CTL=$CTL_OUT slowfs_ctl reset >/dev/null

coproc STAT { chroot --userspec=$U:$U "$T/top/jail" /dps-stat ../outside; }
stat_pid=$STAT_PID # (bash unsets STAT_PID once it has reaped the coprocess)
on_exit "kill $stat_pid 2>/dev/null"
# slowly enough that the daemon is ahead of it (2 ms apart)
echo "1 $N 2000" >&"${STAT[1]}"
read -r -t 60 line <&"${STAT[0]}" || fail "the chrooted program did not finish its stats"
assert_eq "$line" "ok $N" "the chrooted program's stats of ../outside/NAME (its /outside)"
ran() { [ "$(daemon_stat scans_unlisted)" -ge 1 ]; }
wait_for 10 ran
sleep 0.5
info "unlisted runs $(daemon_stat scans_unlisted), started $(daemon_stat scans_started)," \
	"outside_root $(daemon_stat skips.outside_root), path_mismatch $(daemon_stat skips.path_mismatch)," \
	"open_failed $(daemon_stat skips.open_failed); daemon requests inside $(in_stat "pid.$DAEMON_PID.all")," \
	"outside $(out_stat "pid.$DAEMON_PID.all")"
grep "dps-stat\|\.\./outside" "$DAEMON_LOG" | head -5 || true
assert_eq "$(out_stat "pid.$DAEMON_PID.all")" 0 "the daemon's requests outside the program's root"
assert_ge "$(daemon_stat scans_started)" 1 "the run served (inside the root)"
assert_ge "$(in_stat "pid.$DAEMON_PID.lookup")" 1 "the daemon's lookups inside the root"
assert_eq "$(daemon_stat skips.path_mismatch)" 0 "runs refused as another directory"
echo "" >&"${STAT[1]}" 2>/dev/null || true
exec {STAT[1]}>&-
wait "$stat_pid" || true
daemon_stop
echo "PASS"
