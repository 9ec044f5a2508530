#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Races found in review, each provoked on purpose:
#  a. A control written late: the harness forgets a process's earlier scan of a directory (by
#     its scan id, as a daemon handling that scan's END late does) just when the process starts
#     a new scan of the same directory.  The new scan must go on (PROGRESS, END): a control
#     keyed by process and directory would have forgotten it.
#  c. Full tables: with room for 6 processes, 12 processes list and stat a directory each and
#     stay alive.  The tracked ones get their END when they exit (an LRU table would have
#     evicted some of them, whose END would never come); the others are counted, not tracked.
#     (Other processes on the machine may take some of the room: the bounds allow for that.)
#  d. A path longer than the detector's buffer: "d/<250 characters>/name" read into 256 bytes is
#     cut to "d/<the characters>", which hashes like an entry of d.  Such stats must never count
#     for d; the same subdirectories stat'ed by shorter paths do (so the test can fail).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/detector.bash"

D=$T/dir
make_files "$D" 300
DINO=$(ino "$D")
O=$T/other
make_files "$O" 20

# --- a. a late control ------------------------------------------------------------------------
# scan D (3 stats), scan O, scan D again: 3 stats, wait for $go, then 200 more
cat >"$T/rescan.py" <<'EOF'
import os, sys, time
d, o, go = sys.argv[1:4]
def scan(p, n):
    names = sorted(x for x in os.listdir(p) if x.startswith("f"))
    for x in names[:n]:
        os.stat(os.path.join(p, x))
    return names
scan(d, 3)
scan(o, 3)
names = scan(d, 3)
deadline = time.time() + 20
while not os.path.exists(go) and time.time() < deadline:
    time.sleep(0.01)
for x in names[3:203]:
    os.stat(os.path.join(d, x))
EOF
info "a. a late FORGET of the previous scan of the same directory"
trace_start -s 50 --forget-previous
mark
rm -f "$T/go"
"$PY" "$T/rescan.py" "$D" "$O" "$T/go" &
pid=$!
on_exit "kill $pid 2>/dev/null"
nscans_is() { [ "$(nevents SCAN "$1" "$2")" = "$3" ]; }
wait_for 10 nscans_is "$DINO" "$pid" 2
# the harness has written the stale control before printing the second SCAN
grep -q "^forgot scan=" "$TRACE_OUT" || fail "the harness did not forget the first scan"
touch "$T/go"
wait "$pid" || fail "rescan.py failed"
flush
ids=$(events SCAN "$DINO" "$pid" | sed 's/.* scan=\([^ ]*\) .*/\1/' | tr '\n' ' ')
first=${ids%% *}
second=$(echo $ids | awk '{ print $2 }')
assert_ne "$first" "$second" "a: two scans, two ids"
assert_eq "$(sed -n 's/^forgot scan=//p' "$TRACE_OUT" | head -n 1)" "$first" "a: the control was the first scan's"
assert_ge "$(events PROGRESS "$DINO" "$pid" | grep -c " scan=$second ")" 3 "a: PROGRESS of the new scan"
assert_eq "$(events END "$DINO" "$pid" | grep " scan=$second " | sed 's/.* end=\([a-z]*\) .*/\1/')" exit \
	"a: END of the new scan"
trace_stop

# --- c. full tables --------------------------------------------------------------------------
info "c. 12 processes with room for 6"
N=12
for i in $(seq 1 $N); do make_files "$T/c$i" 20; done
cat >"$T/hold.py" <<'EOF'
import os, sys, time
d, go = sys.argv[1:3]
for x in sorted(os.listdir(d))[:5]:
    os.stat(os.path.join(d, x))
open(go + ".ready." + str(os.getpid()), "w").close()
deadline = time.time() + 30
while not os.path.exists(go) and time.time() < deadline:
    time.sleep(0.01)
EOF
trace_start -s 0 --tables 6,64
mark
rm -f "$T/go"*
pids=()
for i in $(seq 1 $N); do
	"$PY" "$T/hold.py" "$T/c$i" "$T/go" &
	pids+=($!)
	on_exit "kill $! 2>/dev/null"
	wait_for 10 test -e "$T/go.ready.$!"
done
touch "$T/go"
for p in "${pids[@]}"; do wait "$p" || fail "hold.py failed"; done
flush
scans=0
for i in $(seq 1 $N); do
	n=$(nevents SCAN "$(ino "$T/c$i")" "${pids[$((i - 1))]}")
	e=$(nevents END "$(ino "$T/c$i")" "${pids[$((i - 1))]}")
	info "process $i: $n SCAN, $e END"
	assert_eq "$e" "$n" "c: process $i: every SCAN has its END"
	scans=$((scans + n))
done
assert_ge "$scans" 1 "c: processes tracked"
assert_le "$scans" 6 "c: processes tracked with room for 6"
trace_stop
assert_ge "$(field "$(grep '^COUNTERS' "$TRACE_OUT")" table_full)" $((N - 6)) "c: listings refused, counted"

# --- d. paths longer than the buffer ---------------------------------------------------------
info "d. paths cut by the buffer never match a shorter directory"
# trunc/<250 characters>/zzz: cut at 255 bytes it reads "trunc/<the characters>", an entry of
# trunc.  trunc2/<200 characters>: a real entry of trunc2 by a path close to the limit.
long=$(printf 'y%.0s' $(seq 1 249))
short=$(printf 'y%.0s' $(seq 1 199))
mkdir -p "$T/trunc" "$T/trunc2"
for c in a b c d e f; do
	mkdir "$T/trunc/$c$long" "$T/trunc2/$c$short"
	touch "$T/trunc/$c$long/zzz"
done
cat >"$T/trunc.py" <<'EOF'
import os, sys
top, d, suffix = sys.argv[1:4]
os.chdir(top)
for s in sorted(os.listdir(d)):         # openat(AT_FDCWD, d), getdents: named d
    os.stat(d + "/" + s + suffix)
EOF
trace_start -k 3 -s 0
mark
run pid "$PY" "$T/trunc.py" "$T" trunc /zzz
run pid2 "$PY" "$T/trunc.py" "$T" trunc2 ""
flush
assert_eq "$(nevents SCAN "$(ino "$T/trunc")" "$pid")" 0 "d: stats by paths longer than the buffer"
assert_eq "$(nevents SCAN "$(ino "$T/trunc2")" "$pid2")" 1 "d: entries by paths close to the limit"
trace_stop
echo "PASS"
