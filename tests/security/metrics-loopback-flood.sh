#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Attack: a local user floods the metrics endpoint (TCP on loopback) with idle connections from
# 40 loopback addresses (127.0.0.2 .. 127.0.0.41), opening a new one whenever one is closed, to
# shut root's Prometheus scrape out.  Limits per client address do not hold: each address is a
# new client.  What holds: the daemon finds the uid behind every address (the owner of the
# client's socket), so the user has 4 connections however many addresses it uses; root's
# scrapes during the flood are all answered, and the refusals are counted (refused_peer_limit).
# The daemon runs in a network namespace of its own (its port meets nothing of the host's).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/../lib/metrics.sh"
need_root
need_cmd curl /usr/bin/python3 unshare nsenter ip setpriv

PORT=9567 U=60123
printf '[metrics]\naddress = 127.0.0.1:%s\n' $PORT >"$DAEMON_CONF"
metrics_daemon_netns
flood_scrapes $U "tcp:$PORT" "http://127.0.0.1:$PORT/metrics"
daemon_stop
echo PASS
