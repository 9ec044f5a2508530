#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# diraheadctl prefetch on local directories: usage and exit codes; every entry of a directory
# and of a tree fetched with both engines and every order; symlinks (to a directory, dangling,
# loops) counted but never followed; a missing or non-directory DIR gives exit 1 while the
# others are still warmed.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/prefetch.sh"

info "usage"
expect_exit 2 "$CTL"
expect_exit 2 "$CTL" frobnicate
expect_exit 2 "$CTL" prefetch
expect_exit 2 "$CTL" prefetch --depth=0 "$T"
expect_exit 2 "$CTL" prefetch --depth=12x "$T"
expect_exit 2 "$CTL" prefetch --order=random "$T"
expect_exit 2 "$CTL" prefetch --engine=gpu "$T"
expect_exit 2 "$CTL" prefetch --groups=maybe "$T"
expect_exit 2 "$CTL" prefetch --bogus "$T"
assert_contains "$OUT" "Usage: diraheadctl prefetch"
expect_exit 0 "$CTL" --help
assert_contains "$OUT" "prefetch"
expect_exit 0 "$CTL" prefetch --help
assert_contains "$OUT" "--engine=ENGINE"
expect_exit 0 "$CTL" --version
assert_contains "$OUT" "diraheadctl 0."

make_files "$T/flat" 3000
mkdir -p "$T/tree/a/b/c" "$T/tree/empty"
make_files "$T/tree/a" 10
make_files "$T/tree/a/b" 20
make_files "$T/tree/a/b/c" 30
ln -s ../flat "$T/tree/to-flat"      # a directory elsewhere: must not be entered
ln -s nowhere "$T/tree/dangling"
ln -s loop2 "$T/tree/loop1"
ln -s loop1 "$T/tree/loop2"
ln -s . "$T/tree/a/self"
want_entries=$(find "$T/tree" -mindepth 1 | wc -l)   # find does not follow symlinks either
want_dirs=$(find "$T/tree" -type d | wc -l)
info "tree: $want_entries entries, $want_dirs directories"

for engine in io_uring threads; do
	for order in readdir inode name default; do
		expect_exit 0 "$CTL" prefetch --engine=$engine --order=$order "$T/flat"
		assert_eq "$(field_n entries)" 3000 "$engine/$order entries"
		assert_eq "$(field_n errors)" 0 "$engine/$order errors"
		assert_eq "$(field_n directories)" 1 "$engine/$order directories"
		assert_eq "$(field backend)" "$engine" "backend"
	done

	# -r with at most 2 directories open: same counts as find, nothing through the symlinks
	expect_exit 0 "$CTL" prefetch -r --max-open=2 --depth=8 --engine=$engine "$T/tree"
	assert_eq "$(field_n entries)" "$want_entries" "$engine -r entries"
	assert_eq "$(field_n directories)" "$want_dirs" "$engine -r directories"
	assert_eq "$(field_n errors)" 0 "$engine -r errors"

	# the DIR arguments themselves: a missing one and a file fail (exit 1), the other is done
	expect_exit 1 "$CTL" prefetch --engine=$engine "$T/missing" "$T/flat" "$T/flat/f000001"
	assert_contains "$OUT" "$T/missing: No such file or directory"
	assert_contains "$OUT" "f000001: Not a directory"
	assert_eq "$(field_n entries)" 3000 "$engine: the good DIR is still warmed"
	assert_eq "$(field_n errors)" 2 "$engine: two bad DIRs"
done

# -q: no summary
expect_exit 0 "$CTL" prefetch -q "$T/flat"
assert_eq "$OUT" "" "quiet"
echo "PASS"
