#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Attack: one user fills the detector's tables with idle listing processes, so that nobody
# else's listings are tracked (and prefetched).  User A starts 2,200 processes that each list a
# chain of 8 nested directories and sleep: 17,600 listings, more than the `scans` table holds
# (16,384).  Meanwhile user B's `ls -l` on a slow filesystem must still be tracked and
# prefetched: it sends at most a fifth of its lookups itself.  A's listings beyond its share
# ([detect] table_share_per_user, 25%) are counted (bpf_user_full).  Without the share, A fills
# the table, B's listing is not tracked (bpf_table_full) and B sends every lookup itself.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd setpriv

A=4011 B=4012 N=1000 PROCS=2200
chmod 0711 "$T"
# A's chain: $T/a/d1/d2/.../d8, a few files in each
dir=$T/a
chain=()
for i in 1 2 3 4 5 6 7 8; do
	dir=$dir/d$i
	make_files "$dir" 4
	chain+=("$dir")
done
chmod -R a+rX "$T/a"
make_files "$T/back/b" $N
chmod -R a+rX "$T/back"
slowfs_mount "$T/back" "$T/mnt" --latency-us 1000
mkdir -p "$T/bin"
cp "$(type -P ls)" "$T/bin/dsb-ls"
cp "$BUILD/tests/tools/holdlist" "$T/bin/holdlist"
chmod 0755 "$T/bin" "$T/bin/dsb-ls" "$T/bin/holdlist"

# The hooks attached from the start (arm = always): an attacker can arm them at will with one
# blocked call on a filesystem of its own, so the shares must hold while armed.
printf '[metrics]\naddress =\n[filter]\ncomm_include = dsb-*\n[detect]\narm = always\n[daemon]\nlog_level = debug\n' >"$DAEMON_CONF"
daemon_start

# A's processes, holding their listings (they die with holdlist: PR_SET_PDEATHSIG)
mkfifo "$T/hold.in"
setpriv --reuid=$A --regid=$A --clear-groups -- "$T/bin/holdlist" $PROCS "${chain[@]}" \
	<"$T/hold.in" >"$T/hold.out" 2>&1 &
hold=$!
exec 3>"$T/hold.in" # holdlist waits until this closes
on_exit "exec 3>&-; kill $hold 2>/dev/null; wait_for 60 eval '! pgrep -u $A >/dev/null'"
wait_for 120 grep -q '^ready' "$T/hold.out" || fail "holdlist: $(cat "$T/hold.out")"
info "user $A: $PROCS processes hold $((PROCS * 8)) listings; bpf_table_full $(daemon_stat bpf_table_full), bpf_user_full $(daemon_stat bpf_user_full)"

# B's ls -l, while A's processes sleep
slowfs_ctl reset >/dev/null
setpriv --reuid=$B --regid=$B --clear-groups -- "$T/bin/dsb-ls" -l "$T/mnt/b" >/dev/null &
app=$!
wait $app || fail "user $B's ls -l failed"
own=$(slowfs_stat "pid.$app.lookup")
info "user $B: ls -l sent $own of $N lookups itself; the daemon $(slowfs_stat "pid.$DAEMON_PID.lookup")"
assert_le $((own * 5)) "$N" "user $B's own lookups x5"
assert_ge "$(daemon_stat scans_started)" 1 "user $B's scan started"
assert_ge "$(daemon_stat bpf_user_full)" $((PROCS * 8 - 16384)) "user $A's listings past its share, counted"

exec 3>&-
kill $hold 2>/dev/null || true
wait $hold 2>/dev/null || true
wait_for 60 eval "! pgrep -u $A >/dev/null"
daemon_stop
echo PASS
