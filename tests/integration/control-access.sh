#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Who may use the control socket, and diraheadctl's exit codes (diraheadctl(8)):
# - no daemon (no socket, or a stale socket nobody listens on): every command exits 3 saying
#   diraheadd is not running;
# - root-only daemon: the socket is 0600; `nobody` is refused with exit 4 and a clear message,
#   also when the socket's mode is opened up (the daemon checks the peer's credentials itself);
# - with [control] group = nogroup: the socket is 0660 root:nogroup; a user whose primary group is
#   nogroup is answered, and so is one who has it only as a supplementary group (the daemon reads
#   the peer's groups with SO_PEERGROUPS); one with neither is refused (exit 4);
# - with a group of its own (a temporary group, and two temporary users: one a member, by
#   /etc/group, one not; removed at the end whatever happens): the member is answered, the other
#   refused, also when the socket's mode is opened up;
# - a reload that changes the group applies it at once: the socket's group and mode follow
#   (root:nogroup 0660, then root:root 0600 for no group), and so does whom the daemon answers;
# - status/stats/scans --json print valid JSON; bad usage exits 2; a request holding a NUL byte
#   is an unknown command.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd setpriv python3
getent group nogroup >/dev/null || fail "no group nogroup (Debian's base-passwd has it)"
getent group daemon >/dev/null || fail "no group daemon (Debian's base-passwd has it)"

# A copy the unprivileged users can run wherever the tree is (a checkout under /root is not).
chmod 0755 "$T"
CTL=$T/diraheadctl
cp "$BUILD/diraheadctl" "$CTL"
chmod 0755 "$CTL"
NOBODY=$(id -u nobody) NOGROUP=$(getent group nogroup | cut -d: -f3)
# as UID GID [SUPPLEMENTARY] CMD...: run CMD with exactly these credentials
as() {
	local uid=$1 gid=$2 groups=$3; shift 3
	if [ -n "$groups" ]; then
		setpriv --reuid="$uid" --regid="$gid" --groups="$groups" "$@"
	else
		setpriv --reuid="$uid" --regid="$gid" --clear-groups "$@"
	fi
}
json_ok() { python3 -m json.tool <<<"$1" >/dev/null || fail "$2 is not valid JSON: $1"; }

# --- no daemon: exit 3 for every command, the message says so and names the socket
for cmd in status stats scans metrics reload; do
	expect_exit 3 "$CTL" $cmd --socket "$T/none.sock"
	assert_eq "$OUT" "diraheadctl: diraheadd is not running (no daemon at $T/none.sock)" "$cmd, no socket"
done
expect_exit 3 "$CTL" status --json --socket "$T/none.sock"
# a socket file left by a killed daemon
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$T/stale.sock"
[ -S "$T/stale.sock" ] || fail "could not make a stale socket"
expect_exit 3 "$CTL" status --socket "$T/stale.sock"
assert_contains "$OUT" "diraheadd is not running" "status, stale socket"
# the socket from DIRAHEAD_SOCKET when --socket is not given
OUT=$(DIRAHEAD_SOCKET=$T/env.sock "$CTL" status 2>&1) && fail "status without a daemon exited 0"
assert_contains "$OUT" "no daemon at $T/env.sock" "DIRAHEAD_SOCKET"

# --- bad usage: exit 2
expect_exit 2 "$CTL"
assert_contains "$OUT" "Usage: diraheadctl" "no command"
expect_exit 2 "$CTL" frobnicate
assert_contains "$OUT" "unknown command 'frobnicate'" "unknown command"
expect_exit 2 "$CTL" status --bogus
assert_contains "$OUT" "unrecognized option '--bogus'" "unknown option"
expect_exit 2 "$CTL" status --socket
assert_contains "$OUT" "requires an argument" "missing argument"
expect_exit 2 "$CTL" status extra
assert_contains "$OUT" "unexpected argument 'extra'" "extra argument"
expect_exit 2 "$CTL" metrics --json
expect_exit 2 "$CTL" reload --json
expect_exit 0 "$CTL" --help
expect_exit 0 "$CTL" status --help
assert_contains "$OUT" "Usage: diraheadctl status" "status --help"

