#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# slowfs `watch PREFIX` and --acl (tests/slowfs/README.md): the watch counts the requests that
# reach into one directory (its listing, anything below it), in total and per process, not a
# lookup of its own name nor anything beside it; `reset` keeps it, `unwatch` ends it.  With
# --acl the backing files' ACLs are served (getfacl on the mount) and enforced (a user an ACL
# denies is refused); without it they are not.
. "$(dirname "$0")/../lib/lib.sh"
need_root
need_cmd setpriv setfacl getfacl

B=$T/back M=$T/mnt
make_files "$B/top/w" 5
make_files "$B/top/w/sub" 3
make_files "$B/top/other" 5
chmod 0711 "$T"
setfacl -m u:65534:--- "$B/top/other"
slowfs_mount "$B" "$M" --latency-us 100 --acl

# --- the watch ------------------------------------------------------------------------------------
slowfs_ctl watch /top/w/ >/dev/null
assert_eq "$(slowfs_stat watch)" top/w "the watch, as node paths name it"
stat "$M/top/w" >/dev/null
stat "$M/top/other/f000001" >/dev/null
assert_eq "$(slowfs_stat watch.total.all)" 0 "requests into top/w after a stat of its name and one beside it"
ls "$M/top/w" >/dev/null &
p=$!
wait $p
assert_eq "$(slowfs_stat watch.total.opendir)" 1 "opendirs of top/w"
assert_ge "$(slowfs_stat watch.pid.$p.readdir)" 1 "readdirs of top/w by ls"
stat "$M/top/w/f000001" "$M/top/w/sub/f000001" >/dev/null &
p=$!
wait $p
assert_eq "$(slowfs_stat watch.pid.$p.lookup)" 3 "lookups below top/w (f000001, sub, sub/f000001)"
assert_eq "$(slowfs_stat watch.total.all)" "$(( $(slowfs_stat watch.total.opendir) + \
	$(slowfs_stat watch.total.readdir) + $(slowfs_stat watch.total.lookup) + \
	$(slowfs_stat watch.total.getxattr) + $(slowfs_stat watch.total.getattr) ))" "watch.total.all: the sum"
slowfs_ctl reset >/dev/null
assert_eq "$(slowfs_stat watch)" top/w "the watch after reset"
assert_eq "$(slowfs_stat watch.total.all)" 0 "requests into top/w after reset"
slowfs_ctl unwatch >/dev/null
drop_caches
stat "$M/top/w/f000002" >/dev/null
assert_eq "$(slowfs_stat watch)" "" "the watch after unwatch"
assert_eq "$(slowfs_stat watch.total.all)" 0 "requests counted without a watch"
expect_exit 1 "$BUILD/slowfsctl" "$SLOWFS_CTL" watch
expect_exit 1 "$BUILD/slowfsctl" "$SLOWFS_CTL" watch a b

# --- --acl: served and enforced -------------------------------------------------------------------
assert_eq "$(slowfs_stat posix_acl)" 1 "FUSE_POSIX_ACL negotiated with --acl"
assert_contains "$(getfacl -pn "$M/top/other" 2>&1)" "user:65534:---" "the ACL as the mount shows it"
expect_exit 2 setpriv --reuid=65534 --regid=65534 --clear-groups -- ls "$M/top/other"
assert_contains "$OUT" "Permission denied" "nobody's listing of a directory an ACL denies it"
setpriv --reuid=65534 --regid=65534 --clear-groups -- ls "$M/top/w" >/dev/null ||
	fail "nobody could not list a directory without ACL"
slowfs_unmount
slowfs_mount "$B" "$M" --latency-us 100
assert_eq "$(slowfs_stat posix_acl)" 0 "FUSE_POSIX_ACL without --acl"
setpriv --reuid=65534 --regid=65534 --clear-groups -- ls "$M/top/other" >/dev/null ||
	fail "without --acl, the ACL was enforced (it should not be: no xattrs)"
slowfs_unmount
