# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Shared by the metrics endpoint's tests: a daemon in a network namespace of its own (its port
# meets nothing of the host's), reading one metric, and an idle-connection
# flood by a user with root's scrapes during it.  Source after lib.sh and daemon.sh.

# metrics_daemon_netns: starts diraheadd with $DAEMON_CONF in a new network namespace (loopback
# up); sets DAEMON_PID and NS (the command prefix that enters that namespace).
metrics_daemon_netns() {
	unshare -n sh -c 'ip link set lo up && exec "$0" --config "$1" --socket "$2" -v' \
		"$BUILD/diraheadd" "$DAEMON_CONF" "$DAEMON_SOCK" >"$DAEMON_LOG" 2>&1 &
	DAEMON_PID=$!
	on_exit daemon_kill
	wait_for 10 ctl status
	NS=(nsenter -t "$DAEMON_PID" -n)
}

# metric NAME: the value of the sample NAME (with its labels) on the metrics page
metric() { ctl metrics | awk -v k="$1" '$1 == k { print $2 }'; }

# flood_scrapes UID TARGET CURL_ARGS...: user UID holds 40 idle connections to TARGET
# ("tcp:PORT" from 127.0.0.2..41, or "unix:PATH"), reopening any the daemon closes, while root
# scrapes 10 times with curl CURL_ARGS; asserts all 10 answered and at least 36 of the user's
# connections refused (refused_peer_limit), and logs the daemon's CPU during the flood.
# ${NS[@]} (may be empty) runs both sides in the daemon's network namespace.
flood_scrapes() {
	local u=$1 target=$2 flood ok=0 cpu0 t0 c i refused ms ticks
	shift 2
	# a copy the user can read, wherever the tree is
	cp "$TOP/tests/lib/flood.py" "$T/flood.py"
	chmod 0755 "$T"
	chmod 0644 "$T/flood.py"
	"${NS[@]}" setpriv --reuid="$u" --regid="$u" --clear-groups -- /usr/bin/python3 \
		"$T/flood.py" "$target" 40 >"$T/flood.out" &
	flood=$!
	on_exit "kill $flood"
	wait_for 10 grep -q ready "$T/flood.out"
	cpu0=$(daemon_cpu_ticks) t0=$(now_ms)
	for i in $(seq 10); do
		c=$("${NS[@]}" curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@" || true)
		info "root's scrape $i during the flood: $c"
		[ "$c" = 200 ] && ok=$((ok + 1))
		sleep 0.5
	done
	kill -0 $flood 2>/dev/null || fail "the flood ended before root's scrapes did"
	refused=$(metric 'dirahead_metrics_requests_total{result="refused_peer_limit"}')
	ms=$(($(now_ms) - t0)) ticks=$(($(daemon_cpu_ticks) - cpu0))
	info "refused_peer_limit $refused; daemon CPU $((ticks * 1000 / $(getconf CLK_TCK))) ms in $ms ms of flood"
	assert_eq "$ok" 10 "root's scrapes answered during the flood"
	assert_ge "${refused:-0}" 36 "the user's connections refused past its 4"
	kill $flood
}
