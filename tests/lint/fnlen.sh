#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# No function of the product code (daemon/, bpf/) is longer than MAX lines (80: HACKING.md,
# Invariants), counted from its opening brace to its closing one, both at column 0 as the code
# is written.  A function that is only a table may be listed in ALLOW with its reason; an ALLOW
# entry that no longer needs to be there fails too, so the list stays true.
. "$(dirname "$0")/../lib/lib.sh"
need_cmd awk

MAX=80
# "path function": table-only functions allowed to be longer (none today).
ALLOW=()

# fn_lengths FILE...: one line "LINES FILE FUNCTION" per function.  The function's name is the
# first identifier followed by '(' on the last line that started at column 0 before its brace
# (its signature's first line), or the program's name for SEC()/BPF_PROG(name, ...).
fn_lengths() {
	awk '
	function fname(sig,   rest, id) {
		rest = sig
		while (match(rest, /[A-Za-z_][A-Za-z0-9_]*[ \t]*\(/)) {
			id = substr(rest, RSTART, RLENGTH)
			sub(/[ \t]*\($/, "", id)
			rest = substr(rest, RSTART + RLENGTH)
			if (id == "SEC" || id == "__attribute__")
				continue
			if (id ~ /^BPF_/ && match(rest, /^[ \t]*[A-Za-z_][A-Za-z0-9_]*/))
				return substr(rest, RSTART, RLENGTH)
			return id
		}
		return "?"
	}
	FNR == 1 { open = 0; sig = "" }
	/^\{/ && !open { open = FNR; name = fname(sig); next }
	/^[A-Za-z_].*\)[ \t]*\{[ \t]*$/ && !open { open = FNR; name = fname($0); next }
	/^\}/ && open { gsub(/^[ \t]+/, "", name); print FNR - open, FILENAME, name; open = 0; next }
	/^[A-Za-z_]/ && !open { sig = $0 }
	' "$@"
}

cd "$TOP"
files=(daemon/*/*.c daemon/*/*.h bpf/*.c bpf/*.h)

# The measure itself must see what it is meant to: a function of MAX+1 lines is caught, one of
# MAX is not, and a BPF program is named by its name.
{
	printf 'static int short_one(void)\n{\n'
	for ((i = 1; i < MAX; i++)); do echo '	;'; done
	printf '}\n\nint BPF_PROG(long_prog, long id)\n{\n'
	for ((i = 1; i <= MAX; i++)); do echo '	;'; done
	printf '}\n'
} >"$T/probe.c"
probe=$(fn_lengths "$T/probe.c")
assert_eq "$probe" "$MAX $T/probe.c short_one
$((MAX + 1)) $T/probe.c long_prog" "the measure on a known file"

fn_lengths "${files[@]}" >"$T/all"
nfn=$(wc -l <"$T/all")
assert_ge "$nfn" 500 "functions found in daemon/ and bpf/ (is the measure blind?)"
info "$nfn functions; the longest:"
sort -rn "$T/all" >"$T/sorted" # (whole, then head: no SIGPIPE under pipefail)
head -n 5 "$T/sorted" | sed 's/^/#   /'

bad=0
while read -r n f name; do
	[ "$n" -gt "$MAX" ] || continue
	allowed=0
	for a in "${ALLOW[@]}"; do [ "$a" = "$f $name" ] && allowed=1; done
	[ $allowed = 1 ] && continue
	echo "$f: $name is $n lines (more than $MAX): split it into helpers" >&2
	bad=1
done <"$T/all"
for a in "${ALLOW[@]}"; do
	read -r f name <<<"$a"
	awk -v f="$f" -v n="$name" -v max="$MAX" '$2 == f && $3 == n && $1 > max { found = 1 }
		END { exit !found }' "$T/all" || { echo "ALLOW lists '$a', which is no longer over $MAX lines" >&2; bad=1; }
done
[ $bad = 0 ] || fail "functions over $MAX lines"
info "no function over $MAX lines"
