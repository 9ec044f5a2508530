#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# What the daemon logs is safe to show on a terminal, and says little at the default level:
# - at debug level, a scan of a directory named ESC[31m red BEL, newline, FAKE, by a program run
#   under a name with control characters too (its comm), is logged with both names escaped
#   (\x1b[31mred\x07\x0aFAKE ...): the log holds no ESC, BEL or other control byte, and no line
#   of its own starting with the text after the newline;
# - at the default level (info), scans log no line naming a directory: a summary line instead
#   ("last 1 s: N scans confirmed, ..."), with [daemon] log_summary_s = 1.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd python3

NAME=$'\e[31mred\a\nFAKE line'
ESC_NAME='\x1b[31mred\x07\x0aFAKE line'
make_files "$T/back/$NAME" 400
make_files "$T/back/quiet" 400
slowfs_mount "$T/back" "$T/mnt" --latency-us 500
# The program's name (comm, at most 15 bytes) with a BEL and a tab in it.
PROG=$'dra\a\tls'
ln -s "$(realpath "$(command -v ls)")" "$T/$PROG"

# no_control FILE: no byte below 0x20 but newline, and no DEL, in FILE
no_control() {
	local bad
	bad=$(LC_ALL=C tr -d '\n' <"$1" | LC_ALL=C tr -d '\040-\176\200-\377' | od -An -tx1 | head -n 3)
	[ -z "$bad" ] || fail "control bytes in the log of $2: $bad"
}

# ---- debug level: names escaped
printf '[metrics]\naddress =\n' >"$DAEMON_CONF"
daemon_start
"$T/$PROG" -l "$T/mnt/$NAME" >/dev/null &
app=$!
wait $app
# escaped, with the program's escaped name: a line of the scan (confirmed, probed, started or
# skipped) names both
wait_for 10 grep -qF "pid $app (dra\\x07\\x09ls) $T/mnt/$ESC_NAME" "$DAEMON_LOG"
info "$(grep -F "pid $app " "$DAEMON_LOG" | head -n 3)"
no_control "$DAEMON_LOG" "the debug-level daemon"
grep -q '^FAKE' "$DAEMON_LOG" && fail "a directory name made a log line of its own: $(grep '^FAKE' "$DAEMON_LOG")"
daemon_stop

# ---- the default level: no paths, a summary
printf '[metrics]\naddress =\n[daemon]\nlog_summary_s = 1\n' >"$DAEMON_CONF"
DAEMON_VERBOSE=no daemon_start
"$T/$PROG" -l "$T/mnt/quiet" >/dev/null
"$T/$PROG" -l "$T/mnt/$NAME" >/dev/null
wait_for 10 eval '[ "$(daemon_stat scans_confirmed)" -ge 2 ]'
n0=$(daemon_stat scans_confirmed)
# every scan is summed up (they may straddle two summaries; other programs' scans count too)
summed() { awk '/^diraheadd: last [0-9]+ s: [0-9]+ scans confirmed/ { n += $5 } END { print n + 0 }' "$DAEMON_LOG"; }
wait_for 10 eval '[ "$(summed)" -ge "$n0" ]'
info "$(grep -m 2 -E '^diraheadd: last [0-9]+ s: ' "$DAEMON_LOG")"
grep -qE "$T/mnt|quiet|31mred|x1b" "$DAEMON_LOG" &&
	fail "a path at the default level: $(grep -E "$T/mnt|quiet|31mred|x1b" "$DAEMON_LOG")"
grep -qE '(scan|walk)( end| \(dry run\))?: pid' "$DAEMON_LOG" &&
	fail "per-scan lines at the default level: $(grep -E '(scan|walk).*: pid' "$DAEMON_LOG" | head -n 3)"
no_control "$DAEMON_LOG" "the info-level daemon"
daemon_stop
echo PASS
