#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Runs inside the container that tests/integration/systemd-nspawn.sh boots, as
# dirahead-test.service.  Installs the staged `make install` tree the way a package would, then
# drives dirahead.service through systemctl: start (and what the daemon got: capabilities,
# priorities, limits, a metrics endpoint), reload with a good file, reload with a bad one, scans
# by a process of the container (one of a directory named with control characters), stop.  It
# only records what it sees, as key=value lines in $OUT/results (plus journal excerpts): the host
# asserts, so one run shows every value.
set -u
IN=/run/dirahead-test/in
OUT=/run/dirahead-test/out
R=$OUT/results
CONF=/etc/dirahead/dirahead.conf
: >"$R"

rec() { printf '%s=%s\n' "$1" "$2" >>"$R"; echo "inside: $1=$2"; }
prop() { systemctl show -P "$1" dirahead.service; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
qgrep() { grep "$@" >/dev/null; } # grep -q that reads to the end (no SIGPIPE for the writer)
# One value of `diraheadctl stats` (lines "key value"), empty when the daemon does not answer.
stat_of() { diraheadctl stats 2>/dev/null | awk -v k="$1" '$1 == k { print $2 }'; }
# wait_until SECONDS CMD...: poll every 50 ms; false on timeout.
wait_until() {
	local i n=$(($1 * 20)); shift
	for ((i = 0; i < n; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.05; done
	return 1
}
# Conditions for wait_until, evaluated afresh at every try
is_active() { [ "$(prop ActiveState)" = active ]; }
stat_is() { [ "$(stat_of "$1")" = "$2" ]; }
cursor() { journalctl -q -n 0 --show-cursor | sed -n 's/^-- cursor: //p'; }
# journal_since CURSOR: the unit's messages (its own and the manager's about it) after CURSOR.
# The daemon's are matched by its SYSLOG_IDENTIFIER too: with the manager logging at debug level,
# journald may file a just-started daemon's first messages under the metadata it cached for the
# forked manager child of the same PID (_SYSTEMD_UNIT=init.scope), which -u would miss.
journal_since() {
	journalctl -q --after-cursor="$1" -o cat --no-pager \
		_SYSTEMD_UNIT=dirahead.service + UNIT=dirahead.service + SYSLOG_IDENTIFIER=diraheadd
}
journal_has() { journal_since "$1" | qgrep -E "$2"; }

# ---- install, as a package would ---------------------------------------------------------------
# tar keeps /lib, a symlink to usr/lib in a merged-/usr root, where cp -a would try to replace
# it; the top-level entries, not ".", which would also reset the mode of /.
(cd "$IN/stage" && tar -cf - -- *) | tar -C / -xf - --keep-directory-symlink
# A SANITIZE=1 build: LeakSanitizer's exit-time scan needs ptrace, which the unit's
# SystemCallFilter= denies, so only leak checking is turned off (elsewhere it runs unconfined).
if [ -e "$IN/sanitized" ]; then
	mkdir -p /etc/systemd/system/dirahead.service.d
	printf '[Service]\nEnvironment=ASAN_OPTIONS=detect_leaks=0\n' \
		>/etc/systemd/system/dirahead.service.d/sanitizer.conf
fi
systemctl daemon-reload
rec load_state "$(prop LoadState)"
systemctl enable dirahead.service >/dev/null 2>&1
rec enable_rc $?
rec enabled "$(systemctl is-enabled dirahead.service 2>&1)"
# The manager logs every sd_notify message it takes at debug level: that shows the sequence.
systemd-analyze log-level debug
C0=$(cursor)

# ---- start ------------------------------------------------------------------------------------
t0=$(now_ms)
systemctl start dirahead.service
rec start_rc $?
rec start_ms $(($(now_ms) - t0))
rec state_after_start "$(systemctl is-active dirahead.service)"
rec substate_after_start "$(prop SubState)"
rec status_text "$(prop StatusText)"
PID=$(prop MainPID)
rec main_pid "$PID"
# What the unit's sandbox really gave the daemon
for k in CapBnd CapEff NoNewPrivs Seccomp; do
	rec "proc_$k" "$(awk -v k="$k:" '$1 == k { print $2 }' "/proc/$PID/status" 2>/dev/null)"
done
diraheadctl status >"$OUT/ctl-status.txt" 2>&1
rec ctl_status_rc $?
rec socket_mode "$(stat -c %a /run/dirahead/diraheadd.sock 2>&1)"
# Scheduling and the IP filter as the daemon got them
rec proc_nice "$(awk '{ print $19 }' "/proc/$PID/stat" 2>/dev/null)"
rec proc_ionice "$(ionice -p "$PID" 2>&1)"
rec proc_nofile "$(awk '$1 == "Max" && $3 == "files" { print $4 }' "/proc/$PID/limits" 2>/dev/null)"
rec ip_deny "$(prop IPAddressDeny)"
# The metrics endpoint on the default address (loopback, which IPAddressAllow= lets through),
# asked with bash's /dev/tcp (the root has no curl): the status line, and whether metrics came.
metrics_get() { # NAME HOST
	local f=$OUT/metrics-$1.txt
	if exec 8<>/dev/tcp/127.0.0.1/9567; then
		printf 'GET /metrics HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' "$2" >&8
		timeout 5 cat <&8 >"$f"
		exec 8<&-
	fi
	rec "metrics_${1}_status" "$(head -n 1 "$f" 2>/dev/null | tr -d '\r')"
	rec "metrics_${1}_build_info" "$(grep -c '^dirahead_build_info{' "$f" 2>/dev/null)"
}
metrics_get local 127.0.0.1:9567
metrics_get foreign evil.example:9567

# ---- reload with a valid file -----------------------------------------------------------------
# The new file changes what the daemon does (debug log, only scans by nspawnls), so the scan below
# also shows that the reload took effect.  The hooks attached from the start (arm = always): the
# scan below is of a warm local directory, which on-block arming rightly leaves alone, and this is
# about the unit, its reload and its journal, not about arming.
printf '[daemon]\nlog_level = debug\n[filter]\ncomm_include = nspawnls\n[detect]\narm = always\n' >"$CONF"
C1=$(cursor)
t0=$(now_ms)
systemctl reload dirahead.service
rec reload_rc $?
rec reload_ms $(($(now_ms) - t0))
wait_until 10 is_active
rec state_after_reload "$(systemctl is-active dirahead.service)"
rec main_pid_after_reload "$(prop MainPID)"
rec reload_result "$(prop ReloadResult)"
wait_until 5 stat_is reloads_ok 1
rec reloads_ok "$(stat_of reloads_ok)"
wait_until 5 journal_has "$C1" 'configuration reloaded from'
rec journal_daemon_reloaded "$(journal_since "$C1" | grep -c 'configuration reloaded from')"
wait_until 5 journal_has "$C1" '^Reloaded '
rec journal_manager_reloaded "$(journal_since "$C1" | grep -c '^Reloaded ')"

# ---- reload with an invalid file: ExecReload's --check-config refuses it ----------------------
cp "$CONF" "$OUT/good.conf"
printf '[daemon]\nno_such_key = 1\n' >"$CONF"
systemctl reload dirahead.service 2>"$OUT/bad-reload.txt"
rec bad_reload_rc $?
wait_until 10 is_active
rec state_after_bad_reload "$(systemctl is-active dirahead.service)"
rec main_pid_after_bad_reload "$(prop MainPID)"
rec reloads_failed_after_bad "$(stat_of reloads_failed)"
cp "$OUT/good.conf" "$CONF"

# ---- a scan by a process of the container ------------------------------------------------------
# The BPF programs see it whatever the unit's sandbox hides; the daemon logs it (debug: also a
# skipped one, with the reason).
cp /bin/ls /usr/local/bin/nspawnls
mkdir -p /srv/scan
(cd /srv/scan && seq -f 'f%05g' 1 500 | xargs touch)
C2=$(cursor)
for _ in 1 2 3; do
	nspawnls -l /srv/scan >/dev/null
	wait_until 2 journal_has "$C2" '\(nspawnls\)' && break
done
rec scan_logged "$(journal_since "$C2" | grep -c '(nspawnls)')"
journal_since "$C2" | grep '(nspawnls)' | head -n 5 >"$OUT/scan-lines.txt"

# ---- names with control characters reach the journal escaped -------------------------------
mkdir -p "/srv/$(printf '\033[31mred\a')"
(cd "/srv/$(printf '\033[31mred\a')" && seq -f 'f%05g' 1 300 | xargs touch)
nspawnls -l "/srv/$(printf '\033[31mred\a')" >/dev/null
wait_until 5 journal_has "$C2" 'x1b\[31mred'
rec journal_escaped "$(journal_since "$C2" | grep -cF '/srv/\x1b[31mred\x07')"
# --all: journalctl would print raw what the daemon had stored raw
rec journal_raw_control "$(journalctl -q -a --after-cursor="$C2" -o cat --no-pager \
	_SYSTEMD_UNIT=dirahead.service + UNIT=dirahead.service + SYSLOG_IDENTIFIER=diraheadd |
	grep -c "$(printf '[\033\a]')")"
diraheadctl stats >"$OUT/stats.txt" 2>&1

# ---- stop -------------------------------------------------------------------------------------
t0=$(now_ms)
systemctl stop dirahead.service
rec stop_rc $?
rec stop_ms $(($(now_ms) - t0))
rec state_after_stop "$(systemctl is-active dirahead.service)"
rec result "$(prop Result)"
rec exec_main_code "$(prop ExecMainCode)"
rec exec_main_status "$(prop ExecMainStatus)"
rec runtime_dir_left "$(test -e /run/dirahead && echo yes || echo no)"
# memory across restarts: written at stop into the unit's StateDirectory= ($STATE_DIRECTORY)
rec state_file "$(stat -c '%a %U' /var/lib/dirahead/state.json 2>/dev/null || echo none)"
rec state_dir_mode "$(stat -c %a /var/lib/dirahead 2>/dev/null || echo none)"

# ---- the notifications the manager received, in order ------------------------------------------
journal_since "$C0" >"$OUT/journal.txt"
sed -n "s/^.*Got notification message from PID $PID (\(.*\))\$/\1/p" "$OUT/journal.txt" |
	tr ',' '\n' | sed 's/^ *//' | grep -E '^(READY|RELOADING|STOPPING)=' | xargs >"$OUT/notify-seq.txt"
rec notify_seq "$(cat "$OUT/notify-seq.txt")"
rec sanitizer_reports "$(grep -cE 'Sanitizer|runtime error' "$OUT/journal.txt")"
systemd-analyze log-level info
journalctl -q -b -o short-monotonic --no-pager >"$OUT/journal-all.txt"
rec finished 1
exit 0
