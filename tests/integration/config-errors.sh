#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# The config file's error paths and diraheadd's command line.  Each bad file (unknown section or
# key, bad boolean/number/list/address/engine/order/level, out of range, keys that contradict each
# other, syntax errors, an over-long line, a NUL byte) gives "FILE:LINE: ... KEY ..." and exit 1, from
# `diraheadd --check-config FILE` and from starting the daemon on it; an unreadable file or a
# directory names the file and exits 1.  Valid files (the shipped one, one setting every key,
# [policy] at both ends of its ranges) check with exit 0, and the daemon runs on the full one.  A missing default file means the
# built-in defaults, logged once.  Usage errors exit 2 with a clear message, as diraheadd(8) says,
# and --help lists the options the man page documents.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd setpriv unshare nsenter ip curl python3
D=$BUILD/diraheadd
[ -x "$D" ] || skip "build/diraheadd not built"

# bad NAME 'FILE TEXT' LINE WORD: FILE TEXT (printf format) must be rejected naming NAME.conf:LINE
# and WORD (the key, or what the line holds), by --check-config and by the daemon's start.
nbad=0
bad() {
	local f=$T/$1.conf want_line=$3 word=$4
	printf "$2" >"$f"
	expect_exit 1 "$D" --check-config "$f"
	assert_contains "$OUT" "$f:$want_line:" "$1: --check-config names file:line"
	assert_contains "$OUT" "$word" "$1: --check-config names the key"
	[ "$(wc -l <<<"$OUT")" = 1 ] || fail "$1: one line expected, got: $OUT"
	# The daemon refuses to start on it, with the same message, before touching BPF.
	expect_exit 1 timeout 10 "$D" --config "$f" --socket "$T/never.sock"
	assert_contains "$OUT" "$f:$want_line:" "$1: daemon start names file:line"
	assert_contains "$OUT" "$word" "$1: daemon start names the key"
	[ ! -e "$T/never.sock" ] || fail "$1: the daemon created its socket on a bad config"
	nbad=$((nbad + 1))
}

