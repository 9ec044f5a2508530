#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Where the cost is (issue 24 item 2): a tree two levels deep whose upper levels are fast (their
# entries are directories, cached) and whose leaves are slow (slowfs --depth-latency: each file's
# lookup, and each leaf's listing, waits 1 ms; a listing is kept by the kernel once read, as a
# disk's directory blocks are).  The first scans are of the upper directories,
# whose stats are fast: judged so, the program is left alone and its walk lists only.  Its stats
# in the leaves then block (the sentinel says so): the walk judges that depth again and fetches
# the leaves' entries (walk.c, policy.c's policy_walk_*), those it had listed only included.
#  1. find -ls, du -s and ls -lR over it (each its own tree, its leaves cold): each sends at most
#     half of the leaves' lookups itself, the daemon the rest.
#  2. The same tree entirely fast (latency 0, everything cached): nothing is judged to pay
#     there, and next to nothing is prefetched.
# Counted, never timed: slowfs's per-process lookups and the daemon's counters.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd find du ls

TOP=2 DIRS=40 FILES=50
LEAVES=$((TOP * DIRS * FILES))
mktree() { # DIR
	local i j
	for i in $(seq 1 $TOP); do
		for j in $(seq 1 $DIRS); do make_files "$1/t$i/d$j" $FILES; done
	done
}
for t in find du ls; do
	mktree "$T/back/tree-$t"
	ln -s "$(realpath "$(command -v $t)")" "$T/dra-$t"
done
printf "[metrics]\naddress =\n[filter]\ncomm_include = dra-*\n[daemon]\nlog_level = debug\n" >"$DAEMON_CONF"

run() { # TOOL DIR: runs it as dra-TOOL, sets PID
	case $1 in
	find) "$T/dra-find" "$2" -ls >/dev/null & ;;
	du) "$T/dra-du" -s "$2" >/dev/null & ;;
	ls) "$T/dra-ls" -lR "$2" >/dev/null & ;;
	esac
	PID=$!
	wait $PID || fail "$1 over $2 failed"
}

# the mount's root is depth 0: tree-X 1, tN 2, dN 3 (the upper directories), the files 4
# (--cache-readdir: a directory the daemon listed is cached for the program, as on a disk)
slowfs_mount "$T/back" "$T/mnt" --depth-latency 4:1000 --cache-readdir
daemon_start
# the upper levels cached (as a volume's directory inodes are), by a process the daemon ignores
for t in find du ls; do find "$T/mnt/tree-$t" -maxdepth 2 -ls >/dev/null; done
for t in find du ls; do
	slowfs_ctl reset >/dev/null
	run $t "$T/mnt/tree-$t"
	own=$(slowfs_stat "pid.$PID.lookup")
	info "$t: sent $own of the $LEAVES leaves' lookups itself;" \
		"the daemon $(slowfs_stat "pid.$DAEMON_PID.lookup")"
	assert_le "$own" $((LEAVES / 2)) "lookups $t sent itself"
done
ctl stats | grep -E 'walk|prefetched|skip.*fast|muted' || true
assert_ge "$(daemon_stat walk_depths_rejudged)" 1 "depths of walks judged to pay on a blocked stat"
assert_ge "$(daemon_stat entries_prefetched)" $((3 * LEAVES / 2)) "entries prefetched"
daemon_stop
slowfs_unmount

# 2. entirely fast: everything cached, nothing blocks
slowfs_mount "$T/back" "$T/mnt-fast" --latency-us 0
for t in find du ls; do find "$T/mnt-fast/tree-$t" -ls >/dev/null; done
daemon_start
for t in find du ls; do run $t "$T/mnt-fast/tree-$t"; done
ctl stats | grep -E 'walk|prefetched|skip.*fast|muted' || true
assert_eq "$(daemon_stat walk_depths_rejudged)" 0 "depths judged to pay on a fast tree"
assert_le "$(daemon_stat entries_prefetched)" $((3 * LEAVES / 20)) "entries prefetched on a fast tree"
daemon_stop
