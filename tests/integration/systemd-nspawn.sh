#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# diraheadd under a real systemd.  Boots systemd in a container (systemd-nspawn --boot) on a
# minimal Debian root made by debootstrap, with `make install` staged into it, and from inside
# (tests/nspawn/inside.sh, the container's only goal) drives dirahead.service: start -> active
# with a status line, the unit's nice value, I/O priority and open file limit, metrics on loopback
# (through IPAddressDeny=any + IPAddressAllow=localhost; a foreign Host header refused) -> reload
# (a good file; a bad one is refused) -> a scan seen through BPF, and one of a directory whose
# name holds control characters, escaped in the journal -> stop.  The host asserts on what it
# recorded.  Neither systemd as the host's PID 1 nor machined
# is needed.
# The root is cached in $BUILD/nspawn-root (made once: 30-50 s from the Debian archive apt is configured with, 160 MB; made
# again when the daemon's runtime packages change); the container boots it under a tmpfs overlay
# (--volatile=overlay), so every run starts from the same clean root.  A run takes 2-10 s then.
. "$(dirname "$0")/../lib/lib.sh"
need_root
need_cmd debootstrap systemd-nspawn make readelf dpkg-query flock
[ -r /sys/kernel/btf/vmlinux ] || skip "no /sys/kernel/btf/vmlinux (the unit's condition)"

ROOT=$BUILD/nspawn-root
RUN_TIMEOUT=150           # seconds for boot, checks and exit of the container

# One run per build directory at a time: they share the cached root (and the build below).
root_lock "$ROOT"

# ---- the daemon, staged as `make install DESTDIR=` --------------------------------------------
make -s -C "$TOP" BUILD="$BUILD" install-bins >"$T/build.log" 2>&1 ||
	fail "build failed: $(tail -n 20 "$T/build.log")"
STAGE=$T/in/stage
mkdir -p "$STAGE" "$T/out"
chmod 0755 "$T/in" "$STAGE"
make -s -C "$TOP" BUILD="$BUILD" install DESTDIR="$STAGE" PREFIX=/usr >"$T/install.log" 2>&1 ||
	fail "make install: $(tail -n 20 "$T/install.log")"
cp "$TOP/tests/nspawn/inside.sh" "$T/in/"
readelf -d "$BUILD/diraheadd" | qgrep 'NEEDED.*libasan' && touch "$T/in/sanitized"

# ---- the root -----------------------------------------------------------------------------------
# The Debian packages of the libraries the binaries link (so a new dependency is picked up without
# editing this list), systemd, and procps for the /bin/kill of ExecReload=.
runtime_pkgs() {
	local lib pkg
	for lib in $(readelf -d "$BUILD/diraheadd" "$BUILD/diraheadctl" |
		     sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort -u); do
		pkg=$(dpkg-query -S "*/$lib" 2>/dev/null | grep -v '^diversion' | sed -n '1s/[:,].*//p')
		[ -n "$pkg" ] || fail "no Debian package ships $lib, which the daemon links"
		echo "$pkg"
	done
	printf "%s\n" systemd procps
}

PKGS=$(runtime_pkgs | sort -u)
cached_debian_root "$ROOT" $PKGS

# ---- boot it ------------------------------------------------------------------------------------
MACHINE=dirahead-test-$$
NSPAWN_PID=
# nspawn runs in a process group of its own (setsid): killed while it sets up, its helper
# process SIGKILLs its whole process group, which must not be this script's.
# The container's init is nspawn's child in another PID namespace; SIGKILL to it ends everything
# in that namespace.  nspawn's mounts live in its own mount namespace, so they end with it; it
# leaves only a propagation directory behind on a host whose /run is not a tmpfs.
# The kernel makes the dying init wait until the rest of its namespace is gone, so once it is a
# zombie nothing writes into the bind-mounted directories any more (and $T can be removed).
nspawn_kill() {
	local c i inits=()
	if [ -n "$NSPAWN_PID" ] && kill -0 "$NSPAWN_PID" 2>/dev/null; then
		for c in $(pgrep -P "$NSPAWN_PID"); do
			[ "$(readlink "/proc/$c/ns/pid")" = "$(readlink /proc/self/ns/pid)" ] ||
				{ kill -KILL "$c"; inits+=("$c"); }
		done
		kill -KILL -- "-$NSPAWN_PID"
	fi
	for c in "${inits[@]}"; do
		for ((i = 0; i < 100; i++)); do
			[ -e "/proc/$c" ] && [ "$(awk '$1 == "State:" { print $2 }' "/proc/$c/status" 2>/dev/null)" != Z ] ||
				break
			sleep 0.05
		done
	done
	[ -z "$NSPAWN_PID" ] || wait "$NSPAWN_PID" 2>/dev/null || true
	rm -rf "/run/systemd/nspawn/propagate/$MACHINE"
	unmount_under "$ROOT"
}
on_exit nspawn_kill