bad unknown-section '[daemon]\nenabled = yes\n[bogus]\nx = 1\n' 4 '[bogus] x: unknown section'
bad unknown-key '[prefetch]\nwindow_max = 64\nwindwo_start = 4\n' 3 '[prefetch] windwo_start: unknown key'
bad key-in-wrong-section '[daemon]\nmax_scans = 4\n' 2 '[daemon] max_scans: unknown key'
bad key-before-section 'max_scans = 4\n[prefetch]\n' 1 'max_scans: key before any [section]'
bad bool '# comment\n[daemon]\n\nenabled = maybe\n' 4 '[daemon] enabled:'
bad dry-run '[daemon]\ndry_run = 2\n' 2 '[daemon] dry_run:'
bad log-level '[daemon]\nlog_level = loud\n' 2 '[daemon] log_level:'
bad proc-relative '[daemon]\nproc = proc\n' 2 '[daemon] proc:'
bad zero '[prefetch]\nmax_scans = 0\n' 2 '[prefetch] max_scans:'
bad too-big '[prefetch]\ndepth_total = 65537\n' 2 '[prefetch] depth_total:'
bad negative '[detect]\nconfirm_stats = -1\n' 2 '[detect] confirm_stats:'
bad overflow '[prefetch]\nwindow_max = 99999999999999999999999\n' 2 '[prefetch] window_max:'
bad suffix '[prefetch]\nwindow_max = 12k\n' 2 '[prefetch] window_max:'
bad idle-low '[prefetch]\nidle_timeout_ms = 9\n' 2 '[prefetch] idle_timeout_ms:'
bad dir-size '[detect]\nmin_dir_size = 1099511627777\n' 2 '[detect] min_dir_size:'
bad ratio '[stop]\nhit_ratio = 1.5\n' 2 '[stop] hit_ratio:'
bad ratio-text '[stop]\nhit_ratio = most\n' 2 '[stop] hit_ratio:'
bad misses '[stop]\nconsecutive_misses = 0\n' 2 '[stop] consecutive_misses:'
bad engine '[prefetch]\nengine = gpu\n' 2 '[prefetch] engine:'
bad order '[prefetch]\norder = random\n' 2 '[prefetch] order:'
bad window-order '[prefetch]\nwindow_max = 16\n\nwindow_start = 32\n' 4 'window_start (32) is above window_max (16)'
bad depth-order '[prefetch]\ndepth_per_scan = 256\n' 2 'depth_per_scan (256) is above depth_total (128)'
bad cgroup-relative '[filter]\ncgroup_include = system.slice\n' 2 '[filter] cgroup_include:'
bad list-long "[filter]\nfs_include = $(printf 'a%d ' $(seq 1 33))\n" 2 '[filter] fs_include: more than 32'
bad budget-negative '[budget]\nrule = fstype:fuse.rclone 50\nrule = path:/mnt/b2 -5\n' 3 "[budget] rule: rate '-5' is not"
bad budget-zero '[budget]\nrule = fstype:fuse 0\n' 2 "[budget] rule: rate '0'"
bad budget-selector '[budget]\nrule = device:8:1 10\n' 2 "[budget] rule: unknown selector 'device'"
bad budget-norate '[budget]\nrule = fstype:fuse\n' 2 '[budget] rule:'
bad budget-burst '[budget]\nrule = fstype:fuse 10 0\n' 2 "[budget] rule: burst '0'"
bad budget-path '[budget]\nrule = path:mnt 10\n' 2 "[budget] rule: 'mnt' is not an absolute path"
bad budget-many "[budget]\n$(printf 'rule = path:/m%d 1\\n' $(seq 1 33))" 34 '[budget] rule: more than 32 lines'
bad address-word '[metrics]\naddress = somewhere\n' 2 '[metrics] address:'
bad address-port '[metrics]\naddress = 127.0.0.1:65536\n' 2 '[metrics] address:'
bad address-noport '[metrics]\naddress = [::1]\n' 2 '[metrics] address:'
bad address-unix-relative '[metrics]\naddress = unix:run/m.sock\n' 2 "[metrics] address: 'unix:run/m.sock' is not unix:/ABSOLUTE/PATH"
bad address-unix-empty '[metrics]\naddress = unix:\n' 2 '[metrics] address:'
bad address-unix-dir '[metrics]\naddress = unix:/run/dirahead/\n' 2 '[metrics] address:'
bad address-unix-long "[metrics]\naddress = unix:/run/$(printf 'x%.0s' $(seq 1 110)).sock\n" 2 'the path is longer than 107 bytes'
bad allowed-hosts-port '[metrics]\nallowed_hosts = ok.example bad.example:http\n' 2 "[metrics] allowed_hosts: 'bad.example:http'"
bad allowed-hosts-url '[metrics]\nallowed_hosts = http://x.example\n' 2 '[metrics] allowed_hosts:'
bad metrics-access '[metrics]\naccess = everyone\n' 2 "[metrics] access: 'everyone' is not all or control-group"
bad allowed-hosts-long "[metrics]\nallowed_hosts = $(printf 'h%d ' $(seq 1 33))\n" 2 '[metrics] allowed_hosts: more than 32'
bad log-summary-high '[daemon]\nlog_summary_s = 86401\n' 2 '[daemon] log_summary_s:'
bad log-summary-text '[daemon]\nlog_summary_s = 1m\n' 2 '[daemon] log_summary_s:'
bad socket-relative '[control]\nsocket = run/x.sock\n' 2 '[control] socket:'
bad group '[control]\ngroup = no-such-group-dirahead\n' 2 '[control] group:'
bad syntax-section '[daemon]\nenabled = yes\n[prefetch\nmax_scans = 4\n' 3 "syntax error in '[prefetch'"
bad syntax-noeq '[daemon]\nenabled = yes\nlog_level\n' 3 "syntax error in 'log_level'"
# The first error counts, whichever kind it is.
bad first-syntax '[daemon]\nlog_level\n[prefetch]\nmax_scans = 0\n' 2 "syntax error in 'log_level'"
bad first-value '[prefetch]\nmax_scans = 0\n[daemon]\nlog_level\n' 2 '[prefetch] max_scans:'
bad long-line "[filter]\npath_include = $(printf '/srv/data%03d ' $(seq 1 25))\n" 2 'path_include: line longer than'
# a NUL byte ends the line for inih: what follows it, a setting an editor shows in a comment, must
# not be read as a line of its own (found by tests/fuzz/fuzz_config)
bad nul-byte "[daemon]\n# comment\\0$(printf 'x%.0s' $(seq 1 189))enabled = no\n" 2 'a NUL byte in the line'
# [policy]: every key out of range, not a number, not a boolean.
bad policy-enabled '[policy]\nenabled = sometimes\n' 2 '[policy] enabled:'
bad policy-unknown-key '[policy]\nprobe = 8\n' 2 '[policy] probe: unknown key'
bad policy-probe-low '[policy]\nprobe_stats = 1\n' 2 '[policy] probe_stats:'
bad policy-probe-high '[policy]\nprobe_stats = 100001\n' 2 '[policy] probe_stats:'
bad policy-probe-text '[policy]\nprobe_stats = many\n' 2 '[policy] probe_stats:'
bad policy-factor-high '[policy]\nstart_factor = 1000.5\n' 2 '[policy] start_factor:'
bad policy-factor-negative '[policy]\nstart_factor = -1\n' 2 '[policy] start_factor:'
bad policy-factor-text '[policy]\nstart_factor = 4x\n' 2 '[policy] start_factor:'
bad policy-cost-zero '[policy]\nentry_cost_us = 0\n' 2 '[policy] entry_cost_us:'
bad policy-cost-high '[policy]\nentry_cost_us = 1000001\n' 2 '[policy] entry_cost_us:'
bad policy-cost-fraction '[policy]\nentry_cost_us = 2.5\n' 2 '[policy] entry_cost_us:'
bad policy-gain-stats-low '[policy]\ngain_stats = 7\n' 2 '[policy] gain_stats:'
bad policy-gain-stats-high '[policy]\ngain_stats = 1000001\n' 2 '[policy] gain_stats:'
bad policy-gain-stats-text '[policy]\ngain_stats = 0x40\n' 2 '[policy] gain_stats:'
bad policy-min-gain-low '[policy]\nenabled = no\n\nmin_gain = 0.9\n' 4 '[policy] min_gain:'
bad policy-min-gain-high '[policy]\nmin_gain = 101\n' 2 '[policy] min_gain:'
bad policy-min-gain-nan '[policy]\nmin_gain = nan\n' 2 '[policy] min_gain:'
bad policy-min-gain-empty '[policy]\nmin_gain =\n' 2 '[policy] min_gain:'
bad policy-reprobe-zero '[policy]\nreprobe_s = 0\n' 2 '[policy] reprobe_s:'
bad policy-reprobe-high '[policy]\nreprobe_s = 86401\n' 2 '[policy] reprobe_s:'
bad policy-reprobe-text '[policy]\nreprobe_s = 1m\n' 2 '[policy] reprobe_s:'
bad policy-mute-high '[policy]\nmute_ms = 3600001\n' 2 '[policy] mute_ms:'
bad policy-mute-negative '[policy]\nmute_ms = -5\n' 2 '[policy] mute_ms:'
bad policy-mute-text '[policy]\nmute_ms = off\n' 2 '[policy] mute_ms:'
bad policy-depth-min-zero '[policy]\ndepth_min = 0\n' 2 '[policy] depth_min:'
bad policy-depth-min-high '[policy]\ndepth_min = 4097\n' 2 '[policy] depth_min:'
bad policy-depth-min-text '[policy]\ndepth_min = four\n' 2 '[policy] depth_min:'
bad policy-fs-zero '[policy]\nmax_filesystems = 0\n' 2 '[policy] max_filesystems:'
bad policy-fs-high '[policy]\nmax_filesystems = 65537\n' 2 '[policy] max_filesystems:'
bad policy-fs-text '[policy]\nmax_filesystems = all\n' 2 '[policy] max_filesystems:'
bad policy-in-wrong-section '[prefetch]\ndepth_min = 4\n' 2 '[prefetch] depth_min: unknown key'
# [walk]
bad walk-enabled '[walk]\nenabled = often\n' 2 '[walk] enabled:'
bad walk-unknown-key '[walk]\ndepth = 3\n' 2 '[walk] depth: unknown key'
bad walk-max-zero '[walk]\nmax_walks = 0\n' 2 '[walk] max_walks:'
bad walk-max-high '[walk]\nmax_walks = 4097\n' 2 '[walk] max_walks:'
bad walk-open-zero '[walk]\nopen_dirs = 0\n' 2 '[walk] open_dirs:'
bad walk-open-high '[walk]\nopen_dirs = 1025\n' 2 '[walk] open_dirs:'
bad walk-ahead-dirs-text '[walk]\nahead_dirs = lots\n' 2 '[walk] ahead_dirs:'
bad walk-ahead-dirs-high '[walk]\nahead_dirs = 65537\n' 2 '[walk] ahead_dirs:'
bad walk-ahead-entries-zero '[walk]\nahead_entries = 0\n' 2 '[walk] ahead_entries:'
bad walk-ahead-entries-high '[walk]\nahead_entries = 16777217\n' 2 '[walk] ahead_entries:'
bad walk-ahead-entries-negative '[walk]\nahead_entries = -1\n' 2 '[walk] ahead_entries:'
info "$nbad bad files rejected by --check-config and by the daemon"

