#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Listing state per thread: 4 threads of one process each list a directory of their own and
# stat its entries, in lockstep so that every thread lists while the others are in the middle of
# their directories.  Each directory is one scan that goes on (PROGRESS) after the other threads'
# listings, and ends only when its own thread lists another directory (END next, from that
# thread) or exits (END thread); the process's exit ends nothing that is left.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/detector.bash"

for i in 0 1 2 3; do make_files "$T/d$i" 200; make_files "$T/e$i" 20; done

# Thread i: list d<i>, stat 5 entries; wait for its turn; ... rounds: everyone lists before
# anyone goes on.  Then stat 100 more; threads 0 and 1 list e<i> (END next), 2 and 3 exit.
cat >"$T/threads.py" <<'EOF'
import os, sys, threading
top = sys.argv[1]
n = 4
turn = threading.Condition()
state = {"t": 0}
def step(i, k):
    with turn:
        turn.wait_for(lambda: state["t"] == k * n + i)
def done_step():
    with turn:
        state["t"] += 1
        turn.notify_all()
def stat_some(d, names):
    for x in names:
        os.stat(os.path.join(d, x))
def work(i):
    d = os.path.join(top, "d%d" % i)
    step(i, 0)
    print("tid", i, threading.get_native_id(), flush=True)
    names = sorted(os.listdir(d))
    stat_some(d, names[:5])
    done_step()
    step(i, 1)                 # every other thread has listed its directory meanwhile
    stat_some(d, names[5:105])
    done_step()
    step(i, 2)
    if i < 2:
        e = os.path.join(top, "e%d" % i)
        stat_some(e, sorted(os.listdir(e))[:5])
    done_step()
ts = [threading.Thread(target=work, args=(i,)) for i in range(n)]
for t in ts: t.start()
for t in ts: t.join()
# the main thread waits a little: threads 2 and 3 have exited, the process has not
import time; time.sleep(0.2)
EOF

trace_start -s 20
mark
"$PY" "$T/threads.py" "$T" >"$T/tids" &
pid=$!
wait "$pid" || fail "threads.py failed"
flush
declare -A tid
while read -r _ i t; do tid[$i]=$t; done <"$T/tids"
for i in 0 1 2 3; do
	ino=$(ino "$T/d$i")
	assert_eq "$(nevents SCAN "$ino" "$pid")" 1 "thread $i: one scan of its directory"
	assert_eq "$(field "$(events SCAN "$ino" "$pid")" tid)" "${tid[$i]}" "thread $i: SCAN from its thread"
	# 105 stats at step 20 after confirmation: the scan lived through the other listings
	assert_ge "$(nevents PROGRESS "$ino" "$pid")" 4 "thread $i: PROGRESS after the others listed"
	end=$(events END "$ino" "$pid")
	assert_eq "$(grep -c . <<<"$end")" 1 "thread $i: one END"
	assert_eq "$(field "$end" tid)" "${tid[$i]}" "thread $i: ended by its own thread"
	assert_eq "$(field "$end" stats)" 105 "thread $i: END after all its stats"
	if [ "$i" -lt 2 ]; then
		assert_eq "$(field "$end" end)" next "thread $i: END reason (listed another directory)"
	else
		assert_eq "$(field "$end" end)" thread "thread $i: END reason (the thread exited)"
	fi
done
trace_stop
echo "PASS"
