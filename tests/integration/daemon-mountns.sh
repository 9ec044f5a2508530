#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Scans by processes in another mount namespace (unshare -m, private propagation), as in a
# container.  The daemon must open the directory through /proc/PID/{fd,cwd,root}, as the process
# sees it, and check its device and inode:
#   A. `ls -l` of a slowfs directory bind-mounted at a path that exists only inside the namespace
#      (a tmpfs mounted there): helped (the app sends at most 20% of the lookups).
#   B. a slowfs directory A bind-mounted over directory C, listed (os.listdir, fd closed: only
#      the path names it) and stat'ed by absolute path: the path means A to the process and C to
#      the daemon's namespace.  A is prefetched, C is not touched.
#   C. the bind mount is swapped between the listing and the stats: what the path names now is
#      not the directory BPF saw listed; counted as skips.mismatch, nothing prefetched anywhere.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd unshare python3

PY=$(python3 -c 'import sys; print(sys.executable)') # not a pyenv shim: it lists dirs itself
N=2000
for k in 1 2 3; do
	make_files "$T/back/a$k" $N a
	make_files "$T/back/b$k" $N b
	make_files "$T/back/m$k" 500 m
	make_files "$T/back/n$k" 500 m
done
make_files "$T/back/c" $N c
slowfs_mount "$T/back" "$T/mnt" --latency-us 1000
mkdir -p "$T/ns"
# the hooks attached all along: what is tested is where the daemon opens directories, not how
# soon it attaches them (beside three busy loops, ls made 880 of its 2,000 lookups before the
# hooks attached on its first blocked call had seen its scan)
printf '[metrics]\naddress =\n[detect]\narm = always\n' >"$DAEMON_CONF"
daemon_start
export T PY

# in_ns SCRIPT: runs bash SCRIPT in a new private mount namespace with a tmpfs on $T/ns, so that
# paths below $T/ns exist only there.  The script writes the application's pid to $T/app.pid,
# so that slowfs's per-process counters can be read for it; in_ns sets APP to it.
in_ns() {
	rm -f "$T/app.pid"
	unshare -m --propagation private bash -c 'set -e; mount -t tmpfs none "$T/ns"; '"$1" ||
		fail "the namespaced command failed: $1"
	APP=$(cat "$T/app.pid")
}
# poll SECONDS CMD...: like wait_for, but returns false on timeout
poll() {
	local i
	for ((i = 0; i < $1 * 50; i++)); do "${@:2}" >/dev/null 2>&1 && return 0; sleep 0.02; done
	return 1
}
# Judged by counters, not by the daemon's log: the log is rate-limited, and other processes'
# scans on a busy machine can fill it.
# attempt CASE: runs CASE 1, 2, 3 (each on fresh directories) until it returns 0.  A case
# returns 2 when the daemon did nothing at all for its app: the detector may not have confirmed
# the scan (its per-process state can be evicted by a flood of listings from other processes on
# a busy machine), which is not the daemon's doing, so it is tried again; a third miss fails.
attempt() {
	local k rc
	for k in 1 2 3; do
		rc=0
		"$1" $k || rc=$?
		[ $rc = 0 ] && return 0
		info "$1: no scan confirmed for the app, trying again"
	done
	fail "$1: the daemon did nothing for the app in 3 attempts (no scan confirmed, or not prefetched)"
}