# A file that cannot be read: named, exit 1, both ways.  Root reads anything, so the check runs as
# nobody and the daemon runs without the DAC capabilities.
printf '[daemon]\nenabled = yes\n' >"$T/unreadable.conf"
chmod 0000 "$T/unreadable.conf"
chmod 0755 "$T"
expect_exit 1 setpriv --reuid=nobody --regid=nogroup --clear-groups "$D" --check-config "$T/unreadable.conf"
assert_contains "$OUT" "$T/unreadable.conf: Permission denied" "unreadable file, --check-config"
expect_exit 1 setpriv --inh-caps=-all --bounding-set=-dac_override,-dac_read_search \
	timeout 10 "$D" --config "$T/unreadable.conf" --socket "$T/never.sock"
assert_contains "$OUT" "$T/unreadable.conf: Permission denied" "unreadable file, daemon start"
expect_exit 1 "$D" --check-config "$T"
assert_contains "$OUT" "$T: Is a directory" "a directory as the config file"

# Valid files: the shipped one (everything commented out), and one setting every key.
expect_exit 0 "$D" --check-config "$TOP/packaging/dirahead.conf"
assert_contains "$OUT" "valid" "shipped config"
cat >"$T/full.conf" <<'EOF'
; every key, none at its default
[daemon]
enabled = on
dry_run = yes
log_level = debug
log_summary_s = 0
proc = /proc/
[detect]
confirm_stats = 3
min_dir_size = 4096
[prefetch]
window_start = 4
window_max = 512
max_scans = 8
max_scans_per_process = 2
depth_per_scan = 16
depth_total = 64
engine = threads
order = inode
idle_timeout_ms = 2000
[stop]
min_hits = 16
hit_ratio = 0.5
consecutive_misses = 64
[policy]
enabled = no
probe_stats = 16
start_factor = 2.5
entry_cost_us = 20
gain_stats = 128
min_gain = 1.5
reprobe_s = 30
mute_ms = 500
depth_min = 2
max_filesystems = 64
[walk]
enabled = yes
max_walks = 4
open_dirs = 4
ahead_dirs = 32
ahead_entries = 4096
[filter]
fs_include = ext4, xfs, fuse*
fs_exclude = nfs
path_include = /srv /home
path_exclude = /srv/tmp
comm_include =
comm_exclude = updatedb* plocate*
[budget]
rule = fstype:fuse.rclone 50
rule = source:b2:* 2.5 10
rule = path:/srv/cold 200
[metrics]
address =
allowed_hosts = metrics.example, metrics.example:8080 192.0.2.1 [2001:db8::1]:9567
access = control-group
[control]
socket = /run/dirahead-unused.sock
group = nogroup
EOF
expect_exit 0 "$D" --check-config "$T/full.conf"
assert_eq "$OUT" "$T/full.conf: valid" "--check-config on a valid file"
expect_exit 0 "$D" --check-config --config "$T/full.conf"
# [policy] at both ends of every range
printf '[policy]\nenabled = yes\nprobe_stats = 2\nstart_factor = 0\nentry_cost_us = 1\ngain_stats = 8\nmin_gain = 1\nreprobe_s = 1\nmute_ms = 0\ndepth_min = 1\nmax_filesystems = 1\n' >"$T/policy-low.conf"
printf '[policy]\nenabled = off\nprobe_stats = 100000\nstart_factor = 1000\nentry_cost_us = 1000000\ngain_stats = 1000000\nmin_gain = 100\nreprobe_s = 86400\nmute_ms = 3600000\ndepth_min = 4096\nmax_filesystems = 65536\n' >"$T/policy-high.conf"
printf '[walk]\nenabled = no\nmax_walks = 1\nopen_dirs = 1\nahead_dirs = 1\nahead_entries = 1\n' >"$T/walk-low.conf"
printf '[walk]\nenabled = yes\nmax_walks = 4096\nopen_dirs = 1024\nahead_dirs = 65536\nahead_entries = 16777216\n' >"$T/walk-high.conf"
for f in policy-low policy-high walk-low walk-high; do
	expect_exit 0 "$D" --check-config "$T/$f.conf"
	assert_eq "$OUT" "$T/$f.conf: valid" "--check-config on $f.conf"
