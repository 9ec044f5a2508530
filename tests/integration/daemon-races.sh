#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Races between the daemon and the detector, provoked on purpose:
#  b. A new scan of a directory while the daemon's previous scan of it (same process) is still
#     ending: the old scan is still being opened (slowfs reads are slow, and the daemon reads
#     the whole directory) when the program moves on, lists the directory again and confirms a
#     new scan within a few ms.  The new scan is no duplicate of the one ending: it starts.
#  c. A scan whose END never reaches the daemon: the daemon is stopped (SIGSTOP) while a process
#     confirms a scan, other processes fill the ring buffer with events, and the process exits
#     (its END is lost to the full ring).  Once the daemon runs again it finds the detector has
#     no state for that scan and ends it within a second, not at its idle timeout (30 s here).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd python3
PY=$(python3 -c 'import sys; print(sys.executable)')

# --- b. a new scan while the old one ends --------------------------------------------------
# The daemon's scan is opening (learning the program's order: it reads 20,000 entries, one
# slowfs readdir request per ms) when the program moves on; a few ms later the program's next
# scan of the same directory is confirmed.
make_files "$T/back/d" 20000
make_files "$T/back/e" 5
slowfs_mount "$T/back" "$T/mnt" --latency-us 0 --readdir-us 1000
cat >"$T/rescan.py" <<'EOF'
import os, sys
d, e = sys.argv[1:3]
names = os.listdir(d)               # readdir order
for x in names[-2:]:
    os.lstat(os.path.join(d, x))    # the last two: the daemon reads it all to learn the order
os.listdir(e)                       # moved on: the scan ends while the daemon opens it
with os.scandir(d) as it:           # one getdents of d: a new listing
    next(it)
    for x in names[-2:]:
        os.lstat(os.path.join(d, x))    # cached: a new scan of d, a few ms later
EOF
printf '[metrics]\naddress =\n[policy]\nenabled = no\n[detect]\narm = always\n' >"$DAEMON_CONF"
daemon_start
dup0=$(daemon_stat skips.duplicate)
"$PY" "$T/rescan.py" "$T/mnt/d" "$T/mnt/e" &
pid=$!
wait $pid || fail "rescan.py failed"
settled() { ! ctl scans | qgrep "$T/mnt/d"; }
wait_for 10 settled
grep "pid $pid .*$T/mnt/d" "$DAEMON_LOG" || true
assert_eq "$(daemon_stat skips.duplicate)" "$dup0" "b: no scan skipped as a duplicate"
assert_eq "$(grep -c "scan: pid $pid .*$T/mnt/d" "$DAEMON_LOG")" 2 "b: both scans of d started"
daemon_stop
slowfs_unmount "$T/mnt"

# --- c. an END lost to a full ring buffer ----------------------------------------------------
make_files "$T/lost" 300
for i in $(seq 1 400); do mkdir -p "$T/flood/$i"; done
(cd "$T/flood" && for i in $(seq 1 400); do (cd $i && touch a b c d e f g h i j); done)
cat >"$T/hold.py" <<'EOF'
import os, sys, time
d, go = sys.argv[1:3]
for x in sorted(os.listdir(d))[:4]:
    os.stat(os.path.join(d, x))
open(go + ".ready", "w").close()
deadline = time.time() + 30
while not os.path.exists(go) and time.time() < deadline:
    time.sleep(0.01)
EOF
cat >"$T/flood.py" <<'EOF'
import os, sys
top = sys.argv[1]
for d in sorted(os.listdir(top)):
    p = os.path.join(top, d)
    for x in sorted(os.listdir(p)):
        os.stat(os.path.join(p, x))
EOF
printf '[metrics]\naddress =\n[prefetch]\nidle_timeout_ms = 30000\n[detect]\narm = always\n' >"$DAEMON_CONF"
daemon_start
lost0=$(daemon_stat bpf_events_lost)
kill -STOP "$DAEMON_PID"
on_exit "kill -CONT $DAEMON_PID 2>/dev/null"
"$PY" "$T/hold.py" "$T/lost" "$T/go" &
hpid=$!
wait_for 10 test -e "$T/go.ready"
"$PY" "$T/flood.py" "$T/flood"      # some 400 scans' events: more than the ring holds
touch "$T/go"
wait $hpid || fail "hold.py failed"
kill -CONT "$DAEMON_PID"
t0=$(now_ms)
responds() { ctl status >/dev/null; }
wait_for 5 responds
assert_ge "$(daemon_stat bpf_events_lost)" $((lost0 + 1)) "c: the ring buffer overflowed"
grep -q "pid $hpid .*$T/lost" "$DAEMON_LOG" || fail "c: the daemon never saw the scan"
gone() { ! ctl scans | qgrep "$T/lost"; }
wait_for 5 gone
info "c: the orphaned scan ended after $(($(now_ms) - t0)) ms"
assert_le $(($(now_ms) - t0)) 2500 "c: orphaned scan ended (ms)"
daemon_stop
echo "PASS"
