#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Attack: a local user scrapes the metrics endpoint in a tight loop while the daemon is idle, so
# that the CPU it makes the daemon spend is counted as what a prefetched entry costs: the start
# rule prefetches only where a program's stat costs start_factor times that, so a cost blown up
# enough would leave every filesystem judged too cheap to prefetch, for every user.  What holds:
# CPU spent while no scan or walk runs is no entry's (host.c), so after the user's 0.4 s of the
# daemon's CPU, root's `ls -l` of 2,000 entries on slowfs (200 us a request) is prefetched, and
# the filesystem's entry_cost_us stays within twice the daemon's CPU over that scan per entry
# (+10 us).  The daemon runs in a network namespace of its own (its port meets nothing of the
# host's).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/../lib/metrics.sh"
need_root
need_cmd /usr/bin/python3 unshare nsenter ip setpriv

PORT=9571 U=60124 N=2000
for d in a b; do make_files "$T/back/$d" $N; done
ln -s "$(realpath "$(command -v ls)")" "$T/dra-ls"
printf '[metrics]\naddress = 127.0.0.1:%s\n[filter]\ncomm_include = dra-*\n[detect]\narm = always\n' \
	$PORT >"$DAEMON_CONF"
slowfs_mount "$T/back" "$T/mnt" --latency-us 200
dev=$(awk -v m="$T/mnt" '$5 == m { print $3 }' /proc/self/mountinfo)
metrics_daemon_netns
hz=$(getconf CLK_TCK)
cpu_us() { echo $(($(daemon_cpu_ticks) * 1000000 / hz)); }
ended() { [ "$(daemon_stat scans_ended.completed)" -ge "$1" ]; }

# root's first scan there: the filesystem pays
timed_ls "$T/mnt/a" >/dev/null
wait_for 20 ended 1
assert_eq "$(daemon_stat "filesystems.$dev.verdict")" pays "the filesystem's verdict"
info "entry_cost_us after root's first scan: $(daemon_stat "filesystems.$dev.entry_cost_us")"

info "user $U scrapes the metrics page in a loop"
chmod 0755 "$T"
c0=$(cpu_us)
"${NS[@]}" setpriv --reuid=$U --regid=$U --clear-groups -- /usr/bin/python3 -c '
import sys, urllib.request
while True:
    try:
        urllib.request.urlopen(sys.argv[1], timeout=5).read()
    except OSError:
        pass' "http://127.0.0.1:$PORT/metrics" &
scraper=$!
on_exit "kill $scraper 2>/dev/null"
burnt() { [ $(($(cpu_us) - c0)) -ge 400000 ]; }
wait_for 60 burnt
kill $scraper
wait $scraper 2>/dev/null || true
c1=$(cpu_us)
info "the daemon's CPU for the user's scrapes: $(((c1 - c0) / 1000)) ms"
assert_ge $((c1 - c0)) 400000 "the daemon's CPU while idle (us)"

n0=$(daemon_stat entries_prefetched)
timed_ls "$T/mnt/b" >/dev/null
wait_for 20 ended 2
c2=$(cpu_us)
n=$(($(daemon_stat entries_prefetched) - n0))
cost=$(daemon_stat "filesystems.$dev.entry_cost_us")
info "root's second scan: $n entries prefetched, $(((c2 - c1) / 1000)) ms of CPU; entry_cost_us $cost"
assert_ge "$n" $((N / 2)) "entries prefetched for root after the user's scrapes"
assert_le "$(printf '%.0f' "$cost")" $((2 * (c2 - c1) / n + 10)) \
	"entry_cost_us against twice the scan's CPU per entry"
daemon_stop
