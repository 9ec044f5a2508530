#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# [budget] holds the daemon's prefetch requests to a filesystem to its rate, and leaves others
# alone.  Two slowfs mounts (1 ms a request); `ls -l` of 2,000 entries on each (alone, about
# 1,000 lookups a second):
#   A, under `rule = path:A 200`: the lookups the daemon sends there stay within what the budget
#     allows over the run (200 a second for the time the scan took, plus the burst, plus slack
#     for the directory's own open), and so does the daemon's budget_granted; what it held back
#     is counted (budget_held_back > 0), and the program's own lookups plus the daemon's cover
#     the directory (nothing held back was sent late: no entry is looked up twice).
#   B, under no rule: prefetched as without a budget (ls sends at most a fifth of its lookups).
#   After a reload (SIGHUP) with `rule = fstype:fuse.slowfs 100` both are held: a new scan on B
#     stays within 100 a second and is held back too.
# Counters only: the bounds come from the time each run took, so a slow machine loosens them.
# (The cost model is off: the budget is under test, not whether prefetch pays; comm and path
# filters keep other processes out of the counters.)
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd python3

N=2000
make_files "$T/back-a/d" $N
make_files "$T/back-b/d1" $N
make_files "$T/back-b/d2" $N
slowfs_mount "$T/back-a" "$T/a" --latency-us 1000
CTL_A=$SLOWFS_CTL
slowfs_mount "$T/back-b" "$T/b" --latency-us 1000
CTL_B=$SLOWFS_CTL
ln -s "$(realpath "$(command -v ls)")" "$T/dra-ls"

conf() { # RULE...: the daemon's config with these [budget] rules
	{
		printf '[metrics]\naddress =\n[filter]\ncomm_include = dra-*\npath_include = %s %s\n' "$T/a" "$T/b"
		printf '[detect]\narm = always\n[policy]\nenabled = no\n[prefetch]\nidle_timeout_ms = 60000\n'
		printf '[budget]\n'
		local r
		for r; do printf 'rule = %s\n' "$r"; done
	} >"$DAEMON_CONF.tmp"
	mv "$DAEMON_CONF.tmp" "$DAEMON_CONF"
}
stat_of() { SLOWFS_CTL=$1 slowfs_stat "$2"; }

# run_ls CTL DIR: `dra-ls -l DIR`; sets OWN (its own lookups), DAEMON (everybody else's: the
# daemon's), MS (how long it took)
run_ls() {
	local ctl=$1 dir=$2 t0 pid
	SLOWFS_CTL=$ctl slowfs_ctl reset >/dev/null
	t0=$(now_ms)
	"$T/dra-ls" -l "$dir" >/dev/null &
	pid=$!
	wait $pid
	MS=$(($(now_ms) - t0))
	# the scan's last requests may still be in flight: wait for the daemon to have none
	wait_for 10 no_scans
	OWN=$(stat_of "$ctl" "pid.$pid.lookup")
	DAEMON=$(($(stat_of "$ctl" total.lookup) - OWN))
	info "ls -l $dir: ${MS} ms, $OWN lookups of its own, $DAEMON by the daemon"
}
no_scans() { [ "$(daemon_stat active_scans)" = 0 ]; }
# what RATE a second with BURST allows over MS milliseconds, with slack for the directory's
# open and rounding
allowed() { echo $(($1 * (MS + 1000) / 1000 + $2 + 16)); }

conf "path:$T/a 200"
daemon_start

info "A: under a rule of 200 requests a second"
run_ls "$CTL_A" "$T/a/d"
granted=$(daemon_stat budget_granted)
held=$(daemon_stat budget_held_back)
info "budget_granted=$granted budget_held_back=$held"
assert_ge "$(daemon_stat scans_started)" 1 "scans started on A"
assert_ge "$DAEMON" 1 "lookups the daemon sent to A"
assert_le "$DAEMON" "$(allowed 200 200)" "lookups the daemon sent to A within 200/s"
assert_le "$granted" "$(allowed 200 200)" "requests the budget granted on A"
assert_ge "$held" 1 "requests held back on A"
assert_ge $((OWN + DAEMON)) $N "lookups of A's entries, the program's and the daemon's"
assert_le $((OWN + DAEMON)) $((N + 16)) "entries looked up twice on A (held back, then sent)"

info "B: under no rule"
run_ls "$CTL_B" "$T/b/d1"
assert_le "$OWN" $((N / 5)) "B: lookups ls sent itself (prefetched as without a budget)"
assert_eq "$(daemon_stat budget_granted)" "$granted" "budget_granted after the scan on B"

info "reload: a rule by filesystem type holds B too"
conf "fstype:fuse.slowfs 100"
kill -HUP "$DAEMON_PID"
reloaded() { [ "$(daemon_stat reloads_ok)" = 1 ]; }
wait_for 10 reloaded
run_ls "$CTL_B" "$T/b/d2"
assert_le "$DAEMON" "$(allowed 100 100)" "lookups the daemon sent to B within 100/s after the reload"
assert_ge "$(daemon_stat budget_held_back)" $((held + 1)) "requests held back on B after the reload"
assert_ge "$(daemon_stat budget_granted)" $((granted + 1)) "requests granted on B after the reload"

# the metrics carry both counters
out=$(ctl metrics)
assert_contains "$out" "dirahead_budget_held_back_total" "metrics"
assert_contains "$out" "dirahead_budget_granted_total" "metrics"
daemon_stop
echo PASS
