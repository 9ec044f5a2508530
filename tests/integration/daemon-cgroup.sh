#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# [filter] cgroup_include / cgroup_exclude: `ls -l` of a directory on slowfs (1 ms per lookup),
# run from a process moved into a cgroup v2 directory made for the test.
#   exclude = the test's cgroup (an ancestor of the one ls runs in): skipped as "filtered" (stats
#     and metrics), the daemon sends no lookup, ls sends them all; the same ls from outside that
#     cgroup is prefetched.
#   reload with include = that cgroup, exclude = a string prefix that is not a path component of
#     it: now the ls inside is prefetched (ls sends at most a fifth of the lookups) and the one
#     outside is filtered.
# Lookups are counted per process by slowfs, so another daemon prefetching the same directories
# cannot make a skipped scan look prefetched by this one; the daemon's (debug) log says what it
# did with each ls, by pid, since its counters also count other processes' scans on this machine.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd findmnt

N=400

# A cgroup v2 hierarchy: the mounted one, or one mounted here.
CGROOT=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
if [ -z "$CGROOT" ]; then
	mkdir -p "$T/cgroup2"
	mount -t cgroup2 cgroup2 "$T/cgroup2" || skip "cannot mount cgroup2 (kernel without cgroup v2?)"
	on_exit "umount '$T/cgroup2'"
	CGROOT=$T/cgroup2
fi
TOPDIR=$CGROOT/dirahead-$TEST_NAME-$$
INNERDIR=$TOPDIR/inner
# Cleanup: processes still inside go back to the root cgroup, then the directories go (a task
# that just exited may keep its cgroup busy for a moment: retry).
cg_cleanup() {
	local d p i
	for d in "$INNERDIR" "$TOPDIR"; do
		for ((i = 0; i < 100; i++)); do
			[ -d "$d" ] || break
			while read -r p; do echo "$p" >"$CGROOT/cgroup.procs"; done <"$d/cgroup.procs"
			rmdir "$d" 2>/dev/null || sleep 0.05
		done
	done
}
on_exit cg_cleanup
mkdir "$TOPDIR" "$INNERDIR" || fail "cannot create cgroups under $CGROOT"

# The cgroup path as /proc/PID/cgroup shows it (relative to the hierarchy's root as this
# namespace sees it), learned from a process put there.
INNER=$(bash -c 'echo $$ >"$1/cgroup.procs" && sed -n "s/^0:://p" /proc/self/cgroup' \
	_ "$INNERDIR") || fail "cannot move a process into $INNERDIR"
TOP=${INNER%/inner}
assert_eq "$TOP/inner" "$INNER" "cgroup path of a process in $INNERDIR"
info "cgroup2 at $CGROOT; ls runs in $INNER"

for d in ex-in ex-out in-in in-out; do make_files "$T/back/$d" $N; done
slowfs_mount "$T/back" "$T/mnt" --latency-us 1000

# run_ls IN|OUT DIR: ls -l DIR from a process inside $INNER (checked) or from this shell's
# cgroup; sets LS_PID.
run_ls() {
	local where=$1 dir=$2
	if [ "$where" = IN ]; then
		bash -c 'echo $$ >"$1/cgroup.procs" && grep -qx "0::$2" /proc/self/cgroup &&
			exec ls -l "$3"' _ "$INNERDIR" "$INNER" "$dir" >/dev/null &
	else
		ls -l "$dir" >/dev/null &
	fi
	LS_PID=$!
	wait "$LS_PID" || fail "ls -l $dir ($where) failed"
}

