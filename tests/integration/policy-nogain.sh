#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# The cost model's pay-off rule and its per-filesystem memory, on a slowfs whose replies may be
# cached for no time at all (--entry-timeout 0 --attr-timeout 0: whatever the daemon looks up,
# the program's own stat asks the server again, so prefetch cannot pay, however busy the
# machine; a server answering one request at a time, --serial, was not enough: on a busy machine
# it keeps the server busy through the program's wake-ups, and a control stretch of 32 stats
# once measured a 1.8x gain):
# - `ls -l` of 2,000 entries (100 us a lookup, about five per entry): the scan is prefetched, does not make the
#   program's stats cheaper and ends as no_gain; the filesystem's verdict becomes no_gain;
#   the daemon's requests stop early (at most 600 of the 2,000 entries fetched: until a stretch
#   pays, the window grows to twice the stretch judged, policy_window_max; 191-218 beside three
#   busy loops, where all 2,000 were fetched before it); the program's time is not judged beyond
#   a gross slowdown (3x + 2 s): beside three busy loops, single runs of the same ls -l took
#   1.6 s to 8 s with nothing to do with us (make bench measures it);
# - the next scan there is skipped at once (fs_no_gain), nothing prefetched for it;
# - the verdict survives a config reload (SIGHUP);
# - after reprobe_s the filesystem is probed again (reprobes counted), and the backoff doubles:
#   the skip after the second failure says it is probed again in more than reprobe_s;
# - a new mount on the same device number starts afresh (and pays, with parallel lookups);
# - invalid [policy] values are refused by --check-config (more in config-errors.sh).
# Only the first ls -l runs to its end.  The later ones are stopped once the daemon has decided
# (skipped, or judged again), and the wait for the re-probe is what the daemon says is left of
# it: a busy CI machine once took 13 ms a stat here (26 s an ls -l), so fixed sleeps between
# whole runs let the re-probe time pass before the skips they were to see.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root

N=2000
for d in off on again reload probe later fresh; do make_files "$T/back/$d" $N; done
ln -s "$(realpath "$(command -v ls)")" "$T/dra-ls"
# start_factor: this is about the pay-off rule; the start rule must not find the stats cheap
# where the daemon's own cost per entry is high (an ASan build: ~0.5 ms an entry)
printf '[metrics]\naddress =\n[filter]\ncomm_include = dra-*\n[policy]\nreprobe_s = 40\nstart_factor = 0.1\n[detect]\narm = always\n' >"$DAEMON_CONF"
# The server at the highest priority: beside busy loops, a server that sleeps between requests
# waits for the CPU at each one when the program is alone, and not while the daemon keeps it
# busy; a control stretch of 32 stats then read 5.2 ms a stat alone against 0.84 ms with prefetch
# (no cache involved: its wake-ups), and the scan was judged to pay.
SLOWFS_AS=(nice -n -20)
slowfs_mount "$T/back" "$T/mnt" --latency-us 0 --lookup-us 100 --entry-timeout 0 --attr-timeout 0
SLOWFS_AS=()
dev=$(awk -v m="$T/mnt" '$5 == m { print $3 }' /proc/self/mountinfo)

off=$(timed_ls "$T/mnt/off")
info "ls -l without the daemon: $off ms"
daemon_start
on=$(timed_ls "$T/mnt/on")
info "ls -l with the daemon (first scan on this filesystem): $on ms"
ctl stats | grep -E 'no_gain|prefetched|muted|judgments|app_stat|filesystems' || true
assert_eq "$(daemon_stat scans_ended.no_gain)" 1 "scans ended as no_gain"
assert_eq "$(daemon_stat "filesystems.$dev.verdict")" no_gain "verdict of a slowfs that caches nothing"
assert_le "$on" $((off * 3 + 2000)) "ls -l with the daemon (ms) against $off ms without"
# judged after a stretch of gain_stats (64) with prefetch, the window it had fetched, and a
# control stretch of 32 stats without
wasted=$(daemon_stat entries_prefetched)
assert_le "$wasted" 600 "entries prefetched before the scan was judged"

