#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Attack: a user's FUSE server never answers the daemon, to pin the daemon's openers and so stop
# prefetch for everybody.  User A mounts slowfs as itself and makes it hold every reply to the
# daemon (stall-pid); then 20 of A's processes each stat 8 names of a directory there by path
# (runs of stats without a listing: the daemon resolves each in an opener thread, where it
# hangs).  Meanwhile user B's `ls -l` on another filesystem must still be prefetched: it sends
# at most a fifth of its lookups itself.  A's jobs beyond its share of the openers are refused
# (openers_user); none of anybody's is refused for want of openers (openers_busy).  Without the
# share, A's jobs take every opener and queue, and B's scan waits behind them.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd setpriv
[ -x /usr/bin/python3 ] || skip "needs /usr/bin/python3"

A=65534 B=4022 N=2000 K=20 # A mounts (fusermount3 wants a user name: nobody)
fuse_for_users
chmod 0711 "$T"
mkdir -p "$T/a" "$T/bin"
for i in $(seq 1 $K); do make_files "$T/a/back/d$i" 10; done
mkdir -p "$T/a/mnt"
chown -R $A:$A "$T/a"
make_files "$T/b/back/ok" $N
chmod -R a+rX "$T/b"
cp "$(type -P ls)" "$T/bin/dsf-ls"
# a python the users may run (not a root-only one in root's home), named for the filter
ln -s "$(readlink -f /usr/bin/python3)" "$T/bin/dsf-py"
chmod 0755 "$T/bin" "$T/bin/dsf-ls"

SLOWFS_AS=(setpriv --reuid=$A --regid=$A --clear-groups --)
SLOWFS_SOCKDIR=$T/a
slowfs_mount "$T/a/back" "$T/a/mnt" --latency-us 100 --no-allow-other
CTLA=$SLOWFS_CTL
SLOWFS_AS=()
SLOWFS_SOCKDIR=$T
slowfs_mount "$T/b/back" "$T/b/mnt" --latency-us 1000
CTLB=$SLOWFS_CTL

# (the hooks from the start: A's 20 runs of 8 stats are done in a few milliseconds, and the ones
# made before a blocked call had armed them would never be reported: CI, once in ~10 runs)
printf '[metrics]\naddress =\n[filter]\ncomm_include = dsf-*\n[daemon]\nlog_level = debug\n[detect]\narm = always\n' >"$DAEMON_CONF"
daemon_start
# The daemon's openers stay stuck in A's filesystem until it answers: let it answer before the
# daemon is stopped, also when the test fails.
on_exit "timeout 2 '$BUILD/slowfsctl' '$CTLA' release"
SLOWFS_CTL=$CTLA slowfs_ctl stall-pid "$DAEMON_PID" >/dev/null

# A's processes: each waits for the go, stats 8 names of its directory by path, and sleeps (the
# daemon resolves a run by path through the process's /proc entry).
cat >"$T/run.py" <<'EOF'
import os, sys, time
d, go = sys.argv[1:3]
while not os.path.exists(go):
    time.sleep(0.01)
for i in range(1, 9):
    os.lstat(os.path.join(d, "f%06d" % i))
time.sleep(120)
EOF
chmod 0644 "$T/run.py"
APPS=()
kill_apps() { local p; for p in "${APPS[@]}"; do kill -KILL "$p" 2>/dev/null; done; APPS=(); }
on_exit kill_apps
for i in $(seq 1 $K); do
	setpriv --reuid=$A --regid=$A --clear-groups -- "$T/bin/dsf-py" "$T/run.py" "$T/a/mnt/d$i" "$T/go" &
	APPS+=($!)
done
touch "$T/go"
# every run reported to the daemon (and taken or refused by its openers)
reported() { [ "$(daemon_stat scans_unlisted)" -ge $K ]; }
wait_for 30 reported
sleep 1.5 # A's resolves now stuck (past the openers' stuck time)
info "user $A: $(daemon_stat scans_unlisted) runs, skipped: openers_user $(daemon_stat skips.openers_user), fs_hung $(daemon_stat skips.fs_hung), openers_busy $(daemon_stat skips.openers_busy); replies held: $(SLOWFS_CTL=$CTLA slowfs_stat pending_replies)"
assert_ge "$(SLOWFS_CTL=$CTLA slowfs_stat pending_replies)" 1 "the daemon's requests held by user $A's server"

# B's ls -l on the other filesystem
SLOWFS_CTL=$CTLB slowfs_ctl reset >/dev/null
setpriv --reuid=$B --regid=$B --clear-groups -- "$T/bin/dsf-ls" -l "$T/b/mnt/ok" >/dev/null &
app=$!
wait $app || fail "user $B's ls -l failed"
own=$(SLOWFS_CTL=$CTLB slowfs_stat "pid.$app.lookup")
info "user $B: ls -l sent $own of $N lookups itself; skipped: openers_busy $(daemon_stat skips.openers_busy)"
assert_le $((own * 5)) "$N" "user $B's own lookups x5"
assert_ge "$(daemon_stat skips.openers_user)" 1 "user $A's jobs refused past its share (openers_user)"
assert_eq "$(daemon_stat skips.openers_busy)" 0 "jobs refused for want of openers (openers_busy)"

SLOWFS_CTL=$CTLA slowfs_ctl release >/dev/null
kill_apps
daemon_stop
echo PASS
