#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# What a prefetched entry costs the daemon (the start rule's yardstick: prefetch pays where a
# program's stat costs start_factor times it) is the CPU of prefetching, measured by every scan,
# not what the daemon spent while idle before:
# - `ls -l` of 2,000 entries on slowfs (200 us a request), done within the daemon's first tick
#   (250 ms): the figure is measured at its end (it was left unmeasured), the filesystem pays;
# - a restart (the filesystem remembered to pay), the daemon made busy while idle (control
#   requests: 0.4 s of CPU; loading its BPF programs at start-up takes ~0.1 s), then `ls -l` of
#   another 2,000, started at once: the figure stays within twice the daemon's CPU over that
#   scan per entry prefetched (+10 us).  Counted into a scan's first entries, the idle CPU made
#   a slow volume's entries cost 40 us against 10 us over the run, and its 30 us stats were
#   judged too cheap to prefetch.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root

N=2000
for d in a b; do make_files "$T/back/$d" $N; done
ln -s "$(realpath "$(command -v ls)")" "$T/dra-ls"
printf '[metrics]\naddress =\n[filter]\ncomm_include = dra-*\n[detect]\narm = always\n' >"$DAEMON_CONF"
slowfs_mount "$T/back" "$T/mnt" --latency-us 200
dev=$(awk -v m="$T/mnt" '$5 == m { print $3 }' /proc/self/mountinfo)

hz=$(getconf CLK_TCK)
cpu_us() { echo $(($(daemon_cpu_ticks) * 1000000 / hz)); }
# the scan is over: read to its end, or its program gone first (beside busy loops a control
# stretch held the window while ls went on to its end: ended process_exited)
ended() { [ $(($(daemon_stat scans_ended.completed) + $(daemon_stat scans_ended.process_exited))) -ge 1 ]; }

daemon_start
# the first scan: the filesystem pays
timed_ls "$T/mnt/a" >/dev/null
wait_for 20 ended
cost=$(daemon_stat "filesystems.$dev.entry_cost_us")
info "the first scan: entry_cost_us $cost"
assert_ge "$(printf '%.0f' "$cost")" 1 "entry_cost_us measured by a scan shorter than a tick"
assert_eq "$(daemon_stat "filesystems.$dev.verdict")" pays "the filesystem's verdict"
# a restart: the filesystem remembered to pay, the next scan starts at once
daemon_stop
daemon_start
assert_eq "$(daemon_stat "filesystems.$dev.verdict")" pays "the filesystem's verdict after a restart"

c0=$(cpu_us)
t=0
while [ $(($(cpu_us) - c0)) -lt 400000 ] && [ $t -lt 5000 ]; do
	ctl stats >/dev/null
	t=$((t + 1))
done
c1=$(cpu_us)
info "CPU while idle: $(((c1 - c0) / 1000)) ms ($t control requests)"
assert_ge $((c1 - c0)) 400000 "the daemon's CPU while idle (us)"

n0=$(daemon_stat entries_prefetched)
timed_ls "$T/mnt/b" >/dev/null
wait_for 20 ended
c2=$(cpu_us)
n=$(($(daemon_stat entries_prefetched) - n0))
cost=$(daemon_stat "filesystems.$dev.entry_cost_us")
info "the second scan: $n entries prefetched, $(((c2 - c1) / 1000)) ms of CPU; entry_cost_us $cost"
assert_ge "$n" $((N / 2)) "entries prefetched"
bound=$((2 * (c2 - c1) / n + 10))
assert_le "$(printf '%.0f' "$cost")" "$bound" "entry_cost_us against twice the scan's CPU per entry"
