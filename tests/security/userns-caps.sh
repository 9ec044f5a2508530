#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Capabilities held only inside a user namespace are not root's (issue 21, item 2: BPF reports
# capabilities only from the initial user namespace, procdir.c serves the program with its ids
# and groups alone).  Any user gets a full effective set with `unshare -Ur`: a walker (find) run
# that way by nobody over a slowfs tree holding a root-owned 0700 directory cannot enter it, and
# no request of the daemon reaches into it (slowfs `watch`), while the rest of the walk is still
# helped (the walker's own lookups under a fifth of what it sends alone).  Before, the daemon
# took the namespace's capabilities for real ones and read that directory with its own
# CAP_DAC_READ_SEARCH.  A control first: real root's walk of the same tree, which the daemon
# does read that directory for, shows that the watch sees the daemon's requests.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd setpriv unshare find

U=65534 # nobody
# Unprivileged user namespaces, for this test (restored at exit): some kernels and distributions
# turn them off with one of these.
sysctl_set() { # FILE VALUE: set it if it exists and differs; restored at exit
	local f=$1 v=$2 old
	[ -w "$f" ] || return 0
	old=$(cat "$f")
	[ "$old" != "$v" ] || return 0
	echo "$v" >"$f" || skip "cannot set $f to $v"
	on_exit "echo '$old' >'$f'"
}
[ "$(cat /proc/sys/user/max_user_namespaces 2>/dev/null || echo 0)" -ge 16 ] ||
	sysctl_set /proc/sys/user/max_user_namespaces 1024
sysctl_set /proc/sys/kernel/unprivileged_userns_clone 1
sysctl_set /proc/sys/kernel/apparmor_restrict_unprivileged_userns 0
AS=(setpriv --reuid=$U --regid=$U --clear-groups --)
NS=("${AS[@]}" unshare --user --map-root-user --)
out=$(cd / && "${NS[@]}" sh -c 'id -u; grep CapEff /proc/self/status' 2>&1) ||
	skip "unprivileged user namespaces unavailable: $out"
info "in the namespace: uid $(head -1 <<<"$out"), $(tail -1 <<<"$out")"
assert_eq "$(head -1 <<<"$out")" 0 "uid inside unshare -Ur"

chmod 0711 "$T"
D=60 F=40
for i in $(seq 1 $D); do make_files "$T/back/tree/d$i" $F; done
# the secret: root's, 0700, with directories and files for a walk to list and stat
S=tree/d30/secret
for i in $(seq 1 10); do make_files "$T/back/$S/s$i" 20; done
chmod 0700 "$T/back/$S"
ln -s "$(realpath "$(command -v find)")" "$T/dra-find"
printf '[metrics]\naddress =\n[filter]\ncomm_include = dra-*\n[daemon]\nlog_level = debug\n' >"$DAEMON_CONF"
slowfs_mount "$T/back" "$T/mnt" --latency-us 200
M=$T/mnt/tree

run() { # root|userns: find -ls over the tree with cold caches, watching the secret; LAST_PID
	drop_caches
	slowfs_ctl reset >/dev/null
	slowfs_ctl watch "$S" >/dev/null
	case $1 in
	root) (cd / && exec "$T/dra-find" "$M" -ls) >/dev/null 2>&1 & ;;
	userns) (cd / && exec "${NS[@]}" "$T/dra-find" "$M" -ls) >/dev/null 2>&1 & ;;
	esac
	LAST_PID=$!
	wait $LAST_PID || true # (find reports the directory it may not enter)
	sleep 0.5 # the daemon's last requests (the walk ends with its walker)
}
others_into_secret() { # what everyone but the walker sent into the secret: the daemon, its children
	echo $(($(slowfs_stat watch.total.all) - $(slowfs_stat "watch.pid.$LAST_PID.all")))
}

run userns
off=$(slowfs_stat "pid.$LAST_PID.lookup")
own_in=$(slowfs_stat "watch.pid.$LAST_PID.all")
info "alone, find in the namespace sent $off lookups, $own_in requests into the secret"
assert_ge "$off" $((D * F)) "the walker's lookups alone"
assert_eq "$own_in" 0 "the walker's own requests into the secret (the kernel refuses it)"

daemon_start
# --- the control: real root's walk; the daemon may read the secret for it ------------------------
run root
ctl_in=$(others_into_secret)
info "root's find: the daemon sent $ctl_in requests into the secret"
assert_ge "$ctl_in" 1 "the daemon's requests into the secret for real root (the watch works)"

# --- the attack: the same walk as root of a user namespace -----------------------------------------
a0=$(daemon_stat walk_dirs_ahead)
w0=$(daemon_stat walks_started)
run userns
on=$(slowfs_stat "pid.$LAST_PID.lookup")
into=$(others_into_secret)
ahead=$(($(daemon_stat walk_dirs_ahead) - a0))
info "find in the namespace with the daemon: $on lookups (alone $off), $ahead directories" \
	"listed ahead, the daemon's requests into the secret: $into" \
	"(uids of the daemon's: $(slowfs_stat "pid.$DAEMON_PID.uids"))"
slowfs_ctl stats | grep '^watch\.pid\.' >&2 || true
assert_ge "$(($(daemon_stat walks_started) - w0))" 1 "walks started for the walker in the namespace"
assert_eq "$into" 0 "requests of the daemon into the root-only directory"
assert_le $((on * 5)) "$off" "the walker's own lookups with the daemon x5"
assert_ge "$ahead" $((D / 2)) "directories the walk listed before the walker"
daemon_stop
