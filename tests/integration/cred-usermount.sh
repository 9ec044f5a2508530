#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Prefetch with the program's own credentials (daemon/lib/cred.c, CREDENTIALS in diraheadd(8)):
#  1. slowfs mounted by an unprivileged user without allow_other (as users mount sshfs or
#     rclone: the kernel admits that user only, root included): `ls -l` and `find` as that user
#     are prefetched (they send under 10% of the lookups they send alone), and every request
#     slowfs saw from the daemon came with that user's uid;
#     a walk there holds its top's ancestors (opened as the user: what re-roots it when the
#     program lists beside its top);
#  2. a directory the user may read but not search (r--): the user's scan of its parent reaches
#     it, the daemon lists it, but sends no lookup for its entries (root could have).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd setpriv find

U=65534 # nobody
fuse_for_users
chmod 0711 "$T"
mkdir -p "$T/u" "$T/bin"
chown $U:$U "$T/u"
for t in ls find; do cp "$(type -P $t)" "$T/bin/dcu-$t"; done
chmod 0755 "$T/bin" "$T"/bin/*
N=1500 D=40 F=30
make_files "$T/u/back/off" $N
make_files "$T/u/back/on" $N
for i in $(seq 1 $D); do make_files "$T/u/back/tree/d$i" $F; done
make_files "$T/u/back/tree2/open" 20
make_files "$T/u/back/tree2/noexec" 200
chown -R $U:$U "$T/u/back"
chmod 0444 "$T/u/back/tree2/noexec" # r--: listable, no entry reachable
mkdir -p "$T/u/mnt"
chown $U:$U "$T/u/mnt"
AS=(setpriv --reuid=$U --regid=$U --clear-groups --)

SLOWFS_AS=("${AS[@]}")
SLOWFS_SOCKDIR=$T/u
slowfs_mount "$T/u/back" "$T/u/mnt" --latency-us 500 --no-allow-other
M=$T/u/mnt
[ "$(stat -c %a "$M" 2>&1)" != 755 ] || fail "root reached a mount without allow_other (not a user mount)"
printf '[metrics]\naddress =\n[filter]\ncomm_include = dcu-*\n[daemon]\nlog_level = debug\n' >"$DAEMON_CONF"

own_lookups() { # PID: the lookups it sent itself
	slowfs_stat "pid.$1.lookup"
}
run() { # TOOL DIR: as the user, with cold caches; LAST_PID
	drop_caches
	slowfs_ctl reset >/dev/null
	case $1 in
	ls) "${AS[@]}" "$T/bin/dcu-ls" -l "$2" >/dev/null & ;;
	find) "${AS[@]}" "$T/bin/dcu-find" "$2" -ls >/dev/null 2>&1 & ;;
	esac
	LAST_PID=$!
	wait $LAST_PID || [ "$1" = find ] || fail "$1 $2 failed"
}

run ls "$M/off"
off_ls=$(own_lookups $LAST_PID)
run find "$M/tree"
off_find=$(own_lookups $LAST_PID)
info "alone: ls -l sent $off_ls lookups, find $off_find"
assert_ge "$off_ls" "$N" "lookups of ls -l alone"

daemon_start
# --- 1. the user's own mount ----------------------------------------------------------------------
run ls "$M/on"
on_ls=$(own_lookups $LAST_PID)
dpid_uids=$(slowfs_stat "pid.$DAEMON_PID.uids")
dreq=$(slowfs_stat "pid.$DAEMON_PID.all")
info "with the daemon: ls -l sent $on_ls, the daemon $dreq requests with uids '$dpid_uids'"
assert_le $((on_ls * 10)) "$off_ls" "ls -l's own lookups with the daemon x10"
assert_ge "$dreq" $((N / 2)) "requests the daemon sent"
assert_eq "$dpid_uids" "$U" "uids of the daemon's requests"

run find "$M/tree"
on_find=$(own_lookups $LAST_PID)
dpid_uids=$(slowfs_stat "pid.$DAEMON_PID.uids")
info "with the daemon: find sent $on_find, the daemon $(slowfs_stat "pid.$DAEMON_PID.all") requests with uids '$dpid_uids'"
assert_le $((on_find * 10)) "$off_find" "find's own lookups with the daemon x10"
assert_eq "$dpid_uids" "$U" "uids of the daemon's requests (walk)"
# the walk holds its top's ancestors (opened as the user in full, as everything on this mount):
# what re-roots it when the program lists beside its top (`ls -lR` leaving a subtree); held
# none, a walk on a user's sshfs ended at the first such listing (0.95x of off, 1.81x with them)
held=$(sed -n "s/.*walk of pid $LAST_PID: \([0-9]*\) of its top's ancestors held.*/\1/p" "$DAEMON_LOG" | head -1)
assert_ge "${held:-0}" 1 "ancestors of the walk's top held on the user's mount"
assert_eq "$(daemon_stat skips.open_failed)" 0 "scans the daemon could not open"

# --- 2. readable, not searchable --------------------------------------------------------------------
# find lists noexec (r), cannot stat its entries; the walk (as the user) lists it too, and sends
# no lookup for them: the kernel refuses the search before asking slowfs.
ls -ld "$T/u/back/tree2/noexec" >&2
slowfs_ctl reset >/dev/null
"${AS[@]}" "$T/bin/dcu-find" "$M/tree2" -ls >/dev/null 2>&1 &
fpid=$!
wait $fpid || true
sleep 0.5
# what everyone but find sent: the daemon, and the short-lived children it opens directories in
# with the user's ids in full (this mount admits no one else)
lookups=$(( $(slowfs_stat total.lookup) - $(slowfs_stat "pid.$fpid.lookup") ))
opened=$(( $(slowfs_stat total.opendir) - $(slowfs_stat "pid.$fpid.opendir") ))
info "find over tree2: the daemon opened $opened directories, sent $lookups lookups"
assert_ge "$opened" 2 "directories of tree2 the daemon listed (noexec among them)"
# (20 of open/, the directories themselves; none of noexec's 200 entries)
assert_le "$lookups" 30 "the daemon's lookups (none into the directory without search permission)"
daemon_stop
