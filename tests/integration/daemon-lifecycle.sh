#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# diraheadd when things go away under a scan it is prefetching for:
#   1. the scanning process is killed (kill -9): the scan ends as process_exited, the daemon runs on;
#   2. the directory is removed (rm -rf of the backing tree): no crash, the failed prefetches are
#      counted as enoent, the scan ends;
#   3. the filesystem is unmounted right after the application is killed: a plain (not lazy)
#      umount succeeds within 2 s, because the daemon holds nothing open once the scan ends;
#      and if the application stops half-way but lives on (its fd closed, its cwd elsewhere),
#      the daemon, which keeps the directory open to go on prefetching, lets go of it when the
#      scan goes idle (idle_timeout_ms, 2 s here; at most 1.5 s later) and the umount succeeds;
#   4. SIGTERM with a scan in progress: exit status 0 within 1 s.
# The application is a slow scanner (list, then stat each entry with a pause), so that each scan
# stays in the "prefetching" state long enough to act on it.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd python3

PY=$(python3 -c 'import sys; print(sys.executable)') # not a pyenv shim: it lists dirs itself
N=2000
for d in kill rm term; do make_files "$T/back/$d" $N; done
make_files "$T/back2/umount" $N
make_files "$T/back3/idle" $N
slowfs_mount "$T/back" "$T/mnt" --latency-us 1000
slowfs_mount "$T/back2" "$T/mnt2" --latency-us 1000
MNT2_PID=$SLOWFS_PID
slowfs_mount "$T/back3" "$T/mnt3" --latency-us 1000
MNT3_PID=$SLOWFS_PID

# The scanner: lists DIR (os.listdir), then stats each entry, pausing DELAY s after each; a
# failed stat (the directory removed) is not an error.  With a COUNT, stops after COUNT
# entries, prints "idle" and sleeps.
cat >"$T/scan.py" <<'EOF'
import os, sys, time
d, delay = sys.argv[1], float(sys.argv[2])
count = int(sys.argv[3]) if len(sys.argv) > 3 else None
for i, n in enumerate(os.listdir(d)):
    if i == count:
        print("idle", flush=True)
        time.sleep(60)
    try:
        os.stat(os.path.join(d, n))
    except FileNotFoundError:
        pass
    time.sleep(delay)
EOF
APP='' APP_DIR=''
start_app() { # DIR [COUNT]: starts the scanner in the background (cwd /), sets APP to its pid
	(cd / && exec "$PY" "$T/scan.py" "$1" 0.002 ${2:+"$2"} >"$T/app.out") &
	APP=$! APP_DIR=$1
}
stop_app() { [ -n "$APP" ] || return 0; kill -KILL "$APP" 2>/dev/null; wait "$APP" 2>/dev/null || true; APP=; }
on_exit stop_app
# scan_state PID: the state `diraheadctl scans` shows for that process's scan of $APP_DIR (empty
# if none); python's start-up scans its own library directories too.
scan_state() { ctl scans | awk -v p="$1" -v d="$APP_DIR" '$1 == p && $NF == d { print $3 }'; }
prefetching() { [ "$(scan_state "$1")" = prefetching ]; }
no_scan() { [ -z "$(scan_state "$1")" ]; }

# A scan whose application stops making progress (case 2) ends after 2 s instead of 5.  No
# cost model: what goes away under a prefetching scan is the subject, and on a busy machine the
# model may judge a gain small enough to check it by a control stretch (32 stats without
# prefetch), which may fall right on case 2's removal (a CI run: no request failed, enoent 0).
printf '[metrics]\naddress =\n[prefetch]\nidle_timeout_ms = 2000\n[policy]\nenabled = no\n' >"$DAEMON_CONF"
daemon_start

# --- 1. the application is killed mid-scan --------------------------------------------------
start_app "$T/mnt/kill"
wait_for 10 prefetching "$APP"
exited0=$(daemon_stat scans_ended.process_exited)
pid=$APP
stop_app
wait_for 5 no_scan "$pid"
# (Counters, not the log, which is rate-limited; other processes' scans only add to them.)
assert_ge "$(daemon_stat scans_ended.process_exited)" $((exited0 + 1)) "scans ended as process_exited"
expect_exit 0 ctl status
info "killed app: scan ended as process_exited; daemon still running"

