#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Memory across restarts is keyed by the filesystem, not by the device it is attached to: two
# ext4 images attached in turn to the same loop device (same device number, source and options
# in mountinfo) are two filesystems.  With no udev record (this machine has none, nor have many
# containers) the key was "mount:ext4 /dev/loopN rw" for both, and the second inherited the
# first one's verdict: the bench's slow-volume images all shared one memory.  The kernel's
# FS_IOC_GETFSUUID names each.
# 1. Image A is judged fast; the state file holds it under A's UUID.
# 2. Image B on the same loop device after a restart: unknown (probed like any new filesystem).
# 3. Image A back on the same device after a restart: fast again, without a probe.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd mkfs.ext4 losetup blkid

SD=$T/sd
unset STATE_DIRECTORY
# start_factor 12: a warm local ls's first stats stay clearly under the start rule's threshold
printf '[metrics]\naddress =\n[filter]\ncomm_include = dru-*\n[detect]\narm = always\n[daemon]\nstate_dir = %s\n[policy]\nstart_factor = 12\n' \
	"$SD" >"$DAEMON_CONF"
ln -s "$(realpath "$(command -v ls)")" "$T/dru-ls"

for i in a b; do
	truncate -s 64M "$T/$i.img"
	mkfs_isolated mkfs.ext4 -q -F "$T/$i.img"
done
ua=$(blkid -s UUID -o value "$T/a.img")
ub=$(blkid -s UUID -o value "$T/b.img")
assert_ne "$ua" "$ub" "the two images' UUIDs"
dev=$(losetup --find --show "$T/a.img")
on_exit "losetup -d '$dev' 2>/dev/null"
mkdir -p "$T/m"
mount "$dev" "$T/m"
on_exit "umount -l '$T/m' 2>/dev/null"
make_files "$T/m/dir" 3000
swap_to() { # the image on the same loop device, mounted at the same place
	umount "$T/m"
	losetup -d "$dev"
	local i
	for i in $(seq 1 50); do losetup "$dev" "$T/$1.img" 2>/dev/null && break; sleep 0.1; done
	mount "$dev" "$T/m"
}
mdev=$(stat -c '%Hd:%Ld' "$T/m")
verdict() { daemon_stat "filesystems.$mdev.verdict"; }
fast_skipped() { [ "$(daemon_stat skips.fast_stats)" -ge 1 ]; }

# 1. A is fast (its listing warm: ls's stats a few microseconds each).
daemon_start
ls -ln "$T/m/dir" >/dev/null
"$T/dru-ls" -ln "$T/m/dir" >/dev/null
wait_for 5 fast_skipped
assert_eq "$(verdict)" fast "verdict of image A on $dev"
daemon_stop
assert_contains "$(cat "$SD/state.json")" "uuid:ext4:$ua" "state file"

# 2. B on the same device: nothing known of it.
swap_to b
assert_eq "$(stat -c '%Hd:%Ld' "$T/m")" "$mdev" "device number of image B"
daemon_start
assert_eq "$(verdict)" 0 "verdict of image B after the restart (A's must not carry over)"
daemon_stop

# 3. A again: known.
swap_to a
daemon_start
assert_eq "$(verdict)" fast "verdict of image A after the restart"
daemon_stop
echo "PASS: image A keyed uuid:ext4:$ua; B on the same $dev started unknown"
