#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# An unprivileged user who mounts fresh FUSE filesystems one after another, each blocking the
# user's listing (so each arms the syscall hooks, [detect] arm = on-block) and each judged not
# to pay (its stats answered from the listing, as sshfs's), makes the daemon attach the hooks
# and detach them a second later (arm_settled) once per mount: no more.  A mount already
# judged arms nothing again (the signal is ignored until its re-probe), the daemon's CPU per
# cycle stays small (an attach and a detach, a probe), and it answers its control socket
# throughout.  The mounts stay until the end (slowfs_mount's cleanup unmounts them).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd setpriv ls

U=65534 # nobody
K=6     # fresh mounts
fuse_for_users
chmod 0711 "$T"
mkdir -p "$T/u"
chown $U:$U "$T/u"
make_files "$T/u/back/d" 400
chown -R $U:$U "$T/u/back"
ln -s "$(realpath "$(command -v ls)")" "$T/dra-ls"
AS=(setpriv --reuid=$U --regid=$U --clear-groups --)
SLOWFS_AS=("${AS[@]}")
SLOWFS_SOCKDIR=$T/u
printf '[metrics]\naddress =\n[filter]\ncomm_include = dra-*\n[detect]\nquiet_s = 60\n[daemon]\nlog_level = debug\n' >"$DAEMON_CONF"
daemon_start

disarmed() { [ "$(daemon_stat armed)" = 0 ]; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$DAEMON_PID/stat"; }
hz=$(getconf CLK_TCK)
c0=$(cpu_ticks)
for ((i = 1; i <= K; i++)); do
	mkdir -p "$T/u/mnt$i"
	chown $U:$U "$T/u/mnt$i"
	slowfs_mount "$T/u/back" "$T/u/mnt$i" --latency-us 300 --readdirplus --no-allow-other
	a0=$(daemon_stat arms)
	"${AS[@]}" "$T/dra-ls" -l "$T/u/mnt$i/d" >/dev/null
	# quiet_s is 60: a disarm within 15 s is the settle's (judged, nothing runs)
	wait_for 15 disarmed
	# the same mount again: judged, its signal ignored; no new arm
	a1=$(daemon_stat arms)
	"${AS[@]}" "$T/dra-ls" -l "$T/u/mnt$i/d" >/dev/null
	"${AS[@]}" "$T/dra-ls" -lR "$T/u/mnt$i" >/dev/null
	sleep 0.3
	dev=$(awk -v m="$T/u/mnt$i" '$5 == m { print $3 }' /proc/self/mountinfo)
	info "mount $i ($dev): arms $a0 -> $a1 -> $(daemon_stat arms), verdict $(daemon_stat "filesystems.$dev.verdict")"
	assert_le $((a1 - a0)) 1 "arms by mount $i's first listing"
	assert_eq "$(daemon_stat arms)" "$a1" "arms by listings on mount $i, judged"
	ctl stats >/dev/null || fail "control socket during the churn"
	# (left mounted: each new mount gets a device number of its own, a filesystem the
	# daemon has not met; one unmounted first may hand its number, and its verdict, on)
done
c1=$(cpu_ticks)
arms=$(daemon_stat arms)
info "$K fresh mounts: $arms arms, daemon CPU $(((c1 - c0) * 1000 / hz)) ms"
assert_le "$arms" "$K" "arms over $K fresh mounts"
# an attach, a detach and a probe per mount; 150 ms each allows for a busy machine
assert_le $(((c1 - c0) * 1000 / hz)) $((K * 150)) "daemon CPU over the churn (ms)"
daemon_stop
echo PASS
