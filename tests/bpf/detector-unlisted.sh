#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Runs of stats without a listing (unlisted_stats = 8): a process that stats distinct names of
# one directory it never listed gets a SCAN marked unlisted at the 8th, in each form
#   "dir/name" and "/abs/dir/name"  by path only (dev 0:0, path = the directory's name as used)
#   dirfd + "name"                  by fd, with dev and inode
#   "name" in the cwd               by cwd, with dev and inode
# then PROGRESS as it goes on and END when it moves on to a run elsewhere, or exits.  Never for:
# one name stat'ed over and over, two names in turn, a few names, one name in each of many
# directories, a directory the process listed (that is an ordinary scan), or with the setting 0.
# One stat elsewhere after each name (`stat`: glibc's localtime() stats /etc/localtime) does not
# end a run; the second in a row in another directory moves it there.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/detector.bash"

A=$T/top/a
B=$T/top/b
make_files "$A" 60
make_files "$B" 60
for i in $(seq 1 20); do make_files "$T/many/m$i" 2; done
AINO=$(ino "$A")
BINO=$(ino "$B")
DEV=$(devno "$A")

cat >"$T/unlisted.py" <<'EOF'
import os, sys
mode, top = sys.argv[1:3]
a, b = os.path.join(top, "a"), os.path.join(top, "b")
names = ["f%06d" % i for i in range(1, 61)]
if mode == "rel":
    os.chdir(top)
    for x in names[:30]: os.stat("a/" + x)
    for x in names[:30]: os.stat("b/" + x)      # a run elsewhere: a's ends
elif mode == "abs":
    for x in names[:30]: os.stat(os.path.join(a, x))
elif mode == "dirfd":
    fd = os.open(a, os.O_PATH | os.O_DIRECTORY)
    for x in names[:30]: os.stat(x, dir_fd=fd)
elif mode == "cwd":
    os.chdir(a)
    for x in names[:30]: os.stat(x)
elif mode == "same":
    for i in range(100): os.stat(os.path.join(a, names[0]))
elif mode == "pair":
    for i in range(100): os.stat(os.path.join(a, names[i % 2]))
elif mode == "few":
    for x in names[:6]: os.stat(os.path.join(a, x))
elif mode == "many":
    for i in range(1, 21):
        os.stat(os.path.join(top, "..", "many", "m%d" % i, "f000001"))
elif mode == "clock":
    # as `stat` does: glibc's localtime() stats /etc/localtime after each name
    t = os.path.join(top, "..", "many", "m1", "f000001")
    for x in names[:30]:
        os.stat(os.path.join(a, x))
        os.stat(t)
elif mode == "listed":
    ns = sorted(os.listdir(a))
    for x in ns[:30]: os.stat(os.path.join(a, x))
EOF

# one SCAN of INO by PID, unlisted, at the 8th stat; prints it
check_run() {
	local what=$1 pid=$2 ino=$3 line
	assert_eq "$(nevents SCAN "$ino" "$pid")" 1 "$what: SCAN events"
	line=$(events SCAN "$ino" "$pid")
	assert_eq "$(field "$line" unlisted)" 1 "$what: marked unlisted"
	assert_eq "$(field "$line" stats)" 8 "$what: stats at the SCAN"
	echo "$line"
}

trace_start -s 10 -u 8 --verify
mark
info "by relative path, then a run in another directory"
run pid "$PY" "$T/unlisted.py" rel "$T/top"
run pid_abs "$PY" "$T/unlisted.py" abs "$T/top"
run pid_fd "$PY" "$T/unlisted.py" dirfd "$T/top"
run pid_cwd "$PY" "$T/unlisted.py" cwd "$T/top"
for m in same pair few many listed clock; do run "pid_$m" "$PY" "$T/unlisted.py" $m "$T/top"; done
flush

# by path the directory is known by its name only: dev 0:0, a hash for inode
rel=$(since_mark | grep "^SCAN tgid=$pid " | grep ' unlisted=1 ' | grep ' path=a$' || true)
assert_eq "$(grep -c . <<<"$rel")" 1 "rel: SCAN of a by path"
assert_eq "$(field "$rel" dev)" 0:0 "rel: no device"
assert_eq "$(field "$rel" ref)" path "rel: named by path"
assert_eq "$(field "$rel" stats)" 8 "rel: stats at the SCAN"
rino=$(field "$rel" ino)
assert_ge "$(nevents PROGRESS "$rino" "$pid")" 2 "rel: PROGRESS as it goes on"
assert_eq "$(field "$(events END "$rino" "$pid")" end)" next "rel: END when it runs elsewhere"
assert_eq "$(since_mark | grep "^SCAN tgid=$pid " | grep -c ' path=b$')" 1 "rel: then a SCAN of b"

abs=$(since_mark | grep "^SCAN tgid=$pid_abs " | grep ' unlisted=1 ' || true)
assert_eq "$(field "$abs" path)" "$A" "abs: the absolute path"
assert_eq "$(field "$abs" dev)" 0:0 "abs: no device"
assert_eq "$(field "$(events END "$(field "$abs" ino)" "$pid_abs")" end)" exit "abs: END at exit"

line=$(check_run dirfd "$pid_fd" "$AINO")
assert_eq "$(field "$line" dev)" "$DEV" "dirfd: device"
assert_eq "$(field "$line" ref)" fd "dirfd: named by fd"
assert_eq "$(field "$line" verify)" fd:ok "dirfd: the fd is the directory"
line=$(check_run cwd "$pid_cwd" "$AINO")
assert_eq "$(field "$line" ref)" cwd "cwd: named by cwd"
assert_eq "$(field "$line" verify)" cwd:ok "cwd: the cwd is the directory"

# (Python's own start-up stats make runs of its library directories: only a and many count)
for m in same pair few many; do
	p=pid_$m
	assert_eq "$(since_mark | grep "^SCAN tgid=${!p} " | grep -cE " ino=$AINO | path=($A|.*/many/m[0-9]+)$")" 0 \
		"$m: no SCAN"
done
clock=$(since_mark | grep "^SCAN tgid=$pid_clock " | grep ' unlisted=1 ' | grep " path=$A$" || true)
assert_eq "$(grep -c . <<<"$clock")" 1 "clock: SCAN of a, with a stat elsewhere after each name"
assert_eq "$(field "$clock" stats)" 8 "clock: stats at the SCAN"
line=$(events SCAN "$AINO" "$pid_listed")
assert_eq "$(grep -c . <<<"$line")" 1 "listed: one SCAN"
assert_eq "$(field "$line" unlisted)" 0 "listed: an ordinary scan"
trace_stop

info "unlisted_stats = 0: no runs"
trace_start -s 10 -u 0
mark
run pid "$PY" "$T/unlisted.py" abs "$T/top"
run pid2 "$PY" "$T/unlisted.py" dirfd "$T/top"
flush
assert_eq "$(since_mark | grep -E "^SCAN tgid=($pid|$pid2) " | grep -c ' unlisted=1 ')" 0 "off: no unlisted SCAN"
trace_stop
echo "PASS"
