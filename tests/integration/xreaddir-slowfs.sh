#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# dirahead_xreaddir() through `diraheadctl ls`, on slowfs (500 us per request, 2,000 entries):
#  - fields asked for, fields fetched: `ls` (type only) sends no LOOKUP or GETATTR at all, the
#    listing's d_type answers; `ls -R` only the lookups of the subdirectories it descends into;
#  - `ls -l` on a cold mount fetches in parallel (many lookups in flight) and prints exactly
#    what `LC_ALL=C ls -l` prints;
#  - xattrs (--xattrs) match getfattr, on a tmpfs and through slowfs --acl (FUSE getxattr).
. "$(dirname "$0")/../lib/lib.sh"
CTL=$BUILD/diraheadctl
[ -x "$CTL" ] || skip "build/diraheadctl not built (run make)"
need_root
need_cmd getfattr setfattr

N=2000
make_files "$T/back" $N
mkdir "$T/back/sub1" "$T/back/sub2"
touch "$T/back/sub1/inner"
ln -s f000001 "$T/back/link"
M=$T/mnt
slowfs_mount "$T/back" "$M" --latency-us 500

info "type only: no lookup beyond the listing"
slowfs_ctl reset >/dev/null
"$CTL" ls --stats "$M" >"$T/names" 2>"$T/err" &
pid=$!
wait $pid || fail "diraheadctl ls failed: $(cat "$T/err")"
assert_eq "$(wc -l <"$T/names")" $((N + 3)) "names listed"
assert_ge "$(slowfs_stat pid.$pid.readdir)" 1 "slowfs saw the listing"
assert_eq "$(slowfs_stat total.lookup)" 0 "lookups by a type-only ls"
assert_eq "$(slowfs_stat total.getattr)" 0 "getattrs by a type-only ls"
assert_contains "$(cat "$T/err")" "statx=0 " "no statx sent"

slowfs_ctl reset >/dev/null
"$CTL" ls -R "$M" >"$T/rnames" 2>"$T/err" || fail "diraheadctl ls -R failed: $(cat "$T/err")"
assert_contains "$(cat "$T/rnames")" "$M/sub1:"$'\n'"inner" "ls -R descends"
# opening sub1 and sub2 looks them up; nothing else does
assert_le "$(slowfs_stat total.lookup)" 2 "lookups by a type-only ls -R"
assert_eq "$(slowfs_stat total.getattr)" 0 "getattrs by a type-only ls -R"

info "ls -l, cold: every entry fetched, in parallel, printed as ls -l prints it"
slowfs_unmount "$M"
slowfs_mount "$T/back" "$M" --latency-us 500
slowfs_ctl reset >/dev/null
"$CTL" ls -l --stats "$M" >"$T/long" 2>"$T/err" || fail "diraheadctl ls -l failed: $(cat "$T/err")"
info "$(cat "$T/err")"
assert_contains "$(cat "$T/err")" "parallel=yes" "switched to parallel fetching"
assert_ge "$(slowfs_stat total.lookup)" $N "lookups sent by ls -l"
assert_ge "$(slowfs_stat max_inflight_lookup_getattr)" 16 "lookups in flight at once"
LC_ALL=C ls -l "$M" >"$T/ls-long"
diff "$T/ls-long" "$T/long" >"$T/diff" || fail "diraheadctl ls -l differs from ls -l: $(head -n 20 "$T/diff")"
LC_ALL=C ls -lR "$M" >"$T/ls-longR"
"$CTL" ls -lR "$M" >"$T/longR" || fail "diraheadctl ls -lR failed"
diff "$T/ls-longR" "$T/longR" >"$T/diff" || fail "ls -lR differs: $(head -n 20 "$T/diff")"
for engine in io_uring threads; do
	"$CTL" ls -l --parallel --engine=$engine "$M" >"$T/long-$engine" || fail "$engine: ls -l failed"
	diff "$T/ls-long" "$T/long-$engine" >/dev/null || fail "$engine: ls -l differs from ls -l"
done
slowfs_unmount "$M"

# xattr_dir DIR: files with user xattrs (text, binary, empty, several), one without, a symlink
xattr_dir() {
	mkdir -p "$1"
	for i in $(seq 1 50); do
		touch "$1/x$i"
		setfattr -n user.n -v "value $i" "$1/x$i"
		[ $((i % 3)) = 0 ] && setfattr -n user.bin -v 0x00ff7f80 "$1/x$i"
		[ $((i % 5)) = 0 ] && setfattr -n user.empty "$1/x$i"
	done
	touch "$1/plain"
	mkdir "$1/d"
	setfattr -n user.dir -v yes "$1/d"
	ln -s x1 "$1/link"
}

info "xattrs match getfattr: tmpfs"
mkdir -p "$T/tmpfs"
mount -t tmpfs -o size=16m dirahead-test "$T/tmpfs"
on_exit "umount -l '$T/tmpfs'"
xattr_dir "$T/tmpfs/x"
for par in "" --parallel; do
	(cd "$T/tmpfs" && getfattr -h -d -m - -e hex x/*) >"$T/getfattr"
	(cd "$T/tmpfs" && "$CTL" ls --xattrs $par x) >"$T/ours" || fail "ls --xattrs $par failed"
	diff "$T/getfattr" "$T/ours" >"$T/diff" || fail "xattrs $par differ from getfattr: $(head -n 20 "$T/diff")"
	assert_ge "$(grep -c '^# file:' "$T/ours")" 51 "entries with xattrs"
done

info "xattrs match getfattr: through FUSE (slowfs --acl)"
xattr_dir "$T/xback"
slowfs_mount "$T/xback" "$T/xmnt" --latency-us 200 --acl
(cd "$T" && getfattr -h -d -m - -e hex xmnt/*) >"$T/getfattr" 2>/dev/null || true
(cd "$T" && "$CTL" ls --xattrs --parallel xmnt) >"$T/ours" || fail "ls --xattrs on slowfs failed"
diff "$T/getfattr" "$T/ours" >"$T/diff" || fail "slowfs xattrs differ from getfattr: $(head -n 20 "$T/diff")"
assert_ge "$(grep -c '^user.n=' "$T/ours")" 50 "user.n values through FUSE"
echo "PASS"
