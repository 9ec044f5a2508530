#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Who the metrics endpoint answers, and how it moves (dirahead.conf(5) [metrics]):
# - Host header: 127.0.0.1:PORT, localhost:PORT and [::1]:PORT are answered (200); a foreign
#   name (also as a browser sends it after DNS rebinding: curl --resolve), another port, or no
#   port are refused with 403 and counted as bad_host; [metrics] allowed_hosts admits a name;
# - connections: 4 idle ones of one uid take its share, a 5th of it from another address is
#   closed at once (refused_peer_limit) while the 4 are still answered, another uid's is not;
#   7 uids x 4 fill the total but root's reserve: an 8th uid's is closed (refused_total_limit),
#   root's is answered;
# - the text is rendered once a second: two scrapes within it are byte for byte the same (with
#   dirahead_metrics_requests_total as it was at the first), a scrape after it is new;
# - unix:PATH: a reload moves the endpoint to a unix socket (mode 0666, any Host), the TCP port
#   closes; moving back removes the socket file; a reload to an address in use is refused (exit
#   1, the old endpoint serves on), one to an overlapping address on the same port
#   (127.0.0.1:P -> 0.0.0.0:P) is applied.
# The daemon runs in a network namespace of its own (its ports meet nothing of the host's).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/../lib/metrics.sh"
need_root
need_cmd curl python3 unshare nsenter ip

