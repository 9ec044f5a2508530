#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# The daemon in a PID and mount namespace of its own (a container, a DaemonSet without hostPID),
# with the host's procfs mounted into it and named by [daemon] proc=:
#   A. a host process's `ls -l` on slowfs is helped (its own lookups at most 20% of off): BPF
#      reports host PIDs and the daemon finds them in the host's procfs;
#   B. the daemon excludes itself by the PID the host gives it, not getpid() (1 in there): with
#      the thread engine its own prefetch (a listing, then statx() of every entry) is exactly a
#      scan, and none is ever tracked or started for its PID;
#   C. with its own namespace's /proc instead it says that scans of outside processes cannot be
#      opened; a proc= that is no procfs is an error at start.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd unshare pgrep

N=1000
make_files "$T/back/a" $N
make_files "$T/back/b" $N
slowfs_mount "$T/back" "$T/mnt" --latency-us 1000
mkdir -p "$T/hostproc"
mount -t proc proc "$T/hostproc"
on_exit "umount -l '$T/hostproc'"

# ns_start: diraheadd as PID 1 of a new PID namespace with its own /proc; sets UPID (unshare,
# which ends with the daemon) and DPID (the daemon, as the host numbers it).
ns_start() {
	unshare --pid --mount --fork --mount-proc --kill-child \
		"$BUILD/diraheadd" --config "$DAEMON_CONF" --socket "$DAEMON_SOCK" -v >"$DAEMON_LOG" 2>&1 &
	UPID=$!
	on_exit "kill -KILL $UPID"
	local i
	for ((i = 0; i < 500; i++)); do
		ctl status >/dev/null 2>&1 && break
		kill -0 "$UPID" 2>/dev/null || { cat "$DAEMON_LOG"; fail "diraheadd exited at start"; }
		sleep 0.02
	done
	ctl status >/dev/null 2>&1 || { cat "$DAEMON_LOG"; fail "diraheadd not ready within 10 s"; }
	DPID=$(pgrep -P "$UPID" -x diraheadd)
	[ -n "$DPID" ] || fail "no diraheadd under unshare $UPID"
}
ns_stop() {
	local rc=0
	kill -TERM "$DPID"
	wait "$UPID" || rc=$?
	assert_eq "$rc" 0 "diraheadd exit status after SIGTERM"
	! grep -qE 'Sanitizer|runtime error' "$DAEMON_LOG" || fail "sanitizer report: $(cat "$DAEMON_LOG")"
}

info "A, B: proc = the host's procfs, thread engine"
printf '[metrics]\naddress =\n[daemon]\nproc = %s\nlog_level = debug\n[prefetch]\nengine = threads\n' \
	"$T/hostproc" >"$DAEMON_CONF"
ns_start
assert_contains "$(cat "$DAEMON_LOG")" "in a PID namespace of its own: PID $DPID in $T/hostproc" \
	"the daemon's host PID"
drop_caches
slowfs_ctl reset >/dev/null
ls -l "$T/mnt/a" >/dev/null &
app=$!
wait $app
own=$(slowfs_stat "pid.$app.lookup")
info "ls -l of $N files: $own lookups by ls itself, $(daemon_stat entries_prefetched) prefetched"
assert_ge "$(daemon_stat scans_started)" 1 "scans started"
assert_le "$own" $((N / 5)) "lookups sent by ls itself"
assert_eq "$(daemon_stat skips.open_failed)" 0 "scans that could not be opened"
# the daemon's own listing and statx() calls: never a scan of its own
if grep -qE "by pid $DPID\b|pid $DPID \(" "$DAEMON_LOG"; then
	fail "the daemon's own PID in its log: $(grep -E "pid $DPID\b" "$DAEMON_LOG" | head -3)"
fi
assert_eq "$(ctl scans | awk -v p="$DPID" '$1 == p' | wc -l)" 0 "scans listed for the daemon"
ns_stop

info "C: its own /proc"
printf '[metrics]\naddress =\n' >"$DAEMON_CONF"
ns_start
assert_contains "$(cat "$DAEMON_LOG")" "/proc is not the procfs of the initial PID namespace" \
	"warning about its own /proc"
ns_stop
printf '[metrics]\naddress =\n[daemon]\nproc = %s\n' "$T" >"$DAEMON_CONF"
expect_exit 1 "$BUILD/diraheadd" --config "$DAEMON_CONF" --socket "$DAEMON_SOCK"
assert_contains "$OUT" "[daemon] proc: $T: not a proc filesystem"
echo "PASS"