# lookups PID: LOOKUP requests slowfs got from that process (its threads and io-wq workers too)
lookups() { slowfs_stat "pid.$1.lookup"; }
# logged PID WHAT: wait until the daemon logged that it prefetched ("scan") or skipped
# ("filtered") the scan of that ls
logged() {
	case $2 in
	scan) wait_for 5 grep -q "^diraheadd: scan: pid $1 (ls) " "$DAEMON_LOG" ;;
	filtered) wait_for 5 grep -q "^diraheadd: scan skipped: pid $1 (ls) .*: filtered$" "$DAEMON_LOG" ;;
	esac
}
# prefetched PID: entries the daemon prefetched for that ls, from its "scan end" line
prefetched() {
	local pat="^diraheadd: scan end: pid $1 (ls) .*: [a-z_]*, \([0-9]*\) prefetched,.*"
	wait_for 5 grep -q "$pat" "$DAEMON_LOG"
	sed -n "s/$pat/\1/p" "$DAEMON_LOG" | head -n 1
}
# filtered_metric: the filtered skips in the metrics
filtered_metric() { ctl metrics | sed -n 's/^dirahead_skips_total{reason="filtered"} //p'; }
# assert_prefetched WHERE: the ls just run was prefetched: the daemon logged its scan and fetched
# half its entries at least; with no other daemon here, ls sent at most a fifth of the lookups
# itself and the daemon half of them at least.
assert_prefetched() {
	local app
	logged "$LS_PID" scan
	app=$(lookups "$LS_PID")
	info "$1: ls sent $app of $N lookups itself, the daemon $(lookups "$DAEMON_PID")"
	assert_ge "$(prefetched "$LS_PID")" $((N / 2)) "entries prefetched for the ls $1"
	if [ "$others" = 0 ]; then
		assert_le "$app" $((N / 5)) "lookups ls sent itself $1"
		assert_ge "$(lookups "$DAEMON_PID")" $((N / 2)) "lookups the daemon sent (prefetch)"
	fi
}

# (the hooks attached from the start: this is about the scans' filter; an excluded process does
# not even arm them, see arm-filter.sh)
cat >"$DAEMON_CONF" <<EOF
[metrics]
address =
[detect]
arm = always
[filter]
cgroup_exclude = $TOP
EOF
daemon_start
# Another daemon on this machine may prefetch our directories too: then how many lookups ls
# sent itself, or this daemon sent, proves nothing; what this daemon logged still does.
others=$(($(pgrep -x diraheadd | wc -l) - 1))

info "exclude $TOP: ls inside $INNER"
run_ls IN "$T/mnt/ex-in"
logged "$LS_PID" filtered
assert_eq "$(lookups "$DAEMON_PID")" 0 "lookups sent by the daemon for an excluded scan"
app=$(lookups "$LS_PID")
info "excluded: ls sent $app of $N lookups itself"
[ "$others" = 0 ] && assert_ge "$app" $((N * 95 / 100)) "lookups ls sent itself when excluded"
assert_ge "$(daemon_stat skips.filtered)" 1 "filtered skips counted (stats)"
assert_ge "$(filtered_metric)" 1 "filtered skips counted (metrics)"

info "exclude $TOP: ls outside it"
run_ls OUT "$T/mnt/ex-out"
assert_prefetched "outside the excluded cgroup"

# The exclude entry is a string prefix of $INNER but not a path component of it: no match.
cat >"$DAEMON_CONF" <<EOF
[metrics]
address =
[detect]
arm = always
[filter]
cgroup_include = $TOP
cgroup_exclude = $TOP/inn
EOF
ctl reload >/dev/null || fail "reload failed: $(tail -n 5 "$DAEMON_LOG")"
slowfs_ctl reset >/dev/null

info "include $TOP: ls inside $INNER"
run_ls IN "$T/mnt/in-in"
assert_prefetched "inside the included cgroup"

info "include $TOP: ls outside it"
slowfs_ctl reset >/dev/null
before=$(filtered_metric)
run_ls OUT "$T/mnt/in-out"
logged "$LS_PID" filtered
assert_eq "$(lookups "$DAEMON_PID")" 0 "lookups the daemon sent for a scan not included"
assert_ge "$(filtered_metric)" $((before + 1)) "filtered skips counted (metrics)"

# A pattern that is not a cgroup path is refused with its line, and the old settings stay.
printf '[filter]\ncgroup_exclude = system.slice\n' >"$DAEMON_CONF"
expect_exit 1 "$BUILD/diraheadd" --check-config "$DAEMON_CONF"
assert_contains "$OUT" "dirahead.conf:2:" "error names the line"
assert_contains "$OUT" "cgroup_exclude" "error names the key"
daemon_stop
echo "PASS"