done
expect_exit 0 "$D" -c "$T/full.conf" --check-config

# The daemon runs on it (--socket overrides the file's socket; its settings show in status).
DAEMON_CONF=$T/full.conf
daemon_start
st=$(ctl status --json)
python3 -c 'import json, sys; s = json.loads(sys.argv[1])
assert s["dry_run"] is True and s["engine"] == "threads", s' "$st" ||
	fail "status does not show the file's settings: $st"
daemon_stop

# A missing file: the built-in defaults, said once.  The default path is checked in a private
# mount namespace with an empty /etc/dirahead, so the host's file (if any) is not touched.
expect_exit 0 "$D" --check-config "$T/none.conf"
assert_eq "$OUT" "$T/none.conf: missing, the built-in defaults apply" "--check-config, missing file"
if [ -d /etc/dirahead ]; then
	expect_exit 0 unshare -m --propagation private sh -c \
		'mount -t tmpfs tmpfs /etc/dirahead && exec "$0" --check-config' "$D"
else
	expect_exit 0 "$D" --check-config
fi
assert_eq "$OUT" "/etc/dirahead/dirahead.conf: missing, the built-in defaults apply" \
	"--check-config, default file missing"
# The daemon on a missing default file: in its own mount namespace (an empty /etc/dirahead) and
# network namespace (the default metrics port 9567 may be taken on the host by another daemon).
unshare -m -n --propagation private sh -c 'ip link set lo up &&
	{ [ ! -d /etc/dirahead ] || mount -t tmpfs tmpfs /etc/dirahead; } &&
	exec "$0" --socket "$1" -v' "$D" "$DAEMON_SOCK" >"$DAEMON_LOG" 2>&1 &