# Everything the container wrote is kept for a look afterwards (and as a CI artifact).
OUT_KEPT=$BUILD/test-logs/systemd-nspawn.out
keep_out() {
	rm -rf "$OUT_KEPT" && mkdir -p "$OUT_KEPT" && cp -r "$T/out/." "$T/console.log" "$OUT_KEPT/"
}
show_logs() {
	echo "--- console"; tail -n 60 "$T/console.log" 2>/dev/null || true
	echo "--- results"; cat "$T/out/results" 2>/dev/null || true
	echo "--- dirahead.service journal"; tail -n 40 "$T/out/journal.txt" 2>/dev/null || true
	echo "(all of it in $OUT_KEPT)"
}
# Cleanup output is discarded, so a failure shows the container's logs itself.
fail() { show_logs >&2; echo "FAIL: $*" >&2; exit 1; }

# --capability: the unit's bounding set needs CAP_BPF and CAP_PERFMON, which nspawn does not give by
# default (CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH and CAP_CHOWN it does).  --system-call-filter:
# nspawn's own seccomp filter fails bpf() with EPERM otherwise (the unit's filter allows it, and
# perf_event_open is not needed: it is left out of the unit too).  --private-network: the
# shipped config's metrics port must not meet a daemon of the host.  No --private-users: BPF
# needs the capabilities in the initial user namespace.
t0=$(now_ms)
setsid systemd-nspawn --boot --directory="$ROOT" --volatile=overlay --machine="$MACHINE" \
	--register=no --keep-unit --settings=no --link-journal=no --resolv-conf=off --timezone=off \
	--private-network --capability=CAP_BPF,CAP_PERFMON \
	--system-call-filter=bpf --console=read-only --setenv=SYSTEMD_COLORS=0 \
	--bind-ro="$T/in:/run/dirahead-test/in" --bind="$T/out:/run/dirahead-test/out" \
	--bind-ro="$TOP/tests/nspawn/dirahead-test.service:/etc/systemd/system/dirahead-test.service" \
	systemd.unit=dirahead-test.service >"$T/console.log" 2>&1 </dev/null &
NSPAWN_PID=$!
deadline=$((t0 + RUN_TIMEOUT * 1000))
while kill -0 "$NSPAWN_PID" 2>/dev/null && [ "$(now_ms)" -lt "$deadline" ]; do sleep 0.2; done
if kill -0 "$NSPAWN_PID" 2>/dev/null; then
	nspawn_kill
	NSPAWN_PID=
	keep_out
	fail "the container did not exit within ${RUN_TIMEOUT} s (killed)"
fi
rc=0
wait "$NSPAWN_PID" || rc=$?
NSPAWN_PID=
elapsed=$(($(now_ms) - t0))
info "container ran for $elapsed ms, exit status $rc"
keep_out

[ -s "$T/out/results" ] || fail "the test unit recorded nothing"
r() { sed -n "s/^$1=//p" "$T/out/results" | tail -n 1; }
assert_eq "$(r finished)" 1 "checks in the container ran to the end"
assert_eq "$rc" 0 "systemd-nspawn exit status (the test unit's, through SuccessAction=exit)"

# installed and enabled as a package would be
assert_eq "$(r load_state)" loaded "LoadState"
assert_eq "$(r enabled)" enabled "systemctl is-enabled"

