#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# slowfs mirrors a backing tree faithfully: ls -l / ls -lR / ls -li, file contents, and the
# scanning tools dirahead cares about (find, du, tar, rsync, Python os.walk) see the same tree
# through the mount as in the backing directory.
. "$(dirname "$0")/../lib/lib.sh"
need_cmd rsync tar python3 cmp

B=$T/backing
mkdir -p "$B/sub/deeper" "$B/empty"
printf '' >"$B/zero"
printf x >"$B/one"
head -c 4095 /dev/urandom >"$B/page-1"
head -c 4096 /dev/urandom >"$B/page"
head -c 65537 /dev/urandom >"$B/sub/odd"
head -c $((3 * 1024 * 1024 + 3)) /dev/urandom >"$B/sub/big"
echo deep >"$B/sub/deeper/file"
chmod 600 "$B/zero"; chmod 755 "$B/one"; chmod 444 "$B/page"; chmod 4750 "$B/page-1"
chown 1234:5678 "$B/sub/odd"
ln -s one "$B/link"
ln -s ../page "$B/sub/uplink"
ln -s does/not/exist "$B/dangling"
ln "$B/one" "$B/hardlink"
mkfifo "$B/fifo"
touch -d '2001-02-03 04:05:06.123456789' "$B/sub/deeper/file"
make_files "$B/many" 300

# check_mount MNT: everything seen through MNT matches $B
check_mount() {
	local M=$1 args want got f fmt walk

	# ls -l and ls -lR: every column (mode, links, owner, size, time, name, link target) must match.
	for args in "-ln --time-style=full-iso" "-lRn --time-style=full-iso" "-lai" "-lUn"; do
		want=$(cd "$B" && ls $args 2>&1) || fail "ls $args of the backing directory failed"
		got=$(cd "$M" && ls $args 2>&1) || fail "ls $args through slowfs failed: $got"
		[ -n "$got" ] || fail "ls $args printed nothing"
		if [ "$args" = -lUn ]; then	# readdir order is the backing order, but compare as sets
			want=$(sort <<<"$want"); got=$(sort <<<"$got")
		fi
		[ "$got" == "$want" ] || { diff <(echo "$want") <(echo "$got") | head -20 >&2
			fail "ls $args differs between backing and slowfs"; }
	done
	assert_contains "$(cd "$M" && ls -l)" "dangling -> does/not/exist" "dangling symlink"
	assert_eq "$(readlink "$M/sub/uplink")" "../page" "readlink"
	assert_eq "$(stat -c %i "$M/sub/big")" "$(stat -c %i "$B/sub/big")" "st_ino = backing inode"
	assert_eq "$(stat -c %i "$M/hardlink")" "$(stat -c %i "$M/one")" "hard links share an inode"

	# contents
	for f in zero one page-1 page sub/odd sub/big sub/deeper/file link; do
		cmp "$B/$f" "$M/$f" || fail "contents of $f differ"
	done
	# writes are refused
	if echo x 2>/dev/null >"$M/one"; then fail "write through slowfs succeeded"; fi
	if touch "$M/newfile" 2>/dev/null; then fail "create through slowfs succeeded"; fi

	# scanning tools
	fmt='%y %m %s %n %U %G %i %T@ %P %l\n'
	assert_eq "$(cd "$M" && find . -printf "$fmt" | sort)" \
		"$(cd "$B" && find . -printf "$fmt" | sort)" "find -printf"
	assert_eq "$(du -s "$M" | cut -f1)" "$(du -s "$B" | cut -f1)" "du -s"
	assert_eq "$(du -sb "$M" | cut -f1)" "$(du -sb "$B" | cut -f1)" "du -sb"
	tar cf /dev/null -C "$M" . || fail "tar cf /dev/null failed"
	# GNU tar skips reading when writing to /dev/null, so also archive for real and list it
	tar cf "$T/m.tar" -C "$M" . || fail "tar through slowfs failed"
	tar cf "$T/b.tar" -C "$B" .
	assert_eq "$(tar tvf "$T/m.tar" | sort)" "$(tar tvf "$T/b.tar" | sort)" "tar listing"
	assert_eq "$(rsync -an --out-format='%n %l' "$M/" "$T/dst/" | sort)" \
		"$(rsync -an --out-format='%n %l' "$B/" "$T/dst/" | sort)" "rsync -an"
	walk='import os, sys
n = 0; size = 0
for top, dirs, files in os.walk(sys.argv[1]):
    for f in dirs + files:
        st = os.stat(os.path.join(top, f), follow_symlinks=False)
        n += 1; size += st.st_size
print(n, size)'
	assert_eq "$(python3 -c "$walk" "$M")" "$(python3 -c "$walk" "$B")" "python os.walk"
	info "$M: listing, contents and tools match; requests: $(slowfs_stat total.all)," \
		"lookups: $(slowfs_stat total.lookup)"
}

slowfs_mount "$B" "$T/mnt" --latency-us 200
assert_eq "$(slowfs_stat readdirplus)" 0 "READDIRPLUS off by default"
check_mount "$T/mnt"
assert_ge "$(slowfs_stat total.lookup)" 300 "lookups (one per name at least)"
assert_eq "$(slowfs_stat total.readdirplus)" 0 "readdirplus requests without --readdirplus"
slowfs_unmount

# The same through READDIRPLUS: entries arrive with their attributes, fewer lookups follow.
slowfs_mount "$B" "$T/mnt-plus" --latency-us 200 --readdirplus
assert_eq "$(slowfs_stat readdirplus)" 1 "FUSE_DO_READDIRPLUS negotiated"
check_mount "$T/mnt-plus"
assert_ge "$(slowfs_stat total.readdirplus)" 1 "readdirplus requests"
slowfs_unmount