# --- A. a path that exists only in the namespace --------------------------------------------
case_a() {
	slowfs_ctl reset >/dev/null
	PRE0=$(daemon_stat entries_prefetched)
	in_ns 'mkdir "$T/ns/view"; mount --bind "$T/mnt/a'$1'" "$T/ns/view"
		echo $$ >"$T/app.pid"; exec ls -l "$T/ns/view" >/dev/null'
	[ -e "$T/ns/view" ] && fail "$T/ns/view exists outside the namespace"
	judge A "ls -l in the namespace"
}
# judge CASE WHAT: the app was helped by this daemon: it sent at most 20% of the lookups, and
# this daemon sent some, or (if another helper's daemon got there first and ours found them
# cached) counted at least N entries prefetched.  Returns 2 if the daemon sent none and the app
# all of them: no scan was confirmed.
judge() {
	local own ours pre
	own=$(slowfs_stat "pid.$APP.lookup")
	ours=$(slowfs_stat "pid.$DAEMON_PID.lookup")
	pre=$(($(daemon_stat entries_prefetched) - PRE0))
	info "$1: $2 sent $own of $N lookups itself, the daemon $ours (it counts $pre prefetched)"
	[ "$ours" = 0 ] && [ "$own" -gt $((N / 5)) ] && return 2
	assert_le "$own" $((N / 5)) "$1: lookups the app sent itself"
	[ "$ours" -ge 1 ] || [ "$pre" -ge $N ] || fail "$1: this daemon did not prefetch"
}
attempt case_a

# --- B. the same path names different directories in the two namespaces ---------------------
mismatch0=$(daemon_stat skips.mismatch)
case_b() {
	slowfs_ctl reset >/dev/null
	PRE0=$(daemon_stat entries_prefetched)
	in_ns 'mount --bind "$T/mnt/b'$1'" "$T/mnt/c"; echo $$ >"$T/app.pid"
		exec "$PY" -c "import os, sys
d = sys.argv[1]
names = os.listdir(d)
assert all(n.startswith(\"b\") for n in names)
for n in names: os.stat(d + \"/\" + n)" "$T/mnt/c"'
	judge B "os.listdir + os.stat of the shadowing directory"
}
attempt case_b
assert_eq "$(daemon_stat skips.mismatch)" "$mismatch0" "B: skips.mismatch (the daemon opened the wrong directory)"
# C's entries were never fetched: stat'ing them asks slowfs for each, the probe or the daemon
# (a run of stats without a listing is prefetched too), so all lookups count.
slowfs_ctl reset >/dev/null
"$PY" -c 'import os, sys
d = sys.argv[1]
for i in range(1, int(sys.argv[2]) + 1): os.stat("%s/c%06d" % (d, i))' "$T/mnt/c" $N
probe=$(slowfs_stat total.lookup)
info "B: stat of the shadowed directory's $N entries afterwards: $probe lookups"
assert_ge "$probe" $((N * 95 / 100)) "B: lookups for the shadowed directory (was it prefetched?)"

# --- C. the path is re-pointed between the listing and the stats ----------------------------
# The app lists, says so and waits on its stdin; the shell swaps the mount in the namespace;
# then the app stats (so the app itself does nothing in between that the detector could see).
case_c() {
	slowfs_ctl reset >/dev/null
	mismatch0=$(daemon_stat skips.mismatch)
	in_ns 'mkdir "$T/ns/view"; mount --bind "$T/mnt/m'$1'" "$T/ns/view"
		coproc "$PY" -u -c "import os, sys
d = sys.argv[1]
names = os.listdir(d)
print(\"listed\")
sys.stdin.readline()
for n in names: os.stat(d + \"/\" + n)" "$T/ns/view"
		echo $COPROC_PID >"$T/app.pid"
		read -r _ <&"${COPROC[0]}"
		umount "$T/ns/view"; mount --bind "$T/mnt/n'$1'" "$T/ns/view"
		echo go >&"${COPROC[1]}"
		wait $COPROC_PID'
	own=$(slowfs_stat "pid.$APP.lookup")
	info "C: swapped bind mount: the app sent $own of 500 lookups itself"
	assert_ge "$own" 490 "C: lookups the app sent itself"
	assert_eq "$(slowfs_stat "pid.$DAEMON_PID.lookup")" 0 "C: lookups sent by the daemon"
	mismatched() { [ "$(daemon_stat skips.mismatch)" -gt "$mismatch0" ]; }
	poll 2 mismatched || return 2
	info "C: counted as skips.mismatch"
}
attempt case_c

ctl stats | grep -E '^(scans|skips\.mismatch|entries_prefetched|hits)'
daemon_stop
echo PASS
