#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Zero cost while caches are warm ([detect] arm = on-block, the default): a warm local tree
# walk (find -ls, du) and a warm `ls -l` with the daemon running never attach the detector's
# syscall hooks: no arm, the sys_exit program never runs (kernel.bpf_stats_enabled run count),
# nothing confirmed or prefetched; the sentinel did run meanwhile (its run count moved), so the
# run counts were being kept.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root

bpf_run_counts

for i in $(seq 1 30); do make_files "$T/tree/d$i" 40; done
make_files "$T/big" 3000
for t in find du ls; do ln -s "$(realpath "$(command -v $t)")" "$T/dra-$t"; done
# only this test's programs may arm: other processes of a busy machine may block meanwhile
printf '[metrics]\naddress =\n[filter]\ncomm_include = dra-*\n[detect]\nquiet_s = 2\n' >"$DAEMON_CONF"
# warm: everything read once before the daemon starts
find "$T/tree" "$T/big" -ls >/dev/null
ls -l "$T/big" >/dev/null

daemon_start
assert_eq "$(ctl stats | awk '$1 == "arm_mode" { print $2 }')" on-block "arm mode by default"
assert_eq "$(daemon_stat armed)" 0 "armed at start"
s0=$(daemon_stat sentinel_runs)
for round in 1 2 3; do
	"$T/dra-find" "$T/tree" -ls >/dev/null
	"$T/dra-du" -s "$T/tree" >/dev/null
	"$T/dra-ls" -l "$T/big" >/dev/null
	(cd "$T/big" && "$T/dra-ls" -l >/dev/null)
done
ctl stats | grep -E '^(arm|sentinel|sys_exit|scans_confirmed|entries_prefetched)' || true
assert_eq "$(daemon_stat arms)" 0 "arms during warm walks"
assert_eq "$(daemon_stat armed)" 0 "armed after warm walks"
assert_eq "$(daemon_stat sys_exit_runs)" 0 "runs of the sys_exit program"
assert_eq "$(daemon_stat scans_confirmed)" 0 "scans confirmed"
assert_eq "$(daemon_stat entries_prefetched)" 0 "entries prefetched"
assert_ge "$(daemon_stat sentinel_runs)" $((s0 + 1)) "sentinel runs (bpf_stats counting)"
info "sentinel: $(($(daemon_stat sentinel_runs) - s0)) runs, $(daemon_stat sentinel_run_ns) ns in all"
daemon_stop
echo PASS
