#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Fairness between users: with max_scans = 4 and max_scans_per_user = 2, a user running four
# slow scans at once gets two (the others skipped as user_busy), and another user's scan still
# starts and is prefetched (it sends few of its own lookups); none is skipped as busy.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd setpriv

A=4001 B=4002 N=400
for d in a1 a2 a3 a4 b; do make_files "$T/back/$d" $N; done
slowfs_mount "$T/back" "$T/mnt" --latency-us 1000
chmod 0711 "$T"
mkdir -p "$T/bin"
cp "$BUILD/tests/tools/slowscan" "$T/bin/dlu-scan"
chmod 0755 "$T/bin" "$T/bin/dlu-scan"
printf '[metrics]\naddress =\n[filter]\ncomm_include = dlu-*\n[policy]\nenabled = no\n[prefetch]\nmax_scans = 4\nmax_scans_per_user = 2\nmax_scans_per_process = 4\n[daemon]\nlog_level = debug\n' >"$DAEMON_CONF"
daemon_start

as() { local u=$1; shift; setpriv --reuid="$u" --regid="$u" --clear-groups -- "$@"; }
pids=()
for d in a1 a2 a3 a4; do
	as $A "$T/bin/dlu-scan" "$T/mnt/$d" 4000 &
	pids+=($!)
done
on_exit "kill ${pids[*]} 2>/dev/null"
four() { [ "$(($(daemon_stat scans_started) + $(daemon_stat skips.user_busy)))" -ge 4 ]; }
wait_for 10 four
info "user $A: $(daemon_stat scans_started) scans started, $(daemon_stat skips.user_busy) skipped as user_busy"
assert_eq "$(daemon_stat scans_started)" 2 "scans started for user $A"
assert_ge "$(daemon_stat skips.user_busy)" 2 "user $A's scans skipped as user_busy"

# user B, while A's scans still run
slowfs_ctl reset >/dev/null
as $B "$T/bin/dlu-scan" "$T/mnt/b" 4000 &
bpid=$!
wait $bpid
own=$(slowfs_stat "pid.$bpid.lookup")
info "user $B: its scan sent $own of $N lookups itself; skipped busy: $(daemon_stat skips.busy)"
assert_eq "$(daemon_stat scans_started)" 3 "scans started after user $B's"
assert_eq "$(daemon_stat skips.busy)" 0 "scans skipped as busy"
assert_le $((own * 4)) "$N" "user $B's own lookups x4"
kill "${pids[@]}" 2>/dev/null || true
daemon_stop
