#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Attack: a local user holds metrics connections forever by sending its request a byte every
# half second (slowloris): an idle timeout never fires, since the connection is never idle.
# What holds: a connection lives 10 seconds at most, however busy; these are cut (counted as
# closed_too_slow), well within 30 s, and root is answered meanwhile.
# The daemon runs in a network namespace of its own (its port meets nothing of the host's).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/../lib/metrics.sh"
need_root
need_cmd curl /usr/bin/python3 unshare nsenter ip setpriv

PORT=9567 U=60126 N=4 LIMIT=30
printf '[metrics]\naddress = 127.0.0.1:%s\n' $PORT >"$DAEMON_CONF"
metrics_daemon_netns

cat >"$T/slow.py" <<'EOF'
# slow.py PORT N LIMIT: N connections from 127.0.0.2.., each sending a request a byte every
# 0.5 s (a header that never ends); prints "ready", then how many the server closed within
# LIMIT seconds and when the last one went.
import socket, sys, time
port, n, limit = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
socks = []
for i in range(n):
    s = socket.socket()
    s.bind(("127.0.0.%d" % (2 + i), 0))
    s.connect(("127.0.0.1", port))
    s.setblocking(False)
    s.send(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    socks.append(s)
print("ready", flush=True)
t0, last, live = time.time(), 0.0, set(range(n))
while live and time.time() - t0 < limit:
    time.sleep(0.5)
    for i in list(live):
        try:
            if socks[i].recv(4096) == b"":
                raise ConnectionResetError
        except BlockingIOError:  # nothing to read: still open, send the next byte
            try:
                socks[i].send(b"a")
                continue
            except OSError:
                pass
        except OSError:
            pass
        live.discard(i)
        last = time.time() - t0
print(n - len(live), "%.1f" % last, flush=True)
EOF
chmod 0755 "$T"
"${NS[@]}" setpriv --reuid=$U --regid=$U --clear-groups -- /usr/bin/python3 "$T/slow.py" $PORT $N $LIMIT \
	>"$T/slow.out" &
slow=$!
on_exit "kill $slow"
wait_for 10 grep -q ready "$T/slow.out"
c=$("${NS[@]}" curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$PORT/metrics" || true)
assert_eq "$c" 200 "root's scrape while the slow connections are open"
wait $slow
read -r closed last < <(tail -n1 "$T/slow.out")
info "closed by the daemon: $closed of $N, the last after ${last} s"
assert_eq "$closed" $N "slow connections cut within ${LIMIT} s"
assert_ge "$(metric 'dirahead_metrics_requests_total{result="closed_too_slow"}')" $N "closed_too_slow"
daemon_stop
echo PASS
