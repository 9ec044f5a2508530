#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# The cost model's start rule, on one directory seen two ways:
# - on the local disk, warm: `ls -l` stats cost a few microseconds, below what a prefetched
#   entry costs the daemon, so the scan is probed, skipped as fast_stats and muted in BPF:
#   nothing is prefetched, and the rest of the walk (a find over many directories of the same
#   filesystem) is no longer tracked (listings stay flat while it runs), and a walk that lists
#   ahead of it, if one starts, ends once its listings are found to wait for nothing (or with
#   find), having fetched no file;
# - through slowfs at 500 us a lookup: the same listing is probed, found slow and prefetched,
#   the program sends almost none of its own lookups, and the filesystem's verdict is "pays".
# A comm filter keeps other processes on the machine out of the counters.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root

N=3000
make_files "$T/back/dir" $N
for i in $(seq 1 60); do make_files "$T/back/tree/d$i" 40; done
ln -s "$(realpath "$(command -v ls)")" "$T/dra-ls"
ln -s "$(realpath "$(command -v find)")" "$T/dra-find"
printf '[metrics]\naddress =\n[filter]\ncomm_include = dra-*\n[detect]\narm = always\n' >"$DAEMON_CONF"
daemon_start

# warm the local directory, then scan it
ls -l "$T/back/dir" >/dev/null
"$T/dra-ls" -l "$T/back/dir" >/dev/null
fast_skipped() { [ "$(daemon_stat skips.fast_stats)" -ge 1 ]; }
wait_for 5 fast_skipped
ctl stats | grep -E 'fast_stats|muted|prefetched|filesystems' || true
assert_eq "$(daemon_stat entries_prefetched)" 0 "entries prefetched for a warm local scan"
assert_eq "$(daemon_stat scans_started)" 0 "scans started for a warm local scan"
assert_ge "$(daemon_stat scans_muted)" 1 "scans muted"
dev=$(stat -c '%Hd:%Ld' "$T/back/dir")
assert_eq "$(daemon_stat "filesystems.$dev.verdict")" fast "verdict of the local filesystem $dev"

# A muted walk: the process that was muted goes on listing directories of the same
# filesystem; BPF does not track them (the listings counter stays put while it runs).
find "$T/back/tree" -ls >/dev/null
before=$(daemon_stat listings)
"$T/dra-find" "$T/back/dir" "$T/back/tree" -ls >/dev/null
after=$(daemon_stat listings)
info "listings during the muted find over 61 directories: $((after - before))"
assert_le $((after - before)) 5 "listings tracked after the mute"
# It walks: a walk that lists only (its stats are fast) may start, and ends once a few of its
# listings are found to wait for nothing; it fetches subdirectories only, never a file.
# (or find is done first, or it left the walk behind; wait_for: over)
no_walks() { [ "$(daemon_stat active_walks)" = 0 ]; }
wait_for 5 no_walks
listed=$(daemon_stat walks_list_only)
assert_le "$listed" 1 "walks that listed only"
ctl stats | grep -E "walks_ended|walk_dirs" || true
assert_le "$(daemon_stat entries_prefetched)" 62 "entries prefetched for the warm walk (the 62 directories)"
assert_ne "$(daemon_stat "filesystems.$dev.list_verdict")" pays "listing verdict of the local filesystem"

# The same directory behind 500 us of latency: prefetched.
slowfs_mount "$T/back" "$T/mnt" --latency-us 500
slowfs_ctl reset >/dev/null
"$T/dra-ls" -l "$T/mnt/dir" >/dev/null &
pid=$!
wait $pid
own=$(slowfs_stat "pid.$pid.lookup")
info "ls -l on slowfs: $own of $N lookups sent by ls itself"
ctl stats | grep -E 'started|prefetched|fast_stats|filesystems' || true
assert_le "$own" $((N / 10)) "lookups ls sent itself on slowfs"
assert_ge "$(daemon_stat entries_prefetched)" $((N * 9 / 10)) "entries prefetched on slowfs"
sdev=$(awk -v m="$T/mnt" '$5 == m { print $3 }' /proc/self/mountinfo)
assert_eq "$(daemon_stat "filesystems.$sdev.verdict")" pays "verdict of slowfs ($sdev)"
daemon_stop
