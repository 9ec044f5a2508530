#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# A 200,000-entry directory with long names (~14 MB of names): both engines fetch every entry
# with a peak RSS under 12 MiB (the directory is streamed in bounded batches).  Renaming the
# directory mid-way changes nothing (everything is relative to the engine's own fd); removing it
# mid-way ends the run sensibly (exit 0 or 1 with a summary, no crash).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/prefetch.sh"

N=200000
RSS_MAX_KIB=12288
PREFIX=a-rather-long-file-name-so-that-the-names-alone-need-megabytes-
make_files "$T/big" $N "$PREFIX"

for engine in io_uring threads; do
	expect_exit 0 "$CTL" prefetch --engine=$engine "$T/big"
	info "$engine: $OUT"
	assert_eq "$(field_n entries)" $N "$engine entries"
	assert_eq "$(field_n errors)" 0 "$engine errors"
	if grep -q -a __asan_init "$CTL"; then
		info "sanitizer build: peak RSS not checked (ASan keeps freed memory in quarantine)"
	else
		assert_le "$(field_n maxrss)" $RSS_MAX_KIB "$engine peak RSS (KiB)"
	fi
done

info "renamed mid-way"
"$CTL" prefetch --depth=2 "$T/big" >"$T/out" 2>&1 &
pid=$!
on_exit "kill -KILL $pid"
sleep 0.2
mv "$T/big" "$T/big-renamed"
kill -0 $pid 2>/dev/null || info "(finished before the rename: nothing to prove this round)"
wait $pid || fail "exit $? after a rename: $(cat "$T/out")"
OUT=$(cat "$T/out")
info "$OUT"
assert_eq "$(field_n entries)" $N "entries after a rename"
assert_eq "$(field_n errors)" 0 "errors after a rename"

info "removed mid-way"
"$CTL" prefetch --depth=2 "$T/big-renamed" >"$T/out" 2>&1 &
pid=$!
on_exit "kill -KILL $pid"
sleep 0.2
rm -rf "$T/big-renamed"
rc=0
wait $pid || rc=$?
OUT=$(cat "$T/out")
info "exit $rc: $OUT"
[ $rc = 0 ] || [ $rc = 1 ] || fail "exit $rc after the directory was removed"
assert_contains "$OUT" "prefetch: directories="
assert_le "$(field_n entries)" $N "entries after a removal"
echo PASS
