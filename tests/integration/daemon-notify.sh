#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# sd_notify without systemd: diraheadd runs with NOTIFY_SOCKET pointing at a datagram socket this
# test listens on, and WATCHDOG_USEC set.  The messages must come from the daemon's PID in this
# order: READY=1, a STATUS= line; for a SIGHUP, a good `diraheadctl reload` and a rejected one,
# RELOADING=1 with a current MONOTONIC_USEC=, then READY=1; on SIGTERM STOPPING=1, the last
# state message.  WATCHDOG=1 pings arrive all along, at least once per WATCHDOG_USEC.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd python3

# The listener: one line per datagram, "MONOTONIC_USEC SENDER_PID TEXT" ('|' for newlines).
cat >"$T/listen.py" <<'EOF'
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
s.bind(sys.argv[1])
out = open(sys.argv[2], "a", buffering=1)
print("ready", flush=True)
while True:
    msg, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(12))
    pid = -1
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
            pid = int.from_bytes(data[0:4], sys.byteorder)
    out.write("%d %d %s\n" % (time.monotonic_ns() // 1000, pid,
                              msg.decode(errors="replace").strip().replace("\n", "|")))
EOF
NOTIFY=$T/notify.sock MSGS=$T/notify.log
: >"$MSGS"
python3 -u "$T/listen.py" "$NOTIFY" "$MSGS" >"$T/listen.out" 2>&1 &
listener=$!
on_exit "kill $listener"
wait_for 5 grep -q ready "$T/listen.out"

WD_USEC=1000000
NOTIFY_SOCKET=$NOTIFY WATCHDOG_USEC=$WD_USEC daemon_start
dpid=$DAEMON_PID
info "daemon $dpid"
texts() { awk '{ $1 = ""; $2 = ""; sub(/^  /, ""); print }' "$MSGS"; }
# state: the messages other than watchdog pings, one per line
state() { texts | grep -v '^WATCHDOG=1$' || true; }
wait_for 5 eval 'state | qgrep "^STATUS="'

# Two reloads that work and one that does not: each is RELOADING=1 ... READY=1.
reloads=0
reload_done() { [ "$(state | grep -c '^READY=1')" -ge $((reloads + 1)) ]; }
kill -HUP "$DAEMON_PID"
reloads=1
wait_for 5 reload_done
expect_exit 0 ctl reload
reloads=2
wait_for 5 reload_done
printf '[metrics]\naddress = nowhere\n' >"$DAEMON_CONF"
expect_exit 1 ctl reload
reloads=3
wait_for 5 reload_done

# Pings while idle: WatchdogSec= would restart a daemon that misses one period.
sleep 2
daemon_stop
wait_for 5 eval 'state | qgrep "^STOPPING=1"'
kill "$listener"


# Every message, pings included, comes from the daemon's main process (NotifyAccess=main).
pids=$(awk '{ print $2 }' "$MSGS" | sort -u | tr '\n' ' ')
assert_eq "$pids" "$dpid " "PIDs that sent notifications"

# The order of the state messages, with STATUS= lines folded into one word.
seq=$(state | sed -E 's/^STATUS=[0-9]+ active scans, [0-9]+ confirmed, [0-9]+ entries prefetched.*/STATUS/;
	s/^RELOADING=1\|MONOTONIC_USEC=[0-9]+$/RELOADING/; s/^READY=1$/READY/; s/^STOPPING=1$/STOPPING/' |
	uniq | tr '\n' ' ')
info "sequence: $seq"
assert_eq "$seq" "READY STATUS RELOADING READY STATUS RELOADING READY STATUS RELOADING READY STATUS STOPPING " \
	"sd_notify sequence"

# MONOTONIC_USEC is CLOCK_MONOTONIC when the reload began: not after the listener got it, and
# not long before.
while read -r got _ text; do
	mono=${text##*MONOTONIC_USEC=}
	assert_le "$mono" "$got" "MONOTONIC_USEC after receipt"
	assert_le $((got - mono)) 2000000 "MONOTONIC_USEC more than 2 s before receipt"
done < <(grep ' RELOADING=1|MONOTONIC_USEC=' "$MSGS")

# Watchdog: pings from start to stop, never a gap of a whole WATCHDOG_USEC (sd-event pings at
# about half of it; allow the loaded-machine slack up to the full period).
pings=$(grep -c ' WATCHDOG=1$' "$MSGS" || true)
first=$(awk 'NR == 1 { print $1 }' "$MSGS")
last=$(awk '{ t = $1 } END { print t }' "$MSGS")
span=$((last - first))
info "$pings watchdog pings in $((span / 1000)) ms"
assert_ge "$pings" $((span / WD_USEC)) "watchdog pings (one per WATCHDOG_USEC at least)"
assert_ge "$pings" 3 "watchdog pings"
gap=$(awk '/ WATCHDOG=1$/ { if (p && $1 - p > g) g = $1 - p; p = $1 } END { print g + 0 }' "$MSGS")
info "longest gap between pings: $((gap / 1000)) ms"
assert_le "$gap" "$WD_USEC" "longest gap between watchdog pings (us)"
