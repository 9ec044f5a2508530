#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# packaging/systemd/dirahead.service: `systemd-analyze verify` passes (against a scratch root
# holding the daemon, so the ExecStart= path exists, and its man pages for Documentation=), the
# hardening keeps `systemd-analyze security` at or under its current exposure, the settings the
# daemon depends on or that keep it in its place are there (loopback-only IP, CPU and I/O priority
# below the programs it serves, ProtectProc=/ProcSubset=, which pkg-procfs.sh runs the daemon
# under), and the capability set is exactly the justified one.
. "$(dirname "$0")/../lib/lib.sh"
need_cmd systemd-analyze

UNIT=$TOP/packaging/systemd/dirahead.service
EXPECTED_CAPS="CAP_BPF CAP_CHOWN CAP_DAC_READ_SEARCH CAP_PERFMON CAP_SETGID CAP_SETUID CAP_SYS_PTRACE"
MAX_EXPOSURE=25          # systemd-analyze's 0-100 scale: 2.5 "OK" as shipped (0.3 of it CAP_SETUID/CAP_SETGID,
                         # which acting with each program's own credentials needs)

# ---- verify ---------------------------------------------------------------------------------
# A scratch root with the unit directory of the host (for the targets it orders after), the unit,
# an executable at /usr/sbin/diraheadd (the real one if built) and the man pages.
R=$T/root
mkdir -p "$R/etc/systemd/system" "$R/usr/sbin" "$R/bin" "$R/lib/systemd" "$T/man/man5" "$T/man/man8"
cp -r /lib/systemd/system "$R/lib/systemd/"
cp "$UNIT" "$R/etc/systemd/system/"
if [ -x "$BUILD/diraheadd" ]; then
	cp "$BUILD/diraheadd" "$R/usr/sbin/"
else
	info "build/diraheadd not built: a stub stands in for ExecStart="
	printf '#!/bin/sh\nexit 0\n' >"$R/usr/sbin/diraheadd"
	chmod 0755 "$R/usr/sbin/diraheadd"
fi
cp "$(type -P kill)" "$R/bin/kill"
out=$(systemd-analyze verify --man=no --root="$R" dirahead.service 2>&1) ||
	fail "systemd-analyze verify: $out"
[ -z "$out" ] || fail "systemd-analyze verify warned: $out"
# Documentation=man:... must name pages that exist (verify runs man(1) for each)
cp "$TOP"/packaging/man/*.5 "$T/man/man5/"
cp "$TOP"/packaging/man/*.8 "$T/man/man8/"
if command -v man >/dev/null; then
	sed "s|/usr/sbin/diraheadd|$R/usr/sbin/diraheadd|g" "$UNIT" >"$T/dirahead.service"
	out=$(MANPATH=$T/man systemd-analyze verify --man=yes "$T/dirahead.service" 2>&1) ||
		fail "systemd-analyze verify --man=yes: $out"
	[ -z "$out" ] || fail "systemd-analyze verify --man=yes warned: $out"
fi
info "verify: clean"

# ---- the settings the daemon depends on -----------------------------------------------------
get() { sed -n "s/^$1=//p" "$UNIT" | tail -n1; }
assert_eq "$(get Type)" notify "Type="
assert_eq "$(get ExecStart)" /usr/sbin/diraheadd "ExecStart="
assert_eq "$(get RuntimeDirectory)" dirahead "RuntimeDirectory= (the socket's directory)"
assert_eq "$(get RuntimeDirectoryMode)" 0755 "RuntimeDirectoryMode="
assert_eq "$(get StateDirectory)" dirahead "StateDirectory= (memory across restarts)"
assert_eq "$(get StateDirectoryMode)" 0700 "StateDirectoryMode="
assert_eq "$(get Restart)" on-failure "Restart="
[ -n "$(get WatchdogSec)" ] || fail "no WatchdogSec="
grep -q '^ExecReload=/bin/kill -HUP \$MAINPID$' "$UNIT" || fail "ExecReload= does not send SIGHUP"
assert_eq "$(get NoNewPrivileges)" yes "NoNewPrivileges="
assert_eq "$(get ProtectSystem)" strict "ProtectSystem="
# must not be set: they would break the daemon
for k in PrivateNetwork PrivateUsers User DynamicUser; do
	[ -z "$(get $k)" ] || fail "$k= is set: the daemon needs the host's network/users/processes as root"
done
# the processes it opens /proc/PID/fd of are all ptraceable for it: "invisible" hides none of
# them (systemd-nspawn.sh runs the unit on another user's process); only /proc/PID is read
assert_eq "$(get ProtectProc)" invisible "ProtectProc="
assert_eq "$(get ProcSubset)" pid "ProcSubset="
# the metrics endpoint is on loopback by default: nothing else gets through
assert_eq "$(get IPAddressDeny)" any "IPAddressDeny="
assert_eq "$(get IPAddressAllow)" localhost "IPAddressAllow="
# prefetch yields to the programs it serves: below-default CPU and I/O priority, not the idle
# class (which a busy disk starves)
assert_ge "$(get Nice)" 1 "Nice="
assert_le "$(get CPUWeight)" 99 "CPUWeight="
assert_le "$(get IOWeight)" 99 "IOWeight="
assert_eq "$(get IOSchedulingClass)" best-effort "IOSchedulingClass="
assert_eq "$(get IOSchedulingPriority)" 7 "IOSchedulingPriority="
assert_ge "$(get LimitNOFILE)" 1024 "LimitNOFILE="
caps=$(get CapabilityBoundingSet | tr ' ' '\n' | sort | xargs)
assert_eq "$caps" "$EXPECTED_CAPS" "CapabilityBoundingSet="
for c in $caps; do
	grep -qE "^#   $c " "$UNIT" || fail "$c has no justification comment in the unit"
done
grep -q '^SystemCallFilter=@system-service bpf' "$UNIT" || fail "SystemCallFilter= lacks bpf"

# ---- security exposure ----------------------------------------------------------------------
out=$(systemd-analyze security --offline=yes --threshold=$MAX_EXPOSURE "$UNIT" 2>&1) ||
	fail "exposure above $MAX_EXPOSURE/100: $(grep -E 'Overall|✗' <<<"$out")"
info "$(grep -o 'Overall exposure level.*' <<<"$out")"
echo "PASS"
