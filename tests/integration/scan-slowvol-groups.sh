#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# One request per inode group on a slow volume: an xfs image read through slowfs --read-us 500
# by a read-only direct-I/O loop device, a directory of 2,000 files.  xfs reads inodes by the
# cluster (32 of them), so 64 requests in flight for 64 neighbouring entries wait on two reads;
# the daemon sends one request per group of 16 inode numbers (DIRAHEAD_DIR_SHARED_READS) and
# counts the others as read with it (entries_grouped); `diraheadctl prefetch` does the same
# unless --groups=no.  On FUSE (slowfs itself) every name is a lookup of its own: nothing is
# grouped there.  What ls prints is the same with and without.
# Counted, never timed; the cost model is off (its judgments are policy-*'s subject).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd mkfs.xfs losetup

FILES=2000
mkdir -p "$T/back" "$T/fill" "$T/v"
truncate -s 300M "$T/back/xfs.img"
mkfs_isolated mkfs.xfs -q -f "$T/back/xfs.img"
mount -o loop "$T/back/xfs.img" "$T/fill"
on_exit "umount -l '$T/fill' 2>/dev/null"
make_files "$T/fill/dir" $FILES
umount "$T/fill"
make_files "$T/back/flat" 300
make_files "$T/back/flat2" 300
slowfs_mount "$T/back" "$T/slow" --latency-us 200 --read-us 500
dev=$(losetup -r --direct-io=on --find --show "$T/slow/xfs.img")
on_exit "losetup -d '$dev'"
cold() {
	umount "$T/v" 2>/dev/null || true
	blockdev --flushbufs "$dev"
	mount -t xfs -o ro,norecovery "$dev" "$T/v"
}
cold
on_exit "umount -l '$T/v'"
ln -s "$(realpath "$(command -v ls)")" "$T/dra-ls"
LC_ALL=C "$T/dra-ls" -l --time-style=+%s "$T/v/dir" >"$T/off.out"

# diraheadctl prefetch: the same rule by default on a block device, never on FUSE
field() { sed -n "s/.* $1=\([0-9]*\) .*/\1/p" "$2"; }
cold
"$BUILD/diraheadctl" prefetch "$T/v/dir" >"$T/auto.out"
cold
"$BUILD/diraheadctl" prefetch --groups=no "$T/v/dir" >"$T/no.out"
"$BUILD/diraheadctl" prefetch "$T/slow/flat2" >"$T/fuse.out"
cat "$T/auto.out" "$T/no.out" "$T/fuse.out"
assert_eq "$(field entries "$T/auto.out")" $FILES "diraheadctl prefetch: entries"
assert_le "$(field requests "$T/auto.out")" $((FILES / 4)) "diraheadctl prefetch: requests"
assert_eq "$(field requests "$T/no.out")" $FILES "diraheadctl prefetch --groups=no: requests"
assert_eq "$(field requests "$T/fuse.out")" 300 "diraheadctl prefetch on FUSE: requests"

printf "[metrics]\naddress =\n[filter]\ncomm_include = dra-*\n[detect]\narm = always\n[policy]\nenabled = no\n[daemon]\nlog_level = debug\n" >"$DAEMON_CONF"
daemon_start
cold
LC_ALL=C "$T/dra-ls" -l --time-style=+%s "$T/v/dir" >"$T/on.out"
ctl stats | grep -E 'scans|prefetched|grouped' || true
cmp "$T/off.out" "$T/on.out" || fail "ls -l printed something else with the daemon"
assert_ge "$(daemon_stat scans_started)" 1 "scans started"
got=$(daemon_stat entries_prefetched) grouped=$(daemon_stat entries_grouped)
info "$got entries prefetched by $((got - grouped)) requests ($grouped read with their group)"
assert_ge "$got" $((FILES / 2)) "entries prefetched"
assert_ge "$grouped" $((got / 2)) "entries read with their inode group"
assert_le $((got - grouped)) $((FILES / 4)) "requests sent"

# FUSE: a lookup per name, never grouped
g0=$grouped p0=$got
"$T/dra-ls" -l "$T/slow/flat" >/dev/null
assert_ge $(($(daemon_stat entries_prefetched) - p0)) 150 "entries prefetched on slowfs"
assert_eq "$(daemon_stat entries_grouped)" "$g0" "entries grouped on slowfs"
daemon_stop
