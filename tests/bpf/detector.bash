# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Helpers for the detector tests (tests/bpf/detector-*.sh); sourced after ../lib/lib.sh.  Not a
# test itself (run-tests.sh only runs *.sh).
#
# trace_start [ARGS...]   start build/tests/detector-trace in the background (stopped at exit),
#                         wait until it is attached; its output goes to $TRACE_OUT
# trace_stop              SIGINT it and wait: the COUNTERS and PROG lines are then in $TRACE_OUT
# mark / since_mark       remember the end of the trace output / print what came after
# flush                   make sure every event of the workloads run so far has been printed:
#                         run a scan of $T/sentinel and wait for its SCAN
# run PIDVAR CMD...       run CMD in the background, wait for it, put its pid in PIDVAR
# ino PATH / devno PATH   inode number / "major:minor" as the events print them
# field LINE KEY          the value of KEY=... in an event line (path= runs to the end of line)
# PY                      the real python3 executable (not a pyenv shim that scans on its own)

need_root
TRACE=$BUILD/tests/detector-trace
[ -x "$TRACE" ] || skip "$TRACE not built (make tests)"
[ -r /sys/kernel/btf/vmlinux ] || skip "kernel without BTF (/sys/kernel/btf/vmlinux)"
need_cmd python3 stat
PY=$(python3 -c 'import sys; print(sys.executable)')
TRACE_OUT=$T/trace.out
TRACE_ERR=$T/trace.err
TRACE_PID=
MARK=0

trace_start() {
	# emptied here, not by the redirection: that happens in the child, after the loop below may
	# already have read the previous trace's "attached" line (a busy machine did)
	: >"$TRACE_OUT"
	: >"$TRACE_ERR"
	"$TRACE" "$@" >>"$TRACE_OUT" 2>>"$TRACE_ERR" &
	TRACE_PID=$!
	on_exit "kill -INT $TRACE_PID 2>/dev/null; wait $TRACE_PID 2>/dev/null"
	# up to 90 s: loading verifies ~95,000 instructions, which takes long on a loaded machine
	local end=$((SECONDS + 90))
	while ((SECONDS < end)); do
		grep -q '^attached' "$TRACE_OUT" 2>/dev/null && break
		kill -0 "$TRACE_PID" 2>/dev/null || fail "detector-trace died: $(cat "$TRACE_ERR")"
		sleep 0.02
	done
	grep -q '^attached' "$TRACE_OUT" || fail "detector-trace did not attach: $(cat "$TRACE_ERR")"
	mkdir -p "$T/sentinel"
	[ -e "$T/sentinel/s000010" ] || make_files "$T/sentinel" 10 s
}

trace_stop() {
	kill -INT "$TRACE_PID" 2>/dev/null || true
	wait "$TRACE_PID" 2>/dev/null || fail "detector-trace exited with an error: $(cat "$TRACE_ERR")"
	grep -q '^COUNTERS' "$TRACE_OUT" || fail "detector-trace printed no counters"
}

mark() { MARK=$(wc -l <"$TRACE_OUT"); }
since_mark() { tail -n +$((MARK + 1)) "$TRACE_OUT"; }

run() {
	local _var=$1 _pid; shift
	"$@" >/dev/null 2>&1 &
	_pid=$!
	wait "$_pid" || fail "workload failed: $*"
	printf -v "$_var" '%s' "$_pid"
}

flush() {
	local p
	ls -l "$T/sentinel" >/dev/null &
	p=$!
	wait "$p"
	# its SCAN is enough: whatever finished before it started is already in the ring before it
	wait_for 10 grep -q "^SCAN tgid=$p " "$TRACE_OUT"
}

ino() { stat -c %i "$1"; }
devno() { echo "$(stat -c %Hd "$1"):$(stat -c %Ld "$1")"; }

field() {
	local line=$1 key=$2
	if [ "$key" = path ]; then
		echo "${line#* path=}"
	else
		sed -n "s/.* $key=\([^ ]*\).*/\1/p" <<<" $line"
	fi
}

# events TYPE INO [TGID]: event lines of that type for that directory (and process) since mark
events() {
	local pat="^$1 "
	[ -n "${3:-}" ] && pat="^$1 tgid=$3 "
	since_mark | grep -E "$pat" | grep " ino=$2 " || true
}

# nevents TYPE INO [TGID]
nevents() { events "$@" | grep -c . || true; }
