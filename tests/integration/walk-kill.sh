#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# A walker killed mid-walk: its walk ends (process_exited), every directory the walk opened is
# closed, and the filesystem unmounts at once (no lazy unmount).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root

D=150 F=40
for i in $(seq 1 $D); do make_files "$T/back/tree/d$i" $F; done
ln -s "$(realpath "$(command -v find)")" "$T/dra-find"
printf '[metrics]\naddress =\n[filter]\ncomm_include = dra-*\n' >"$DAEMON_CONF"
slowfs_mount "$T/back" "$T/mnt" --latency-us 1000
daemon_start
drop_caches
"$T/dra-find" "$T/mnt/tree" -ls >/dev/null &
pid=$!
walking() { [ "$(daemon_stat walk_dirs_opened)" -ge 10 ]; }
no_walks() { [ "$(daemon_stat active_walks)" = 0 ]; }
open_fds() { ls -l "/proc/$DAEMON_PID/fd" 2>/dev/null | grep -c -- "$T/mnt" || true; }
no_fds() { [ "$(open_fds)" = 0 ]; }
wait_for 10 walking
assert_eq "$(daemon_stat active_walks)" 1 "walks running"
kill -KILL $pid
wait $pid 2>/dev/null || true
wait_for 3 no_walks
assert_eq "$(daemon_stat walks_ended.process_exited)" 1 "walks ended by the exit"
info "after the kill: $(open_fds) fds of the daemon on the filesystem"
wait_for 3 no_fds
umount "$T/mnt" || fail "unmount failed after the walk ended: $(fuser -vm "$T/mnt" 2>&1)"
info "walk ended, fds closed, unmounted"
daemon_stop
