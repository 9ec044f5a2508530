#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# `diraheadctl explain [PID]`: the daemon's last decisions, with the reason in words and the
# numbers behind it (diraheadctl(8)):
# - `ls -l` of a warm local directory: skipped fast_stats after a probe, "its probed stats took
#   X, a prefetched entry costs Y here";
# - `ls -l` on slowfs (1 ms a lookup): started after a probe ("its probed stats took ..."), then
#   ended completed with what was prefetched and hit;
# - explain PID shows that process's decisions only; --json is valid JSON with the numbers;
# - at log_level = info the log has the same line for those scans (without the directory: no
#   line names one at info), and none for a scan only filtered out (not every skip is logged;
#   filtered scans are not kept in the decision log either);
# - dry_run = yes (after a reload): "would have prefetched (dry run)", with an estimate from
#   what the filesystem's scans showed;
# - on slowfs answering one request at a time (prefetch queues in front of the program: see
#   policy-nogain.sh, with min_gain 20), a scan ends as no_gain: "ended no_gain: 1.0x after N
#   stats, 20.0x needed";
# - an unprivileged user gets no answer (exit 4) and no directory name.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd setpriv python3

N=2000
for d in on dry filtered; do make_files "$T/back/$d" $N; done
make_files "$T/back2/nogain" $N
# its name holds an escape sequence: explain shows it as '?', nothing reaches the terminal
W=$T/warm$'\e[31m'
make_files "$W" $N
ln -s "$(realpath "$(command -v ls)")" "$T/dra-ls"
ls -l "$W" >/dev/null # warm: its attributes cached
conf() { # extra lines for the config
	printf '[daemon]\nlog_level = info\n%s\n[metrics]\naddress =\n[filter]\ncomm_include = dra-*\n[detect]\narm = always\n%s' "${1:-}" "${2:-}" >"$DAEMON_CONF"
}
conf
slowfs_mount "$T/back" "$T/mnt" --latency-us 1000
DAEMON_VERBOSE=no daemon_start

run_ls() { # DIR: ls -l it as dra-ls, print its pid
	"$T/dra-ls" -l "$1" >/dev/null &
	local pid=$!
	wait $pid
	echo $pid
}
decided() { # PID TEXT: the decision log of PID has TEXT (the last line may come a little later)
	ctl explain "$1" | qgrep -F -- "$2"
}

# --- a warm local directory: its stats are fast
warm=$(run_ls "$W")
wait_for 10 decided "$warm" "skipped fast_stats"
OUT=$(ctl explain "$warm")
info "$OUT"
assert_contains "$OUT" "pid $warm (dra-ls) scan of $T/warm?[31m: skipped fast_stats: its probed stats took " "fast scan"
[[ "$OUT" == *$'\e'* ]] && fail "an escape sequence reached the terminal"
assert_contains "$OUT" "a prefetched entry costs " "fast scan: the daemon's cost"

