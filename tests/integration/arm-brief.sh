#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# A filesystem judged fast is judged again, and the syscall hooks armed for it, only by calls
# that go on blocking (the sentinel's spell, at least its 200 ms rate interval: arm.h
# arm_overturns_fast), not by a brief one.  A warm program sleeps now and then where a few of
# its blocks were evicted (a warm btrfs `ls -l` of 100,000 files read 1-3 blocks a run here),
# and each such re-judgment armed the hooks for quiet_s and more, at the cost of every syscall
# on the machine.  On slowfs whose entries at depth 3 wait 5 ms (--depth-latency):
#  1. a cold `ls -l` of a directory at depth 2 (its entries answered at once) arms from cold and
#     is judged fast;
#  2. a cold `ls -l` of 8 slow files (~50 ms of blocking): not armed, the verdict stays fast,
#     the signal counted as ignored_verdict;
#  3. a cold `ls -l` of 400 slow files (~2 s): armed, judged again, prefetched; the program
#     sends under half of its lookups itself.
# Counted, never timed: the daemon's counters and slowfs's per-process lookups.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root

NFAST=600 NBRIEF=8 NLONG=400
make_files "$T/back/fast" $NFAST
make_files "$T/back/d/brief" $NBRIEF
make_files "$T/back/d/long" $NLONG
ln -s "$(realpath "$(command -v ls)")" "$T/dra-ls"
# prefetch pays above 15 x 100 us (the prior cost of an entry: nothing is prefetched before
# step 3): the fast directory's stats (FUSE at no delay: 10-30 us, 330 us beside two busy loops)
# are judged fast, the slow ones (5 ms) pay, on a busy machine too
printf '[metrics]\naddress =\n[filter]\ncomm_include = dra-*\n[detect]\nquiet_s = 1\n[policy]\nstart_factor = 15\nentry_cost_us = 100\n[daemon]\nlog_level = debug\n' >"$DAEMON_CONF"
# the mount's root is depth 0: fast and d 1, fast's files and brief, long 2, their files 3
slowfs_mount "$T/back" "$T/mnt" --depth-latency 3:5000
dev=$(awk -v m="$T/mnt" '$5 == m { print $3 }' /proc/self/mountinfo)
disarmed() { [ "$(daemon_stat armed)" = 0 ]; }
run() { # DIR: a cold ls -l of it; its own lookups into $T/own
	local pid
	drop_caches
	slowfs_ctl reset >/dev/null
	"$T/dra-ls" -l "$T/mnt/$1" >/dev/null &
	pid=$!
	wait $pid || fail "ls -l $1 failed"
	slowfs_stat "pid.$pid.lookup" >"$T/own"
}

daemon_start
run fast
assert_eq "$(daemon_stat arms)" 1 "arms by the first cold ls -l (first contact)"
assert_eq "$(daemon_stat "filesystems.$dev.verdict")" fast "verdict of the fast directory's stats"
wait_for 30 disarmed

i0=$(daemon_stat sentinel_signals.ignored_verdict)
run d/brief
ctl stats | grep -E '^(arm|sentinel)' || true
assert_eq "$(daemon_stat arms)" 1 "arms by a brief spell of blocking on a fast filesystem"
assert_eq "$(daemon_stat "filesystems.$dev.verdict")" fast "verdict after the brief spell"
assert_ge "$(daemon_stat sentinel_signals.ignored_verdict)" $((i0 + 1)) "signals ignored for the verdict"
grep -q "re-judged: .*on $dev, judged fast before" "$DAEMON_LOG" && fail "a brief spell re-judged the filesystem"

p0=$(daemon_stat entries_prefetched)
run d/long
own=$(cat "$T/own")
info "$NLONG slow files: $own lookups sent by ls itself, $(($(daemon_stat entries_prefetched) - p0)) prefetched"
assert_eq "$(daemon_stat arms)" 2 "arms by calls that went on blocking"
grep -q "re-judged: .*on $dev, judged fast before" "$DAEMON_LOG" || fail "the long spell did not re-judge"
assert_ge $(($(daemon_stat entries_prefetched) - p0)) $((NLONG / 4)) "entries prefetched for the long spell"
assert_le $((own * 2)) $NLONG "lookups ls sent itself in the long spell"
daemon_stop
slowfs_unmount
echo PASS