DAEMON_PID=$!
on_exit daemon_kill
wait_for 10 ctl status
# the defaults are in force: metrics on 127.0.0.1:9567
m=$(nsenter -t "$DAEMON_PID" -n curl -sf http://127.0.0.1:9567/metrics) ||
	fail "no metrics on the default address 127.0.0.1:9567"
assert_contains "$m" "dirahead_build_info{" "default metrics endpoint"
kill -HUP "$DAEMON_PID"
wait_for 5 eval '[ "$(daemon_stat reloads_ok)" = 1 ]'
daemon_stop
assert_eq "$(grep -c '/etc/dirahead/dirahead.conf not found: using the built-in defaults' "$DAEMON_LOG")" 1 \
	"'using the built-in defaults' logged once"

# Command line: diraheadd(8) says 2 for bad usage, with a message saying what was wrong.
usage_err() { # WHAT ARGS...: exit 2, the message names WHAT and the usage follows
	local what=$1; shift
	expect_exit 2 "$D" "$@"
	assert_contains "$OUT" "$what" "diraheadd $*"
	assert_contains "$OUT" "Usage: diraheadd" "diraheadd $*: usage shown"
}
usage_err "unrecognized option '--bogus'" --bogus
usage_err "invalid option -- 'x'" -x
usage_err "option requires an argument -- 'c'" -c
usage_err "option '--config' requires an argument" --config
usage_err "option '--socket' requires an argument" --socket
usage_err "unexpected argument 'extra'" extra
usage_err "unexpected argument 'b'" --check-config a b
expect_exit 0 "$D" --version
assert_eq "$OUT" "diraheadd 0.1.0" "--version"

# --help and the man page list the same options and exit codes.
MAN=$TOP/packaging/man/diraheadd.8
expect_exit 0 "$D" --help
help=$OUT
for o in $(grep -oE -- '--[a-z-]+' <<<"$help" | sort -u); do
	grep -qF -- "$(sed 's/-/\\-/g' <<<"$o")" "$MAN" || fail "--help has $o, diraheadd.8 does not"
done
for o in $(grep -oE '^\.B[RI]? \\-\\-[a-z\\-]+' "$MAN" | grep -oE '\\-\\-[a-z\\-]+' | sed 's/\\-/-/g' | sort -u); do
	assert_contains "$help" "$o" "diraheadd.8 documents $o; --help"
done
assert_contains "$help" "--check-config [FILE]" "--help shows --check-config's FILE"
man_codes=$(sed -n '/^\.SH EXIT STATUS/,/^\.SH /p' "$MAN" | awk '/^\.TP/ { getline; print $2 }' | tr '\n' ' ')
assert_eq "$man_codes" "0 1 2 " "exit codes listed in diraheadd.8"
assert_contains "$help" "0 stopped cleanly, 1 failed to start (bad configuration, no BPF), 2 bad usage" \
	"exit codes in --help"
info "ok"
