#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Programs blocked for seconds on a hung FUSE server ([detect] arm = on-block): 20 threads of
# one process and 30 processes stat names of a stalled slowfs, and more processes keep coming
# for a few seconds.  The sentinel signals each process once per rate period (the other
# threads' blocks are counted rate_limited, not sent); the daemon's CPU time over that storm
# stays small; once quiet_s passed without a new block the hooks are detached although the
# programs are still blocked; and a cold `ls -l` on another slowfs arms and is prefetched.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd python3

N=2000
make_files "$T/back/hang" 200
make_files "$T/back2/other" $N
ln -s "$(realpath "$(command -v ls)")" "$T/dra-ls"
ln -s "$(realpath "$(command -v stat)")" "$T/dra-stat"
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
ln -s "$(realpath "$py")" "$T/dra-python3"
cat >"$T/threads.py" <<'PY'
import os, sys, threading
d = sys.argv[1]
ts = [threading.Thread(target=lambda i=i: os.lstat(os.path.join(d, "f%06d" % (i + 1))))
      for i in range(20)]
for t in ts: t.start()
for t in ts: t.join()
PY
printf '[metrics]\naddress =\n[filter]\ncomm_include = dra-*\n[detect]\nquiet_s = 2\n' >"$DAEMON_CONF"
slowfs_mount "$T/back" "$T/mnt" --latency-us 100
hung_ctl=$SLOWFS_CTL
slowfs_mount "$T/back2" "$T/mnt2" --latency-us 200
disarmed() { [ "$(daemon_stat armed)" = 0 ]; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$DAEMON_PID/stat"; }

daemon_start
drop_caches
"$BUILD/slowfsctl" "$hung_ctl" stall >/dev/null
on_exit "'$BUILD/slowfsctl' '$hung_ctl' release"
c0=$(cpu_ticks)
pids=()
"$T/dra-python3" "$T/threads.py" "$T/mnt/hang" & pids+=($!)
for i in $(seq 21 50); do "$T/dra-stat" "$T/mnt/hang/f$(printf %06d $i)" >/dev/null 2>&1 & pids+=($!); done
on_exit "kill -KILL ${pids[*]} 2>/dev/null"
# more programs arrive for 3 s (each blocks at once)
t_end=$(($(now_ms) + 3000))
i=51
while [ "$(now_ms)" -lt $t_end ]; do
	"$T/dra-stat" "$T/mnt/hang/f$(printf %06d $i)" >/dev/null 2>&1 & pids+=($!)
	i=$((i + 1)); [ $i -le 200 ] || i=51
	sleep 0.02
done
n_procs=${#pids[@]}
info "$n_procs programs blocked on the hung filesystem"
blocked() { [ "$(daemon_stat sentinel_blocked)" -ge 50 ]; }
wait_for 10 blocked
ctl stats | grep -E '^(arm|sentinel)' || true
assert_ge "$(daemon_stat sentinel_signals.rate_limited)" 10 "blocks of the threads not signalled (rate limit)"
sent=$(($(daemon_stat sentinel_signals.armed) + $(daemon_stat sentinel_signals.kept) + $(daemon_stat sentinel_signals.ignored_verdict)))
assert_le "$sent" $((n_procs + 10)) "signals received: about one per process"
# the hooks come off although the programs are still blocked
wait_for 30 disarmed
c1=$(cpu_ticks)
hz=$(getconf CLK_TCK)
info "daemon CPU over the storm: $(((c1 - c0) * 1000 / hz)) ms"
assert_le $(((c1 - c0) * 1000 / hz)) 2000 "daemon CPU (ms) while programs hang"
kill -0 "${pids[0]}" 2>/dev/null || fail "the blocked program ended: the filesystem did not hang"

info "another filesystem still arms and is helped"
a0=$(daemon_stat arms)
p0=$(daemon_stat entries_prefetched)
"$T/dra-ls" -l "$T/mnt2/other" >/dev/null
assert_ge "$(daemon_stat arms)" $((a0 + 1)) "arms by a cold ls -l on the other filesystem"
assert_ge $(($(daemon_stat entries_prefetched) - p0)) $((N / 2)) "entries prefetched there"
"$BUILD/slowfsctl" "$hung_ctl" release >/dev/null
for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
daemon_stop
echo PASS
