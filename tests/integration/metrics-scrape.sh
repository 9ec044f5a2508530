#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# The Prometheus endpoint: diraheadd serves /metrics on a free loopback port; scrapes before,
# during and after an application's scan of a 3,000-entry directory on slowfs (1 ms a lookup)
# must each pass `promtool check metrics` (from Debian's prometheus package, extracted by
# `make tests` into build/tools/) and a strict parser (HELP and TYPE once, before a family's
# samples, which stay together; valid names; counters end in _total; histograms end in _seconds,
# with cumulative buckets, +Inf == _count; no PID, path or other high-cardinality label).  Between
# scrapes no counter goes down, and the scan moves listings, scans confirmed, entries prefetched,
# hits and the latency histogram; the mid-scan scrape shows it as an active scan.
# `diraheadctl metrics` gives the same families.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd curl python3
PROMTOOL=$BUILD/tools/promtool
[ -x "$PROMTOOL" ] || fail "$PROMTOOL missing: run 'make tests' (it extracts promtool from Debian's prometheus package)"

N=3000
make_files "$T/back/dir" $N
slowfs_mount "$T/back" "$T/mnt" --latency-us 1000

cat >"$T/check.py" <<'EOF'
# Strict check of a Prometheus text exposition (format 0.0.4), stricter than promtool on what
# this project promises; prints "family type" lines for comparisons, exits 1 on a problem.
import math, re, sys

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
SAMPLE = re.compile(r"([^{\s]+)(?:\{(.*)\})? (\S+)\Z")
PAIR = re.compile(r'([^=,\s]+)="((?:[^"\\]|\\.)*)"(,|\Z)')
# labels that would mean one series per process, file or directory
BANNED = {"pid", "tgid", "tid", "comm", "path", "dir", "directory", "file", "name", "cgroup", "mount"}
errors = []
def bad(lineno, msg):
    errors.append("line %d: %s" % (lineno, msg))

text = open(sys.argv[1]).read()
if not text.endswith("\n"):
    bad(0, "does not end with a newline")
families = {}       # name -> {"type", "help", "done"}
order = []
current = None
series = set()
values = {}
for n, line in enumerate(text.split("\n")[:-1], 1):
    if not line:
        bad(n, "empty line")
        continue
    if line.startswith("#"):
        m = re.match(r"# (HELP|TYPE) (\S+) (.+)\Z", line)
        if not m:
            bad(n, "comment that is neither HELP nor TYPE: %r" % line)
            continue
        kind, name, rest = m.groups()
        if not NAME.match(name) or not name.startswith("dirahead_"):
            bad(n, "bad family name %r" % name)
        f = families.setdefault(name, {"type": None, "help": None, "samples": 0})
        if name not in order:
            order.append(name)
        if f["samples"]:
            bad(n, "%s after samples of %s" % (kind, name))
        if current is not None and current != name and families[current]["samples"] == 0:
            bad(n, "family %s has no samples" % current)
        current = name
        if kind == "HELP":
            if f["help"] is not None:
                bad(n, "second HELP for %s" % name)
            f["help"] = rest
        else:
            if f["type"] is not None:
                bad(n, "second TYPE for %s" % name)
            if f["help"] is None:
                bad(n, "TYPE before HELP for %s" % name)
            if rest not in ("counter", "gauge", "histogram"):
                bad(n, "type %r for %s" % (rest, name))
            f["type"] = rest
            if rest == "counter" and not name.endswith("_total"):
                bad(n, "counter %s does not end in _total" % name)
            if rest == "gauge" and name.endswith("_total"):
                bad(n, "gauge %s ends in _total" % name)
            if rest == "histogram" and not name.endswith("_seconds"):
                bad(n, "histogram %s does not end in _seconds" % name)
        continue
    m = SAMPLE.match(line)
    if not m:
        bad(n, "not a sample: %r" % line)
        continue
    sname, labels, value = m.groups()
    if not NAME.match(sname):
        bad(n, "bad metric name %r" % sname)
    f = families.get(current)
    if f is None or f["type"] is None or f["help"] is None:
        bad(n, "sample %s before its family's HELP and TYPE" % sname)
        continue
    suffixes = ("_bucket", "_sum", "_count") if f["type"] == "histogram" else ("",)
    if not any(sname == current + s for s in suffixes):
        bad(n, "sample %s inside family %s" % (sname, current))
    f["samples"] += 1
    lab = {}
    if labels is not None:
        pos = 0
        while pos < len(labels):
            pm = PAIR.match(labels, pos)
            if not pm:
                bad(n, "bad labels %r" % labels)
                break
            k, v = pm.group(1), pm.group(2)
            if not LABEL.match(k) or k.startswith("__"):
                bad(n, "bad label name %r" % k)
            if k in lab:
                bad(n, "label %s twice" % k)
            if k.lower() in BANNED:
                bad(n, "high-cardinality label %s" % k)
            if "/" in v or (k != "le" and re.fullmatch(r"[0-9]+", v)):
                bad(n, "label value %s=%r looks like a path or a PID" % (k, v))
            lab[k] = v
            pos = pm.end()
    if sname.endswith("_bucket") and f["type"] == "histogram" and "le" not in lab:
        bad(n, "bucket without le")
    try:
        x = float(value)
    except ValueError:
        bad(n, "value %r is not a number" % value)
        continue
    if math.isnan(x):
        bad(n, "NaN value")
    if f["type"] in ("counter", "histogram") and x < 0:
        bad(n, "negative counter %s" % line)
    key = (sname, tuple(sorted(lab.items())))
    if key in series:
        bad(n, "duplicate series %s" % line)
    series.add(key)
    values[sname + (("{" + ",".join('%s="%s"' % kv for kv in sorted(lab.items())) + "}") if lab else "")] = x

