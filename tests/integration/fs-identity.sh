#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Directories are matched by what holds on every filesystem, not by the device number stat
# reports: on btrfs, stat gives each subvolume an anonymous device of its own while BPF sees the
# superblock's.  `ls -l` of a directory at btrfs's top level, in a subvolume and in a nested
# subvolume, and of an overlayfs directory (merged from lower and upper): every one is started
# (the cost model off: this is about identity, not pay-off), none skipped as `mismatch`.  And a
# walk from btrfs's top level into a subvolume enters it (a subvolume is no mount point), while
# a filesystem mounted inside the tree is still not entered.  A run of stats by path there (found
# by the daemon with statx) is judged under the superblock's device, as BPF's runs are.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd mkfs.btrfs btrfs losetup find python3

N=400
modprobe btrfs 2>/dev/null || true
modprobe overlay 2>/dev/null || true
grep -qw btrfs /proc/filesystems || skip "kernel without btrfs"
grep -qw overlay /proc/filesystems || skip "kernel without overlayfs"

# The btrfs image is filled on local disk, then read through slowfs --read-us by a read-only
# direct-I/O loop device (a slow disk), so that a walk has something to get ahead of.
mkdir -p "$T/back" "$T/fill"
truncate -s 300M "$T/back/btrfs.img"
mkfs_isolated mkfs.btrfs -q "$T/back/btrfs.img" >/dev/null
mount -o loop "$T/back/btrfs.img" "$T/fill"
on_exit "umount -l '$T/fill'"
make_files "$T/fill/top" $N
btrfs -q subvolume create "$T/fill/sub" >/dev/null
make_files "$T/fill/sub/dir" $N
btrfs -q subvolume create "$T/fill/sub/nested" >/dev/null
make_files "$T/fill/sub/nested" $N
# a walk from the top level: into the subvolume zsub (no mount point), not into a tmpfs on m
mkdir -p "$T/fill/walk/m"
for i in $(seq 1 12); do make_files "$T/fill/walk/d$i" 60; done
btrfs -q subvolume create "$T/fill/walk/zsub" >/dev/null
for i in $(seq 1 6); do make_files "$T/fill/walk/zsub/s$i" 60; done
umount "$T/fill"
slowfs_mount "$T/back" "$T/slow" --latency-us 0 --read-us 300
dev=$(losetup -r --direct-io=on --find --show "$T/slow/btrfs.img")
on_exit "losetup -d '$dev'"
mkdir "$T/b"
mount -t btrfs -o ro "$dev" "$T/b"
on_exit "umount -l '$T/b'"
top_dev=$(stat -c %d "$T/b/top")
sub_dev=$(stat -c %d "$T/b/sub/dir")
assert_ne "$sub_dev" "$top_dev" "btrfs subvolume device (the case this test is about)"

mkdir -p "$T/o/lower/d" "$T/o/upper" "$T/o/work" "$T/o/merged"
make_files "$T/o/lower/d" $N
make_files "$T/o/upper/d" $((N / 2)) u
mount -t overlay overlay -o "lowerdir=$T/o/lower,upperdir=$T/o/upper,workdir=$T/o/work" "$T/o/merged"
on_exit "umount -l '$T/o/merged'"

# only this test's programs: whatever else runs on the machine must not move the counters
cp "$(command -v ls)" "$T/daid-ls"
cp "$(command -v find)" "$T/daid-find"
ln -s "$(realpath "$(python3 -c 'import sys; print(sys.executable)')")" "$T/daid-py"
cat >"$T/statlist.py" <<'EOF'
import os, sys
for line in open(sys.argv[1]):
    os.lstat(line.rstrip("\n"))
EOF
# (arm = always: a run by path is found only in a process the hooks saw start)
printf '[metrics]\naddress =\n[daemon]\nlog_level = debug\n[filter]\ncomm_include = daid-*\n[policy]\nenabled = no\n[detect]\narm = always\n' >"$DAEMON_CONF"
daemon_start
# logged PID: the daemon has said what it did with PID's scan
logged() { grep -qE "^diraheadd: scan( skipped)?: pid $1 " "$DAEMON_LOG"; }

for d in "$T/b/top" "$T/b/sub/dir" "$T/b/sub/nested" "$T/o/merged/d"; do
	drop_caches
	"$T/daid-ls" -l "$d" >/dev/null &
	pid=$!
	wait $pid
	wait_for 5 logged $pid
	line=$(grep -E "^diraheadd: scan( skipped)?: pid $pid " "$DAEMON_LOG" | head -n1)
	info "$d: ${line:-no scan}"
	assert_contains "$line" "diraheadd: scan: pid $pid (daid-ls)" "$d started"
done
assert_eq "$(daemon_stat skips.mismatch)" 0 "scans skipped as mismatch"

# stats by path, nothing listed (a run the daemon finds by path, with statx): judged under the
# superblock's device, the one BPF and the sentinel name, not the subvolume's that stat reports
# (a verdict kept under that one was never seen by the sentinel: a warm btrfs `ls -l` judged
# fast armed the hooks run after run)
sb=$(awk -v m="$T/b" '$5 == m { print $3 }' /proc/self/mountinfo)
for d in "$T/b/top" "$T/b/sub/dir"; do
	(cd "$d" && ls -f | grep -v '^\.' | sed "s|^|$d/|") >"$T/names"
	drop_caches
	"$T/daid-py" "$T/statlist.py" "$T/names" &
	pid=$!
	wait $pid
	wait_for 5 grep -q "^diraheadd: scan: pid $pid (daid-py) $d," "$DAEMON_LOG"
	sdev=$(stat -c '%Hd:%Ld' "$d")
	assert_ne "$sdev" "$sb" "stat's device of $d (the case this is about)"
	assert_eq "$(ctl stats | grep -c "^filesystems\.$sdev\.")" 0 "entries under stat's device $sdev"
done
assert_ge "$(ctl stats | grep -c "^filesystems\.$sb\.")" 1 "entries under the superblock's device $sb"

# find from the top level: the walk descends into the subvolume but not into the tmpfs (whose
# files find lists and stats as a scan of their own)
mount -t tmpfs tmpfs "$T/b/walk/m"
on_exit "umount -l '$T/b/walk/m'"
make_files "$T/b/walk/m" 60
opened0=$(daemon_stat walk_dirs_opened)
ne0=$(daemon_stat walk_not_entered)
drop_caches
"$T/daid-find" "$T/b/walk" -ls >/dev/null
wait_for 5 eval '[ "$(daemon_stat active_walks)" = 0 ]' # (evaluated each try, not once)
opened=$(($(daemon_stat walk_dirs_opened) - opened0))
info "walk: $opened directories opened by the daemon, not entered +$(($(daemon_stat walk_not_entered) - ne0))"
# 19 directories can be entered (d1-12, zsub and s1-6); without the subvolume at most 13
assert_ge "$opened" 16 "directories the walk opened (into the subvolume)"
assert_le "$opened" 19 "directories the walk opened (not into the tmpfs)"
assert_ge $(($(daemon_stat walk_not_entered) - ne0)) 1 "the tmpfs mount point not entered"
assert_eq "$(daemon_stat skips.mismatch)" 0 "scans skipped as mismatch after the walk"
daemon_stop
echo "PASS"
