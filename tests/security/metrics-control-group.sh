#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Attack: a local user outside the [control] group reads the metrics page that an operator
# meant for the monitoring only.  [metrics] access = control-group (dirahead.conf(5)) serves
# root and the group's members and answers others 403 (counted as forbidden):
# - over TCP (from any loopback address) by the uid owning the client's socket, with that
#   user's groups in the account database;
# - over the unix socket by SO_PEERCRED and the groups the kernel recorded for the process (a
#   member who dropped the group is refused, a process given the group is served);
# - a reload applies it, and takes it back (access = all).
# The daemon runs in a network namespace of its own (its port meets nothing of the host's).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/../lib/metrics.sh"
need_root
need_cmd curl unshare nsenter ip setpriv useradd groupadd

PORT=9567
G=drmet$$ UA=drmet$$a UB=drmet$$b
on_exit "userdel $UA; userdel $UB; groupdel $G"
groupadd --system "$G"
useradd --system --no-create-home --shell /usr/sbin/nologin --gid daemon --groups "$G" "$UA"
useradd --system --no-create-home --shell /usr/sbin/nologin --gid nogroup "$UB"
GID=$(getent group "$G" | cut -d: -f3)
chmod 0755 "$T"
S=$T/run/metrics.sock
# conf ADDRESS [ACCESS]
conf() { printf '[metrics]\naddress = %s\n%b[control]\ngroup = %s\n' "$1" "${2:+access = $2\n}" "$G" >"$DAEMON_CONF"; }
conf "127.0.0.1:$PORT"
metrics_daemon_netns
forbidden() { metric 'dirahead_metrics_requests_total{result="forbidden"}'; }

# get WHO URL [SRC]: the HTTP status of GET URL as WHO: root, a user name (its primary group and
# the groups /etc/group gives it), or UID:GID:GROUPS (setpriv's list, "" for none), from SRC
get() {
	local who=$1 url=$2 src=${3:-127.0.0.1} as=()
	case "$who" in
	root) ;;
	*:*:*) IFS=: read -r u g l <<<"$who"
		as=(setpriv --reuid="$u" --regid="$g")
		if [ -n "$l" ]; then as+=(--groups="$l"); else as+=(--clear-groups); fi ;;
	*) as=(setpriv --reuid="$who" --regid="$(id -g "$who")" --init-groups) ;;
	esac
	local via=(--interface "$src")
	[[ $url == unix:* ]] && via=(--unix-socket "${url#unix:}") url=http://localhost/metrics
	"${NS[@]}" "${as[@]}" curl -s -o /dev/null -w '%{http_code}' --max-time 5 "${via[@]}" "$url" || true
}
TCP=http://127.0.0.1:$PORT/metrics

assert_eq "$(get "$UB" "$TCP")" 200 "$UB over TCP by default (access = all)"
conf "127.0.0.1:$PORT" control-group
expect_exit 0 ctl reload
assert_eq "$(get "$UB" "$TCP")" 403 "$UB over TCP"
assert_eq "$(get "$UB" "$TCP" 127.0.0.7)" 403 "$UB over TCP from 127.0.0.7"
assert_eq "$(get 60125:60125: "$TCP")" 403 "uid 60125 (no account) over TCP"
assert_eq "$(get "$UA" "$TCP")" 200 "$UA (member of $G) over TCP"
assert_eq "$(get "$UA" "$TCP" 127.0.0.7)" 200 "$UA over TCP from 127.0.0.7"
assert_eq "$(get root "$TCP")" 200 "root over TCP"
out=$("${NS[@]}" setpriv --reuid="$UB" --regid=nogroup --init-groups curl -s --max-time 5 "$TCP" || true)
assert_contains "$out" "root and the [control] group only" "the 403's body"
[[ $out != *dirahead_build_info* ]] || fail "metrics in the refused answer"
assert_eq "$(forbidden)" 4 "forbidden requests counted"

conf "unix:$S" control-group
expect_exit 0 ctl reload
assert_eq "$(get "$UB" "unix:$S")" 403 "$UB over the unix socket"
assert_eq "$(get "$UA" "unix:$S")" 200 "$UA over the unix socket"
assert_eq "$(get root "unix:$S")" 200 "root over the unix socket"
# the process's groups count here, not the account's
ua=$(id -u "$UA") ub=$(id -u "$UB")
assert_eq "$(get "$ua:$(id -g "$UA"):" "unix:$S")" 403 "$UA having dropped its groups"
assert_eq "$(get "$ub:$(id -g "$UB"):$GID" "unix:$S")" 200 "$UB given $G as a supplementary group"
assert_eq "$(get "$ub:$GID:" "unix:$S")" 200 "$UB with $G as its primary group"
assert_eq "$(forbidden)" 6 "forbidden requests counted"

conf "unix:$S" all
expect_exit 0 ctl reload
assert_eq "$(get "$UB" "unix:$S")" 200 "$UB over the unix socket after access = all"
daemon_stop
echo PASS