for name in order:
    f = families[name]
    if f["samples"] == 0:
        bad(0, "family %s has no samples" % name)
    if f["type"] != "histogram":
        continue
    # per label set (less le): le ascending, counts non-decreasing, +Inf last and == _count
    groups = {}
    for (sname, lab) in series:
        if sname == name + "_bucket":
            rest = tuple(kv for kv in lab if kv[0] != "le")
            le = dict(lab)["le"]
            groups.setdefault(rest, []).append((float(le), le))
    for rest, les in groups.items():
        les.sort()
        if les[-1][1] != "+Inf":
            bad(0, "%s%s has no +Inf bucket" % (name, rest))
        fmt = lambda s, extra=(): s + (("{" + ",".join('%s="%s"' % kv for kv in sorted(rest + extra)) + "}") if rest + extra else "")
        counts = [values[fmt(name + "_bucket", (("le", le),))] for _, le in les]
        if any(b < a for a, b in zip(counts, counts[1:])):
            bad(0, "%s buckets not cumulative: %s" % (name, counts))
        if fmt(name + "_count") not in values or fmt(name + "_sum") not in values:
            bad(0, "%s%s lacks _sum or _count" % (name, rest))
        elif counts[-1] != values[fmt(name + "_count")]:
            bad(0, "%s +Inf bucket %s != _count %s" % (name, counts[-1], values[fmt(name + "_count")]))
if len(series) > 500:
    bad(0, "%d series: too many for a fixed set of labels" % len(series))
if errors:
    sys.stderr.write("\n".join(errors) + "\n")
    sys.exit(1)
for name in order:
    print(name, families[name]["type"])
EOF

