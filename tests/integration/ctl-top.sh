#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# `diraheadctl top` in a real terminal (tmux): while a program stats its way slowly through a
# directory on slowfs (1 ms a lookup), the screen shows the daemon armed or not, the slowfs
# filesystem's verdict, and the scan (program, state, directory); `s` changes the sort key
# shown; `q` quits with exit status 0 and gives the normal screen back.  With stdout no
# terminal it prints one snapshot and exits.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd python3
command -v tmux >/dev/null || skip "needs tmux (make deps installs it)"

N=2000
make_files "$T/back/slow" $N
# a symlink: the program's name is dra-py (python3 may be a wrapper script: its interpreter)
ln -s "$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')" "$T/dra-py"
printf '[metrics]\naddress =\n[filter]\ncomm_include = dra-*\n[detect]\narm = always\n' >"$DAEMON_CONF"
slowfs_mount "$T/back" "$T/mnt" --latency-us 1000
daemon_start

# the program: lists the directory, then stats an entry every 5 ms (10 s or more in all)
"$T/dra-py" -c 'import os, sys, time
d = sys.argv[1]
for n in os.listdir(d):
    os.stat(os.path.join(d, n)); time.sleep(0.005)' "$T/mnt/slow" &
prog=$!
on_exit "kill $prog 2>/dev/null"
scanning() { ctl scans | qgrep -F "$T/mnt/slow"; }
wait_for 20 scanning

TM=(tmux -L "dirahead-test-$$" -f /dev/null)
on_exit "${TM[*]} kill-server 2>/dev/null"
"${TM[@]}" new-session -d -s top -x 250 -y 40 \
	"'$BUILD/diraheadctl' top --socket '$DAEMON_SOCK'; echo \"top exited \$?\"; sleep 60"
screen() { "${TM[@]}" capture-pane -p -t top; }
shows() { screen | qgrep -F -- "$1"; }
wait_for 10 shows "$T/mnt/slow"
SCREEN=$(screen)
info "$SCREEN"
assert_contains "$SCREEN" "diraheadd " "header"
assert_contains "$SCREEN" "hooks " "armed or not"
assert_contains "$SCREEN" "FILESYSTEM" "the filesystems"
line=$(grep -F "$T/mnt/slow" <<<"$SCREEN")
assert_contains "$line" "dra-py" "the scan's program"
assert_contains "$line" " $prog " "the scan's pid"
[[ "$line" =~ probing|opening|prefetching|following ]] || fail "no state in the scan's line: $line"
fs=$(grep -E '^[0-9]+:[0-9]+ +fuse' <<<"$SCREEN") || fail "no fuse filesystem on the screen"
info "slowfs: $fs"
assert_contains "$SCREEN" "[sort: rate]" "the sort key"
"${TM[@]}" send-keys -t top s
wait_for 5 shows "[sort: hits]"
"${TM[@]}" send-keys -t top q
wait_for 5 shows "top exited 0"
SCREEN=$(screen)
[[ "$SCREEN" == *"FILESYSTEM"* ]] && fail "the normal screen was not given back: $SCREEN"

# not a terminal: one snapshot
OUT=$(ctl top | cat)
assert_contains "$OUT" "FILESYSTEM" "snapshot"
assert_contains "$OUT" "ACTIVE: " "snapshot"
[[ "$OUT" == *$'\033'* ]] && fail "escape sequences in the snapshot"
expect_exit 2 "$BUILD/diraheadctl" top --socket "$DAEMON_SOCK" extra
expect_exit 3 "$BUILD/diraheadctl" top --socket "$T/none.sock"
kill "$prog" 2>/dev/null; wait "$prog" 2>/dev/null || true # killed: 143
daemon_stop
