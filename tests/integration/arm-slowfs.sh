#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Arming on blocked calls ([detect] arm = on-block) over a cold slowfs (1 ms a request):
# a cold `ls -l` of 2,000 entries and a cold `find -ls` of 40x50 arm the detector from cold
# (the hooks are detached before each), are prefetched, and send fewer than 10% of the lookups
# they send without the daemon; once each is over and quiet_s passed with no blocked call, the
# hooks are detached again (disarmed), and the next cold scan arms them again.  What a late
# start costs is logged: the program's own lookups, armed from cold, for the report.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root

N=2000 D=40 F=50
make_files "$T/back/big" $N
for i in $(seq 1 $D); do make_files "$T/back/tree/d$i" $F; done
for t in find ls; do ln -s "$(realpath "$(command -v $t)")" "$T/dra-$t"; done
printf '[metrics]\naddress =\n[filter]\ncomm_include = dra-*\n[detect]\nquiet_s = 2\n' >"$DAEMON_CONF"
# 1 ms a lookup: beside three busy loops the program's stats wait for a CPU, fetched or not, and
# at 200 us ls's first stretch read 1.1x (277 us a stat against 241 us): no gain by the rule,
# 212 entries prefetched.  What is tested is arming (as in arm-verdict.sh).
slowfs_mount "$T/back" "$T/mnt" --latency-us 1000

run() { # TOOL: with cold caches; its own lookups into $T/own
	local pid
	drop_caches
	slowfs_ctl reset >/dev/null
	case $1 in
	ls) "$T/dra-ls" -l "$T/mnt/big" >/dev/null & ;;
	find) "$T/dra-find" "$T/mnt/tree" -ls >/dev/null & ;;
	esac
	pid=$!
	wait $pid || fail "$1 failed"
	slowfs_stat "pid.$pid.lookup" >"$T/own"
}
disarmed() { [ "$(daemon_stat armed)" = 0 ]; }

declare -A off
for t in ls find; do run $t; off[$t]=$(cat "$T/own"); done
daemon_start
assert_eq "$(daemon_stat armed)" 0 "armed at start"
n=0
for t in ls find; do
	wait_for 30 disarmed
	p0=$(daemon_stat entries_prefetched)
	run $t
	on=$(cat "$T/own")
	n=$((n + 1))
	info "$t: $on lookups armed from cold, ${off[$t]} without the daemon"
	assert_ge "$(daemon_stat arms)" $n "$t: arms (armed from cold by this scan)"
	assert_ge $(($(daemon_stat entries_prefetched) - p0)) $((N / 2)) "$t: entries prefetched"
	assert_ge "${off[$t]}" $N "$t: lookups without the daemon"
	assert_le $((on * 10)) "${off[$t]}" "$t: its own lookups with the daemon x10"
done
ctl stats | grep -E '^(arm|disarm|sentinel)' || true
wait_for 30 disarmed
assert_eq "$(daemon_stat arms)" 2 "arms: one per cold scan"
assert_eq "$(daemon_stat disarms)" 2 "disarms: one after each"
assert_ge "$(daemon_stat sentinel_signals.armed)" 2 "signals that armed"
grep -q 'disarmed: no blocked metadata call for 2 s' "$DAEMON_LOG" || fail "no disarm logged"
daemon_stop
echo PASS
