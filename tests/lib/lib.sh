# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Shared helpers for the integration tests: source it first thing.
#   . "$(dirname "$0")/../lib/lib.sh"
# Gives: guaranteed cleanup (on_exit, run LIFO on exit, error or signal), skip/fail/assert helpers,
# a scratch directory ($T), wait_for, file creation, timed_ls, slowfs_mount (mount, wait for
# readiness, unmount on exit in one call), and the container tests' cached Debian root.
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-$TOP/build}
case "$BUILD" in /*) ;; *) BUILD=$TOP/$BUILD ;; esac
TEST_NAME=$(basename "$0" .sh)

_cleanups=()
# on_exit CMD...: run CMD (a string, eval'd) when the test ends, last registered first.
on_exit() { _cleanups+=("$*"); }
_run_cleanups() {
	# a name no cleanup function uses: bash variables are dynamically scoped
	local rc=$? _cleanup_i
	set +e
	TEST_RC=$rc # (cleanups that keep evidence of a failure read it)
	for ((_cleanup_i = ${#_cleanups[@]} - 1; _cleanup_i >= 0; _cleanup_i--)); do
		eval "${_cleanups[$_cleanup_i]}" >/dev/null 2>&1
	done
	_cleanups=()
	return $rc
}
trap '_run_cleanups' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
info() { echo "# $*"; }
need_root() { [ "$(id -u)" = 0 ] || skip "needs root"; }
need_cmd() { local c; for c; do command -v "$c" >/dev/null 2>&1 || skip "needs $c"; done; }

assert_eq() { [ "$1" == "$2" ] || fail "${3:-assert_eq}: expected '$2', got '$1'"; }
assert_ne() { [ "$1" != "$2" ] || fail "${3:-assert_ne}: did not expect '$2'"; }
assert_le() { [ "$1" -le "$2" ] || fail "${3:-assert_le}: $1 > $2"; }
assert_ge() { [ "$1" -ge "$2" ] || fail "${3:-assert_ge}: $1 < $2"; }
assert_contains() { [[ "$1" == *"$2"* ]] || fail "${3:-assert_contains}: '$2' not in output: $1"; }

# expect_exit CODE CMD...: run CMD, require exit status CODE, keep its combined output in $OUT.
expect_exit() {
	local want=$1 rc=0; shift
	OUT=$("$@" 2>&1) || rc=$?
	[ "$rc" = "$want" ] || fail "'$*' exited $rc, expected $want; output: $OUT"
}

# wait_for TIMEOUT_SECONDS CMD...: poll CMD every 20 ms until it succeeds; fail on timeout.
wait_for() {
	local limit=$1 deadline; shift
	deadline=$(($(date +%s%N) + limit * 1000000000))
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s%N)" -lt "$deadline" ] || fail "timed out after ${limit}s waiting for: $*"
		sleep 0.02
	done
}

# qgrep ARGS...: grep -q that reads its input to the end.  Under pipefail, `producer | grep -q`
# fails when grep exits at the first match and the producer, still writing, dies of SIGPIPE.
qgrep() { grep "$@" >/dev/null; }

# now_ms: monotonic-enough wall clock in milliseconds, for elapsed-time assertions.
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# timed_ls DIR: `ls -l` DIR as $T/dra-ls (a link to ls the test makes, for comm_include = dra-*),
# print the milliseconds it took.
timed_ls() {
	local t0
	t0=$(now_ms)
	"$T/dra-ls" -l "$1" >/dev/null
	echo $(($(now_ms) - t0))
}

# Scratch directory, removed at exit (after everything mounted below it is unmounted).
T=$(mktemp -d "/tmp/dirahead-$TEST_NAME.XXXXXX")
on_exit "rm -rf '$T'"
# Every daemon a test starts keeps its memory across restarts (persist.h) in the test's own
# scratch, never in /var/lib/dirahead: one test's judgments must not reach the next.
export STATE_DIRECTORY=$T/state

# make_files DIR N [PREFIX]: create N empty files PREFIX000001.. in DIR quickly.
make_files() {
	mkdir -p "$1"
	(cd "$1" && seq -f "${3:-f}%06g" 1 "$2" | xargs touch)
}

# mkfs_isolated MKFS_CMD...: runs a mkfs in a mount namespace of its own from which every mount
# whose server is gone (stat fails with ENOTCONN, e.g. a FUSE mount left by a killed process) is
# detached first: mkfs.btrfs stats every mount's source and refuses to run when one fails, and
# such a leftover of something else must not fail this test.  Hung mounts are left (timeout).
mkfs_isolated() {
	unshare -m --propagation private bash -c '
		awk "{ print \$5 }" /proc/self/mountinfo | sort -r | while read -r m; do
			m=$(printf "%b" "$m")
			timeout 2 stat -- "$m" 2>&1 >/dev/null | grep "not connected" >/dev/null &&
				umount -l -- "$m" 2>/dev/null
		done
		exec "$@"' mkfs_isolated "$@"
}

# fuse_for_users: /dev/fuse open to unprivileged users, for mounts of their own (udev makes it
# 0666, not everywhere); its mode is restored at exit.
fuse_for_users() {
	local mode
	mode=$(stat -c %a /dev/fuse)
	if [ $((8#$mode & 8#006)) != 6 ]; then
		chmod o+rw /dev/fuse
		on_exit "chmod $mode /dev/fuse"
	fi
}

# bpf_run_counts: the kernel counts each BPF program's runs (kernel.bpf_stats_enabled) for the
# test; the old setting is restored at exit.
bpf_run_counts() {
	local old
	old=$(cat /proc/sys/kernel/bpf_stats_enabled)
	on_exit "echo $old >/proc/sys/kernel/bpf_stats_enabled"
	echo 1 >/proc/sys/kernel/bpf_stats_enabled
}

# drop_caches: make the next metadata access go to the filesystem.
drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# ---------------------------------------------------------------------------------------------
# slowfs: the FUSE test filesystem (tests/slowfs/, see tests/slowfs/README.md)
#
# slowfs_mount BACKING MNT [slowfs options...]
#   Mounts BACKING on MNT (created if missing) through build/slowfs with a control socket, waits
#   until the mount answers (fails after 10 s, showing slowfs's log), and registers the unmount
#   with on_exit: release a stall, SIGTERM, then fusermount3 -uz / umount -l if still mounted.
#   Sets SLOWFS_PID, SLOWFS_CTL (control socket), SLOWFS_LOG (slowfs's stderr), SLOWFS_MNT.
#   With several mounts in one test these name the latest; save them if you need the others.
#   slowfs does not run as a child of the test shell, so a bare `wait` does not wait for it.
#   Call it in the test's main shell (not in $(...) or a pipeline): cleanup is registered there.
#   Mounting issues a few requests (statfs, getattr of the root): `slowfs_ctl reset` before
#   counting.
# slowfs_unmount [MNT]      unmount now (default: the latest mount) with SIGTERM and require a
#                           clean end: exit status 0 and no sanitizer report in its log
# slowfs_ctl CMD [ARG...]   run a control command on $SLOWFS_CTL (stats, reset, stall, release,
#                           fail-lookups ERRNO); prints its output
# slowfs_stat KEY           print one value of `stats` (e.g. total.lookup), 0 if absent
_slowfs_n=0
declare -A _slowfs_pids=() _slowfs_logs=() _slowfs_rcs=()

# _slowfs_mounted MNT: true if MNT is a mount point; reads mountinfo, never touches MNT itself
# (a stalled or dead FUSE server must not hang the check).
_slowfs_mounted() {
	local p
	p=$(realpath -m "$1")
	awk -v p="$p" '$5 == p { found = 1 } END { exit !found }' /proc/self/mountinfo
}

# _slowfs_gone PID TIMEOUT_SECONDS: wait until PID no longer exists; false on timeout.
_slowfs_gone() {
	local pid=$1 i
	for ((i = 0; i < $2 * 50; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.02
	done
	! kill -0 "$pid" 2>/dev/null
}

# _slowfs_unmount PID SOCK MNT: the on_exit action of slowfs_mount; never fails.
_slowfs_unmount() {
	local pid=$1 sock=$2 mnt=$3
	[ -S "$sock" ] && timeout 2 "$BUILD/slowfsctl" "$sock" release >/dev/null 2>&1
	kill -TERM "$pid" 2>/dev/null && _slowfs_gone "$pid" 5
	if _slowfs_mounted "$mnt"; then
		fusermount3 -uz "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null
	fi
	kill -KILL "$pid" 2>/dev/null
	return 0
}

# slowfs_mount BACKING MNT [slowfs options...]: mounts and waits; unmounted at exit.
# SLOWFS_AS=(setpriv --reuid=U ...): run slowfs (and the readiness checks) as another user, whose
# mount only that user may use with --no-allow-other; SLOWFS_SOCKDIR: a directory that user may
# create its control socket in.
slowfs_mount() {
	[ $# -ge 2 ] || fail "usage: slowfs_mount BACKING MNT [slowfs options...]"
	local backing=$1 mnt=$2 i rc pidfile; shift 2
	local as=("${SLOWFS_AS[@]}")
	[ -x "$BUILD/slowfs" ] && [ -x "$BUILD/slowfsctl" ] || skip "build/slowfs not built (run make)"
	[ -c /dev/fuse ] || skip "needs /dev/fuse"
	need_root
	mkdir -p "$mnt"
	_slowfs_n=$((_slowfs_n + 1))
	SLOWFS_CTL=${SLOWFS_SOCKDIR:-$T}/slowfs.$_slowfs_n.sock
	SLOWFS_LOG=$T/slowfs.$_slowfs_n.log
	SLOWFS_MNT=$mnt
	rc=$T/slowfs.$_slowfs_n.rc
	pidfile=$T/slowfs.$_slowfs_n.pid
	# Double fork: the outer subshell exits at once, so slowfs is not our child (a bare `wait`
	# in the test must not block on it); the inner one records slowfs's exit status.
	# Its fds are closed so that $(...) around a caller cannot wait for it; set -e is off so
	# a failing slowfs still gets its status recorded.
	( (set +e
	   "${as[@]}" "$BUILD/slowfs" --control "$SLOWFS_CTL" "$@" "$backing" "$mnt" >"$SLOWFS_LOG" 2>&1 &
	   echo $! >"$pidfile.tmp" && mv "$pidfile.tmp" "$pidfile"
	   wait $!; echo $? >"$rc.tmp"; mv "$rc.tmp" "$rc") </dev/null >/dev/null 2>&1 & )
	for ((i = 0; i < 250; i++)); do [ -s "$pidfile" ] && break; sleep 0.02; done
	[ -s "$pidfile" ] || fail "slowfs did not start"
	SLOWFS_PID=$(cat "$pidfile")
	_slowfs_pids[$mnt]=$SLOWFS_PID
	_slowfs_logs[$mnt]=$SLOWFS_LOG
	_slowfs_rcs[$mnt]=$rc
	on_exit "_slowfs_unmount $SLOWFS_PID '$SLOWFS_CTL' '$mnt'"
	for ((i = 0; i < 500; i++)); do
		if [ -e "$rc" ]; then
			fail "slowfs exited with status $(cat "$rc") while mounting: $(cat "$SLOWFS_LOG")"
		fi
		# coreutils names FUSE's magic "fuseblk"; the first stat also waits for FUSE INIT.
		# The final stat caches the root's attributes, so a measurement does not begin with
		# a GETATTR of the root.
		if [ -S "$SLOWFS_CTL" ] && _slowfs_mounted "$mnt" &&
		   [[ "$("${as[@]}" timeout 5 stat -f -c %T "$mnt" 2>/dev/null)" == fuse* ]]; then
			"${as[@]}" timeout 5 stat "$mnt" >/dev/null || fail "stat $mnt failed after mounting"
			return 0
		fi
		sleep 0.02
	done
	fail "slowfs did not mount $mnt within 10 s: $(cat "$SLOWFS_LOG")"
}

slowfs_unmount() {
	local mnt=${1:-${SLOWFS_MNT:-}} pid log rc i
	pid=${_slowfs_pids[$mnt]:-}
	log=${_slowfs_logs[$mnt]:-}
	rc=${_slowfs_rcs[$mnt]:-}
	[ -n "$pid" ] || fail "slowfs_unmount: nothing mounted by slowfs_mount on '$mnt'"
	unset "_slowfs_pids[$mnt]"
	kill -TERM "$pid" 2>/dev/null || fail "slowfs on $mnt (pid $pid) is not running: $(cat "$log")"
	_slowfs_gone "$pid" 10 || fail "slowfs on $mnt did not exit within 10 s of SIGTERM"
	for ((i = 0; i < 250; i++)); do [ -e "$rc" ] && break; sleep 0.02; done
	[ "$(cat "$rc" 2>/dev/null)" = 0 ] ||
		fail "slowfs on $mnt exited with status $(cat "$rc" 2>/dev/null): $(cat "$log")"
	_slowfs_mounted "$mnt" && fail "$mnt is still mounted after slowfs exited"
	if grep -qE 'Sanitizer|runtime error' "$log"; then
		fail "slowfs on $mnt reported a sanitizer error: $(cat "$log")"
	fi
	return 0
}

slowfs_ctl() {
	[ -n "${SLOWFS_CTL:-}" ] || fail "slowfs_ctl: no slowfs mounted (SLOWFS_CTL unset)"
	"$BUILD/slowfsctl" "$SLOWFS_CTL" "$@"
}

# slowfs_own_lookups CMD...: runs CMD, waits for it (failing if it fails), prints the lookups
# it sent slowfs itself; its pid goes to $T/pid.
slowfs_own_lookups() {
	local pid
	"$@" &
	pid=$!
	echo $pid >"$T/pid"
	wait $pid || fail "$1 failed"
	slowfs_stat "pid.$pid.lookup"
}

slowfs_stat() {
	local out
	out=$(slowfs_ctl stats) || fail "slowfs_ctl stats failed"
	awk -F= -v k="$1" '$1 == k { v = substr($0, length(k) + 2); found = 1 }
		END { print found ? v : 0 }' <<<"$out"
}

# ---------------------------------------------------------------------------------------------
# A Debian root for the container tests (systemd-nspawn.sh, container-run.sh)
#
# cached_debian_root DIR [PACKAGE...]
#   Makes DIR a minimal Debian root (debootstrap --variant=minbase of $DEBIAN_SUITE, PACKAGE...
#   included) from the archive this machine's apt is configured with for the suite (the project
#   names no archive of its own), or $DIRAHEAD_DEBIAN_MIRROR; unless DIR holds one made the same
#   way already (its .dirahead-root says how: recipe, suite, archive, packages).  Takes DIR's
#   lock first (root_lock).  debootstrap's log is DIR.log.
# root_lock DIR   one test at a time uses the root DIR (DIR.lock, waited for up to 15 min), held
#                 until the test ends; take it early where the root must not change before use
# drop_tree DIR   remove a root, unmounting first whatever is mounted in it
# unmount_under DIR   lazily unmount DIR and everything mounted below it, deepest first
# stop_group PID  end the process group PID leads (SIGTERM, then SIGKILL after 10 s)
DEBIAN_SUITE=bookworm
DEBIAN_ROOT_RECIPE=1 # bump when the way the root is made changes
declare -A _root_locks=()
_debootstrap_pid=

unmount_under() {
	local d m
	d=$(realpath -m "$1")
	awk -v d="$d" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo |
		sort -r | while read -r m; do umount -l "$m"; done
}

# An interrupted debootstrap may leave its /proc and /sys mounted in the tree: unmounted first,
# so that rm cannot reach into the host's.
drop_tree() {
	[ -e "$1" ] || return 0
	unmount_under "$1"
	rm -rf --one-file-system "$1"
}

stop_group() {
	local i
	[ -n "$1" ] && kill -0 "$1" 2>/dev/null || return 0
	kill -TERM -- "-$1"
	for ((i = 0; i < 100; i++)); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
	kill -KILL -- "-$1" 2>/dev/null
	wait "$1" 2>/dev/null || true
}

root_lock() {
	local fd
	[ -z "${_root_locks[$1]:-}" ] || return 0
	mkdir -p "$(dirname "$1")"
	exec {fd}>"$1.lock"
	flock -w 900 "$fd" || fail "$1.lock still held after 15 min"
	_root_locks[$1]=$fd
}

cached_debian_root() {
	local dir=$1 pkgs mirror key new t0; shift
	pkgs=$(IFS=,; echo "$*")
	root_lock "$dir"
	mirror=${DIRAHEAD_DEBIAN_MIRROR:-$(
		apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 2>/dev/null |
			awk -v s="$DEBIAN_SUITE" '$2 == s { print $1; exit }')}
	[ -n "$mirror" ] || fail "apt has no source for $DEBIAN_SUITE (set DIRAHEAD_DEBIAN_MIRROR)"
	key="recipe=$DEBIAN_ROOT_RECIPE suite=$DEBIAN_SUITE variant=minbase mirror=$mirror"
	key+=${pkgs:+ include=$pkgs}
	if [ "$(cat "$dir/.dirahead-root" 2>/dev/null)" = "$key" ]; then
		info "reusing $dir"
		return 0
	fi
	# Made beside DIR and renamed into place only when complete: an interrupted run leaves no
	# root that a later one would take for finished.
	new=$dir.new
	drop_tree "$new"
	on_exit "drop_tree '$new'"
	info "debootstrap $DEBIAN_SUITE (minbase${pkgs:+ + $pkgs}) from $mirror"
	t0=$(date +%s)
	# In the background, in its own process group, and waited for: bash runs the traps of a
	# signal (a test timeout) only after a foreground command ends, and debootstrap's children
	# (dpkg in a chroot) must be stopped before its tree is removed.
	setsid debootstrap --variant=minbase ${pkgs:+"--include=$pkgs"} \
		"$DEBIAN_SUITE" "$new" "$mirror" >"$dir.log" 2>&1 </dev/null &
	_debootstrap_pid=$!
	on_exit 'stop_group "$_debootstrap_pid"'
	wait "$_debootstrap_pid" || fail "debootstrap failed (log: $dir.log): $(tail -n 20 "$dir.log")"
	_debootstrap_pid=
	rm -rf "$new"/var/cache/apt/archives/*.deb "$new"/var/lib/apt/lists/*_Packages
	printf '%s\n' "$key" >"$new/.dirahead-root"
	drop_tree "$dir"
	mv "$new" "$dir"
	info "root made in $(($(date +%s) - t0)) s: $(du -sh "$dir" | cut -f1)"
}
