#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# The man pages (packaging/man/) render without a single warning, and say what the code does:
# every option of diraheadd, every config key, every diraheadctl command and exit code, every
# metric and every public function appears in its page.  Hand-written pages drift; this catches it.
. "$(dirname "$0")/../lib/lib.sh"
need_cmd mandoc

MAN=$TOP/packaging/man
pages=(diraheadd.8 diraheadctl.8 dirahead.conf.5 dirreadahead.3 dirahead_xreaddir.3)

for p in "${pages[@]}"; do
	[ -f "$MAN/$p" ] || fail "missing man page $p"
	# -Wwarning: warnings and errors (style hints stay quiet); any output is a failure
	out=$(mandoc -Tlint -Wwarning "$MAN/$p" 2>&1) || fail "mandoc -Tlint $p: $out"
	[ -z "$out" ] || fail "mandoc -Tlint $p: $out"
	if command -v groff >/dev/null; then
		out=$(groff -man -ww -z "$MAN/$p" 2>&1) || fail "groff $p: $out"
		[ -z "$out" ] || fail "groff -ww $p: $out"
	fi
	head -n1 "$MAN/$p" | qgrep 'SPDX-License-Identifier' || fail "$p: no SPDX line first"
done
info "all pages lint clean"

# man_has PAGE WORD WHAT: WORD must appear in PAGE's rendered text (hyphens as typed).
render() { MANWIDTH=200 mandoc -Tutf8 "$MAN/$1" 2>/dev/null | col -b 2>/dev/null | sed 's/‐/-/g'; }
declare -A text
for p in "${pages[@]}"; do text[$p]=$(render "$p"); done
man_has() {
	grep -qF -- "$2" <<<"${text[$1]}" || fail "$1 does not mention $2 ($3)"
}

# ---- diraheadd: every long option of its getopt table -------------------------------------
src=$TOP/daemon/diraheadd/diraheadd.c
if [ -f "$src" ]; then
	opts=$(sed -n '/struct option/,/};/p' "$src" | grep -o '{ "[a-z-]*"' | cut -d'"' -f2)
	[ -n "$opts" ] || fail "no long options found in $src"
	for o in $opts; do man_has diraheadd.8 "--$o" "option of diraheadd"; done
	info "diraheadd options: $(echo $opts)"
else
	info "diraheadd.c not found: options not checked"
fi
if [ -x "$BUILD/diraheadd" ]; then
	for o in $("$BUILD/diraheadd" --help | grep -o -- '--[a-z-]*' | sort -u); do
		man_has diraheadd.8 "$o" "from diraheadd --help"
	done
fi

# ---- dirahead.conf: every section and key config.c accepts, and the shipped file's keys ------
cfg=$TOP/daemon/diraheadd/config.c
# the rows of its key table: NAME("section", "key", ...)
rows=$(grep -oE '^\s+[A-Z]+\("[a-z]+", "[a-z_]+"' "$cfg")
keys=$(cut -d'"' -f4 <<<"$rows")
sections=$(cut -d'"' -f2 <<<"$rows" | sort -u)
[ "$(wc -w <<<"$keys")" -ge 50 ] || fail "config.c: only $(wc -w <<<"$keys") keys found in its table"
for k in $keys; do man_has dirahead.conf.5 "$k" "key in config.c"; done
for s in $sections; do man_has dirahead.conf.5 "[$s]" "section in config.c"; done
for k in $(grep -oE '^#?[a-z_]+ =' "$TOP/packaging/dirahead.conf" | tr -d '#= '); do
	man_has dirahead.conf.5 "$k" "key in packaging/dirahead.conf"
done
# the defaults written in the shipped file are the ones the page states
while read -r k v; do
	grep -qE -- "^ *$k \(.*default $v\)" <<<"${text[dirahead.conf.5]}" ||
		[ "$v" = "" ] || fail "dirahead.conf.5: $k should say default $v (packaging/dirahead.conf)"
done < <(grep -E '^#[a-z_]+ = ' "$TOP/packaging/dirahead.conf" | sed -E 's/^#([a-z_]+) = (.*)$/\1 \2/' |
	 grep -vE '^(socket|address) ')
info "config keys: $(echo $keys | wc -w), sections: $(echo $sections | tr ' ' '\n' | sort -u | wc -l)"

# ---- diraheadd(8) METRICS: every metric name metrics.c and the statistics table export ------
metrics=$(grep -ohE '"dirahead_[a-z0-9_]+' "$TOP"/daemon/diraheadd/{metrics,stats}.c | tr -d '"' | sort -u)
for m in $metrics; do man_has diraheadd.8 "$m" "metric in metrics.c or stats.c"; done
info "metrics: $(echo $metrics | wc -w)"

# ---- diraheadctl(8): commands and the exit codes of the lead's convention ------------------
ctl_srcs=$(ls "$TOP"/daemon/diraheadctl/*.c 2>/dev/null || true)
[ -n "$ctl_srcs" ] || fail "no daemon/diraheadctl/*.c"
cmds=$(grep -ohE '^int cmd_[a-z_]+\(' $ctl_srcs | sed -E 's/^int cmd_//; s/\($//' | sort -u)
for c in $cmds; do man_has diraheadctl.8 "diraheadctl $c" "command cmd_$c"; done
info "diraheadctl commands: $(echo $cmds)"
for code in 0 1 2 3 4; do
	grep -qE "^ {5,}$code( |$)" <<<"${text[diraheadctl.8]}" || fail "diraheadctl.8: exit status $code not described"
done
man_has diraheadctl.8 "DIRAHEAD_SOCKET" "environment variable"
man_has diraheadctl.8 "/run/dirahead/diraheadd.sock" "default socket"

# ---- dirreadahead(3), dirahead_xreaddir(3): every public function of include/dirahead.h ----
funcs=$(grep -oE '^[a-z].*[ *](dirreadahead|dirahead_[a-z_]+)\(' "$TOP/include/dirahead.h" |
	grep -oE '(dirreadahead|dirahead_[a-z_]+)\($' | tr -d '(' | sort -u)
[ -n "$funcs" ] || fail "no functions found in include/dirahead.h"
for f in $funcs; do
	case $f in
	dirahead_xreaddir*) man_has dirahead_xreaddir.3 "$f(" "function in dirahead.h" ;;
	*) man_has dirreadahead.3 "$f(" "function in dirahead.h" ;;
	esac
done
# and every field of the iterator's structs, and its flags, in its page
fields=$(sed -n '/^struct dirahead_x[a-z_]* {/,/^};/p' "$TOP/include/dirahead.h" |
	grep -oE '[a-z_]+;' | tr -d ';' | sort -u)
[ -n "$fields" ] || fail "no iterator fields found in include/dirahead.h"
for f in $fields; do man_has dirahead_xreaddir.3 "$f" "field of the iterator's structs"; done
for f in $(grep -oE '^#define DIRAHEAD_XREADDIR_[A-Z_]+' "$TOP/include/dirahead.h" | cut -d' ' -f2); do
	man_has dirahead_xreaddir.3 "$f" "flag in dirahead.h"
done
info "functions: $(echo $funcs)"
echo "PASS"
