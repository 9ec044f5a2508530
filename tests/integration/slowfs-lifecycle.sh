#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# slowfs start and stop: SIGTERM, SIGINT and an external unmount end it cleanly (exit 0, mount
# gone, control socket removed, even while stalled); bad input exits 2 with a message.
. "$(dirname "$0")/../lib/lib.sh"
need_root
[ -c /dev/fuse ] || skip "needs /dev/fuse"
SLOWFS=$BUILD/slowfs

B=$T/backing
make_files "$B" 5

# start_bare MNT: slowfs without the helper, so the test sees its exit status; sets PID, SOCK
start_bare() {
	mkdir -p "$1"
	SOCK=$T/$(basename "$1").sock
	"$SLOWFS" --control "$SOCK" "$B" "$1" 2>"$T/err" &
	PID=$!
	on_exit "_slowfs_unmount $PID '$SOCK' '$1'"
	wait_for 10 _slowfs_mounted "$1"
	wait_for 10 test -S "$SOCK"
	stat "$1/f000001" >/dev/null || fail "stat through slowfs failed"
}

# stop_with MNT HOW...: stop slowfs by HOW, require exit 0 within 5 s and no mount left
stop_with() {
	local mnt=$1 rc=0; shift
	"$@"
	wait_for 5 bash -c "! kill -0 $PID 2>/dev/null"
	wait $PID || rc=$?
	assert_eq "$rc" 0 "exit status after '$*' ($(cat "$T/err"))"
	_slowfs_mounted "$mnt" && fail "$mnt still mounted after '$*'"
	[ -e "$SOCK" ] && fail "control socket left behind after '$*'"
	return 0
}

start_bare "$T/m1"
stop_with "$T/m1" kill -TERM $PID

start_bare "$T/m2"
stop_with "$T/m2" kill -INT $PID

start_bare "$T/m3"
stop_with "$T/m3" fusermount3 -u "$T/m3"

# SIGTERM while stalled with a request held: still a clean exit, and the caller is not left hanging.
start_bare "$T/m4"
"$BUILD/slowfsctl" "$SOCK" stall >/dev/null
stat "$T/m4/f000002" >/dev/null 2>&1 &
sp=$!
sleep 0.3
kill -0 $sp 2>/dev/null || fail "stat was not held by the stall"
stop_with "$T/m4" kill -TERM $PID
wait_for 5 bash -c "! kill -0 $sp 2>/dev/null"

# Bad input: exit status 2 and a message naming the problem.
mkdir -p "$T/mnt" "$T/busy"
touch "$T/file"
slowfs_mount "$B" "$T/busy"
bad() { # bad EXPECTED-TEXT ARGS...
	local want=$1; shift
	expect_exit 2 "$SLOWFS" "$@"
	assert_contains "$OUT" "$want" "message for: slowfs $*"
}
bad "backing directory" "$T/no-such-dir" "$T/mnt"
bad "backing directory" "$T/file" "$T/mnt"
bad "mountpoint" "$B" "$T/no-such-mnt"
bad "not a directory" "$B" "$T/file"
bad "busy" "$B" "$T/busy"
bad "inside the backing directory" "$B" "$B"
bad "--latency-us" --latency-us abc "$B" "$T/mnt"
bad "--latency-us" --latency-us -1 "$B" "$T/mnt"
bad "--lookup-us" --lookup-us 12x "$B" "$T/mnt"
bad "--jitter-us" --jitter-us "" "$B" "$T/mnt"
bad "--attr-timeout" --attr-timeout soon "$B" "$T/mnt"
bad "--entry-timeout" --entry-timeout -0.5 "$B" "$T/mnt"
bad "unknown option" --bogus "$B" "$T/mnt"
bad "needs an argument" "$B" "$T/mnt" --latency-us
bad "expected BACKING and MOUNTPOINT" "$B"
bad "control socket" --control "$T/no-such-dir/sock" "$B" "$T/mnt"
_slowfs_mounted "$T/mnt" && fail "a failed start left a mount behind"
# fractional timeouts are accepted
slowfs_mount "$B" "$T/frac" --attr-timeout 0.25 --entry-timeout 1.5
assert_eq "$(slowfs_stat attr_timeout)" 0.25 "fractional attr timeout"
slowfs_unmount
slowfs_unmount "$T/busy"
