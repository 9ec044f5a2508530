#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# A walk on a slow volume (issue 24): an ext4 image read through slowfs --read-us 500 by a
# read-only direct-I/O loop device, a tree two levels deep (4 x 20 directories of 50 files).
# ext4 reads sibling directories' blocks and 32 inode-table blocks ahead, so find lists and
# stats a leaf in well under a millisecond and has closed the directory's fd (fts closes a
# directory once read) before the daemon's opener runs: the walk's top must be found where the
# program still holds it (fts keeps a walk's ancestors open; procdir_open_held), or every walk
# there ended open_failed and nothing was listed ahead.
# Counted, never timed: the daemon's counters (a block device does not say who read what).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd mkfs.ext4 losetup find

TOP=4 DIRS=20 FILES=50
LEAVES=$((TOP * DIRS * FILES))
mkdir -p "$T/back" "$T/fill" "$T/v"
truncate -s 200M "$T/back/ext4.img"
mkfs_isolated mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$T/back/ext4.img"
mount -o loop "$T/back/ext4.img" "$T/fill"
on_exit "umount -l '$T/fill' 2>/dev/null"
for i in $(seq 1 $TOP); do
	for j in $(seq 1 $DIRS); do make_files "$T/fill/tree/t$i/d$j" $FILES; done
done
umount "$T/fill"
slowfs_mount "$T/back" "$T/slow" --latency-us 0 --read-us 500
dev=$(losetup -r --direct-io=on --find --show "$T/slow/ext4.img")
on_exit "losetup -d '$dev'"
mount -t ext4 -o ro "$dev" "$T/v"
on_exit "umount -l '$T/v'"
ln -s "$(realpath "$(command -v find)")" "$T/dra-find"

printf "[metrics]\naddress =\n[filter]\ncomm_include = dra-*\n[daemon]\nlog_level = debug\n" >"$DAEMON_CONF"
daemon_start
"$T/dra-find" "$T/v/tree" -ls >/dev/null
ctl stats | grep -E 'walk|prefetched|skip.*fast|ended' || true
assert_ge "$(daemon_stat walks_started)" 1 "walks started"
assert_eq "$(daemon_stat walks_ended.open_failed)" 0 "walks whose top could not be opened"
assert_ge "$(daemon_stat walk_dirs_opened)" $((TOP * DIRS / 2)) "directories listed by the walks (of $((TOP * DIRS)))"
daemon_stop