# start: Type=notify returns once READY=1 came
assert_eq "$(r start_rc)" 0 "systemctl start"
assert_eq "$(r state_after_start)" active "is-active after start"
assert_eq "$(r substate_after_start)" running "SubState after start"
assert_contains "$(r status_text)" "active scans" "StatusText= (sd_notify STATUS=)"
assert_eq "$(r ctl_status_rc)" 0 "diraheadctl status on the unit's socket"
assert_eq "$(r socket_mode)" 600 "mode of /run/dirahead/diraheadd.sock"
# the sandbox: exactly the seven capabilities (CAP_CHOWN 0, CAP_DAC_READ_SEARCH 2, CAP_SETGID 6,
# CAP_SETUID 7, CAP_SYS_PTRACE 19, CAP_PERFMON 38, CAP_BPF 39), no new privileges, a seccomp
# filter (the main thread's: those acting for a program have none effective but what it has)
assert_eq "$(r proc_CapBnd)" 000000c0000800c5 "daemon's capability bounding set"
assert_eq "$(r proc_CapEff)" 000000c0000800c5 "daemon's effective capabilities"
assert_eq "$(r proc_NoNewPrivs)" 1 "daemon's NoNewPrivs"
assert_eq "$(r proc_Seccomp)" 2 "daemon's seccomp mode (filter)"
# scheduling and bounds of the unit (Nice=5, IOSchedulingClass=best-effort, priority 7)
assert_eq "$(r proc_nice)" 5 "daemon's nice value"
assert_eq "$(r proc_ionice)" "best-effort: prio 7" "daemon's I/O priority"
assert_eq "$(r proc_nofile)" 4096 "daemon's open file limit"
[ -n "$(r ip_deny)" ] || fail "no IPAddressDeny= on the unit"
# the metrics endpoint answers on loopback through IPAddressDeny=any + IPAddressAllow=localhost,
# and refuses a foreign Host header
assert_eq "$(r metrics_local_status)" "HTTP/1.1 200 OK" "GET /metrics with Host 127.0.0.1:9567"
assert_eq "$(r metrics_local_build_info)" 1 "metrics served under the unit"
assert_eq "$(r metrics_foreign_status)" "HTTP/1.1 403 Forbidden" "GET /metrics with a foreign Host"
assert_eq "$(r metrics_foreign_build_info)" 0 "no metrics for a foreign Host"

# reload with a valid file: same process, still active, the daemon and the manager say so
assert_eq "$(r reload_rc)" 0 "systemctl reload"
assert_eq "$(r state_after_reload)" active "is-active after reload"
assert_eq "$(r main_pid_after_reload)" "$(r main_pid)" "MainPID after reload (no restart)"
assert_eq "$(r reload_result)" success "ReloadResult"
assert_eq "$(r reloads_ok)" 1 "diraheadctl stats reloads_ok"
assert_ge "$(r journal_daemon_reloaded)" 1 "'configuration reloaded' in the journal"
assert_ge "$(r journal_manager_reloaded)" 1 "the manager's 'Reloaded' in the journal"

# reload with an invalid file: ExecReload's --check-config fails it before any SIGHUP
assert_ne "$(r bad_reload_rc)" 0 "systemctl reload of an invalid file"
assert_eq "$(r state_after_bad_reload)" active "is-active after the refused reload"
assert_eq "$(r main_pid_after_bad_reload)" "$(r main_pid)" "MainPID after the refused reload"
assert_eq "$(r reloads_failed_after_bad)" 0 "reloads_failed (the daemon was never signalled)"

# the sd_notify messages the manager took from the daemon, in order
assert_eq "$(r notify_seq)" "READY=1 RELOADING=1 READY=1 STOPPING=1" "notification sequence"

# the BPF detector works under the unit's sandbox: a scan by a container process, with the
# reloaded config's comm_include = nspawnls, reached the daemon's log
assert_ge "$(r scan_logged)" 1 "journal lines about the scan by nspawnls"
info "scan: $(head -n 2 "$T/out/scan-lines.txt" | tr '\n' ' ')"
# names with control characters: escaped in the journal, nothing raw
assert_ge "$(r journal_escaped)" 1 "journal lines with the escaped directory name"
assert_eq "$(r journal_raw_control)" 0 "journal lines with a raw ESC or BEL"
info "daemon's stats: $(awk '$1 ~ /^(scans_confirmed|scans_started|skips\.)/ && $2 > 0 { printf "%s=%s ", $1, $2 }' "$T/out/stats.txt")"

# stop: clean exit, runtime directory gone
assert_eq "$(r stop_rc)" 0 "systemctl stop"
assert_eq "$(r state_after_stop)" inactive "is-active after stop"
assert_eq "$(r result)" success "Result"
assert_eq "$(r exec_main_code)" 1 "ExecMainCode (1: exited)"
assert_eq "$(r exec_main_status)" 0 "ExecMainStatus"
assert_eq "$(r runtime_dir_left)" no "/run/dirahead after stop"
assert_eq "$(r state_file)" "600 root" "/var/lib/dirahead/state.json after stop (StateDirectory=)"
assert_eq "$(r state_dir_mode)" 700 "/var/lib/dirahead's mode"
assert_eq "$(r sanitizer_reports)" 0 "sanitizer reports in the unit's journal"
info "start $(r start_ms) ms, reload $(r reload_ms) ms, stop $(r stop_ms) ms"
echo "PASS"
