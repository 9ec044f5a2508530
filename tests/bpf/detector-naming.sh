#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Every way of naming the directory that a SCAN event offers (fd, cwd, path) leads to that
# directory: the harness opens /proc/PID/fd/N, /proc/PID/cwd, /proc/PID/{cwd,root}/PATH as the
# daemon will and compares dev+ino, while the scanning process waits.  Covers the stat forms
# "dir/name", "/abs/dir/name", bare name in the cwd, dirfd + name, and another fd on the same
# directory than the one listed (fts).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/detector.bash"

D=$T/top/dir
make_files "$D" 50
DINO=$(ino "$D")

cat >"$T/scan.py" <<'EOF'
import os, sys, time
mode, d, go = sys.argv[1:4]
if mode == "rel":
    os.chdir(os.path.dirname(d))
    rel = os.path.basename(d)
    for n in os.listdir(rel)[:3]:
        os.stat(os.path.join(rel, n))
elif mode == "abs":
    for n in os.listdir(d)[:3]:
        os.stat(os.path.join(d, n))
elif mode == "cwd":
    os.chdir(d)
    for n in os.listdir(".")[:3]:
        os.stat(n)
elif mode == "fd":
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    for n in os.listdir(fd)[:3]:
        os.stat(n, dir_fd=fd)
elif mode == "otherfd":
    fd1 = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    names = os.listdir(fd1)
    os.close(fd1)
    fd2 = os.open(d, os.O_RDONLY)
    print(fd2, flush=True)
    for n in names[:3]:
        os.stat(n, dir_fd=fd2)
deadline = time.time() + 20
while not os.path.exists(go) and time.time() < deadline:
    time.sleep(0.01)
EOF

trace_start --verify -s 0

# scan MODE: run the workload, wait for its SCAN, let it go; the SCAN line goes to $LINE
scan() {
	local mode=$1 pid
	rm -f "$T/go"
	"$PY" "$T/scan.py" "$mode" "$D" "$T/go" >"$T/$mode.out" &
	pid=$!
	on_exit "kill $pid 2>/dev/null"
	wait_for 10 grep -q "^SCAN tgid=$pid .* ino=$DINO " "$TRACE_OUT"
	touch "$T/go"
	wait "$pid" || fail "$mode: workload failed"
	LINE=$(grep "^SCAN tgid=$pid .* ino=$DINO " "$TRACE_OUT")
	info "$mode: ref=$(field "$LINE" ref) verify=$(field "$LINE" verify) path=$(field "$LINE" path)"
	assert_eq "$(grep -c "^SCAN tgid=$pid .* ino=$DINO " "$TRACE_OUT")" 1 "$mode: one SCAN"
	case "$(field "$LINE" verify)" in
	none | *bad* | *gone* | *error*) fail "$mode: the event's names do not all work: $LINE" ;;
	esac
}

scan rel
assert_eq "$(field "$LINE" verify)" "path:ok" "rel: names"
assert_eq "$(field "$LINE" path)" dir "rel: path relative to the cwd"

scan abs
assert_eq "$(field "$LINE" verify)" "path:ok" "abs: names"
assert_eq "$(field "$LINE" path)" "$D" "abs: absolute path"

scan cwd
assert_contains "$(field "$LINE" verify)" "cwd:ok" "cwd: names"

scan fd
assert_contains "$(field "$LINE" verify)" "fd:ok" "fd: names"
# listed through a dup (os.listdir(fd)): the path still comes from the open of the directory
assert_eq "$(field "$LINE" path)" "$D" "fd: path from the O_DIRECTORY open"

scan otherfd
assert_eq "$(field "$LINE" verify)" "fd:ok,path:ok" "otherfd: names"
assert_eq "$(field "$LINE" fd)" "$(cat "$T/otherfd.out")" "otherfd: the fd the stats went through"

trace_stop
echo "PASS"
