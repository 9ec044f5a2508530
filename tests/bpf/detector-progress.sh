#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# After the SCAN: PROGRESS every progress_step stats (from the config, or per scan through
# detector_scan_step(), 0 = none), nothing more after detector_scan_forget(), and END when the
# process exits, execs, or lists a directory outside this one (not when it descends into a
# subdirectory).  The counters agree with the events printed.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/detector.bash"

D=$T/dir
make_files "$D" 300
DINO=$(ino "$D")
O=$T/other
make_files "$O" 20
OINO=$(ino "$O")
make_files "$D/sub" 20
SINO=$(ino "$D/sub")

# Lists $D, stats 3 entries, waits for $T/go, stats the other 297: the harness has seen the SCAN
# (and applied its per-scan setting) before the rest of the stats.
cat >"$T/scan.py" <<'EOF'
import os, sys, time
d, go = sys.argv[1:3]
names = sorted(n for n in os.listdir(d) if n.startswith("f"))
for n in names[:3]:
    os.stat(os.path.join(d, n))
deadline = time.time() + 20
while not os.path.exists(go) and time.time() < deadline:
    time.sleep(0.01)
for n in names[3:]:
    os.stat(os.path.join(d, n))
EOF

# paused_scan: run scan.py, release it once its SCAN is out; pid in $pid
paused_scan() {
	rm -f "$T/go"
	"$PY" "$T/scan.py" "$D" "$T/go" &
	pid=$!
	on_exit "kill $pid 2>/dev/null"
	wait_for 10 grep -q "^SCAN tgid=$pid .* ino=$DINO " "$TRACE_OUT"
	touch "$T/go"
	wait "$pid" || fail "scan.py failed"
	flush
}

info "config step 50"
trace_start -s 50
mark
paused_scan
assert_eq "$(nevents SCAN "$DINO" "$pid")" 1 "step 50: SCAN"
assert_eq "$(events PROGRESS "$DINO" "$pid" | sed 's/.* stats=\([0-9]*\) .*/\1/' | tr '\n' ' ')" \
	"53 103 153 203 253 " "step 50: PROGRESS at these stats counts"
last=$(events PROGRESS "$DINO" "$pid" | tail -n 1)
assert_eq "$(field "$last" name)" f000253 "step 50: name of the last entry stat'ed"
assert_eq "$(events '(SCAN|PROGRESS|END)' "$DINO" "$pid" | sed 's/.* scan=\([^ ]*\) .*/\1/' | sort -u | wc -l)" \
	1 "step 50: one scan id on all events"
end=$(events END "$DINO" "$pid")
assert_eq "$(field "$end" end)" exit "step 50: END reason"
assert_eq "$(field "$end" stats)" 300 "step 50: END stats"
assert_eq "$(field "$end" done)" 1 "step 50: END listing done"
trace_stop

info "per-scan step 100 (detector_scan_step)"
trace_start -s 50 --step-on-scan 100
mark
paused_scan
# applied at the 4th stat: 4 + 100, 4 + 200
assert_eq "$(events PROGRESS "$DINO" "$pid" | sed 's/.* stats=\([0-9]*\) .*/\1/' | tr '\n' ' ')" \
	"104 204 " "step 100: PROGRESS at these stats counts"
trace_stop

info "per-scan step 0"
trace_start -s 50 --step-on-scan 0
mark
paused_scan
assert_eq "$(nevents PROGRESS "$DINO" "$pid")" 0 "step 0: PROGRESS events"
assert_eq "$(nevents END "$DINO" "$pid")" 1 "step 0: END still comes"
trace_stop

info "detector_scan_forget"
trace_start -s 50 --forget-on-scan
mark
paused_scan
assert_eq "$(nevents SCAN "$DINO" "$pid")" 1 "forget: SCAN"
assert_eq "$(nevents PROGRESS "$DINO" "$pid")" 0 "forget: PROGRESS events"
assert_eq "$(nevents END "$DINO" "$pid")" 0 "forget: END events"
trace_stop

info "END: descending keeps the parent, moving on ends it, exec ends it"
trace_start -s 0
mark
cat >"$T/walk.py" <<'EOF'
import os, sys
d, sub, other = sys.argv[1:4]
def scan(p):
    for n in sorted(os.listdir(p))[:5]:
        os.stat(os.path.join(p, n))
scan(d)
scan(sub)     # below d: d goes on
scan(other)   # elsewhere: d and sub are over
scan(d)       # a fresh scan of d
os.execv("/bin/true", ["true"])
EOF
run pid "$PY" "$T/walk.py" "$D" "$D/sub" "$O"
flush
assert_eq "$(nevents SCAN "$DINO" "$pid")" 2 "walk: two scans of dir"
assert_eq "$(events END "$DINO" "$pid" | sed 's/.* end=\([a-z]*\) .*/\1/' | tr '\n' ' ')" \
	"next exec " "walk: how the scans of dir ended"
assert_eq "$(field "$(events END "$SINO" "$pid")" end)" next "walk: sub ended by moving on"
assert_eq "$(field "$(events END "$OINO" "$pid")" end)" next "walk: other ended by the new scan of dir"
# order: sub's END comes only once `other` is listed, after sub's SCAN
assert_eq "$(since_mark | grep "^[A-Z]* tgid=$pid " | grep -E " ino=($DINO|$SINO|$OINO) " |
	awk '{ print $1 }' | tr '\n' ' ')" "SCAN SCAN END END SCAN END SCAN END " "walk: event order"
trace_stop
c=$(grep '^COUNTERS' "$TRACE_OUT")
assert_eq "$(field "$c" events)" "$(grep -cE '^(SCAN|PROGRESS|END) ' "$TRACE_OUT")" "events counter"
assert_eq "$(field "$c" events_lost)" 0 "events lost"
echo "PASS"
