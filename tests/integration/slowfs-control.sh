#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# slowfs control switches: `stall` holds new and already pending requests until `release`;
# `stall-pid TGID` holds one process's new requests only, until `release`;
# `fail-lookups ERRNO` makes lookups fail with that errno until `fail-lookups 0`.
. "$(dirname "$0")/../lib/lib.sh"

B=$T/backing M=$T/mnt
make_files "$B" 20
slowfs_mount "$B" "$M" --latency-us 1000 --lookup-us 200000

alive() { kill -0 "$1" 2>/dev/null; }

# A new request during a stall waits until release.
slowfs_ctl stall >/dev/null
assert_eq "$(slowfs_stat stalled)" 1 "stalled"
stat "$M/f000001" >/dev/null &
p=$!
sleep 0.5
alive $p || fail "stat finished although slowfs was stalled"
assert_ge "$(slowfs_stat pending_replies)" 1 "pending replies while stalled"
slowfs_ctl release >/dev/null
wait_for 5 bash -c "! kill -0 $p"
wait $p || fail "stat failed after release"

# A request already waiting out its latency (200 ms) when the stall starts waits too.
stat "$M/f000002" >/dev/null &
p=$!
sleep 0.05
slowfs_ctl stall >/dev/null
sleep 0.5
alive $p || fail "pending stat finished although slowfs was stalled"
start=$(now_ms)
slowfs_ctl release >/dev/null
wait $p || fail "stat failed after release"
assert_le "$(($(now_ms) - start))" 1000 "release did not answer the held request promptly"

# stall-pid: one process's requests are held, another's are answered.  The process waits on a
# fifo, so that it is stalled before it asks anything.
mkfifo "$T/gate"
bash -c 'read -r _ <"$2"; exec stat "$1" >/dev/null' _ "$M/f000005" "$T/gate" &
p=$!
slowfs_ctl stall-pid $p >/dev/null
assert_eq "$(slowfs_stat stalled_pid)" $p "stalled_pid"
echo go >"$T/gate"
sleep 0.5
alive $p || fail "stat of the stalled process finished"
assert_ge "$(slowfs_stat pending_replies)" 1 "replies held for the stalled process"
stat "$M/f000006" >/dev/null || fail "another process's stat during stall-pid"
slowfs_ctl release >/dev/null
wait $p || fail "stat failed after release"
assert_eq "$(slowfs_stat stalled_pid)" 0 "stalled_pid after release"
expect_exit 1 "$BUILD/slowfsctl" "$SLOWFS_CTL" stall-pid x

# fail-lookups: existing files become unreachable with the given errno.
slowfs_ctl fail-lookups EIO >/dev/null
assert_eq "$(slowfs_stat fail_lookups)" 5 "fail_lookups"
expect_exit 1 stat "$M/f000003"
assert_contains "$OUT" "Input/output error" "stat with fail-lookups EIO"
slowfs_ctl fail-lookups 13 >/dev/null
expect_exit 1 stat "$M/f000004"
assert_contains "$OUT" "Permission denied" "stat with fail-lookups 13"
slowfs_ctl fail-lookups 0 >/dev/null
stat "$M/f000003" >/dev/null || fail "stat failed after fail-lookups 0"

# bad commands are refused, with status 1
expect_exit 1 "$BUILD/slowfsctl" "$SLOWFS_CTL" fail-lookups bogus
expect_exit 1 "$BUILD/slowfsctl" "$SLOWFS_CTL" frobnicate
expect_exit 2 "$BUILD/slowfsctl" "$T/no-such-socket" stats
assert_eq "$(slowfs_ctl ping)" pong "ping"

slowfs_unmount
