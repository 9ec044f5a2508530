#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# [detect] arm = always is today's behaviour: the syscall hooks are attached from the start
# (armed, no arm counted), the sentinel is not attached, a warm `ls -l` runs the sys_exit
# program, and a cold slowfs `ls -l` and `find` are prefetched (their own lookups are logged
# next to arm-slowfs.sh's armed-from-cold ones: the stats a late start loses).  A reload
# switches the mode both ways: to on-block the hooks come off after quiet_s; back to always
# they are on at once.  A bad value is refused.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root

bpf_run_counts

N=2000 D=40 F=50
make_files "$T/back/big" $N
for i in $(seq 1 $D); do make_files "$T/back/tree/d$i" $F; done
make_files "$T/warm" 500
for t in find ls; do ln -s "$(realpath "$(command -v $t)")" "$T/dra-$t"; done
conf() { printf '[metrics]\naddress =\n[filter]\ncomm_include = dra-*\n[detect]\nquiet_s = 2\narm = %s\n' "$1" >"$DAEMON_CONF"; }
conf always
slowfs_mount "$T/back" "$T/mnt" --latency-us 200
mode() { ctl stats | awk '$1 == "arm_mode" { print $2 }'; }
armed_is() { [ "$(daemon_stat armed)" = "$1" ]; }
reloads_are() { [ "$(daemon_stat reloads_ok)" -ge "$1" ]; }

daemon_start
assert_eq "$(mode)" always "arm mode"
assert_eq "$(daemon_stat armed)" 1 "armed from the start"
s0=$(daemon_stat sentinel_runs)
x0=$(daemon_stat sys_exit_runs)
ls -l "$T/warm" >/dev/null
"$T/dra-ls" -l "$T/warm" >/dev/null
assert_ge "$(daemon_stat sys_exit_runs)" $((x0 + 500)) "sys_exit runs over a warm ls -l"
for t in ls find; do
	drop_caches
	slowfs_ctl reset >/dev/null
	p0=$(daemon_stat entries_prefetched)
	case $t in
	ls) "$T/dra-ls" -l "$T/mnt/big" >/dev/null & ;;
	find) "$T/dra-find" "$T/mnt/tree" -ls >/dev/null & ;;
	esac
	pid=$!
	wait $pid
	info "$t: $(slowfs_stat "pid.$pid.lookup") lookups with the hooks always attached"
	assert_ge $(($(daemon_stat entries_prefetched) - p0)) $((N / 2)) "$t: entries prefetched"
done
assert_eq "$(daemon_stat arms)" 0 "arms counted in always mode"
assert_eq "$(daemon_stat sentinel_runs)" "$s0" "sentinel runs (not attached)"

info "reload: on-block"
conf on-block
kill -HUP "$DAEMON_PID"
wait_for 5 reloads_are 1
assert_eq "$(mode)" on-block "arm mode after the reload"
wait_for 30 armed_is 0
info "reload: always"
conf always
kill -HUP "$DAEMON_PID"
wait_for 5 reloads_are 2
assert_eq "$(mode)" always "arm mode after the second reload"
assert_eq "$(daemon_stat armed)" 1 "armed at once in always mode"
daemon_stop

printf '[detect]\narm = sometimes\n' >"$T/bad.conf"
expect_exit 1 "$BUILD/diraheadd" --check-config --config "$T/bad.conf"
assert_contains "$OUT" "bad.conf:2: [detect] arm" "error names the key"
printf '[detect]\nquiet_s = 0\n' >"$T/bad.conf"
expect_exit 1 "$BUILD/diraheadd" --check-config --config "$T/bad.conf"
assert_contains "$OUT" "[detect] quiet_s" "error names the key"
echo PASS