# ls_until DIR CHECK...: ls -l DIR until CHECK holds (the daemon has decided), then stop it
ls_until() {
	local dir=$1 pid; shift
	"$T/dra-ls" -l "$dir" >/dev/null &
	pid=$!
	wait_for 120 "$@"
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}
stat_ge() { [ "$(daemon_stat "$1")" -ge "$2" ]; }
# what the daemon said is left of the re-probe delay at its last fs_no_gain skip, in seconds
reprobe_left() {
	ctl explain --json | python3 -c 'import json, sys
d = [x for x in json.load(sys.stdin) if x["reason"] == "fs_no_gain"]
print(int(d[-1]["numbers"]["reprobe_seconds"]))'
}

ls_until "$T/mnt/again" stat_ge skips.fs_no_gain 1
assert_eq "$(daemon_stat skips.fs_no_gain)" 1 "the next scan is skipped as fs_no_gain"
assert_eq "$(daemon_stat entries_prefetched)" "$wasted" "entries prefetched for the skipped scan"
assert_eq "$(daemon_stat "filesystems.$dev.skipped_no_gain")" 1 "skips counted for the filesystem"

kill -HUP "$DAEMON_PID"
reloaded() { [ "$(daemon_stat reloads_ok)" -ge 1 ]; }
wait_for 5 reloaded
assert_eq "$(daemon_stat "filesystems.$dev.verdict")" no_gain "verdict after a reload"
ls_until "$T/mnt/reload" stat_ge skips.fs_no_gain 2
assert_eq "$(daemon_stat skips.fs_no_gain)" 2 "skipped as fs_no_gain after the reload"

left=$(reprobe_left)
info "re-probe in $left s"
assert_le "$left" 40 "re-probe delay after the first failure (s)"
sleep $((left + 1))
ls_until "$T/mnt/probe" stat_ge scans_ended.no_gain 2
assert_eq "$(daemon_stat "filesystems.$dev.reprobes")" 1 "re-probes after reprobe_s"
assert_eq "$(daemon_stat scans_ended.no_gain)" 2 "the re-probe found no gain again"
# the backoff doubled: the next skip says 80 s less the time since that judgment
ls_until "$T/mnt/later" stat_ge skips.fs_no_gain 3
assert_eq "$(daemon_stat skips.fs_no_gain)" 3 "skipped after the second failure"
left=$(reprobe_left)
info "re-probe in $left s after the second failure"
assert_ge "$left" 41 "re-probe delay after the second failure (s): doubled"

# The filesystem unmounted and mounted again, now with parallel lookups: whatever device number
# the new mount gets (FUSE often gets the old one back), it is judged afresh, and pays.
slowfs_unmount "$T/mnt"
slowfs_mount "$T/back" "$T/mnt" --latency-us 500
dev2=$(awk -v m="$T/mnt" '$5 == m { print $3 }' /proc/self/mountinfo)
info "device before: $dev, after the remount: $dev2"
before=$(daemon_stat entries_prefetched)
timed_ls "$T/mnt/fresh" >/dev/null
assert_eq "$(daemon_stat skips.fs_no_gain)" 3 "no fs_no_gain skip on the new mount"
assert_ge $(($(daemon_stat entries_prefetched) - before)) $((N * 9 / 10)) "entries prefetched on the new mount"
assert_eq "$(daemon_stat "filesystems.$dev2.verdict")" pays "verdict of the new mount"
daemon_stop

printf '[policy]\nmin_gain = 0.5\n' >"$T/bad.conf"
expect_exit 1 "$BUILD/diraheadd" --check-config --config "$T/bad.conf"
assert_contains "$OUT" "bad.conf:2: [policy] min_gain" "error names the key"
