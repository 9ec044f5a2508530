#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# The unit's CapabilityBoundingSet= is enough, and each capability in it is needed: diraheadd runs
# as root with exactly that bounding set (setpriv, no systemd needed) and opens, for prefetching,
# the directory of a scan that user nobody makes of its own 0700 directory (as nobody: the
# daemon takes on its credentials), and that a root program makes of such a directory of nobody's
# (as root with CAP_DAC_READ_SEARCH, which the program has); then, one capability dropped at a
# time, the scan that needs it fails the way the unit's comment says it would.
. "$(dirname "$0")/../lib/lib.sh"
need_root
need_cmd setpriv python3
[ -x "$BUILD/diraheadd" ] || skip "build/diraheadd not built (run make)"
[ -r /sys/kernel/btf/vmlinux ] || skip "no kernel BTF"

UNIT=$TOP/packaging/systemd/dirahead.service
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT")
[ -n "$caps" ] || fail "no CapabilityBoundingSet= in the unit"
setpriv_caps() { local c out=-all; for c; do out+=",+$(tr 'A-Z' 'a-z' <<<"${c#CAP_}")"; done; echo "$out"; }

# The scanning program gets a name of its own, so that only its scans count (the daemon sees every
# process on the machine).  nobody must reach it and its directory, so $T opens up to traversal.
chmod 0711 "$T"
mkdir -p "$T/bin"
cp "$(type -P ls)" "$T/bin/dacaps-ls"
chmod 0755 "$T/bin" "$T/bin/dacaps-ls"
make_files "$T/dir" 3000
chown -R 65534:65534 "$T/dir"
chmod 0700 "$T/dir"
make_files "$T/rootscan" 3000
chown -R 65534:65534 "$T/rootscan"
chmod 0700 "$T/rootscan"
# every confirmed scan is opened: this is about what the capabilities allow, not the cost model
printf '[metrics]\naddress =\n[filter]\ncomm_include = dacaps-ls\n[policy]\nenabled = no\n' >"$T/dirahead.conf"

# stats SOCK: the daemon's stats as "key value" lines (the protocol of daemon/common/ctlproto.h).
stats() {
	python3 - "$1" <<'EOF'
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(5)
s.connect(sys.argv[1])
s.sendall(b"stats\n")
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
head, _, body = data.decode().partition("\n")
if head != "ok":
    sys.exit("daemon answered: " + head)
def flat(o, p=""):
    for k, v in o.items():
        if isinstance(v, dict):
            flat(v, p + k + ".")
        else:
            print(p + k, v)
flat(json.loads(body))
EOF
}

# run_with user|root CAPS...: start the daemon with that bounding set, scan as nobody (user: its
# own directory) or as root (nobody's directory), print its stats.
run_with() {
	local who=$1; shift
	local sock=$T/d.sock log=$T/d.log pid i
	rm -f "$sock"
	setpriv --bounding-set "$(setpriv_caps "$@")" --inh-caps -all -- \
		"$BUILD/diraheadd" --config "$T/dirahead.conf" --socket "$sock" -v >"$log" 2>&1 &
	pid=$!
	echo "$pid" >"$T/d.pid"   # for the cleanup below: this runs in a $(...) subshell
	for ((i = 0; i < 250; i++)); do
		[ -S "$sock" ] && break
		kill -0 "$pid" 2>/dev/null || { echo "exited: $(tail -n 5 "$log")"; return 0; }
		sleep 0.02
	done
	drop_caches
	if [ "$who" = user ]; then
		setpriv --reuid=65534 --regid=65534 --clear-groups -- "$T/bin/dacaps-ls" -l "$T/dir" >/dev/null
		setpriv --reuid=65534 --regid=65534 --clear-groups -- "$T/bin/dacaps-ls" -lU "$T/dir" >/dev/null
	else
		"$T/bin/dacaps-ls" -l "$T/rootscan" >/dev/null
		"$T/bin/dacaps-ls" -lU "$T/rootscan" >/dev/null
	fi
	sleep 0.5
	stats "$sock" || echo "no stats"
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	rm -f "$T/d.pid"
}
on_exit '[ -f "$T/d.pid" ] && kill "$(cat "$T/d.pid")"'
val() { awk -v k="$1" '$1 == k { print $2; f = 1 } END { if (!f) print 0 }' <<<"$2"; }

for who in user root; do
	out=$(run_with $who $caps)
	info "$who, with $caps: scans_started=$(val scans_started "$out") open_failed=$(val skips.open_failed "$out") entries_prefetched=$(val entries_prefetched "$out") errors=$(val errors.eacces "$out")"
	[ "$(val scans_confirmed "$out")" -ge 1 ] || fail "$who: no scan detected with the unit's capabilities: $out"
	assert_eq "$(val skips.open_failed "$out")" 0 "$who: open_failed with the unit's capabilities"
	assert_ge "$(val scans_started "$out")" 1 "$who: scans started with the unit's capabilities"
	assert_eq "$(val errors.eacces "$out")" 0 "$who: prefetches refused with the unit's capabilities"
done

# Each of these must be missed, by the scan that needs it.  (CAP_CHOWN only matters with
# [control] group=.)
for drop in CAP_SYS_PTRACE:user CAP_SETUID:user CAP_SETGID:user CAP_DAC_READ_SEARCH:root \
	    CAP_PERFMON:user CAP_BPF:user; do
	who=${drop#*:} drop=${drop%:*}
	out=$(run_with $who $(tr ' ' '\n' <<<"$caps" | grep -vx "$drop"))
	if grep -q '^exited' <<<"$out"; then
		info "without $drop: the daemon does not start"
	else
		[ "$(val skips.open_failed "$out")" -ge 1 ] ||
			fail "without $drop the $who scan still opened: is $drop needed? $out"
		info "without $drop: the $who scan: open_failed=$(val skips.open_failed "$out")"
	fi
done
printf '[metrics]\naddress =\n[control]\ngroup = nogroup\n' >"$T/dirahead.conf"
out=$(run_with user $(tr ' ' '\n' <<<"$caps" | grep -vx CAP_CHOWN))
grep -q '^exited.*group' <<<"$out" || fail "without CAP_CHOWN the socket still went to the group: $out"
info "without CAP_CHOWN: [control] group= fails"
echo "PASS"