# The strict parser must catch what it is there for (each of these is one mistake).
selftest() { # WHAT TEXT
	printf "$2" >"$T/bad.txt"
	python3 "$T/check.py" "$T/bad.txt" >/dev/null 2>&1 && fail "strict parser accepted $1"
	return 0
}
H='# HELP dirahead_x_seconds h\n# TYPE dirahead_x_seconds histogram\n'
printf "${H}dirahead_x_seconds_bucket{le=\"1\"} 1\ndirahead_x_seconds_bucket{le=\"+Inf\"} 2\ndirahead_x_seconds_sum 1\ndirahead_x_seconds_count 2\n" >"$T/good.txt"
python3 "$T/check.py" "$T/good.txt" >/dev/null || fail "strict parser rejected a good histogram"
selftest "buckets going down" "${H}dirahead_x_seconds_bucket{le=\"1\"} 3\ndirahead_x_seconds_bucket{le=\"+Inf\"} 2\ndirahead_x_seconds_sum 1\ndirahead_x_seconds_count 2\n"
selftest "+Inf != _count" "${H}dirahead_x_seconds_bucket{le=\"1\"} 1\ndirahead_x_seconds_bucket{le=\"+Inf\"} 2\ndirahead_x_seconds_sum 1\ndirahead_x_seconds_count 3\n"
selftest "no +Inf bucket" "${H}dirahead_x_seconds_bucket{le=\"1\"} 1\ndirahead_x_seconds_sum 1\ndirahead_x_seconds_count 1\n"
selftest "a counter without _total" '# HELP dirahead_x h\n# TYPE dirahead_x counter\ndirahead_x 1\n'
selftest "a sample before TYPE" '# HELP dirahead_x_total h\ndirahead_x_total 1\n# TYPE dirahead_x_total counter\n'
selftest "a sample without HELP" '# TYPE dirahead_x_total counter\ndirahead_x_total 1\n'
selftest "a pid label" '# HELP dirahead_x_total h\n# TYPE dirahead_x_total counter\ndirahead_x_total{pid="42"} 1\n'
selftest "a numeric label value" '# HELP dirahead_x_total h\n# TYPE dirahead_x_total counter\ndirahead_x_total{who="4242"} 1\n'
selftest "a path label value" '# HELP dirahead_x_total h\n# TYPE dirahead_x_total counter\ndirahead_x_total{reason="/srv/x"} 1\n'
selftest "a bad name" '# HELP dirahead_x-y_total h\n# TYPE dirahead_x-y_total counter\ndirahead_x-y_total 1\n'
selftest "a split family" '# HELP dirahead_a_total h\n# TYPE dirahead_a_total counter\ndirahead_a_total{r="a"} 1\n# HELP dirahead_b h\n# TYPE dirahead_b gauge\ndirahead_b 1\ndirahead_a_total{r="b"} 1\n'
selftest "a duplicate series" '# HELP dirahead_b h\n# TYPE dirahead_b gauge\ndirahead_b 1\ndirahead_b 2\n'

# check NAME FILE: the exposition in FILE passes promtool and the strict parser
check() {
	local out
	out=$("$PROMTOOL" check metrics <"$2" 2>&1) || fail "promtool check metrics on the $1 scrape: $out"
	python3 "$T/check.py" "$2" >"$2.families" || fail "strict parser on the $1 scrape (above)"
}
# val FILE SERIES: a sample's value from a scrape, as an integer (fail if absent)
val() {
	awk -v k="$2" '$1 == k { printf "%.0f\n", $2; found = 1 } END { exit !found }' "$1" ||
		fail "no series $2 in $1"
}
scrape() { curl -sf --max-time 5 "http://127.0.0.1:$PORT/metrics" >"$1" || fail "scraping $PORT failed"; }

# A free loopback port, chosen by the kernel (ephemeral ports are handed out in turn, so none is
# likely to be taken again in the moment before the daemon binds it).
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf '[metrics]\naddress = 127.0.0.1:%s\n[prefetch]\nwindow_max = 32\n[detect]\narm = always\n' "$PORT" >"$DAEMON_CONF"
daemon_start
info "daemon $DAEMON_PID, metrics on 127.0.0.1:$PORT"

# HTTP details: the exposition's content type; other paths and methods are refused.
hdr=$(curl -sf -o /dev/null -D - "http://127.0.0.1:$PORT/metrics")
assert_contains "$hdr" "Content-Type: text/plain; version=0.0.4" "content type"
assert_eq "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/nothing")" 404 "GET /nothing"
assert_eq "$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$PORT/metrics")" 405 "POST /metrics"

scrape "$T/m1"
check before "$T/m1"

# The application: lists the directory, then stats every entry, slowly enough (~6 s) for a
# scrape to catch its scan running (beside three busy loops a 2.9 s scan of 1,500 ended before
# the page, rendered at most once a second, and the checks, a python3 each, had shown it; a
# longer sleep between stats leaves prefetch too little to gain: ended no_gain).
python3 -c 'import os, sys, time
d = sys.argv[1]
for n in os.listdir(d):
    os.lstat(os.path.join(d, n))
    time.sleep(0.0015)' "$T/mnt/dir" &
app=$!
on_exit "kill $app"
scanning() {
	ctl scans --json | python3 -c 'import json, sys
sys.exit(not any(s["pid"] == int(sys.argv[1]) for s in json.load(sys.stdin)))' "$app"
}
wait_for 10 scanning
# The endpoint renders its text at most once a second: a scrape within a second of the last one
# may still show the time before the scan.  Scraped until the page shows it (or the scan ends).
shows_scan() {
	scrape "$T/m2"
	[ "$(val "$T/m2" dirahead_active_scans)" -ge 1 ] || ! scanning
}
wait_for 10 shows_scan
scanning || fail "the scan ended before the mid-scan scrape; too fast to test"
check during "$T/m2"
assert_ge "$(val "$T/m2" dirahead_active_scans)" 1 "active scans during the scan"
wait $app || fail "the scanning application failed"
wait_for 5 eval '! scanning'
scrape "$T/m3"
check after "$T/m3"

