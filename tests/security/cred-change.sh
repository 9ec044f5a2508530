#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Credentials follow the program (issue 21, item 6: a PROGRESS event of a scan, scan.c
# on_progress, or a LISTING event of a walk, walk.c walk_mgr_on_listing, that shows other
# credentials than it started with ends it, `credentials_changed`):
#  1. a root program lists a big slow directory, stats part of it (prefetched as root), drops to
#     nobody (setgroups, setresgid, setresuid: tests/tools/credscan.c) and stats on: its scan
#     ends credentials_changed, and once it has, no request of anyone (the daemon, its children)
#     carries root's uid while the program stats the rest;
#  2. the same for a root walker (os.walk) that drops to nobody after 40 of 150 directories;
#     and no one reads the root-only directory it comes to last (slowfs watch) since.
# Before, the scan and the walk went on with root's credentials to their end.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd python3

U=65534 # nobody
chmod 0711 "$T" # (the programs, once nobody, must reach the mount)
N=6000 N1=2000 N2=600
make_files "$T/back/big" $N
D=150 F=20 K=40
for i in $(seq 1 $D); do make_files "$T/back/tree/d$i" $F; done
SECRET=tree/zz/secret # root's, 0700: the walker (sorted) comes to it last, as nobody
for i in $(seq 1 5); do make_files "$T/back/$SECRET/s$i" $F; done
chmod 0700 "$T/back/$SECRET"
mkdir -p "$T/bin"
cp "$BUILD/tests/tools/credscan" "$T/bin/dcc-scan"
# the system's interpreter itself: a version manager's shim would exec another name
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
ln -s "$(realpath "$py")" "$T/bin/dcc-python3"
cat >"$T/walk.py" <<'PY'
# walk.py TOP K UID: os.walk over TOP in name order stating every file; after K directories
# drop to UID, after 5 more write "dropped" and wait for a line on stdin
import os, sys
top, k, uid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
n = 0
for r, ds, fs in os.walk(top):
    ds.sort()
    for f in fs:
        os.lstat(os.path.join(r, f))
    n += 1
    if n == k:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    if n == k + 5:
        print("dropped", flush=True)
        sys.stdin.readline()
print("done", n, flush=True)
PY
chmod 0755 "$T/bin" "$T/bin/dcc-scan" "$T/walk.py"
# unconditional prefetch (no policy verdicts), and scans and walks that outlive the pause below
printf '[metrics]\naddress =\n[filter]\ncomm_include = dcc-*\n[policy]\nenabled = no\n[prefetch]\nidle_timeout_ms = 120000\n[daemon]\nlog_level = debug\n' >"$DAEMON_CONF"
slowfs_mount "$T/back" "$T/mnt" --latency-us 300
M=$T/mnt
daemon_start
mkfifo "$T/go"
exec {go}<>"$T/go" # held open both ways: the programs' opens of it do not block

# change KIND CMD...: runs CMD (it drops privileges, writes "dropped" and waits for a line on
# stdin), waits for its scan or walk (KIND) to end credentials_changed, resets the slowfs
# counters (and watches $WATCH if set) and lets it finish; then asserts on the requests since.
change() {
	local kind=$1 pid before_uids as_root stats i; shift
	drop_caches
	slowfs_ctl reset >/dev/null
	"$@" <"$T/go" >"$T/out" &
	pid=$!
	on_exit "kill $pid 2>/dev/null"
	dropped() { grep -q dropped "$T/out"; }
	wait_for 60 dropped
	before_uids=$(slowfs_stat "pid.$DAEMON_PID.uids")
	# the daemon's verdict (not a failure yet if it never comes: the requests below tell too)
	for ((i = 0; i < 750; i++)); do
		[ "$(daemon_stat "${kind}s_ended.credentials_changed")" -ge 1 ] && break
		sleep 0.02
	done
	for ((i = 0; i < 250; i++)); do
		[ "$(daemon_stat "active_${kind}s")" = 0 ] && break
		sleep 0.02
	done
	sleep 0.5 # what the daemon had in flight
	slowfs_ctl reset >/dev/null
	[ -z "${WATCH:-}" ] || slowfs_ctl watch "$WATCH" >/dev/null
	echo go >&$go
	wait $pid || fail "the program failed: $(cat "$T/out")"
	sleep 0.5 # the daemon's last requests, if any
	stats=$(slowfs_ctl stats)
	key() { awk -F= -v k="$1" '$1 == k { v = $2 } END { print v }' <<<"$stats"; }
	as_root=$(awk -F= '$1 ~ /^pid\.[0-9]+\.uids$/ && ("," $2 ",") ~ /,0,/ { print $1 }' <<<"$stats")
	info "$kind: the program: $(tail -1 "$T/out"); before it dropped, the daemon's requests came" \
		"with uids '$before_uids'; after the $kind ended: $(key total.all) requests," \
		"$(key "pid.$pid.all") of them the program's; the daemon's with uids" \
		"'$(key "pid.$DAEMON_PID.uids")'"
	ctl stats | grep -E "^(${kind}s_|skips\.|active_)" | grep -v ' 0$' >&2 || true
	assert_contains ",$before_uids," ",0," "$kind: uids of the daemon's requests while the program was root"
	assert_eq "$(daemon_stat "${kind}s_ended.credentials_changed")" 1 "${kind}s ended credentials_changed"
	assert_eq "$as_root" "" "$kind: processes whose requests carried root's uid after it ended"
	assert_eq "$(key "pid.$pid.uids")" "$U" "$kind: uids of the program's own requests after the drop"
	if [ -n "${WATCH:-}" ]; then
		info "$kind: requests into $WATCH since: $(key watch.total.all)"
		assert_eq "$(key watch.total.all)" 0 "$kind: requests into the root-only $WATCH after it ended"
	fi
}

# --- 1. a scan ------------------------------------------------------------------------------------
change scan "$T/bin/dcc-scan" "$M/big" $N1 $U $N2
# --- 2. a walk ------------------------------------------------------------------------------------
WATCH=$SECRET change walk "$T/bin/dcc-python3" "$T/walk.py" "$M/tree" $K $U
# (the tree, d1..d$D and zz: not the secret)
assert_eq "$(tail -1 "$T/out")" "done $((D + 2))" "directories the walker went through"
daemon_stop
