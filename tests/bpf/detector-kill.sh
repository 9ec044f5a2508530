#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# kill -9 of a process that attached the detector leaves none of its programs loaded or
# attached: nothing is pinned, the links die with the process's fds.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/detector.bash"
need_cmd bpftool

trace_start
ids=$(sed -n 's/^attached progs=//p' "$TRACE_OUT" | tr ',' ' ')
# sys_enter, sys_exit, sched_process_exit, sched_process_exec
NPROGS=4
assert_eq "$(wc -w <<<"$ids")" $NPROGS "programs reported by the harness"

# links_of IDS...: how many BPF links hold one of these programs
links_of() {
	bpftool -j link show | "$PY" -c '
import json, sys
ids = set(int(i) for i in sys.argv[1:])
print(sum(1 for l in json.load(sys.stdin) if l.get("prog_id") in ids))' "$@"
}
# loaded IDS...: how many of these programs still exist
loaded() {
	local n=0 id
	for id; do bpftool prog show id "$id" >/dev/null 2>&1 && n=$((n + 1)); done
	echo $n
}

# shellcheck disable=SC2086
{
	assert_eq "$(loaded $ids)" $NPROGS "programs loaded while the harness runs"
	assert_eq "$(links_of $ids)" $NPROGS "links attached while the harness runs"
	kill -KILL "$TRACE_PID"
	wait "$TRACE_PID" 2>/dev/null || true
	gone() { [ "$(loaded $ids)" = 0 ] && [ "$(links_of $ids)" = 0 ]; }
	wait_for 10 gone
	assert_eq "$(links_of $ids)" 0 "links after kill -9"
	assert_eq "$(loaded $ids)" 0 "programs after kill -9"
}
echo "PASS"
