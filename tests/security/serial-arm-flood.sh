#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Where lookups serialize (FUSE without parallel dirops, as sshfs) a process arms the syscall
# hooks only once it blocks listing a second directory, so what it listed last must be
# remembered per process.  An unprivileged user who spawns short-lived processes that each block
# listing one directory once (none of them ever arms) must not be able to push a walker's
# memory out and keep its walk from arming: the memory lives with the process's own BPF entry,
# not in a small table the flood shares.  The victim, root's `find` of 16 directories, arms
# while the flood runs; the flood's processes alone never do.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd setpriv find ls

U=65534
chmod 0711 "$T"
make_files "$T/back/flood" 20
NDIRS=16
for ((d = 1; d <= NDIRS; d++)); do make_files "$T/back/tree/d$d" 100; done
chmod -R a+rX "$T/back"
ln -s "$(realpath "$(command -v ls)")" "$T/dra-ls"
ln -s "$(realpath "$(command -v find)")" "$T/dra-find"
printf '[metrics]\naddress =\n[filter]\ncomm_include = dra-*\n' >"$DAEMON_CONF"
slowfs_mount "$T/back" "$T/mnt" --no-parallel-dirops --latency-us 2000
assert_eq "$(slowfs_stat parallel_dirops)" 0 "slowfs negotiated no parallel dirops"
daemon_start

# the flood: 4 loops of one-listing processes as nobody (each a new process, one blocked
# getdents64 of the same directory: never a second directory of its own)
flood_pids=()
for i in 1 2 3 4; do
	setpriv --reuid=$U --regid=$U --clear-groups bash -c \
		'while :; do "$0" -f "$1" >/dev/null; done' "$T/dra-ls" "$T/mnt/flood" &
	flood_pids+=($!)
done
on_exit 'kill ${flood_pids[*]} 2>/dev/null; wait ${flood_pids[*]}'
wait_for 20 eval '[ "$(daemon_stat sentinel_signals.ignored_serial)" -ge 50 ]'
assert_eq "$(daemon_stat arms)" 0 "arms by the flood alone"

drop_caches
"$T/dra-find" "$T/mnt/tree" -ls >/dev/null
info "during the flood: arms $(daemon_stat arms), signals ignored_serial $(daemon_stat sentinel_signals.ignored_serial), rate_limited $(daemon_stat sentinel_rate_limited)"
assert_ge "$(daemon_stat arms)" 1 "arms by the walker during the flood"
kill "${flood_pids[@]}" 2>/dev/null
wait "${flood_pids[@]}" 2>/dev/null || true # (killed: 143)
daemon_stop
echo PASS
