#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Attack: a local user floods the metrics endpoint's unix socket ([metrics] address = unix:PATH,
# mode 0666) with idle connections, opening a new one whenever one is closed, to shut root's
# scrape out.  There was a total only (16), which one user filled.  What holds: connections are
# counted per uid (SO_PEERCRED), the user has 4; root's scrapes during the flood are all
# answered, and the refusals are counted (refused_peer_limit).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/../lib/metrics.sh"
need_root
need_cmd curl /usr/bin/python3 setpriv

U=60124
S=$T/run/metrics.sock
printf '[metrics]\naddress = unix:%s\n' "$S" >"$DAEMON_CONF"
daemon_start
[ -S "$S" ] || fail "no metrics socket at $S"
NS=()
flood_scrapes $U "unix:$S" --unix-socket "$S" http://localhost/metrics
daemon_stop
echo PASS
