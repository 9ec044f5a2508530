#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# No `return some_void_call(...);` in daemon/ or bpf/ (HACKING.md, Invariants: a void function
# returns nothing).  The compilers find it exactly: -Wpedantic warns of a return with an expression
# in a void function (gcc: "ISO C forbids 'return' with expression", clang: "should not return void
# expression"); every other pedantic warning is ignored here.
. "$(dirname "$0")/../lib/lib.sh"
CC=${CC:-cc}
CLANG=${CLANG:-clang}
need_cmd "$CC" "$CLANG"
ARCH=$(uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
[ -f "$BUILD/vmlinux.h" ] && [ -f "$BUILD/detector.skel.h" ] ||
	skip "no $BUILD/vmlinux.h or skeletons: run make all first"

cd "$TOP"
VOID_RET="return. with expression, in function returning void|should not return void expression"
user_cc() {
	"$CC" -std=gnu11 -D_GNU_SOURCE -fsyntax-only -Wpedantic -Iinclude -Idaemon/common -Idaemon/lib \
		-Idaemon/diraheadd -I"$BUILD" -DDIRAHEAD_VERSION=\"lint\" "$1" 2>&1
}
bpf_cc() {
	"$CLANG" -target bpf -D__TARGET_ARCH_"$ARCH" -fsyntax-only -Wpedantic -Iinclude -Ibpf \
		-I"$BUILD" "$1" 2>&1
}

# Both compilers still say it in the words looked for.
printf 'static void a(void) {}\nvoid b(void);\nvoid b(void) { return a(); }\n' >"$T/probe.c"
user_cc "$T/probe.c" | qgrep -E "$VOID_RET" || fail "$CC no longer reports a void return as expected"
bpf_cc "$T/probe.c" | qgrep -E "$VOID_RET" || fail "$CLANG no longer reports a void return as expected"

bad=0 n=0
check() { # check COMPILE FILE: its void returns, or any error (a file this cannot read is no pass)
	local out
	out=$("$1" "$2")
	n=$((n + 1))
	if grep -q "error:" <<<"$out"; then
		echo "$out" | grep "error:" | head -n 5 >&2
		bad=1
	fi
	if grep -qE "$VOID_RET" <<<"$out"; then
		grep -E "$VOID_RET" <<<"$out" >&2
		bad=1
	fi
}
for f in daemon/*/*.c; do check user_cc "$f"; done
for f in bpf/*.bpf.c; do check bpf_cc "$f"; done
[ $bad = 0 ] || fail "return of a void expression (or a file that does not compile), above"
info "$n files, no void function returns an expression"
