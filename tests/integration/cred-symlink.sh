#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# A symbolic link swapped between a program's listing and its stats leads the daemon nowhere the
# program could not go.  User nobody lists a directory of its own through a link, the link is
# swapped to a directory of root's that nobody may search (stat its entries) but not read
# (mode 0711), and the program stats the names through the link: the scan is confirmed, but the
# daemon, resolving the program's path with the program's credentials, does not open what the
# link now names: it finds it with O_PATH (searching is all nobody may do there), sees another
# directory and goes no further (nor could it open it for reading as nobody; root could have).
# slowfs saw no open and no listing from the daemon.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd setpriv python3

U=65534
chmod 0711 "$T"
make_files "$T/back/mine" 300
mkdir -p "$T/back/secret"
for f in "$T"/back/mine/*; do : >"$T/back/secret/${f##*/}"; done
chown -R $U:$U "$T/back/mine"
chmod 0711 "$T/back/secret" # root's: searchable by all, readable by root only
slowfs_mount "$T/back" "$T/mnt" --latency-us 500 --entry-timeout 0 --attr-timeout 0
ln -s "$T/mnt/mine" "$T/link"
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
mkdir -p "$T/bin"
cp "$(realpath "$py")" "$T/bin/dcs-python3"
chmod 0755 "$T/bin" "$T/bin/dcs-python3"
cat >"$T/scan.py" <<'PY'
import os, sys
link = sys.argv[1]
names = os.listdir(link + "/")      # the program's own directory, through the link
print("listed", flush=True)
sys.stdin.readline()                # the link is swapped meanwhile
for n in names:                     # stat'ed through the link: now root's directory
    os.lstat(link + "/" + n)
print("stat'ed", flush=True)
PY
chmod 0644 "$T/scan.py"
# every confirmed scan opened at once: this is about what is opened, not the cost model
printf '[metrics]\naddress =\n[filter]\ncomm_include = dcs-*\n[policy]\nenabled = no\n[daemon]\nlog_level = debug\n' >"$DAEMON_CONF"
daemon_start
slowfs_ctl reset >/dev/null

coproc SCAN { setpriv --reuid=$U --regid=$U --clear-groups -- "$T/bin/dcs-python3" "$T/scan.py" "$T/link"; }
on_exit "kill ${SCAN_PID:-0} 2>/dev/null"
read -r -t 10 line <&"${SCAN[0]}" || fail "the program did not list"
assert_eq "$line" listed "the program's first step"
ln -sfn "$T/mnt/secret" "$T/link"
echo go >&"${SCAN[1]}"
read -r -t 20 line <&"${SCAN[0]}" || fail "the program did not stat"
assert_eq "$line" "stat'ed" "the program's second step"
scanned() { [ "$(daemon_stat scans_confirmed)" -ge 1 ]; }
wait_for 5 scanned
sleep 0.5
info "scans confirmed $(daemon_stat scans_confirmed), started $(daemon_stat scans_started), open_failed $(daemon_stat skips.open_failed), mismatch $(daemon_stat skips.mismatch)"
assert_ge "$(daemon_stat scans_confirmed)" 1 "scans confirmed (through the swapped link)"
assert_ge $(($(daemon_stat skips.open_failed) + $(daemon_stat skips.mismatch))) 1 "scans not opened"
grep -qE "scan of $T/link/ by pid .*: cannot open as uid $U .*: (Permission denied|Stale file handle)" "$DAEMON_LOG" ||
	fail "the scan through the swapped link was not refused as the program: $(grep link "$DAEMON_LOG")"
for op in opendir readdir readdirplus; do
	assert_eq "$(slowfs_stat "pid.$DAEMON_PID.$op")" 0 "the daemon's $op requests"
done
daemon_stop