# --- 2. the directory is removed mid-scan ----------------------------------------------------
start_app "$T/mnt/rm"
wait_for 10 prefetching "$APP"
rm -rf "$T/back/rm"
# The app's stats of entries not fetched yet now fail (slowly: each is a lookup), so it stops
# making progress and the scan ends as idle, or as process_exited if the app gets done first.
wait_for 15 no_scan "$APP"
stop_app
expect_exit 0 ctl status
assert_ge "$(daemon_stat errors.enoent)" 1 "prefetches of removed entries counted as enoent"
assert_eq "$(daemon_stat errors.eio)" 0 "prefetch errors counted as eio"
assert_eq "$(daemon_stat errors.other)" 0 "prefetch errors counted as other"
info "removed directory: $(daemon_stat errors.enoent) enoent errors counted; daemon still running"

# --- 3. unmount right after the application is killed -----------------------------------------
SLOWFS_CTL=$T/slowfs.2.sock
slowfs_ctl reset >/dev/null
start_app "$T/mnt2/umount"
wait_for 10 prefetching "$APP"
# While prefetching, the engine has the directory open: that is what must not outlive the scan.
holds() { ls -l "/proc/$DAEMON_PID/fd" 2>/dev/null | qgrep " -> $T/mnt2/umount\$"; }
wait_for 5 holds
pid=$APP
stop_app
t0=$(now_ms)
until umount "$T/mnt2" 2>"$T/umount.err"; do
	[ $(($(now_ms) - t0)) -lt 2000 ] ||
		fail "umount $T/mnt2 still fails 2 s after the app was killed: $(cat "$T/umount.err")"
	sleep 0.02
done
umount_ms=$(($(now_ms) - t0))
info "plain umount succeeded ${umount_ms} ms after the scanning app was killed"
assert_ge "$(daemon_stat hits)" 1 "the daemon was prefetching (hits)"
_slowfs_gone "$MNT2_PID" 5 || fail "slowfs did not exit after its filesystem was unmounted"
wait_for 5 no_scan "$pid"
expect_exit 0 ctl status

# The application stops half-way and lives on, holding nothing there itself.  The daemon must
# let go of the directory once the scan is idle.  (Another helper's daemon on this machine may
# prefetch for the app too and hold the directory for its own idle timeout: only this daemon's
# fds are judged, and the umount only if nothing but other daemons hold the mount.)
start_app "$T/mnt3/idle" 300
wait_for 10 grep -q idle "$T/app.out"
prefetching "$APP" || fail "no scan in progress for the idle app: $(ctl scans)"
daemon_holds() { ls -l "/proc/$DAEMON_PID/fd" 2>/dev/null | qgrep -- "-> $1\(/.*\)\?\$"; }
daemon_holds "$T/mnt3" || fail "the daemon does not hold the directory it prefetches"
t0=$(now_ms)
while daemon_holds "$T/mnt3"; do
	[ $(($(now_ms) - t0)) -lt 3500 ] ||
		fail "the daemon still holds $T/mnt3/idle 3.5 s after the app stopped: $(ctl scans)"
	sleep 0.05
done
info "app idle half-way: the daemon closed the directory after $(($(now_ms) - t0)) ms (idle_timeout_ms 2000)"
t0=$(now_ms)
until umount "$T/mnt3" 2>"$T/umount.err"; do
	if [ $(($(now_ms) - t0)) -ge 6000 ]; then
		others=$(for p in /proc/[0-9]*; do
			ls -l "$p/fd" "$p/cwd" 2>/dev/null | qgrep -- "-> $T/mnt3\(/.*\)\?\$" &&
				echo "${p#/proc/}:$(cat "$p/comm")"
		done)
		grep -qv ':diraheadd$' <<<"$others" && fail "umount $T/mnt3 fails: held by $others"
		info "umount $T/mnt3 fails only because other helpers' daemons hold it ($others): not judged"
		break
	fi
	sleep 0.05
done
if ! _slowfs_mounted "$T/mnt3"; then
	info "plain umount then succeeded in $(($(now_ms) - t0)) ms"
	_slowfs_gone "$MNT3_PID" 5 || fail "slowfs did not exit after its filesystem was unmounted"
fi
stop_app

# --- 4. SIGTERM with a scan in progress -----------------------------------------------------
start_app "$T/mnt/term"
wait_for 10 prefetching "$APP"
t0=$(now_ms)
kill -TERM "$DAEMON_PID"
rc=0
wait "$DAEMON_PID" || rc=$?
term_ms=$(($(now_ms) - t0))
DAEMON_PID=
info "SIGTERM during a scan: exit status $rc after ${term_ms} ms"
assert_eq "$rc" 0 "diraheadd exit status after SIGTERM"
assert_le "$term_ms" 1000 "diraheadd stop time after SIGTERM (ms)"
stop_app
grep -E 'Sanitizer|runtime error' "$DAEMON_LOG" && fail "diraheadd reported a sanitizer error"
echo PASS
