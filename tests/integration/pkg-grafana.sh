#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# packaging/grafana/dirahead.json is valid JSON, a well-formed dashboard, and every metric its
# queries use is one the daemon exports: checked against daemon/diraheadd/{metrics,stats}.c always, and
# against a running daemon's `diraheadctl metrics` when one can be started here (root, BPF).
. "$(dirname "$0")/../lib/lib.sh"
need_cmd python3

DASH=$TOP/packaging/grafana/dirahead.json
METRICS_C=$TOP/daemon/diraheadd/metrics.c
STATS_C=$TOP/daemon/diraheadd/stats.c

# Names the source exports: every "dirahead_..." string literal of metrics.c and of the
# statistics table (stats.c).
grep -ohE '"dirahead_[a-z0-9_]+' "$METRICS_C" "$STATS_C" | tr -d '"' | sort -u >"$T/source-metrics"
[ -s "$T/source-metrics" ] || fail "no metric names found in $METRICS_C and $STATS_C"

# check_dashboard EXPORTED-NAMES-FILE: a histogram's _bucket/_sum/_count count as exported when
# its base name is.
check_dashboard() {
	python3 - "$DASH" "$1" <<'EOF'
import json, re, sys
dash_path, names_path = sys.argv[1], sys.argv[2]
exported = set(open(names_path).read().split())
try:
    d = json.load(open(dash_path))
except ValueError as e:
    sys.exit(f"not valid JSON: {e}")
for k in ("title", "uid", "panels", "schemaVersion", "templating"):
    if k not in d:
        sys.exit(f"dashboard has no '{k}'")
ids, exprs = set(), []
def walk(panels):
    for p in panels:
        if p.get("id") in ids:
            sys.exit(f"duplicate panel id {p.get('id')}")
        ids.add(p.get("id"))
        for key in ("type", "title", "gridPos"):
            if key not in p:
                sys.exit(f"panel {p.get('id')} has no {key}")
        for t in p.get("targets", []):
            if not t.get("expr"):
                sys.exit(f"panel '{p['title']}' has a target without expr")
            exprs.append((p["title"], t["expr"]))
        walk(p.get("panels", []))
walk(d["panels"])
for v in d["templating"]["list"]:
    q = v.get("query")
    if isinstance(q, dict):
        q = q.get("query", "")
    if isinstance(q, str) and "dirahead_" in q:
        exprs.append(("variable " + v["name"], q))
used = set()
bad = []
for title, e in exprs:
    if e.count("(") != e.count(")") or e.count("{") != e.count("}"):
        bad.append(f"{title}: unbalanced brackets in {e}")
    for m in re.findall(r"\bdirahead_[a-z0-9_]+", e):
        used.add(m)
        base = re.sub(r"_(bucket|sum|count)$", "", m)
        if m not in exported and base not in exported:
            bad.append(f"{title}: {m} is not exported by the daemon")
if bad:
    sys.exit("\n".join(bad))
print(f"{len(exprs)} queries over {len(used)} metrics: " + " ".join(sorted(used)))
EOF
}

out=$(check_dashboard "$T/source-metrics" 2>&1) || fail "against metrics.c and stats.c: $out"
info "metrics.c: $out"

# Against a live daemon, when one can run here.
if [ "$(id -u)" = 0 ] && [ -x "$BUILD/diraheadd" ] && [ -x "$BUILD/diraheadctl" ] &&
   [ -r /sys/kernel/btf/vmlinux ] && "$BUILD/diraheadctl" --help 2>&1 | qgrep -w metrics; then
	. "$TOP/tests/lib/daemon.sh"
	# the hooks from the start: the scan below is warm, it would not arm them
	printf '[metrics]\naddress =\n[detect]\narm = always\n' >"$DAEMON_CONF"
	daemon_start
	# One scan, so that the per-filesystem families (which appear with the first filesystem the
	# cost model judges) are there too.
	# (again until one is judged: a slow build, or a busy machine, may see a warm ls -l end
	# before the judgment)
	make_files "$T/scan" 200
	judged() { ls -l "$T/scan" >/dev/null; ctl stats | qgrep '^filesystems\.'; }
	wait_for 20 judged
	ctl metrics >"$T/live.txt" || fail "diraheadctl metrics failed"
	# exported names: from "# TYPE name type" lines, plus histogram series names
	{ awk '$1 == "#" && $2 == "TYPE" { print $3 }' "$T/live.txt"
	  grep -v '^#' "$T/live.txt" | grep -oE '^dirahead_[a-z0-9_]+'; } | sort -u >"$T/live-metrics"
	out=$(check_dashboard "$T/live-metrics" 2>&1) || fail "against the running daemon: $out"
	info "running daemon: every queried metric is exported"
	daemon_stop
else
	info "no daemon run here (needs root, built diraheadd/diraheadctl with 'metrics', BTF): source check only"
fi
echo "PASS"
