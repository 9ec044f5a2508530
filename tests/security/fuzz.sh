#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# The fuzz targets (tests/fuzz/fuzz_*.c: the config parser, one control request, one HTTP
# client of the metrics endpoint, the state file) run clean under ASan and UBSan: each first replays its committed
# corpus (tests/fuzz/corpus/TARGET/: seeds and the regression inputs of bugs found), then fuzzes
# from it for FUZZ_SECONDS (15 here, 300 under `make fuzz`).  Any crash, leak, sanitizer report,
# broken check of the target or timeout fails the test; the input that did it is kept in
# $BUILD/fuzz/artifacts/ (replay: $BUILD/fuzz/TARGET FILE).  Built by `make tests` (clang).
. "$(dirname "$0")/../lib/lib.sh"
SECONDS_EACH=${FUZZ_SECONDS:-15}
FUZZ=$BUILD/fuzz
ARTIFACTS=$FUZZ/artifacts
mkdir -p "$ARTIFACTS"
# make fuzz keeps what it finds between runs; a brief run starts from the committed corpus alone
if [ -n "${FUZZ_SECONDS:-}" ]; then WORK=$FUZZ/corpus; else WORK=$T/corpus; fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TMPDIR=$T # fuzz_http's unix socket

targets=()
for src in "$TOP"/tests/fuzz/fuzz_*.c; do targets+=("$(basename "$src" .c)"); done
[ ${#targets[@]} -gt 0 ] || fail "no fuzz targets in tests/fuzz/"
for t in "${targets[@]}"; do
	[ -x "$FUZZ/$t" ] || fail "$FUZZ/$t missing: run 'make tests' (builds the fuzz targets with clang)"
done

failed=()
for t in "${targets[@]}"; do
	seeds=$TOP/tests/fuzz/corpus/${t#fuzz_}
	[ -d "$seeds" ] && [ -n "$(ls -A "$seeds")" ] || fail "$t: no seed corpus in $seeds"
	dict=()
	[ -e "$TOP/tests/fuzz/${t#fuzz_}.dict" ] && dict=(-dict="$TOP/tests/fuzz/${t#fuzz_}.dict")
	opts=(-timeout=10 -rss_limit_mb=2048 -max_len=4096 -artifact_prefix="$ARTIFACTS/$t-")
	log=$T/$t.log

	# 1. the committed inputs, each once: the regression inputs of the bugs found
	nseeds=$(find "$seeds" -type f | wc -l)
	if ! "$FUZZ/$t" "${opts[@]}" "$seeds"/* >"$log" 2>&1; then
		tail -n 40 "$log"
		failed+=("$t (corpus replay)")
		continue
	fi
	# 2. fuzzing from them
	mkdir -p "$WORK/$t"
	if ! "$FUZZ/$t" "${opts[@]}" "${dict[@]}" -max_total_time="$SECONDS_EACH" -print_final_stats=1 \
		"$WORK/$t" "$seeds" >"$log" 2>&1; then
		tail -n 40 "$log"
		failed+=("$t")
		continue
	fi
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n1)
	corp=$(grep -o 'corp: [0-9]*' "$log" | tail -n1)
	[ "${runs:-0}" -gt 0 ] || { tail -n 20 "$log"; fail "$t: ran no input"; }
	echo "$t: $nseeds committed inputs replayed; fuzzed ${SECONDS_EACH}s: $runs runs, ${cov:-cov: ?} edges, ${corp:-corp: ?} inputs: clean"
done
[ ${#failed[@]} -eq 0 ] || fail "fuzzing found problems in: ${failed[*]} (inputs in $ARTIFACTS)"
echo "PASS: ${targets[*]}"
