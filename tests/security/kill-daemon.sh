#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Attack: a user whose scan the daemon serves signals or limits the daemon's threads.
# While user nobody's `ls -l` and `find` run on nobody's own FUSE mount (no allow_other: the mount
# admits only processes with nobody's ids, so the daemon's I/O for it needs them), nobody tries,
# against every thread of the daemon, again and again until its programs are done: signal 0 (may
# I?), SIGSTOP, SIGKILL and prlimit(RLIMIT_NOFILE).  Every try must be refused (EPERM): no daemon
# thread ever has nobody's real, effective or saved uid (daemon/lib/cred.c).  The daemon is
# alive after, and it did prefetch (the programs' own lookups under 10% of off's).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd setpriv python3 find

U=65534 # nobody
fuse_for_users
chmod 0711 "$T"
mkdir -p "$T/u" "$T/bin"
chown $U:$U "$T/u"
for t in ls find; do cp "$(type -P $t)" "$T/bin/dka-$t"; done
chmod 0755 "$T/bin" "$T"/bin/*
N=2000 D=40 F=30
make_files "$T/u/back/flat" $N
make_files "$T/u/back/flat2" $N
for i in $(seq 1 $D); do make_files "$T/u/back/tree/d$i" $F; done
chown -R $U:$U "$T/u/back"
mkdir -p "$T/u/mnt"
chown $U:$U "$T/u/mnt"
AS=(setpriv --reuid=$U --regid=$U --clear-groups --)
SLOWFS_AS=("${AS[@]}")
SLOWFS_SOCKDIR=$T/u
slowfs_mount "$T/u/back" "$T/u/mnt" --latency-us 500 --no-allow-other
M=$T/u/mnt
printf '[metrics]\naddress =\n[filter]\ncomm_include = dka-*\n[daemon]\nlog_level = debug\n' >"$DAEMON_CONF"

# The attacker: every thread of PID, each round, until the file STOP exists; prints
# "tries N refused N allowed N threads N" and, for any allowed try, what it was.
cat >"$T/attack.py" <<'PY'
import os, resource, signal, sys, time
pid, stop = int(sys.argv[1]), sys.argv[2]
tries = refused = allowed = 0
seen = set()
def attempt(what, fn):
    global tries, refused, allowed
    tries += 1
    try:
        fn()
    except PermissionError:
        refused += 1
        return
    except (ProcessLookupError, OSError):
        return  # the thread is gone
    allowed += 1
    print("ALLOWED", what, flush=True)
while not os.path.exists(stop):
    try:
        tids = [int(t) for t in os.listdir("/proc/%d/task" % pid)]
    except OSError:
        break
    for t in tids:
        seen.add(t)
        attempt("kill0 %d" % t, lambda: os.kill(t, 0))
        attempt("prlimit %d" % t, lambda: resource.prlimit(t, resource.RLIMIT_NOFILE, (16, 16)))
        attempt("stop %d" % t, lambda: os.kill(t, signal.SIGSTOP))
        attempt("kill %d" % t, lambda: os.kill(t, signal.SIGKILL))
    time.sleep(0.002)
print("tries %d refused %d allowed %d threads %d" % (tries, refused, allowed, len(seen)), flush=True)
PY
chmod 0644 "$T/attack.py"
PY=/usr/bin/python3 # (not a shim in root's home: the user runs it)
[ -x "$PY" ] || PY=$(command -v python3)

run() { # TOOL DIR: as the user, cold; LAST_PID
	drop_caches
	slowfs_ctl reset >/dev/null
	case $1 in
	ls) "${AS[@]}" "$T/bin/dka-ls" -l "$2" >/dev/null & ;;
	find) "${AS[@]}" "$T/bin/dka-find" "$2" -ls >/dev/null 2>&1 & ;;
	esac
	LAST_PID=$!
	wait $LAST_PID || fail "$1 $2 failed"
}

run ls "$M/flat"
off_ls=$(slowfs_stat "pid.$LAST_PID.lookup")
run find "$M/tree"
off_find=$(slowfs_stat "pid.$LAST_PID.lookup")
info "alone: ls -l sent $off_ls lookups, find $off_find"

daemon_start
rm -f "$T/stop"
"${AS[@]}" "$PY" "$T/attack.py" "$DAEMON_PID" "$T/stop" >"$T/attack.out" 2>&1 &
APID=$!
on_exit "touch '$T/stop'; kill $APID 2>/dev/null"
run ls "$M/flat2"
on_ls=$(slowfs_stat "pid.$LAST_PID.lookup")
run find "$M/tree"
on_find=$(slowfs_stat "pid.$LAST_PID.lookup")
touch "$T/stop"
wait $APID || true
cat "$T/attack.out"
info "with the daemon, under attack: ls -l sent $on_ls lookups, find $on_find"

kill -0 "$DAEMON_PID" 2>/dev/null || fail "the daemon died under the user's attack"
state=$(awk '/^State:/ { print $2 }' "/proc/$DAEMON_PID/status")
[ "$state" != T ] || fail "the daemon was stopped by the user"
for t in /proc/$DAEMON_PID/task/*; do
	read -r _ r e s _ < <(grep '^Uid:' "$t/status")
	[ "$r$e$s" = 000 ] || fail "daemon thread ${t##*/} has uids $r $e $s"
done
grep -q ALLOWED "$T/attack.out" && fail "the user was allowed: $(grep ALLOWED "$T/attack.out" | head -3)"
read -r _ tries _ refused _ allowed _ threads < <(tail -n 1 "$T/attack.out")
assert_eq "$allowed" 0 "tries the user was allowed"
assert_ge "$tries" 40 "tries made (the attack ran while the programs did)"
assert_ge "$threads" 2 "daemon threads tried"
nofile=$(awk '/^Max open files/ { print $4 }' "/proc/$DAEMON_PID/limits")
assert_ne "$nofile" 16 "the daemon's RLIMIT_NOFILE (lowered by the user)"
# it helped all the same: its I/O for the user's mount went through
assert_le $((on_ls * 10)) "$off_ls" "ls -l's own lookups with the daemon x10"
assert_le $((on_find * 10)) "$off_find" "find's own lookups with the daemon x10"
daemon_stop
