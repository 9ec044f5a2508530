#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Symlinks are never followed, with or without -r: a tree whose symlinks point into a stalled
# slowfs (its root, a directory in it, a file in it), dangle, or loop is prefetched quickly, and
# slowfs receives no request at all; the links themselves are counted as entries.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/prefetch.sh"
need_root

make_files "$T/back/d" 100
slowfs_mount "$T/back" "$T/mnt" --latency-us 1000
S=$T/mnt

L=$T/local
make_files "$L" 50
mkdir -p "$L/sub"
make_files "$L/sub" 5
ln -s "$S" "$L/to-slowfs-root"
ln -s "$S/d" "$L/to-slowfs-dir"
ln -s "$S/d/f000001" "$L/to-slowfs-file"
ln -s "$S/d" "$L/sub/deeper-to-slowfs"
ln -s "$T/nowhere" "$L/dangling"
ln -s loop-b "$L/loop-a"
ln -s loop-a "$L/loop-b"
ln -s . "$L/self"
ln -s .. "$L/sub/parent"
want=$(find "$L" -mindepth 1 | wc -l)

# Anything that went through a link would now hang (and show up in slowfs's counters).
slowfs_ctl stall >/dev/null
slowfs_ctl reset >/dev/null
for engine in io_uring threads; do
	for r in "" -r; do
		expect_exit 0 timeout 10 "$CTL" prefetch $r --engine=$engine "$L"
		info "$engine $r: $OUT"
		assert_eq "$(field_n errors)" 0 "$engine $r errors"
		if [ -n "$r" ]; then
			assert_eq "$(field_n entries)" "$want" "$engine -r entries"
			assert_eq "$(field_n directories)" 2 "$engine -r directories (local and sub only)"
		else
			assert_eq "$(field_n entries)" "$(find "$L" -mindepth 1 -maxdepth 1 | wc -l)" \
				"$engine entries"
		fi
	done
done
assert_eq "$(slowfs_stat total.all)" 0 "requests that reached slowfs through a symlink"
slowfs_ctl release >/dev/null
echo PASS
