#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Attack: a local user floods the metrics endpoint's unix socket ([metrics] address = unix:PATH,
# mode 0666) with idle connections, opening a new one whenever one is closed, to shut root's
# scrape out.  There was a total only (16), which one user filled.  What holds: connections are
# counted per uid (SO_PEERCRED), the user has 4; root's scrapes during the flood are all
# answered, and the refusals are counted (refused_peer_limit).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd curl /usr/bin/python3 setpriv

U=60124
chmod 0755 "$T"
S=$T/run/metrics.sock
printf '[metrics]\naddress = unix:%s\n' "$S" >"$DAEMON_CONF"
daemon_start
[ -S "$S" ] || fail "no metrics socket at $S"
metric() { ctl metrics | awk -v k="$1" '$1 == k { print $2 }'; }
cpu() { awk '{ print $14 + $15 }' "/proc/$DAEMON_PID/stat"; } # the daemon's CPU time, in ticks

cat >"$T/flood.py" <<'EOF'
# flood.py PATH N: N connections to the unix socket PATH, never a byte sent; one the server
# closes is opened again at once, until killed.  Prints "ready" once N have been tried.
import select, socket, sys
dest, n = sys.argv[1], int(sys.argv[2])
def new(i):
    return socket.socket(socket.AF_UNIX)
socks = {}
def open_one(i):
    s = new(i)
    s.settimeout(0.2)  # a server that accepts nothing more: try again later
    try:
        s.connect(dest)
        socks[i] = s
    except OSError:
        s.close()
        socks.pop(i, None)
for i in range(n):
    open_one(i)
print("ready", flush=True)
while True:
    r, _, _ = select.select(list(socks.values()), [], [], 0.1)
    for s in r:  # readable: closed (the server never answers a request not sent)
        i = next(k for k, v in socks.items() if v is s)
        s.close()
        open_one(i)
    for i in range(n):
        if i not in socks:
            open_one(i)
EOF
setpriv --reuid=$U --regid=$U --clear-groups -- /usr/bin/python3 "$T/flood.py" "$S" 40 >"$T/flood.out" &
flood=$!
on_exit "kill $flood"
wait_for 10 grep -q ready "$T/flood.out"
cpu0=$(cpu) t0=$(now_ms)
ok=0
for i in $(seq 10); do
	c=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --unix-socket "$S" http://localhost/metrics || true)
	info "root's scrape $i during the flood: $c"
	[ "$c" = 200 ] && ok=$((ok + 1))
	sleep 0.5
done
kill -0 $flood 2>/dev/null || fail "the flood ended before root's scrapes did"
refused=$(metric 'dirahead_metrics_requests_total{result="refused_peer_limit"}')
ms=$(($(now_ms) - t0)) ticks=$(($(cpu) - cpu0))
info "refused_peer_limit $refused; daemon CPU $((ticks * 1000 / $(getconf CLK_TCK))) ms in $ms ms of flood"
assert_eq "$ok" 10 "root's scrapes answered during the flood"
assert_ge "${refused:-0}" 36 "the user's connections refused past its 4"
kill $flood
daemon_stop
echo PASS
