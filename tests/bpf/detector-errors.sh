#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# detector_open() fails cleanly and says what is missing: here, the capabilities (the process
# runs as root but with an empty capability bounding set).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/detector.bash"
need_cmd setpriv

expect_exit 1 setpriv --bounding-set=-all --inh-caps=-all "$TRACE" -t 0.1
assert_contains "$OUT" "CAP_BPF" "error message without capabilities"
assert_contains "$OUT" "loading the BPF programs" "error message names the failing step"

# the same binary with its capabilities works (so the failure above was the capabilities)
expect_exit 0 "$TRACE" -t 0.1
assert_contains "$OUT" "attached progs=" "privileged run"
echo "PASS"
