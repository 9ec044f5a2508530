#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Groups are never dropped (issue 21, item 5: procdir.c takes the groups beyond the event's 32
# from the thread's status, up to DIRAHEAD_CRED_GROUPS; more, and the program is not served).
# A group can take rights away: a directory whose "other" bits allow r-x, with an ACL entry
# g:G:--- for the 40th group of a walker in 40 groups (beyond the 32 an event carries).  On
# slowfs --acl the kernel enforces it: the walker cannot list that directory, and no request of
# the daemon reaches into it (with the groups cut to 32 it would: "other" lets it in; a control
# run in those 32 groups shows the daemon reading it), while the rest of the walk is helped.  A
# walker in 300 groups (more than the daemon can take) is not served at all: skipped with reason
# `credentials`, no directory read or entry fetched for it.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd setpriv setfacl find

U=65534 # nobody
G0=70000 # its groups: G0+1 .. G0+n (the kernel keeps them sorted: G0+40 is the 40th)
groups_list() { seq -s, $((G0 + 1)) $((G0 + $1)); }
DENIED=$((G0 + 40))
as_groups() { # N CMD...: exec CMD as nobody in groups G0+1..G0+N, from / (in a subshell: `&`, `( )`)
	local n=$1; shift
	cd / && exec setpriv --reuid=$U --regid=$U --groups="$(groups_list "$n")" -- "$@"
}

chmod 0711 "$T"
D=60 F=40
for i in $(seq 1 $D); do make_files "$T/back/tree/d$i" $F; done
A=tree/d30/acl
for i in $(seq 1 10); do make_files "$T/back/$A/s$i" 20; done
chmod 0755 "$T/back/$A"
setfacl -m "g:$DENIED:---" "$T/back/$A" || skip "the backing filesystem of $T takes no ACLs"
ln -s "$(realpath "$(command -v find)")" "$T/dra-find"
printf '[metrics]\naddress =\n[filter]\ncomm_include = dra-*\n[daemon]\nlog_level = debug\n' >"$DAEMON_CONF"
slowfs_mount "$T/back" "$T/mnt" --latency-us 200 --acl
M=$T/mnt/tree
assert_eq "$(slowfs_stat posix_acl)" 1 "FUSE_POSIX_ACL negotiated"

# --- slowfs enforces the ACL: the denied group is refused, the others are not ----------------------
(as_groups 40 ls "$M/d30/acl") >/dev/null 2>&1 && fail "the walker in group $DENIED listed $A on slowfs"
(as_groups 32 ls "$M/d30/acl") >/dev/null || fail "the walker's first 32 groups could not list $A"
assert_eq "$( (as_groups 40 id -G) | wc -w)" 41 "groups of the walker (its gid and 40)"

run() { # NGROUPS: find -ls over the tree as nobody in that many groups, with cold caches; LAST_PID
	drop_caches
	slowfs_ctl reset >/dev/null
	slowfs_ctl watch "$A" >/dev/null
	as_groups "$1" "$T/dra-find" "$M" -ls >/dev/null 2>&1 &
	LAST_PID=$!
	wait $LAST_PID || true # (find reports the directory it may not enter)
	sleep 0.5 # the daemon's last requests (the walk ends with its walker)
}
others() { # KEY: slowfs_stat total.KEY less the walker's pid.PID.KEY (the daemon, its children)
	echo $(($(slowfs_stat "total.$1") - $(slowfs_stat "pid.$LAST_PID.$1")))
}
others_into() { # what everyone but the walker sent into the ACL's directory
	echo $(($(slowfs_stat watch.total.all) - $(slowfs_stat "watch.pid.$LAST_PID.all")))
}

run 40
off=$(slowfs_stat "pid.$LAST_PID.lookup")
info "alone, find in 40 groups sent $off lookups, $(slowfs_stat "watch.pid.$LAST_PID.all") requests into $A"
assert_ge "$off" $((D * F)) "the walker's lookups alone"
assert_eq "$(slowfs_stat "watch.pid.$LAST_PID.all")" 0 "the walker's own requests into $A"

daemon_start
# --- the control: in the first 32 groups only (what an event carries), the walker and the daemon
# may read the directory, and the watch sees the daemon do so --------------------------------------
run 32
ctl_in=$(others_into)
info "find in 32 groups: the daemon sent $ctl_in requests into $A"
assert_ge "$ctl_in" 1 "the daemon's requests into $A for a walker in its first 32 groups"

# --- 40 groups: all of them taken ----------------------------------------------------------------
a0=$(daemon_stat walk_dirs_ahead)
w0=$(daemon_stat walks_started)
run 40
on=$(slowfs_stat "pid.$LAST_PID.lookup")
into=$(others_into)
ahead=$(($(daemon_stat walk_dirs_ahead) - a0))
info "find in 40 groups with the daemon: $on lookups (alone $off), $ahead directories listed" \
	"ahead; the daemon's requests into $A: $into"
slowfs_ctl stats | grep '^watch\.pid\.' >&2 || true
assert_ge "$(($(daemon_stat walks_started) - w0))" 1 "walks started for the walker in 40 groups"
assert_eq "$into" 0 "requests of the daemon into the directory the walker's 40th group is denied"
assert_eq "$(daemon_stat skips.credentials)" 0 "scans and walks skipped for their credentials"
assert_le $((on * 5)) "$off" "the walker's own lookups with the daemon x5"
assert_ge "$ahead" $((D / 2)) "directories the walk listed before the walker"

# --- 300 groups: more than the daemon can take, not served ------------------------------------------
w0=$(daemon_stat walks_started)
s0=$(daemon_stat scans_started)
run 300
read_by_others=$(($(others opendir) + $(others readdir) + $(others lookup) + $(others getattr)))
skipped=$(daemon_stat skips.credentials)
info "find in 300 groups: skipped $skipped times for its credentials; the daemon opened" \
	"$(others opendir) directories, sent $(others lookup) lookups"
assert_ge "$skipped" 1 "scans or walks skipped with reason credentials"
assert_eq "$(($(daemon_stat walks_started) - w0))" 0 "walks started for the walker in 300 groups"
assert_eq "$(($(daemon_stat scans_started) - s0))" 0 "scans started for the walker in 300 groups"
assert_eq "$read_by_others" 0 "directories read and entries fetched by the daemon for it"
daemon_stop
