#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# The unit's ProtectProc= and ProcSubset= leave the daemon working: diraheadd runs as systemd
# would run it (no systemd needed), in a mount namespace whose /proc is a procfs mounted with the
# options those settings stand for (ProtectProc=invisible: hidepid=invisible, ProcSubset=pid:
# subset=pid) and with the unit's capability bounding set, and a scan that user nobody makes of
# its own directory is opened through nobody's /proc/PID and prefetched.  The mount itself is
# checked too: nobody sees no root process there, and /proc/sys is gone.
# (tests/integration/systemd-nspawn.sh runs the unit itself, but in a PID namespace of its own,
# where the daemon opens no process's /proc/PID: BPF names them by their host PIDs.)
. "$(dirname "$0")/../lib/lib.sh"
need_root
need_cmd setpriv unshare python3
[ -x "$BUILD/diraheadd" ] || skip "build/diraheadd not built (run make)"
[ -r /sys/kernel/btf/vmlinux ] || skip "no kernel BTF"

UNIT=$TOP/packaging/systemd/dirahead.service
get() { sed -n "s/^$1=//p" "$UNIT" | tail -n1; }
opts=
case $(get ProtectProc) in
"" | default) ;;
invisible | ptraceable | noaccess) opts=hidepid=$(get ProtectProc) ;;
*) fail "ProtectProc=$(get ProtectProc): unknown to this test" ;;
esac
case $(get ProcSubset) in
"" | all) ;;
pid) opts=${opts:+$opts,}subset=pid ;;
*) fail "ProcSubset=$(get ProcSubset): unknown to this test" ;;
esac
[ -n "$opts" ] || skip "the unit sets neither ProtectProc= nor ProcSubset="
caps=$(get CapabilityBoundingSet)
[ -n "$caps" ] || fail "no CapabilityBoundingSet= in the unit"
setpriv_caps() { local c out=-all; for c; do out+=",+$(tr 'A-Z' 'a-z' <<<"${c#CAP_}")"; done; echo "$out"; }
info "procfs options: $opts; capabilities: $caps"

# nobody's program, under a name of its own, and its 0700 directory
chmod 0711 "$T"
mkdir -p "$T/bin"
cp "$(type -P ls)" "$T/bin/daproc-ls"
chmod 0755 "$T/bin" "$T/bin/daproc-ls"
make_files "$T/dir" 2000
chown -R 65534:65534 "$T/dir"
chmod 0700 "$T/dir"
# every confirmed scan is opened (this is about reaching the process, not the cost model)
printf '[metrics]\naddress =\n[filter]\ncomm_include = daproc-ls\n[policy]\nenabled = no\n' >"$T/dirahead.conf"

# in the namespace: the procfs as systemd mounts it, then what the sandbox shows, then the daemon
cat >"$T/inside.sh" <<'EOF'
set -e
mount -t proc -o "$1" proc /proc
shift
# nobody's view of it: no PID directory of root's processes (hidepid)
n=0
for d in /proc/[0-9]*; do [ "$(stat -c %u "$d" 2>/dev/null)" = 0 ] && n=$((n + 1)); done
echo "root_pids_as_root=$n"
echo "root_pids_as_nobody=$(setpriv --reuid=65534 --regid=65534 --clear-groups sh -c \
	'n=0; for d in /proc/[0-9]*; do [ "$(stat -c %u "$d" 2>/dev/null)" = 0 ] && n=$((n + 1)); done; echo $n')"
echo "proc_sys=$([ -e /proc/sys/kernel ] && echo yes || echo no)"
exec "$@"
EOF
unshare -m --propagation private sh "$T/inside.sh" "$opts" \
	setpriv --bounding-set "$(setpriv_caps $caps)" --inh-caps -all -- \
	"$BUILD/diraheadd" --config "$T/dirahead.conf" --socket "$T/d.sock" -v >"$T/d.log" 2>&1 &
pid=$!
on_exit "kill $pid; wait $pid"
ctl() { "$BUILD/diraheadctl" "$1" --socket "$T/d.sock" "${@:2}"; }
stat_of() { ctl stats | awk -v k="$1" '$1 == k { print $2; f = 1 } END { if (!f) print 0 }'; }
wait_for 10 ctl status
v() { sed -n "s/^$1=//p" "$T/d.log"; }
info "root's processes seen by root: $(v root_pids_as_root), by nobody: $(v root_pids_as_nobody); /proc/sys: $(v proc_sys)"
if [[ $opts == *hidepid=* ]]; then
	assert_ge "$(v root_pids_as_root)" 1 "root's processes in the procfs, as root"
	assert_eq "$(v root_pids_as_nobody)" 0 "root's processes in the procfs, as nobody (hidepid)"
fi
[[ $opts != *subset=pid* ]] || assert_eq "$(v proc_sys)" no "/proc/sys in a subset=pid procfs"

drop_caches
setpriv --reuid=65534 --regid=65534 --clear-groups -- "$T/bin/daproc-ls" -l "$T/dir" >/dev/null
wait_for 10 eval '[ "$(stat_of scans_ended.completed)" -ge 1 ]'
info "scans started $(stat_of scans_started), completed $(stat_of scans_ended.completed), open_failed $(stat_of skips.open_failed), entries $(stat_of entries_prefetched)"
assert_eq "$(stat_of skips.open_failed)" 0 "scans that could not be opened through nobody's /proc/PID"
assert_eq "$(stat_of skips.mismatch)" 0 "scans whose directory did not match"
assert_ge "$(stat_of scans_started)" 1 "scans started"
assert_ge "$(stat_of entries_prefetched)" 1900 "entries prefetched"
kill "$pid"
rc=0
wait "$pid" || rc=$?
assert_eq "$rc" 0 "diraheadd exit status"
grep -qE 'Sanitizer|runtime error' "$T/d.log" && fail "sanitizer report: $(grep -A5 -E 'Sanitizer|runtime error' "$T/d.log")"
echo PASS
