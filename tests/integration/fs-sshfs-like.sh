#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# First contact with a filesystem that looks, to the kernel, like sshfs: FUSE without parallel
# dirops (lookups in one directory serialize), with readdirplus, and a client that answers a
# directory it listed from its cache for a while (slowfs --no-parallel-dirops --readdirplus
# --cache-listing).  Per-entry prefetch cannot pay there: a flat `ls -l` gets no request at all
# from the daemon (no READDIR, no OPENDIR, no LOOKUP, nothing: anything it sent would hold the
# directory or queue in front of the program's lookups), counted per pid by slowfs, and its
# blocked calls do not even arm the syscall hooks.  A tree walk there arms (it blocks listing a
# second directory) and works ahead of find: it lists the directories ahead and fetches their
# entries, never listing only (that saves nothing where the kernel keeps no listing).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd find ls

N=2000 D=60 F=20
make_files "$T/back/flat" $N
for i in $(seq 1 $D); do make_files "$T/back/tree/d$i" $F; done
ln -s "$(realpath "$(command -v ls)")" "$T/dra-ls"
ln -s "$(realpath "$(command -v find)")" "$T/dra-find"
printf "[metrics]\naddress =\n[filter]\ncomm_include = dra-*\n[daemon]\nlog_level = debug\n" >"$DAEMON_CONF"
SSHFS_LIKE=(--no-parallel-dirops --readdirplus --cache-listing 60 --latency-us 2000)

daemon_start
dstat() { slowfs_stat "pid.$DAEMON_PID.$1"; }

info "flat ls -l on a fresh sshfs-like mount: the daemon sends nothing"
for run in 1 2 3; do
	slowfs_mount "$T/back" "$T/mnt" "${SSHFS_LIKE[@]}"
	assert_eq "$(slowfs_stat parallel_dirops)" 0 "slowfs negotiated no parallel dirops"
	assert_eq "$(slowfs_stat readdirplus)" 1 "slowfs negotiated readdirplus"
	s0=$(daemon_stat sentinel_signals.ignored_serial)
	"$T/dra-ls" -l "$T/mnt/flat" >/dev/null || fail "ls failed"
	# its blocked calls were heard, and left the hooks detached: lookups serialize there, and
	# it listed one directory (what the daemon did about them is over once they are)
	wait_for 10 eval '[ "$(daemon_stat sentinel_signals.ignored_serial)" -gt "$s0" ]'
	sleep 0.5
	assert_eq "$(daemon_stat arms)" 0 "run $run: arms by a flat ls -l"
	info "run $run: the daemon sent readdir $(dstat readdir), opendir $(dstat opendir), lookup $(dstat lookup), all $(dstat all)"
	assert_eq "$(dstat readdir)" 0 "run $run: READDIRs by the daemon"
	assert_eq "$(dstat readdirplus)" 0 "run $run: READDIRPLUSes by the daemon"
	assert_eq "$(dstat opendir)" 0 "run $run: OPENDIRs by the daemon"
	assert_eq "$(dstat lookup)" 0 "run $run: LOOKUPs by the daemon"
	assert_eq "$(dstat all)" 0 "run $run: requests of any kind by the daemon"
	slowfs_unmount "$T/mnt"
done
assert_eq "$(daemon_stat scans_started)" 0 "scans started"
assert_eq "$(daemon_stat walks_started)" 0 "walks started by a flat ls -l"

info "a tree walk on the same mount works ahead of find"
slowfs_mount "$T/back" "$T/mnt" "${SSHFS_LIKE[@]}"
"$T/dra-find" "$T/mnt/tree" -ls >/dev/null || fail "find failed"
wait_for 10 eval '[ "$(daemon_stat walks_started)" -ge 1 ] && [ "$(daemon_stat active_walks)" = 0 ]'
rd=$(($(dstat readdir) + $(dstat readdirplus)))
info "find: walks $(daemon_stat walks_started) (list only $(daemon_stat walks_list_only)); the daemon sent readdir(plus) $rd, lookup $(dstat lookup)"
assert_ge "$(daemon_stat arms)" 1 "arms by find"
assert_ge "$(daemon_stat walks_ahead_only)" 1 "walks fetching only ahead of find"
assert_eq "$(daemon_stat walks_list_only)" 0 "walks listing only"
assert_ge "$rd" 1 "listings by the daemon ahead of find"
slowfs_unmount "$T/mnt"
daemon_stop
echo PASS