# Families: the same in every scrape, and from diraheadctl metrics; except the per-filesystem
# ones (dirahead_filesystem_*), which appear with the first filesystem the cost model judged,
# and the time saved by filesystem type (dirahead_{saved,lost}_seconds_total), with the first
# scan that had figures for an estimate (a family without samples is not valid exposition text).
ctl metrics >"$T/ctl"
check diraheadctl "$T/ctl"
grep -q '^dirahead_filesystem_verdict ' "$T/m3.families" ||
	fail "no per-filesystem families after scans: $(cat "$T/m3.families")"
for f in m1 m2 m3 ctl; do
	grep -vE '^dirahead_(filesystem_|saved_seconds_total |lost_seconds_total )' "$T/$f.families" >"$T/$f.fam"
done
for f in m2 m3 ctl; do
	cmp -s "$T/m1.fam" "$T/$f.fam" ||
		fail "families differ between m1 and $f: $(diff "$T/m1.fam" "$T/$f.fam")"
done
info "$(wc -l <"$T/m1.families") families: $(awk '{ print $1 }' "$T/m1.families" | tr '\n' ' ')"
for f in build_info listings_total scans_confirmed_total scans_ended_total skips_total \
	entries_prefetched_total hits_total misses_total errors_total bpf_events_lost_total \
	config_reloads_total prefetch_latency_seconds active_scans requests_in_flight \
	bpf_programs_attached; do
	grep -q "^dirahead_$f " "$T/m1.families" || fail "family dirahead_$f missing"
done

# No counter went down between scrapes (the same series in each).
python3 - "$T/m1" "$T/m2" "$T/m3" "$T/ctl" <<'EOF' || fail "a counter went down"
import sys
def load(p):
    kinds, vals = {}, {}
    for line in open(p):
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            kinds[name] = kind
        elif not line.startswith("#"):
            k, v = line.rsplit(" ", 1)
            vals[k] = float(v)
    return kinds, vals
kinds, prev = load(sys.argv[1])
def monotonic(series):
    base = series.split("{")[0]
    for name, kind in kinds.items():
        if kind == "counter" and base == name:
            return True
        if kind == "histogram" and base in (name + "_bucket", name + "_count", name + "_sum"):
            return True
    return False
# per-filesystem series appear as filesystems are judged, the time saved per filesystem type
# with its first estimate: once there, they stay
perfs = lambda ks: set(k for k in ks if not k.startswith(
    ("dirahead_filesystem_", "dirahead_saved_seconds_total{", "dirahead_lost_seconds_total{")))
for p in sys.argv[2:]:
    _, cur = load(p)
    if perfs(cur) != perfs(prev) or not set(prev) <= set(cur):
        sys.exit("series differ in %s: %s" % (p, set(cur) ^ set(prev)))
    for k, v in cur.items():
        if k in prev and monotonic(k) and v < prev[k]:
            sys.exit("%s went from %s to %s in %s" % (k, prev[k], v, p))
    prev = cur
EOF

# What the scan moved (lower bounds: other processes scan too).
d() { echo $(($(val "$T/m3" "$1") - $(val "$T/m1" "$1"))); }
info "deltas: listings $(d dirahead_listings_total), confirmed $(d dirahead_scans_confirmed_total)," \
	"prefetched $(d dirahead_entries_prefetched_total), hits $(d dirahead_hits_total)," \
	"latency samples $(d dirahead_prefetch_latency_seconds_count)"
assert_ge "$(d dirahead_listings_total)" 1 "listings counted"
assert_ge "$(d dirahead_scans_confirmed_total)" 1 "scans confirmed"
assert_ge "$(d dirahead_entries_prefetched_total)" $((N * 95 / 100)) "entries prefetched"
assert_ge "$(d dirahead_hits_total)" $((N / 2)) "hits"
assert_ge "$(d dirahead_prefetch_latency_seconds_count)" $((N * 95 / 100)) "latency histogram samples"
assert_ge "$(d 'dirahead_scans_ended_total{reason="completed"}')" 1 "scans completed"
assert_ge "$(val "$T/m3" dirahead_bpf_programs_attached)" 1 "BPF programs attached"
daemon_stop
