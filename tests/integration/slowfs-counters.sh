#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# slowfs counts requests per operation and per calling process (thread group, not thread), and
# `reset` zeroes the counts.
. "$(dirname "$0")/../lib/lib.sh"
PSTAT=$BUILD/tests/tools/pstat
[ -x "$PSTAT" ] || skip "build/tests/tools/pstat not built (make tests)"

B=$T/backing M=$T/mnt
make_files "$B" 120
slowfs_mount "$B" "$M" --latency-us 1000
slowfs_ctl reset >/dev/null
assert_eq "$(slowfs_stat total.lookup)" 0 "lookups after reset"

# A single-threaded process stats 10 fresh names: 10 lookups under its pid.
stat $(seq -f "$M/f%06g" 1 10) >/dev/null &
p1=$!
wait $p1 || fail "stat failed"
assert_eq "$(slowfs_stat pid.$p1.lookup)" 10 "lookups of process $p1"

# A process with 8 threads stats 40 fresh names: all 40 count under its tgid, none under TIDs.
"$PSTAT" -q -j 8 $(seq -f "$M/f%06g" 11 50) &
p2=$!
wait $p2 || fail "pstat failed"
assert_eq "$(slowfs_stat pid.$p2.lookup)" 40 "lookups of 8-thread process $p2"
stats=$(slowfs_ctl stats)
sum=$(awk -F'[.=]' '/^pid\.[0-9]+\.lookup=/ { s += $4 } END { print s + 0 }' <<<"$stats")
npids=$(grep -c '^pid\.[0-9]*\.lookup=' <<<"$stats" || true)
assert_eq "$(slowfs_stat total.lookup)" 50 "total lookups"
assert_eq "$sum" 50 "per-process lookups add up to the total"
assert_eq "$npids" 2 "processes with lookups (TIDs counted as processes?)"

# Other operation types are counted too.
ls -l "$M" >/dev/null
cat "$M/f000001" >/dev/null
assert_ge "$(slowfs_stat total.readdir)" 1 "readdir counted"
assert_ge "$(slowfs_stat total.opendir)" 1 "opendir counted"
assert_ge "$(slowfs_stat total.open)" 1 "open counted"
assert_eq "$(slowfs_stat total.lookup)" 120 "ls -l looked up the remaining names once each"

# Names of one backing inode share one FUSE node (the kernel then sees one inode).
ln "$B/f000100" "$B/hard1"
ln "$B/f000100" "$B/hard2"
nodes=$(slowfs_stat nodes)
stat "$M/hard1" "$M/hard2" >/dev/null
assert_eq "$(slowfs_stat nodes)" "$nodes" "hard links to a known inode made new nodes"

slowfs_ctl reset >/dev/null
assert_eq "$(slowfs_stat total.all)" 0 "total.all after reset"
assert_eq "$(slowfs_stat pid.$p2.lookup)" 0 "per-process counters after reset"
assert_eq "$(slowfs_stat max_inflight)" 0 "max_inflight after reset"

slowfs_unmount
