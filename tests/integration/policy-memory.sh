#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Memory across restarts (persist.h): a daemon judges a slowfs mount where prefetch pays and a
# warm local directory that is fast, and writes what it learnt to its state directory when it
# stops ([daemon] state_dir here; systemd's $STATE_DIRECTORY otherwise).  Restarted on the same
# mounts, it knows both at once:
# - the slowfs verdict is `pays` before any scan, and the first scan there starts prefetching
#   without a probe (no "scan probing" line for it; ls sends almost none of its lookups);
# - the local filesystem is `fast`: its scan is skipped at once, never probed.
# Then a corrupt state file: one warning, a normal start, and the slowfs scan is probed again
# (nothing remembered).  [policy] remember_days = 0: nothing written.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root

N=3000
make_files "$T/back/dir" $N
make_files "$T/local" $N
ln -s "$(realpath "$(command -v ls)")" "$T/dra-ls"
unset STATE_DIRECTORY # the key this time
SD=$T/sd
conf() {
	printf '[metrics]\naddress =\n[filter]\ncomm_include = dra-*\n[detect]\narm = always\n' >"$DAEMON_CONF"
	# start_factor 12: the first stats of a warm local ls (~20 us apart: its start-up work) stay
	# clearly under the start rule's threshold, and slowfs's 2 ms lookups clearly over it, so
	# that the first scan after the restart is decided by the memory, not by that noise
	printf '[daemon]\nstate_dir = %s\n[policy]\nremember_days = %s\nstart_factor = 12\n' \
		"$SD" "${1:-30}" >>"$DAEMON_CONF"
}
conf
slowfs_mount "$T/back" "$T/mnt" --latency-us 2000
sdev=$(awk -v m="$T/mnt" '$5 == m { print $3 }' /proc/self/mountinfo)
ldev=$(stat -c '%Hd:%Ld' "$T/local")
probed() { grep -c "scan probing: .*$1" "$DAEMON_LOG" || true; }

# 1. Learn: the warm local directory is fast, slowfs pays.
daemon_start
ls -ln "$T/local" >/dev/null
"$T/dra-ls" -ln "$T/local" >/dev/null
fast_skipped() { [ "$(daemon_stat skips.fast_stats)" -ge 1 ]; }
wait_for 5 fast_skipped
assert_eq "$(daemon_stat "filesystems.$ldev.verdict")" fast "verdict of the local filesystem $ldev"
"$T/dra-ls" -l "$T/mnt/dir" >/dev/null
assert_eq "$(daemon_stat "filesystems.$sdev.verdict")" pays "verdict of slowfs ($sdev)"
assert_ge "$(probed "$T/mnt/dir")" 1 "probes of the slowfs scan before it was known"
daemon_stop
grep -qE '"verdict": ?"pays"' "$SD/state.json" || fail "no pays verdict in the state file"
assert_contains "$(cat "$SD/state.json")" "mount:fuse.slowfs" "state file"
assert_eq "$(stat -c %a "$SD/state.json")" 600 "state file mode"

# 2. Restart on the same mounts: both known before any scan.
daemon_start
# (other slowfs mounts on the machine, a bench's, have the same type, source and options: known too)
restored=$(sed -n 's/.*state: \([0-9]*\) mounted filesystems known from 2 remembered.*/\1/p' "$DAEMON_LOG")
assert_ge "${restored:-0}" 2 "filesystems restored"
assert_eq "$(daemon_stat "filesystems.$sdev.verdict")" pays "slowfs verdict after the restart"
assert_eq "$(daemon_stat "filesystems.$ldev.verdict")" fast "local verdict after the restart"
# the fast one first: a restored fast verdict is trusted as long as a fresh one (10 s)
# (-n: no user name lookups at its first entries, which would make its first stats look slow
# and the scan be probed, remembered or not)
"$T/dra-ls" -ln "$T/local" >/dev/null
wait_for 5 fast_skipped
assert_eq "$(probed "$T/local")" 0 "probes of the local scan after the restart"
assert_eq "$(daemon_stat scans_started)" 0 "scans started on the local filesystem"
drop_caches # the first ls left slowfs's attributes cached: its stats would be fast now
slowfs_ctl reset >/dev/null
"$T/dra-ls" -l "$T/mnt/dir" >/dev/null &
pid=$!
wait $pid
own=$(slowfs_stat "pid.$pid.lookup")
info "ls -l on slowfs after the restart: $own of $N lookups sent by ls itself"
grep -E "scan (probing|skipped|:)" "$DAEMON_LOG" | tail -5 || true
assert_eq "$(probed "$T/mnt/dir")" 0 "probes of the slowfs scan after the restart"
assert_ge "$(daemon_stat scans_started)" 1 "scans started on slowfs"
assert_le "$own" $((N / 10)) "lookups ls sent itself on slowfs"
daemon_stop

# 3. A corrupt state file: one warning, a normal start, nothing remembered.
head -c 200 "$SD/state.json" >"$T/trunc" && cp "$T/trunc" "$SD/state.json"
daemon_start
assert_eq "$(grep -c "state file .* ignored" "$DAEMON_LOG")" 1 "warnings about the corrupt file"
assert_eq "$(daemon_stat "filesystems.$sdev.verdict")" 0 "slowfs unknown after a corrupt file"
"$T/dra-ls" -l "$T/mnt/dir" >/dev/null
assert_ge "$(probed "$T/mnt/dir")" 1 "probes of the slowfs scan with nothing remembered"
daemon_stop
grep -qE '"version": ?1,' "$SD/state.json" || fail "state file not rewritten at stop"
# (a foreign version is ignored the same way)
sed -i -E 's/"version": ?1,/"version":99,/' "$SD/state.json"
daemon_start
assert_contains "$(cat "$DAEMON_LOG")" "version 99, this daemon reads 1" "foreign version"
daemon_stop

# 4. remember_days = 0: neither read nor written.
rm -f "$SD/state.json"
conf 0
daemon_start
"$T/dra-ls" -l "$T/mnt/dir" >/dev/null
daemon_stop
[ ! -e "$SD/state.json" ] || fail "state file written with remember_days = 0"
