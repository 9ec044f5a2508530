#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# slowfs latency and parallelism: one stat costs at least the configured latency; 64 concurrent
# stats of distinct entries of ONE directory overlap (FUSE_PARALLEL_DIROPS negotiated, replies
# delayed without blocking workers), while without PARALLEL_DIROPS the kernel serializes them.
. "$(dirname "$0")/../lib/lib.sh"
PSTAT=$BUILD/tests/tools/pstat
[ -x "$PSTAT" ] || skip "build/tests/tools/pstat not built (make tests)"

B=$T/backing
make_files "$B" 200

elapsed_ms() { # elapsed_ms PSTAT-ARGS...: run pstat, print its elapsed_ms rounded up
	local out
	out=$("$PSTAT" "$@") || fail "pstat $* failed: $out"
	awk -F'elapsed_ms=' '{ printf "%d\n", $2 + 0.999 }' <<<"$out"
}

# 1. Latency: with both cache timeouts 0 every stat of the same name goes to slowfs again.
slowfs_mount "$B" "$T/m0" --latency-us 20000 --attr-timeout 0 --entry-timeout 0
for i in 1 2 3; do
	ms=$(elapsed_ms "$T/m0/f000001")
	info "stat #$i with timeouts 0: ${ms} ms"
	assert_ge "$ms" 20 "stat #$i took less than the 20 ms latency"
done
assert_ge "$(slowfs_stat total.lookup)" 3 "lookups with entry timeout 0"

# 2. Parallel: 64 fresh names in one directory, 64 threads, 20 ms latency each.
slowfs_mount "$B" "$T/m1" --latency-us 20000
assert_eq "$(slowfs_stat parallel_dirops)" 1 "FUSE_PARALLEL_DIROPS in the INIT reply"
flags=$(slowfs_stat init_flags)
assert_ne "$(( flags & (1 << 18) ))" 0 "init_flags $flags lacks bit 18"
slowfs_ctl reset >/dev/null
ms=$(elapsed_ms -j 64 $(seq -f "$T/m1/f%06g" 1 64))
info "64 concurrent stats at 20 ms: ${ms} ms, max_inflight=$(slowfs_stat max_inflight)," \
	"lookup+getattr peak=$(slowfs_stat max_inflight_lookup_getattr)"
assert_ge "$ms" 20 "64 stats faster than one latency"
assert_le "$ms" 160 "64 concurrent stats took longer than 8 x 20 ms"
assert_eq "$(slowfs_stat total.lookup)" 64 "lookups"
assert_ge "$(slowfs_stat max_inflight)" 32 "max_inflight"
assert_ge "$(slowfs_stat max_inflight_lookup_getattr)" 32 "max_inflight_lookup_getattr"
# cached now (entry timeout 60 s): the same stats cost no round trip
ms=$(elapsed_ms -j 64 $(seq -f "$T/m1/f%06g" 1 64))
assert_le "$ms" 19 "cached stats (each round trip would take 20 ms)"
assert_eq "$(slowfs_stat total.lookup)" 64 "no new lookups for cached names"

slowfs_unmount "$T/m0"
slowfs_unmount "$T/m1"

# 3. Control: without the flag the kernel serializes the lookups (16 x 20 ms >= 320 ms).
slowfs_mount "$B" "$T/m2" --latency-us 20000 --no-parallel-dirops
assert_eq "$(slowfs_stat parallel_dirops)" 0 "--no-parallel-dirops"
ms=$(elapsed_ms -j 16 $(seq -f "$T/m2/f%06g" 1 16))
info "16 concurrent stats without PARALLEL_DIROPS: ${ms} ms"
assert_ge "$ms" 300 "lookups were not serialized without PARALLEL_DIROPS (test is blind)"
slowfs_unmount
