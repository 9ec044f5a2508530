#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# The detector confirms exactly one scan per directory for each real tool's way of listing and
# stat'ing (REFERENCE.md section 5): ls -l (three ways of naming the directory, and -U), du, find,
# rsync, tar, Python os.walk + os.stat; with the right process, device, inode and names.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/detector.bash"
need_cmd ls du find rsync tar

D=$T/dir
make_files "$D" 300
for s in sub1 sub2 sub3; do make_files "$D/$s" 5 g; done
DINO=$(ino "$D")
DEV=$(devno "$D")
SUBINOS=$(for s in sub1 sub2 sub3; do ino "$D/$s"; done)

trace_start --verify -s 0

# check_scan WHAT PID INO: exactly one SCAN of INO, by PID (if not empty); prints the line
check_scan() {
	local what=$1 pid=$2 ino=$3 n line
	n=$(nevents SCAN "$ino")
	assert_eq "$n" 1 "$what: SCAN events for inode $ino"
	line=$(events SCAN "$ino")
	[ -z "$pid" ] || assert_eq "$(field "$line" tgid)" "$pid" "$what: tgid"
	assert_eq "$(field "$line" dev)" "$DEV" "$what: dev"
	assert_ge "$(field "$line" stats)" 3 "$what: stats at confirmation"
	assert_ge "$(field "$line" listed)" 72 "$what: bytes listed at confirmation (3 records)"
	# The tool runs on while the harness checks the names ("gone", or "bad" once it reused the
	# fd): detector-naming.sh checks them against paused processes.  An error is never right.
	case "$(field "$line" verify)" in
	*error*) fail "$what: checking the names in the event failed: $line" ;;
	esac
	echo "$line"
}

# check_tree WHAT PID: one scan of the top directory and one of each subdirectory
check_tree() {
	local what=$1 pid=$2 i
	check_scan "$what" "$pid" "$DINO" >/dev/null
	for i in $SUBINOS; do check_scan "$what (subdirectory)" "$pid" "$i" >/dev/null; done
}

info "ls -l DIR"
mark; run pid ls -l "$D"; flush
line=$(check_scan "ls -l DIR" "$pid" "$DINO")
assert_contains "$(field "$line" ref)" path "ls -l DIR: ref"
assert_eq "$(field "$line" path)" "$D" "ls -l DIR: path as given"
for i in $SUBINOS; do assert_eq "$(nevents SCAN "$i")" 0 "ls -l DIR: subdirectory scans"; done
# the END carries the whole listing, in bytes of linux_dirent64 records (each 19 bytes and the
# name's, NUL-terminated, rounded up to 8): 300 files + 3 subdirectories + . and ..
end=$(events END "$DINO" "$pid")
want=$(python3 -c 'import os, sys
print(sum((19 + len(n) + 1 + 7) // 8 * 8 for n in os.listdir(sys.argv[1]) + [".", ".."]))' "$D")
assert_eq "$(field "$end" listed)" "$want" "ls -l DIR: bytes of getdents64 records"
assert_eq "$(field "$end" stats)" 303 "ls -l DIR: entries stat'ed"
assert_eq "$(field "$end" end)" exit "ls -l DIR: end reason"

info "ls -l in DIR"
mark; run pid bash -c "cd '$D' && exec ls -l"; flush
line=$(check_scan "ls -l in DIR" "$pid" "$DINO")
assert_contains "$(field "$line" ref)" cwd "ls -l in DIR: ref"

info "ls -l /abs/DIR/"
mark; run pid ls -l "$D/"; flush
line=$(check_scan "ls -l /abs/DIR/" "$pid" "$DINO")
assert_eq "$(field "$line" path)" "$D/" "ls -l /abs/DIR/: path as given"

info "ls -lU relative DIR"
mark; run pid bash -c "cd '$T' && exec ls -lU dir"; flush
line=$(check_scan "ls -lU" "$pid" "$DINO")
assert_eq "$(field "$line" path)" dir "ls -lU: relative path as given"

info "du -s"
mark; run pid du -s "$D"; flush
check_tree "du -s" "$pid"
line=$(events SCAN "$DINO")
assert_contains "$(field "$line" ref)" fd "du: fts stats through an fd it holds"

info "find -ls"
mark; run pid find "$D" -ls; flush
check_tree "find -ls" "$pid"

info "rsync -an"
mark; run pid rsync -an "$D/" "$T/dst/"; flush
# rsync forks its sender: check the command name instead of the pid
check_tree "rsync -an" ""
assert_eq "$(field "$(events SCAN "$DINO")" comm)" rsync "rsync: comm"

info "tar cf /dev/null"
mark; run pid tar cf /dev/null -C "$T" dir; flush
check_tree "tar" "$pid"
end=$(events END "$DINO" "$pid")
assert_eq "$(field "$end" stats)" 303 "tar: stats each entry twice, counted once"

info "python os.walk + os.stat"
mark
run pid "$PY" -c '
import os, sys
for top, dirs, files in os.walk(sys.argv[1]):
    for n in files + dirs:
        os.stat(os.path.join(top, n))' "$D"
flush
check_tree "os.walk" "$pid"
line=$(events SCAN "$(ino "$D/sub2")")
assert_eq "$(field "$line" path)" "$D/sub2" "os.walk: subdirectory path"

trace_stop
c=$(grep '^COUNTERS' "$TRACE_OUT")
assert_ge "$(field "$c" scans)" 26 "scans counter"
assert_eq "$(field "$c" events_lost)" 0 "events lost"
echo "PASS"
