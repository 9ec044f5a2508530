#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# slowfs --depth-latency D:US delays the metadata requests on entries at depth D or deeper (the
# root's entries are at depth 1; a listing counts at its entries' depth), and leaves those above
# at --latency-us: a tree whose top is fast and whose leaves are slow.  Counted, not timed: the
# requests given a delay are pid.TGID.slow.  Also --cache-readdir (the kernel keeps listings).
. "$(dirname "$0")/../lib/lib.sh"
# child CMD...: runs CMD as a process of its own (slowfs counts requests by pid), its pid in p
child() {
	"$@" >/dev/null &
	p=$!
	wait $p || fail "$1 failed"
}

B=$T/backing M=$T/mnt
make_files "$B/top/a" 20
make_files "$B/top/b" 20
make_files "$B" 5

# bad rules are refused with status 2
for bad in 3 x:10 3:x -1:10 3:-5 99999:1; do
	rc=0
	"$BUILD/slowfs" --depth-latency "$bad" "$B" "$T/nowhere" 2>"$T/err" || rc=$?
	assert_eq "$rc" 2 "exit status for --depth-latency $bad"
	assert_contains "$(cat "$T/err")" "--depth-latency" "message for --depth-latency $bad"
done

slowfs_mount "$B" "$M" --depth-latency 3:1000 --depth-latency 2:0 --latency-us 0
assert_eq "$(slowfs_stat depth_latency_us.3)" 1000 "rule of depth 3 reported"
assert_eq "$(slowfs_stat depth_latency_us.2)" 0 "rule of depth 2 reported"

# depth 1 and 2: stat of the root's files and of top/a: nothing delayed
child stat $(seq -f "$M/f%06g" 1 5) "$M/top" "$M/top/a" "$M/top/b"
assert_eq "$(slowfs_stat pid.$p.slow)" 0 "delayed requests above depth 3"
assert_ge "$(slowfs_stat pid.$p.lookup)" 8 "lookups above depth 3"

# depth 3: every lookup of top/a's files waits; so does the listing of top/b (its entries)
child stat $(seq -f "$M/top/a/f%06g" 1 20)
assert_eq "$(slowfs_stat pid.$p.lookup)" 20 "lookups at depth 3"
assert_ge "$(slowfs_stat pid.$p.slow)" 20 "delayed requests at depth 3"
child ls -f "$M/top/b"
assert_ge "$(slowfs_stat pid.$p.readdir)" 1 "readdir of top/b"
assert_ge "$(slowfs_stat pid.$p.slow)" "$(slowfs_stat pid.$p.readdir)" \
	"a listing counts at its entries' depth"
slowfs_unmount

# (names, not globs: the shell would look up the directories itself)
# a rule at a greater depth takes a base latency away below it: the top slow, the leaves fast
slowfs_mount "$B" "$T/mnt2" --latency-us 1000 --depth-latency 3:0 --cache-readdir
child stat $(seq -f "$T/mnt2/top/a/f%06g" 1 20)
assert_eq "$(slowfs_stat pid.$p.lookup)" 22 "lookups of top, top/a and its files"
assert_eq "$(slowfs_stat pid.$p.slow)" 2 "delayed: the lookups of top and top/a only"

# --cache-readdir: a directory listed once is listed again from the kernel's cache (no readdir),
# whoever listed it first; its opendir is still sent
child ls -f "$T/mnt2/top/b"
assert_ge "$(slowfs_stat pid.$p.readdir)" 1 "readdir of top/b, listed first"
child ls -f "$T/mnt2/top/b"
assert_eq "$(slowfs_stat pid.$p.readdir)" 0 "readdir of top/b, listed again"
assert_eq "$(slowfs_stat pid.$p.opendir)" 1 "opendir of top/b, listed again"
slowfs_unmount