# --- slowfs: helped
on=$(run_ls "$T/mnt/on")
wait_for 10 decided "$on" "ended "
OUT=$(ctl explain "$on")
info "$OUT"
assert_contains "$OUT" "scan of $T/mnt/on: started after a probe: its probed stats took " "helped scan started"
assert_contains "$OUT" "scan of $T/mnt/on: ended completed: " "helped scan ended"
[[ "$OUT" == *"$T/warm"* ]] && fail "explain $on shows another process's decision: $OUT"
hits=$(ctl explain "$on" --json | python3 -c 'import json, sys
d = [x for x in json.load(sys.stdin) if x["decision"] == "ended"]
print(d[-1]["numbers"]["hits"])')
assert_ge "$hits" 1 "hits in the ended decision's numbers"
# all processes: both, oldest first
OUT=$(ctl explain)
assert_contains "$OUT" "$T/warm" "explain without PID"
first=$(ctl explain | grep -nF "$T/warm?[31m:" | head -1 | cut -d: -f1)
second=$(ctl explain | grep -nF "$T/mnt/on:" | head -1 | cut -d: -f1)
assert_le "$first" "$second" "the older decision first"
expect_exit 2 "$BUILD/diraheadctl" explain --socket "$DAEMON_SOCK" notapid
expect_exit 2 "$BUILD/diraheadctl" explain --socket "$DAEMON_SOCK" 1 2
# the request itself: what follows "explain" must be a process ID
for req in "explain abc" "explain -1" "explain 99999999999" "explain 1 2" "explain "; do
	OUT=$(python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(sys.argv[2].encode() + b"\n")
print(s.makefile().read())' "$DAEMON_SOCK" "$req")
	assert_eq "$OUT" "error explain: not a process ID" "request '$req'"
done

# --- the log at info: the scans that ran or were refused after a probe, not every skip
grep -F "scan by pid $on (dra-ls): started after a probe" "$DAEMON_LOG" >/dev/null ||
	fail "no info line for the helped scan: $(cat "$DAEMON_LOG")"
grep -F "scan by pid $warm (dra-ls): skipped fast_stats" "$DAEMON_LOG" >/dev/null ||
	fail "no info line for the fast scan"
# at info, no line names a directory (dirahead.conf(5))
grep -E "$T/(mnt|warm)" "$DAEMON_LOG" && fail "a directory named in the log at info"
ls -l "$T/mnt/filtered" >/dev/null # not dra-*: filtered
wait_for 10 eval '[ "$(daemon_stat skips.filtered)" -ge 1 ]'
grep -F "skipped filtered" "$DAEMON_LOG" && fail "a filtered scan is logged at info"
OUT=$(ctl explain)
[[ "$OUT" == *"skipped filtered"* ]] && fail "filtered scans crowd the decision log: $OUT"

# --- dry run: advice
conf "dry_run = yes"
kill -HUP "$DAEMON_PID"
wait_for 5 eval '[ "$(daemon_stat reloads_ok)" -ge 1 ]'
dry=$(run_ls "$T/mnt/dry")
wait_for 10 decided "$dry" "dry run"
OUT=$(ctl explain "$dry")
info "$OUT"
reason=$(ctl explain "$dry" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)[-1]["reason"])')
assert_eq "$reason" dry_run "the dry run decision's reason"
assert_contains "$OUT" "would have prefetched (dry run): its stats took " "dry run advice"
assert_contains "$OUT" "saved a stat" "dry run estimate"
grep -F "scan by pid $dry (dra-ls): would have prefetched" "$DAEMON_LOG" >/dev/null ||
	fail "no info line for the dry run's advice"

# --- names: an unprivileged user gets nothing
chmod 0755 "$T"
cp "$BUILD/diraheadctl" "$T/ctl"
chmod 0755 "$T/ctl"
OUT=$(setpriv --reuid="$(id -u nobody)" --regid="$(getent group nogroup | cut -d: -f3)" --clear-groups \
	"$T/ctl" explain --socket "$DAEMON_SOCK" 2>&1) && fail "nobody got an answer: $OUT"
rc=$(setpriv --reuid="$(id -u nobody)" --regid="$(getent group nogroup | cut -d: -f3)" --clear-groups \
	"$T/ctl" explain --socket "$DAEMON_SOCK" >/dev/null 2>&1; echo $?)
assert_eq "$rc" 4 "explain as nobody: exit status"
[[ "$OUT" == *"$T/mnt"* || "$OUT" == *"$T/warm"* ]] && fail "nobody sees a directory: $OUT"
daemon_stop

# --- no_gain: slowfs answering one request at a time (--serial, as policy-nogain.sh: one without
# FUSE_PARALLEL_DIROPS is not even tried, serial_lookups); start_factor: the start rule
# must not find the stats cheap where the daemon's cost per entry is high (an ASan build)
# (min_gain: a serial server's requests still overlap the program's think time, a first gain can
# pass 1.3x; what is tested here is the wording of a no_gain end, as in arm-verdict.sh)
conf "" "$(printf '[policy]\nstart_factor = 0.1\nmin_gain = 20\n')"
slowfs_mount "$T/back2" "$T/mnt2" --latency-us 500 --serial
DAEMON_VERBOSE=no daemon_start
ng=$(run_ls "$T/mnt2/nogain")
wait_for 30 decided "$ng" "ended "
OUT=$(ctl explain "$ng")
info "$OUT"
assert_contains "$OUT" "scan of $T/mnt2/nogain: ended no_gain: " "no_gain scan"
[[ "$OUT" =~ ended\ no_gain:\ [0-9.]+x\ after\ [0-9]+\ stats,\ 20\.0x\ needed ]] ||
	fail "no_gain's numbers: $OUT"
daemon_stop
