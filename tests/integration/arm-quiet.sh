#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Going quiet leaves no timer behind ([detect] arm = on-block): after a cold scan on slowfs, the
# moment the hooks are detached (nothing blocked for quiet_s, nothing running) the period's
# summary line is logged and the memory is saved, instead of waking the daemon later for them
# (log_summary_s = 600 and the memory's 30 s interval here, so neither could have come from its
# timer yet).  Then the idle daemon's main thread sleeps: over 3 s it wakes at most for the
# sentinel signals other processes on the machine cause (reported, not timed).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root

N=2000
make_files "$T/back/big" $N
ln -s "$(realpath "$(command -v ls)")" "$T/dra-ls"
unset STATE_DIRECTORY
SD=$T/sd
printf '[metrics]\naddress =\n[filter]\ncomm_include = dra-*\n[detect]\nquiet_s = 2\n' >"$DAEMON_CONF"
printf '[daemon]\nstate_dir = %s\nlog_summary_s = 600\n' "$SD" >>"$DAEMON_CONF"
slowfs_mount "$T/back" "$T/mnt" --latency-us 200
sdev=$(awk -v m="$T/mnt" '$5 == m { print $3 }' /proc/self/mountinfo)
disarmed() { [ "$(daemon_stat armed)" = 0 ]; }
armed_once() { [ "$(daemon_stat arms)" -ge 1 ]; }

daemon_start
wait_for 30 disarmed
drop_caches
"$T/dra-ls" -l "$T/mnt/big" >/dev/null
wait_for 30 armed_once
assert_ge "$(daemon_stat entries_prefetched)" $((N / 2)) "entries prefetched"
wait_for 60 disarmed
# the detach and the flush are one step of the daemon's loop: both are done once armed reads 0
[ -f "$SD/state.json" ] || fail "no state file when the daemon went quiet (it waited for its timer)"
grep -q "\"$sdev\"\|mount:fuse.slowfs" "$SD/state.json" || fail "slowfs not in the state file: $(cat "$SD/state.json")"
line=$(grep -E '^diraheadd: last [0-9]+ s: .*scans confirmed' "$DAEMON_LOG" | tail -1)
[ -n "$line" ] || fail "no summary line when the daemon went quiet"
info "at quiet: $line"
pid_sw() { awk '/^voluntary_ctxt_switches/ { print $2 }' "/proc/$DAEMON_PID/task/$DAEMON_PID/status"; }
s0=$(pid_sw) b0=$(daemon_stat sentinel_blocked)
sleep 3
s1=$(pid_sw)
info "idle 3 s: main thread woke $((s1 - s0)) times (the stats query included); sentinel saw $(($(daemon_stat sentinel_blocked) - b0)) blocked calls of other processes"
daemon_stop
echo PASS
