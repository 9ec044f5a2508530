#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# make bench, issue 26's cells: dirahead_xreaddir() against what programs do today, the arms of
# each cell interleaved round by round in one run, medians and their ratio side by side.
#   xreaddir-slowfs   slowfs, 500 us per request, 5,000 entries, a fresh (cold) mount per run:
#                     the iterator with the ls -l mask vs a getdents64 + fstatat loop (>= 10x),
#                     and `diraheadctl ls -l` vs `ls -l` (>= 10x)
#   xreaddir-warm     ext4 (the scratch directory's filesystem), 100,000 entries, warm: the
#                     iterator within 10% of the loop (ratio <= 1.10)
# Usage: [QUICK=1] [ROUNDS=N] [ONLY=regex] tests/bench/xreaddir.sh   (needs root: FUSE)
# Writes the table to stdout and to $BUILD/bench/xreaddir.md.  Exit 0 (targets are reported,
# MET or NOT MET), 1 if a run failed.
. "$(dirname "$0")/../lib/lib.sh"
need_root
BENCH=$BUILD/tests/bench/xreaddir-bench
CTL=$BUILD/diraheadctl
[ -x "$BENCH" ] && [ -x "$CTL" ] || fail "build $BENCH and $CTL first (make bench does)"
ROUNDS=${ROUNDS:-$([ -n "${QUICK:-}" ] && echo 3 || echo 5)}
SLOW_N=5000
WARM_N=$([ -n "${QUICK:-}" ] && echo 20000 || echo 100000)
ONLY=${ONLY:-.}
OUTMD=$BUILD/bench/xreaddir.md
mkdir -p "$(dirname "$OUTMD")"

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ns_of() { sed -n 's/.*elapsed_ns=\([0-9]*\).*/\1/p' <<<"$1"; }
# run_timed CMD...: the command's wall time in ns (its output discarded; it must succeed)
run_timed() {
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null 2>"$T/stderr" || fail "$* failed: $(cat "$T/stderr")"
	t1=$(date +%s%N)
	echo $((t1 - t0))
}
secs() { awk -v n="$1" 'BEGIN { printf "%.3f s", n / 1e9 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
verdict() { awk -v r="$1" -v op="$2" -v t="$3" 'BEGIN { ok = op == ">=" ? r >= t : r <= t; print ok ? "MET" : "NOT MET" }'; }

rows=()
row() { rows+=("$1"); echo "$1"; }

# ---- slowfs, 500 us, 5,000 entries, cold ------------------------------------------------------
if [[ xreaddir-slowfs =~ $ONLY ]]; then
	make_files "$T/back" $SLOW_N
	declare -A samples=() med=()
	M=$T/mnt
	for ((r = 1; r <= ROUNDS; r++)); do
		for arm in loop iter ls ctl; do
			slowfs_mount "$T/back" "$M" --latency-us 500
			case $arm in
			loop|iter)
				out=$("$BENCH" -m $arm "$M") || fail "xreaddir-bench -m $arm failed"
				grep -q "entries=$SLOW_N errors=0" <<<"$out" || fail "$arm: $out"
				ns=$(ns_of "$out") ;;
			ls) ns=$(LC_ALL=C run_timed ls -l "$M") ;;
			ctl) ns=$(run_timed "$CTL" ls -l "$M") ;;
			esac
			samples[$arm]+="$ns "
			slowfs_unmount "$M"
		done
		info "slowfs round $r: loop/iter/ls/ctl ns: $(for a in loop iter ls ctl; do echo -n "$(awk '{ print $NF }' <<<"${samples[$a]}") "; done)"
	done
	for a in loop iter ls ctl; do
		med[$a]=$(tr ' ' '\n' <<<"${samples[$a]}" | grep . | median)
	done
	rr=$(ratio "${med[loop]}" "${med[iter]}")
	row "| xreaddir-slowfs | slowfs 500 us, $SLOW_N entries, cold | getdents64+fstatat loop $(secs "${med[loop]}") | dirahead_xreaddir, ls -l mask $(secs "${med[iter]}") | ${rr}x | >= 10x: $(verdict "$rr" ">=" 10) |"
	rr=$(ratio "${med[ls]}" "${med[ctl]}")
	row "| xreaddir-slowfs-ls | slowfs 500 us, $SLOW_N entries, cold | ls -l $(secs "${med[ls]}") | diraheadctl ls -l $(secs "${med[ctl]}") | ${rr}x | >= 10x: $(verdict "$rr" ">=" 10) |"
fi

# ---- warm ext4 (or whatever the scratch directory is on), 100,000 entries ---------------------
if [[ xreaddir-warm =~ $ONLY ]]; then
	fstype=$(stat -f -c %T "$T")
	make_files "$T/warm" $WARM_N
	"$BENCH" -m loop "$T/warm" >/dev/null && "$BENCH" -m iter "$T/warm" >/dev/null # warm up
	declare -A wsamples=() wmed=()
	par=0
	for ((r = 1; r <= ROUNDS * 2; r++)); do
		for arm in loop iter; do
			out=$("$BENCH" -m $arm "$T/warm") || fail "xreaddir-bench -m $arm failed"
			grep -q "entries=$WARM_N errors=0" <<<"$out" || fail "$arm: $out"
			wsamples[$arm]+="$(ns_of "$out") "
			[ $arm = iter ] && grep -q parallel=yes <<<"$out" && par=$((par + 1))
		done
	done
	for a in loop iter; do
		wmed[$a]=$(tr ' ' '\n' <<<"${wsamples[$a]}" | grep . | median)
	done
	rr=$(ratio "${wmed[iter]}" "${wmed[loop]}")
	row "| xreaddir-warm | $fstype, $WARM_N entries, warm | getdents64+fstatat loop $(secs "${wmed[loop]}") | dirahead_xreaddir, ls -l mask $(secs "${wmed[iter]}") (parallel in $par of $((ROUNDS * 2)) runs) | ${rr} (iter/loop) | <= 1.10: $(verdict "$rr" "<=" 1.10) |"
fi

{
	echo "# dirahead_xreaddir() benchmark ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, medians of $ROUNDS rounds, $((ROUNDS * 2)) warm)"
	echo
	echo "| cell | setup | baseline | iterator | ratio | target |"
	echo "|---|---|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
} >"$OUTMD"
info "written to $OUTMD"
