# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Helpers for tests that run diraheadd; source after lib.sh.
#   daemon_start [diraheadd options...]   start it on a private socket, wait until attached;
#                                         with -v (debug level) unless DAEMON_VERBOSE=no
#   daemon_stop                           SIGTERM, wait (fails the test if it takes > 2 s, exits
#                                         non-zero or reports a sanitizer error)
#   ctl CMD [args...]                     diraheadctl against that daemon
#   daemon_stat KEY                       one value from `diraheadctl stats` (e.g. hits,
#                                         scans_ended.completed, skips.busy)
DAEMON_SOCK=$T/diraheadd.sock
DAEMON_CONF=${DAEMON_CONF:-$T/dirahead.conf}
DAEMON_LOG=$T/diraheadd.log
DAEMON_PID=

ctl() { "$BUILD/diraheadctl" "$1" --socket "$DAEMON_SOCK" "${@:2}"; }

daemon_start() {
	[ -f "$DAEMON_CONF" ] || printf '[metrics]\naddress =\n' >"$DAEMON_CONF"
	local v=-v
	[ "${DAEMON_VERBOSE:-yes}" != no ] || v=
	"$BUILD/diraheadd" --config "$DAEMON_CONF" --socket "$DAEMON_SOCK" ${v:+"$v"} "$@" >"$DAEMON_LOG" 2>&1 &
	DAEMON_PID=$!
	on_exit "daemon_kill"
	# up to 60 s: loading and verifying the BPF programs takes long on a loaded machine
	local end=$((SECONDS + 60))
	while ((SECONDS < end)); do
		ctl status >/dev/null 2>&1 && return 0
		kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$DAEMON_LOG"; fail "diraheadd exited at start"; }
		sleep 0.02
	done
	cat "$DAEMON_LOG"
	fail "diraheadd did not become ready within 60 s"
}

daemon_kill() {
	local i	# not the caller's: _run_cleanups counts with its own i
	[ -n "$DAEMON_PID" ] || return 0
	kill -TERM "$DAEMON_PID" 2>/dev/null
	for ((i = 0; i < 100; i++)); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.05; done
	kill -KILL "$DAEMON_PID" 2>/dev/null
	wait "$DAEMON_PID" 2>/dev/null
	DAEMON_PID=
	# when the test failed (run-tests.sh shows its tail; the cleanups' own output is
	# discarded) or with KEEP_LOGS=1
	if [ -n "${KEEP_LOGS:-}" ] || [ "${TEST_RC:-0}" != 0 ]; then daemon_keep_log; fi
}

# The whole log beside the test's (build/test-logs/NAME.diraheadd.log).
daemon_keep_log() {
	mkdir -p "$BUILD/test-logs"
	cp "$DAEMON_LOG" "$BUILD/test-logs/$TEST_NAME.diraheadd.log"
}

daemon_stop() {
	local t0 rc=0
	t0=$(now_ms)
	kill -TERM "$DAEMON_PID"
	wait "$DAEMON_PID" || rc=$?
	DAEMON_PID=
	[ -z "${KEEP_LOGS:-}" ] || daemon_keep_log
	assert_eq "$rc" 0 "diraheadd exit status after SIGTERM"
	assert_le $(($(now_ms) - t0)) 2000 "diraheadd stop time (ms)"
	# SANITIZE=1 builds report leaks and errors at exit, into the log
	if grep -qE 'Sanitizer|runtime error' "$DAEMON_LOG"; then
		grep -A20 -E 'Sanitizer|runtime error' "$DAEMON_LOG" | head -60 >&2
		fail "diraheadd reported a sanitizer error"
	fi
}

# daemon_cpu_ticks: the daemon's CPU time (user + system), in clock ticks (getconf CLK_TCK)
daemon_cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$DAEMON_PID/stat"; }

daemon_stat() {
	ctl stats | awk -v k="$1" '$1 == k { print $2; found = 1 } END { if (!found) print 0 }'
}
