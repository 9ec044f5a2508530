#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Arming follows the [filter] rules (gate_blocked in gate.c): a cold `ls -l` by a process of an
# excluded cgroup, or by a program whose name is not included, leaves the hooks detached (its
# signals are counted as ignored_filter, no arm); the same `ls -l` by an included program
# outside that cgroup arms and is prefetched.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
# A cgroup v2 hierarchy: the mounted one, or one mounted here (as daemon-cgroup.sh).
CGROOT=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
if [ -z "$CGROOT" ]; then
	mkdir -p "$T/cgroup2"
	mount -t cgroup2 cgroup2 "$T/cgroup2" || skip "cannot mount cgroup2 (kernel without cgroup v2?)"
	on_exit "umount '$T/cgroup2'"
	CGROOT=$T/cgroup2
fi

N=1000
for d in cg comm ok; do make_files "$T/back/$d" $N; done
CG=dirahead-arm-filter-$$
mkdir "$CGROOT/$CG"
on_exit "rmdir '$CGROOT/$CG'"
ln -s "$(realpath "$(command -v ls)")" "$T/dra-ls"
ln -s "$(realpath "$(command -v ls)")" "$T/other-ls"
printf '[metrics]\naddress =\n[filter]\ncomm_include = dra-*\ncgroup_exclude = /%s\n[detect]\nquiet_s = 2\n' \
	"$CG" >"$DAEMON_CONF"
slowfs_mount "$T/back" "$T/mnt" --latency-us 200
daemon_start

drop_caches
# in the excluded cgroup (moved there before the exec: the cgroup is the ls's own)
sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" -l "$3"' sh "$CGROOT/$CG" "$T/dra-ls" "$T/mnt/cg" >/dev/null
drop_caches
"$T/other-ls" -l "$T/mnt/comm" >/dev/null
ctl stats | grep -E '^(arm|sentinel)' || true
assert_eq "$(daemon_stat arms)" 0 "arms by excluded programs"
assert_ge "$(daemon_stat sentinel_signals.ignored_filter)" 2 "their signals ignored for the filter"

drop_caches
"$T/dra-ls" -l "$T/mnt/ok" >/dev/null &
pid=$!
wait $pid
assert_eq "$(daemon_stat arms)" 1 "arms by an included program"
own=$(slowfs_stat "pid.$pid.lookup")
info "included ls -l: $own of $N lookups its own"
assert_le "$own" $((N / 2)) "the included ls -l helped"
daemon_stop
echo PASS
