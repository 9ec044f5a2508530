#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# What must never confirm a scan: listings without stats (ls, ls -f, os.listdir), a listing
# followed by stats of another directory's files (by path, by dirfd, by bare name in the cwd),
# fewer stats than confirm_stats, and the daemon's own process (self_tgid).  Each case has a
# positive twin in the same run, so a detector that saw nothing would fail here too.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/detector.bash"

A=$T/a
B=$T/b
make_files "$A" 100
make_files "$B" 100       # the same names as in A
AINO=$(ino "$A")
BINO=$(ino "$B")

trace_start -k 3 -s 0
mark

info "listings without stats"
run pid ls "$A"
run pid ls -f "$A"
run pid "$PY" -c 'import os, sys; os.listdir(sys.argv[1])' "$A"

info "list A, stat B's files by path, by dirfd, by bare name in B"
run pid "$PY" -c '
import os, sys
a, b = sys.argv[1:3]
names = os.listdir(a)
for n in names[:20]:
    os.stat(os.path.join(b, n))
fd = os.open(b, os.O_RDONLY | os.O_DIRECTORY)
for n in names[20:40]:
    os.stat(n, dir_fd=fd)
os.chdir(b)
for n in names[40:60]:
    os.stat(n)' "$A" "$B"

info "list A, stat only 2 of its entries (confirm_stats 3)"
run pid "$PY" -c '
import os, sys
a = sys.argv[1]
for n in sorted(os.listdir(a))[:2]:
    os.stat(os.path.join(a, n))' "$A"

info "list A relative to the cwd, chdir to B's parent twin, stat 'a/NAME' there"
mkdir -p "$T/twin/a"
make_files "$T/twin/a" 100
run pid bash -c "cd '$T' && exec '$PY' -c '
import os
names = os.listdir(\"a\")
os.chdir(\"twin\")
for n in names[:20]:
    os.stat(os.path.join(\"a\", n))'"

flush
assert_eq "$(nevents SCAN "$AINO")" 0 "scans of A"
assert_eq "$(nevents SCAN "$BINO")" 0 "scans of B"
assert_eq "$(nevents SCAN "$(ino "$T/twin/a")")" 0 "scans of the twin"

# (after the checks above: the main trace rightly sees these as another process's scans)
info "the detector's own process (self_tgid) lists and stats A"
"$TRACE" -k 3 -s 0 --self-scan "$A" -t 0.3 >"$T/self.out" 2>&1 || fail "self-scan run failed: $(cat "$T/self.out")"
assert_contains "$(cat "$T/self.out")" "self-scan stats=100" "the self scan stat'ed A's entries"
assert_eq "$(grep -c "^SCAN .* ino=$AINO " "$T/self.out" || true)" 0 "own scan reported to itself"


info "positive twins: the same workloads with one more stat, or without self_tgid"
mark
run pid "$PY" -c '
import os, sys
a = sys.argv[1]
for n in sorted(os.listdir(a))[:3]:
    os.stat(os.path.join(a, n))' "$A"
flush
assert_eq "$(nevents SCAN "$AINO" "$pid")" 1 "three stats confirm"
"$TRACE" -k 3 -s 0 --no-ignore-self --self-scan "$A" -t 0.3 >"$T/self.out" 2>&1 || fail "self-scan run failed"
assert_ge "$(grep -c "^SCAN .* ino=$AINO " "$T/self.out" || true)" 1 "own scan seen without self_tgid"

trace_stop
echo "PASS"