PORT=9567
conf() { printf '[metrics]\n%s\n' "$@" >"$DAEMON_CONF"; }
conf "address = 127.0.0.1:$PORT"
metrics_daemon_netns
# code [CURL ARGS...] URL-PATH: the HTTP status of a request to 127.0.0.1:PORT in the namespace
code() { local p=${!#}; "${NS[@]}" curl -s -o /dev/null -w '%{http_code}' --max-time 5 "${@:1:$#-1}" "http://127.0.0.1:$PORT$p" || true; }
# metric SERIES [FILE]: a value from a scrape (a new one unless FILE is given)
metric() {
	if [ $# -gt 1 ]; then awk -v k="$1" '$1 == k { print $2 }' "$2"
	else ctl metrics | awk -v k="$1" '$1 == k { print $2 }'; fi
}
bad_host() { metric 'dirahead_metrics_requests_total{result="bad_host"}'; }

# ---- Host
assert_eq "$(code /metrics)" 200 "Host 127.0.0.1:$PORT (curl's own)"
assert_eq "$(code -H "Host: localhost:$PORT" /metrics)" 200 "Host localhost:$PORT"
assert_eq "$(code -H "Host: LOCALHOST:$PORT" /metrics)" 200 "Host LOCALHOST:$PORT"
assert_eq "$(code -H "Host: [::1]:$PORT" /metrics)" 200 "Host [::1]:$PORT"
assert_eq "$(bad_host)" 0 "bad_host before"
assert_eq "$(code -H "Host: evil.example:$PORT" /metrics)" 403 "Host evil.example:$PORT"
assert_eq "$(code -H "Host: evil.example:$PORT" /)" 403 "Host evil.example:$PORT, /"
assert_eq "$(code -H "Host: evil.example:$PORT" /nothing)" 403 "Host evil.example:$PORT, /nothing"
assert_eq "$(code -H "Host: 127.0.0.1:$((PORT + 1))" /metrics)" 403 "Host with another port"
assert_eq "$(code -H 'Host: localhost' /metrics)" 403 "Host without the port (80)"
assert_eq "$(code -H "Host: localhost.:$PORT" /metrics)" 403 "Host localhost. (a DNS name)"
assert_eq "$(code -H "Host: 127.1:$PORT" /metrics)" 403 "Host 127.1"
# a browser on a page of evil.example, its name now resolving to 127.0.0.1
out=$("${NS[@]}" curl -s --max-time 5 -w ' %{http_code}' --resolve "evil.example:$PORT:127.0.0.1" \
	"http://evil.example:$PORT/metrics")
assert_eq "${out##* }" 403 "DNS rebinding: evil.example resolving to 127.0.0.1"
assert_contains "$out" "Host not allowed" "403 body"
[[ $out != *dirahead_build_info* ]] || fail "metrics in the refused answer"
assert_eq "$(bad_host)" 8 "requests counted as bad_host"
# allowed_hosts (a reload: no new listener needed)
conf "address = 127.0.0.1:$PORT" "allowed_hosts = evil.example"
expect_exit 0 ctl reload
assert_eq "$(code -H "Host: evil.example:$PORT" /metrics)" 200 "Host named by allowed_hosts"
assert_eq "$(code -H "Host: other.example:$PORT" /metrics)" 403 "Host not named by allowed_hosts"
conf "address = 127.0.0.1:$PORT"
expect_exit 0 ctl reload
assert_eq "$(code -H "Host: evil.example:$PORT" /metrics)" 403 "Host after allowed_hosts is emptied"

# ---- connection limits: idle connections of chosen uids from chosen source addresses
cat >"$T/conns.py" <<'EOF'
# conns.py PORT UID:N:SRC... +UID:SRC... : hold N idle connections made by UID (its own socket,
# so that the daemon finds that owner) from SRC, for each spec; then try one more for each
# +UID:SRC (prints "refused" if it is closed unanswered, else its status line), then send a
# request on every idle one (prints how many were answered 200).
import os, socket, sys, time
port = int(sys.argv[1])
def req(s):
    s.settimeout(5)
    data = b""
    try:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n" % port)
        while True:
            x = s.recv(65536)
            if not x:
                break
            data += x
    except OSError:  # reset, broken pipe, timeout: not answered
        pass
    return data.split(b"\r\n", 1)[0].decode() or "refused"
def made_by(uid, n, src):
    """n sockets connected from src, made by a child running as uid, passed back here"""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    if os.fork() == 0:
        os.setgroups([]); os.setresgid(uid, uid, uid); os.setresuid(uid, uid, uid)
        for _ in range(n):
            s = socket.socket(); s.bind((src, 0)); s.connect(("127.0.0.1", port))
            socket.send_fds(b, [b"x"], [s.fileno()])
        os._exit(0)
    socks = [socket.socket(fileno=socket.recv_fds(a, 1, 1)[1][0]) for _ in range(n)]
    os.wait()
    return socks
held, extra = [], []
for a in sys.argv[2:]:
    if a.startswith("+"):
        extra.append(a[1:].split(":"))
        continue
    uid, n, src = a.split(":")
    held += made_by(int(uid), int(n), src)
time.sleep(0.3)  # the daemon has accepted them all
for uid, src in extra:
    print(req(made_by(int(uid), 1, src)[0]))
print(sum(req(s).endswith(" 200 OK") for s in held))
EOF
refused() { metric "dirahead_metrics_requests_total{result=\"refused_$1_limit\"}"; }
# one uid: 4 from one address take its share; a 5th from another loopback address is refused
out=$("${NS[@]}" python3 "$T/conns.py" $PORT 0:4:127.0.0.1 +0:127.0.0.9 +60001:127.0.0.1)
info "per uid: $(tr '\n' ' ' <<<"$out")"
assert_eq "$(sed -n 1p <<<"$out")" refused "a 5th connection of root, from another address"
assert_contains "$(sed -n 2p <<<"$out")" " 200 OK" "another uid's from the same address"
assert_eq "$(sed -n 3p <<<"$out")" 4 "root's 4 idle connections answered"
assert_eq "$(refused peer)" 1 "refused_peer_limit"
# 7 uids x 4 fill the total but root's reserve: an 8th uid is refused, root is not
specs=()
for i in 1 2 3 4 5 6 7; do specs+=("$((60000 + i)):4:127.0.0.$((i + 1))"); done
out=$("${NS[@]}" python3 "$T/conns.py" $PORT "${specs[@]}" +60008:127.0.0.20 +0:127.0.0.1)
info "in total: $(tr '\n' ' ' <<<"$out")"
assert_eq "$(sed -n 1p <<<"$out")" refused "a 29th connection, of an 8th uid"
assert_contains "$(sed -n 2p <<<"$out")" " 200 OK" "root's, in its reserve"
assert_eq "$(sed -n 3p <<<"$out")" 28 "the 28 idle connections answered"
assert_eq "$(refused total)" 1 "refused_total_limit"
assert_eq "$(code /metrics)" 200 "a new connection once they are closed"

# ---- the text is reused for a second
ok() { metric 'dirahead_metrics_requests_total{result="ok"}' "$1"; }
scrape() { "${NS[@]}" curl -sf --max-time 5 "http://127.0.0.1:$PORT/metrics" >"$1" || fail "scrape failed"; }
# the last request above may have rendered the text up to a second ago: wait
# that out, so that a renders anew and b, within a second of it, must reuse it
for try in 1 2 3 4 5; do
	sleep 1.1
	t0=$(now_ms)
	scrape "$T/a"
	scrape "$T/b"
	[ $(($(now_ms) - t0)) -lt 800 ] && break
	info "two scrapes took $(($(now_ms) - t0)) ms: again"
done
cmp -s "$T/a" "$T/b" || fail "two scrapes within a second differ: $(diff "$T/a" "$T/b" | head)"
sleep 1.2
scrape "$T/c"
info "ok requests: $(ok "$T/a"), $(ok "$T/b"), after 1.2 s $(ok "$T/c")"
assert_ge "$(ok "$T/c")" $(($(ok "$T/a") + 2)) "a scrape after a second renders anew (counts both earlier ones)"

# ---- unix socket
U=$T/run/metrics.sock
conf "address = unix:$U"
expect_exit 0 ctl reload
[ -S "$U" ] || fail "no socket at $U after the reload"
assert_eq "$(stat -c %a "$U")" 666 "mode of the metrics socket"
out=$(curl -s --max-time 5 --unix-socket "$U" -H 'Host: anything.example' -w '\n%{http_code}' http://x/metrics)
assert_eq "${out##*$'\n'}" 200 "GET /metrics over the unix socket, any Host"
assert_contains "$out" "dirahead_build_info{" "metrics over the unix socket"
assert_eq "$(code /metrics)" 000 "TCP after moving to the unix socket"
grep -q "metrics: on unix:$U now" "$DAEMON_LOG" || fail "the move is not logged"
# back to TCP: the socket file goes
conf "address = 127.0.0.1:$PORT"
expect_exit 0 ctl reload
[ ! -e "$U" ] || fail "$U left behind"
assert_eq "$(code /metrics)" 200 "TCP again"

# ---- reloads that cannot or can move the listener
"${NS[@]}" python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 9568)); s.listen(); print("ok", flush=True); time.sleep(30)' >"$T/taken" &
holder=$!
on_exit "kill $holder"
wait_for 5 grep -q ok "$T/taken"
conf "address = 127.0.0.1:9568"
expect_exit 1 ctl reload
assert_contains "$OUT" "[metrics] address: cannot listen on 127.0.0.1:9568" "reload to a port in use"
assert_eq "$(code /metrics)" 200 "the old endpoint after the refused reload"
assert_eq "$(metric 'dirahead_config_reloads_total{result="failure"}')" 1 "failed reloads"
kill $holder
conf "address = 0.0.0.0:$PORT"
expect_exit 0 ctl reload
assert_eq "$(code /metrics)" 200 "127.0.0.1:$PORT -> 0.0.0.0:$PORT"
conf "address = [::1]:$PORT"
expect_exit 0 ctl reload
assert_eq "$("${NS[@]}" curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://[::1]:$PORT/metrics")" 200 "on [::1]:$PORT"
assert_eq "$(code /metrics)" 000 "127.0.0.1 after moving to [::1]"
conf "address ="
expect_exit 0 ctl reload
assert_eq "$("${NS[@]}" curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://[::1]:$PORT/metrics")" 000 "metrics turned off"
daemon_stop
echo PASS