# --- a root-only daemon
daemon_start
S=$DAEMON_SOCK
assert_eq "$(stat -c '%a %U %G' "$S")" "600 root root" "socket mode, root only"
expect_exit 0 "$CTL" status --socket "$S"
assert_contains "$OUT" "diraheadd is running (pid $DAEMON_PID), attached, enabled" "status as root"
expect_exit 0 "$CTL" status --json --socket "$S"
json_ok "$OUT" "status --json"
python3 -c 'import json, sys; s = json.loads(sys.argv[1])
assert s["running"] is True and s["attached"] is True and s["pid"] == int(sys.argv[2]), s' \
	"$OUT" "$DAEMON_PID" || fail "status --json content: $OUT"
expect_exit 0 "$CTL" stats --json --socket "$S"
json_ok "$OUT" "stats --json"
python3 -c 'import json, sys; s = json.loads(sys.argv[1])
for k in ("listings", "scans_confirmed", "entries_prefetched", "hits", "misses", "scans_ended",
          "skips", "errors", "reloads_ok", "reloads_failed", "active_scans"):
    assert k in s, k' "$OUT" || fail "stats --json lacks a key: $OUT"
expect_exit 0 "$CTL" scans --json --socket "$S"
json_ok "$OUT" "scans --json"
expect_exit 0 "$CTL" stats --socket "$S"
assert_contains "$OUT" "scans_ended.completed" "stats, flattened"
# a NUL byte before the newline: an error at once, not a connection left waiting for the
# daemon's timeout (found by tests/fuzz/fuzz_control)
OUT=$(python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(30); s.connect(sys.argv[1]); s.sendall(b"status\0x\n")
r = b""
while True:
    b = s.recv(4096)
    if not b: break
    r += b
print(r.decode())' "$S")
assert_eq "$OUT" "error unknown command" "a request holding a NUL byte"

# nobody: refused by the socket's mode ...
for cmd in status stats scans metrics reload; do
	expect_exit 4 as "$NOBODY" "$NOGROUP" "" "$CTL" $cmd --socket "$S"
	assert_eq "$OUT" "diraheadctl: permission denied on $S (root or the [control] group only)" \
		"$cmd as nobody"
done
# ... and by the daemon itself when the mode would let it in.
chmod 0666 "$S"
expect_exit 4 as "$NOBODY" "$NOGROUP" "" "$CTL" status --socket "$S"
assert_contains "$OUT" "permission denied" "status as nobody, socket mode 0666"
expect_exit 4 as "$NOBODY" "$NOGROUP" "" "$CTL" reload --socket "$S"
assert_eq "$(daemon_stat reloads_ok)" 0 "reloads done for a refused client"
# root with a non-root group is still root
expect_exit 0 as 0 "$NOGROUP" "" "$CTL" status --socket "$S"
daemon_stop

# --- [control] group = nogroup
printf '[metrics]\naddress =\n[control]\ngroup = nogroup\n' >"$DAEMON_CONF"
daemon_start
assert_eq "$(stat -c '%a %U %G' "$S")" "660 root nogroup" "socket mode with a control group"
expect_exit 0 as "$NOBODY" "$NOGROUP" "" "$CTL" status --socket "$S"
assert_contains "$OUT" "diraheadd is running" "status as a member (primary group)"
expect_exit 0 as "$NOBODY" "$NOGROUP" "" "$CTL" stats --json --socket "$S"
json_ok "$OUT" "stats --json as a group member"
expect_exit 0 as "$NOBODY" "$NOGROUP" "" "$CTL" status --json --socket "$S"
json_ok "$OUT" "status --json as a group member"
expect_exit 0 as "$NOBODY" "$NOGROUP" "" "$CTL" metrics --socket "$S"
assert_contains "$OUT" "dirahead_build_info" "metrics as a group member"
# nogroup only as a supplementary group: admitted by the file mode and by the daemon.
daemon_gid=$(getent group daemon | cut -d: -f3)
expect_exit 0 as "$NOBODY" "${daemon_gid:-1}" "$NOGROUP" "$CTL" status --socket "$S"
assert_contains "$OUT" "diraheadd is running" "status with nogroup as a supplementary group"
# among several, not the first
expect_exit 0 as "$NOBODY" "${daemon_gid:-1}" "${daemon_gid:-1},$(seq -s, 60000 60070),$NOGROUP" \
	"$CTL" stats --socket "$S"
assert_contains "$OUT" "scans_confirmed" "stats with nogroup last of 73 supplementary groups"
# Neither: refused by the mode ...
expect_exit 4 as "$NOBODY" "${daemon_gid:-1}" "" "$CTL" status --socket "$S"
# ... and by the daemon when the mode would let it in.
chmod 0666 "$S"
expect_exit 4 as "$NOBODY" "${daemon_gid:-1}" "$(seq -s, 60000 60010)" "$CTL" status --socket "$S"
assert_contains "$OUT" "permission denied" "status with other supplementary groups, mode 0666"
chmod 0660 "$S"
daemon_stop

# --- a group of its own, and users who are (a) and are not (b) members of it, by /etc/group;
# a's primary group is daemon, b's nogroup
G=dractl$$ UA=dractl$$a UB=dractl$$b
on_exit "userdel $UA; userdel $UB; groupdel $G"
groupadd --system "$G"
useradd --system --no-create-home --shell /usr/sbin/nologin --gid daemon --groups "$G" "$UA"
useradd --system --no-create-home --shell /usr/sbin/nologin --gid nogroup "$UB"
# as_user USER CMD...: USER's uid, primary group and the supplementary groups /etc/group gives it
as_user() { local u=$1; shift; setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups "$@"; }
printf '[metrics]\naddress =\n[control]\ngroup = %s\n' "$G" >"$DAEMON_CONF"
daemon_start
assert_eq "$(stat -c '%a %U %G' "$S")" "660 root $G" "socket mode with group $G"
expect_exit 0 as_user "$UA" "$CTL" status --socket "$S"
assert_contains "$OUT" "diraheadd is running" "status as $UA, a member of $G"
expect_exit 4 as_user "$UB" "$CTL" status --socket "$S"
assert_contains "$OUT" "permission denied" "status as $UB, not a member"
chmod 0666 "$S"
expect_exit 4 as_user "$UB" "$CTL" status --socket "$S"
assert_contains "$OUT" "permission denied" "status as $UB, socket mode 0666"
chmod 0660 "$S"

# --- reloads that change the group
printf '[metrics]\naddress =\n[control]\ngroup = nogroup\nsocket = %s\n' "$T/elsewhere.sock" >"$DAEMON_CONF"
expect_exit 0 ctl reload
assert_eq "$(stat -c '%a %U %G' "$S")" "660 root nogroup" "socket after a reload to group nogroup"
expect_exit 4 as_user "$UA" "$CTL" status --socket "$S"
assert_contains "$OUT" "permission denied" "$UA after the group moved to nogroup"
chmod 0666 "$S" # the daemon's own check, behind the mode
expect_exit 4 as_user "$UA" "$CTL" status --socket "$S"
assert_contains "$OUT" "permission denied" "$UA after the group moved, mode 0666"
expect_exit 0 as_user "$UB" "$CTL" status --socket "$S"
assert_contains "$OUT" "diraheadd is running" "$UB (primary group nogroup) after the reload"
grep -q "control socket: root and group nogroup now" "$DAEMON_LOG" || fail "the group change is not logged"
# --socket (the tests' daemon has it) outranks the file's socket, at start and at reloads
[ ! -e "$T/elsewhere.sock" ] || fail "a socket at the file's path, which --socket overrides"
expect_exit 0 "$CTL" status --socket "$S"
printf '[metrics]\naddress =\n' >"$DAEMON_CONF"
kill -HUP "$DAEMON_PID"
wait_for 5 eval '[ "$(daemon_stat reloads_ok)" = 2 ]'
assert_eq "$(stat -c '%a %U %G' "$S")" "600 root root" "socket after a reload to no group"
chmod 0666 "$S"
expect_exit 4 as_user "$UB" "$CTL" status --socket "$S"
assert_contains "$OUT" "permission denied" "$UB after the group was removed, mode 0666"
expect_exit 0 "$CTL" status --socket "$S"
daemon_stop
[ ! -e "$S" ] || fail "the control socket is left behind after the daemon stopped"
expect_exit 3 "$CTL" status --socket "$S"
