#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# The opener's other held fds (procdir.c open_held) lend no rights: an unprivileged program
# holding O_PATH fds (and dups of them) to a directory it may search but not read (0711, root's)
# stats every name in it through them, a run of stats without a listing that the detector
# reports by fd.  Opening that directory as the program fails, and so does every other fd the
# opener tries (each is reopened as the program): no request of the daemon lists the directory or
# looks up a name in it.  The control: the same run in a directory the program may read (0755)
# is prefetched, and the watch sees the daemon list it (so the test can see a breach).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd setpriv
PY=/usr/bin/python3 # Debian's: the one unprivileged users can run (root's PATH may name a private one)
[ -x "$PY" ] || skip "no $PY"

U=65534
N=300
chmod 0711 "$T"
make_files "$T/back/open" $N
make_files "$T/back/secret" $N
chmod 0755 "$T/back/open"
chmod 0711 "$T/back/secret"
ln -s "$(realpath "$PY")" "$T/dra-py"
cat >"$T/held.py" <<'PY'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
fd = os.open(d, os.O_PATH | os.O_DIRECTORY)
held = [os.dup(fd) for _ in range(3)]  # more fds on the same directory for the opener to try
ok = 0
for i in range(1, n + 1):
    os.stat("f%06d" % i, dir_fd=fd)
    ok += 1
print(ok)
PY
printf '[metrics]\naddress =\n[filter]\ncomm_include = dra-*\n' >"$DAEMON_CONF"
slowfs_mount "$T/back" "$T/mnt" --latency-us 1000
(cd / && setpriv --reuid=$U --regid=$U --clear-groups ls "$T/mnt/secret") >/dev/null 2>&1 &&
	fail "nobody listed the 0711 directory"

run() { # DIR: the held-fd run in it as nobody, cold; the daemon's requests into it in $T/into
	drop_caches
	slowfs_ctl reset >/dev/null
	slowfs_ctl watch "$1" >/dev/null
	local got
	got=$(cd / && setpriv --reuid=$U --regid=$U --clear-groups "$T/dra-py" "$T/held.py" "$T/mnt/$1" $N) ||
		fail "the run in $1 failed"
	assert_eq "$got" $N "names stat'ed in $1"
	sleep 0.5 # the daemon's last requests
	local op sum=0 v
	for op in opendir readdir readdirplus lookup; do
		v=$(slowfs_stat "watch.total.$op")
		sum=$((sum + v))
	done
	echo "$sum" >"$T/into"
	slowfs_ctl stats | grep '^watch\.' >&2 || true
}
# the program's own requests count in watch.total too: it sends lookups only, one per name at
# most, so the daemon's listing requests show up apart
lists() { echo $(($(slowfs_stat watch.total.opendir) + $(slowfs_stat watch.total.readdir) + $(slowfs_stat watch.total.readdirplus))); }

daemon_start
s0=$(daemon_stat scans_started)
run open
ctl_lists=$(lists)
info "readable directory: the daemon listed it with $ctl_lists requests; $(($(daemon_stat scans_started) - s0)) scans started"
assert_ge "$ctl_lists" 1 "listing requests into the readable directory (the daemon served the run)"

s0=$(daemon_stat scans_started) f0=$(daemon_stat skips.open_failed)
run secret
sec_lists=$(lists)
info "0711 directory: $sec_lists listing requests into it, $(($(daemon_stat scans_started) - s0)) scans started; skips: open_failed $(daemon_stat skips.open_failed), credentials $(daemon_stat skips.credentials)"
assert_eq "$sec_lists" 0 "listing requests into the directory nobody may not read"
assert_le "$(slowfs_stat watch.total.lookup)" $N "lookups into it (the program's own: one per name at most)"
assert_eq "$(($(daemon_stat scans_started) - s0))" 0 "scans started in the directory nobody may not read"
# the run was seen and the opener tried (each held fd as the program), not just missed
assert_ge "$(($(daemon_stat skips.open_failed) - f0))" 1 "runs there skipped: open_failed"
daemon_stop
echo PASS
