#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# packaging/container/ stays true to the unit and the binaries, without Kubernetes or a build:
#   daemonset.yaml parses (YAML), is a ConfigMap and a DaemonSet whose container adds exactly the
#   unit's CapabilityBoundingSet= and drops ALL, is not privileged, cannot escalate, shares the
#   host's PIDs (or mounts the host's /proc and names it by [daemon] proc), mounts /sys/kernel/btf
#   read-only, has resource limits, and is scraped on the port its config listens on; the
#   ConfigMap's dirahead.conf passes `diraheadd --check-config`;
#   the Containerfile's runtime stage installs exactly the Debian packages of the libraries the
#   built binaries link (readelf NEEDED, dpkg -S; libc6 comes with every base; a sanitizer
#   build's runtimes are not shipped), and its
#   ENTRYPOINT runs diraheadd with /etc/dirahead/dirahead.conf.
# tests/integration/container-run.sh builds and runs the image.
. "$(dirname "$0")/../lib/lib.sh"
need_cmd python3 readelf dpkg-query
python3 -c 'import yaml' 2>/dev/null || skip "needs python3-yaml (make deps)"
[ -x "$BUILD/diraheadd" ] && [ -x "$BUILD/diraheadctl" ] || skip "build/diraheadd not built (run make)"

DIR=$TOP/packaging/container
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$TOP/packaging/systemd/dirahead.service")
[ -n "$caps" ] || fail "no CapabilityBoundingSet= in the unit"

# ---- the DaemonSet --------------------------------------------------------------------------
python3 - "$DIR/daemonset.yaml" "$T/dirahead.conf" $caps <<'EOF' || fail "daemonset.yaml: see above"
import sys, yaml
path, conf_out, unit_caps = sys.argv[1], sys.argv[2], sys.argv[3:]
errors = []
def check(cond, what):
    if not cond:
        errors.append(what)
docs = [d for d in yaml.safe_load_all(open(path)) if d]
kinds = {d["kind"]: d for d in docs}
check(set(kinds) == {"ConfigMap", "DaemonSet"}, f"kinds {sorted(kinds)}")
conf = kinds["ConfigMap"]["data"]["dirahead.conf"]
open(conf_out, "w").write(conf)
spec = kinds["DaemonSet"]["spec"]["template"]["spec"]
ann = kinds["DaemonSet"]["spec"]["template"]["metadata"]["annotations"]
(c,) = spec["containers"]
sc = c["securityContext"]
want = sorted(x.removeprefix("CAP_") for x in unit_caps)
check(sorted(sc["capabilities"]["add"]) == want, f"capabilities.add {sorted(sc['capabilities']['add'])} != the unit's {want}")
check(sc["capabilities"]["drop"] == ["ALL"], "capabilities.drop is not [ALL]")
check(sc.get("privileged") is False, "privileged is not false")
check(sc.get("allowPrivilegeEscalation") is False, "allowPrivilegeEscalation is not false (NoNewPrivileges=)")
check(sc.get("runAsUser") == 0, "runAsUser is not 0")
mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
vols = {v["name"]: v for v in spec["volumes"]}
def host_path(mp):
    return vols[mounts[mp]["name"]].get("hostPath", {}).get("path") if mp in mounts else None
proc_key = [l.split("=", 1)[1].strip() for l in conf.splitlines() if l.strip().startswith("proc")]
if not spec.get("hostPID"):
    check(proc_key and host_path(proc_key[0]) == "/proc", "neither hostPID nor the host's /proc named by [daemon] proc")
check(host_path("/sys/kernel/btf") == "/sys/kernel/btf", "/sys/kernel/btf not mounted from the host")
check(mounts.get("/sys/kernel/btf", {}).get("readOnly") is True, "/sys/kernel/btf not read-only")
check(mounts.get("/etc/dirahead", {}).get("readOnly") is True, "no read-only config at /etc/dirahead")
check("args" not in c or c["args"][-1] == "/etc/dirahead/dirahead.conf", "args name another config")
for r in ("cpu", "memory"):
    check(r in c.get("resources", {}).get("limits", {}), f"no {r} limit")
addr = [l.split("=", 1)[1].strip() for l in conf.splitlines() if l.strip().startswith("address")]
ports = [p["containerPort"] for p in c.get("ports", [])]
if addr and not addr[0].startswith("unix:"):
    port = int(addr[0].rsplit(":", 1)[1])
    check(ann.get("prometheus.io/scrape") == "true", "no prometheus.io/scrape annotation")
    check(ann.get("prometheus.io/port") == str(port), f"prometheus.io/port is not the config's {port}")
    check(port in ports, f"containerPort {ports} lacks the config's {port}")
else:
    check(any(m.startswith("/run/dirahead") for m in mounts), "metrics neither on a port nor on a socket volume")
for e in errors:
    print("daemonset.yaml:", e)
sys.exit(1 if errors else 0)
EOF
out=$("$BUILD/diraheadd" --check-config "$T/dirahead.conf" 2>&1) ||
	fail "the ConfigMap's dirahead.conf is invalid: $out"

# ---- the Containerfile ----------------------------------------------------------------------
# the package list of the stage named runtime-deps (the RUN lines up to the next FROM)
stage_pkgs=$(awk '/^FROM .* AS runtime-deps/ { s = 1; next } /^FROM / { s = 0 } s' "$DIR/Containerfile" |
	sed 's/\\$//' | tr ' ' '\n' | grep -E '^lib[a-z0-9.+-]+$' | sort -u)
[ -n "$stage_pkgs" ] || fail "no runtime-deps stage with packages in the Containerfile"
needed=$(for lib in $(readelf -d "$BUILD/diraheadd" "$BUILD/diraheadctl" |
		      sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort -u); do
		pkg=$(dpkg-query -S "*/$lib" 2>/dev/null | grep -v '^diversion' | sed -n '1s/[:,].*//p')
		[ -n "$pkg" ] || fail "no Debian package ships $lib"
		echo "$pkg"
	done | grep -vxE "libc6|lib(a|ub|t|l)san[0-9]*" | sort -u)
assert_eq "$(echo $stage_pkgs)" "$(echo $needed)" "runtime packages in the Containerfile vs the binaries' NEEDED"
grep -qx 'ENTRYPOINT \["/usr/sbin/diraheadd", "--config", "/etc/dirahead/dirahead.conf"\]' "$DIR/Containerfile" ||
	fail "the Containerfile's ENTRYPOINT does not run diraheadd with /etc/dirahead/dirahead.conf"
[ -e "$TOP/.containerignore" ] && grep -qx build "$TOP/.containerignore" ||
	fail ".containerignore does not keep build/ out of the context"
echo "PASS"
