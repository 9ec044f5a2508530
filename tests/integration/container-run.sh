#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# The image of packaging/container/Containerfile, built with podman from this tree and run as the
# DaemonSet runs it (packaging/container/daemonset.yaml): root in the host's user namespace, the
# unit's seven capabilities and no others, no new privileges, a seccomp filter, /sys/kernel/btf
# read-only, the control socket and the metrics socket in a directory shared with the host.
# It helps a process OUTSIDE the container: an `ls -l` of 1000 files on a slowfs mount of the host
# sends at most a fifth of the lookups itself; the daemon's statistics come through its control
# socket, bind-mounted out.  Twice:
#   A. --pid=host (Kubernetes hostPID);
#   B. a PID namespace of its own, the host's /proc mounted at /host/proc and named by
#      [daemon] proc (a DaemonSet without hostPID).
# The base image is a debootstrap root (minbase, from the archive apt is configured with), cached
# in $BUILD/container-root (lib.sh's cached_debian_root; its lock is held to the end, the images
# are shared too) and imported once as localhost/dirahead-test-base:KEY; the two package stages
# of the Containerfile are kept as tagged images (localhost/dirahead-test-{build,runtime}-deps).
# First run: debootstrap 30-50 s, the toolchain stage 1-3 min; then 1-2 min (the build stage
# compiles the tree).  Containers, this run's images and mounts are removed at exit.
# podman runs with runc: crun 1.8 refuses a host whose cgroup2 hierarchy holds a controller
# beside cgroup v1 ("hybrid mode"); runc handles v1, hybrid and v2.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/daemon.sh"
need_root
need_cmd podman runc debootstrap python3 curl flock
[ -r /sys/kernel/btf/vmlinux ] || skip "no /sys/kernel/btf/vmlinux"

ROOT=$BUILD/container-root
CONTAINERFILE=$TOP/packaging/container/Containerfile
# The unit's capabilities, read from it (pkg-container checks the DaemonSet against it too).
CAPS=$(sed -n 's/^CapabilityBoundingSet=//p' "$TOP/packaging/systemd/dirahead.service")
[ -n "$CAPS" ] || fail "no CapabilityBoundingSet= in the unit"
N=1000

pm() { podman --runtime runc "$@"; }
# The unit's LimitNOFILE=; nproc only because podman's default (1048576) cannot be set without
# CAP_SYS_RESOURCE, which a CI host that is itself a container may lack (root is exempt anyway).
LIMITS=(--ulimit nofile=4096:4096 --ulimit nproc=4096:4096)

# ---- the base image: a debootstrap root, imported ---------------------------------------------
cached_debian_root "$ROOT"
BASE=localhost/dirahead-test-base:$(sha256sum <"$ROOT/.dirahead-root" | cut -c1-12)
if ! pm image exists "$BASE"; then
	info "importing $ROOT as $BASE"
	tar -C "$ROOT" --exclude=./.dirahead-root -c . | pm import - "$BASE" >/dev/null ||
		fail "podman import of $ROOT failed"
fi

# ---- the package stages, kept between runs -----------------------------------------------------
# --network=host: the RUN steps reach the Debian archive the way the host does.
BUILD_OPTS=(--network=host --build-arg "BASE=$BASE" --layers --force-rm "${LIMITS[@]}"
	-f "$CONTAINERFILE")
# deps_stage TARGET: build the Containerfile up to TARGET as localhost/dirahead-test-TARGET (a
# cache hit when neither the base nor the stage changed); an image it replaces is removed.
deps_stage() {
	local tag=localhost/dirahead-test-$1 old new t0
	old=$(pm image inspect -f '{{.Id}}' "$tag" 2>/dev/null || true)
	t0=$(date +%s)
	pm build "${BUILD_OPTS[@]}" --target "$1" -t "$tag" "$TOP" >"$T/build-$1.log" 2>&1 ||
		fail "podman build --target $1: $(tail -n 30 "$T/build-$1.log")"
	new=$(pm image inspect -f '{{.Id}}' "$tag")
	if [ -n "$old" ] && [ "$old" != "$new" ]; then pm rmi "$old" >/dev/null 2>&1 || true; fi
	info "stage $1: $(($(date +%s) - t0)) s"
}
deps_stage build-deps
deps_stage runtime-deps

# ---- this tree's image -----------------------------------------------------------------------
IMAGE=localhost/dirahead-test:$$
images_before=$(pm images -a -q --no-trunc | sort -u)
# every image this build made (its layers included), however the test ends
remove_images() {
	local ids
	ids=$(comm -13 <(echo "$images_before") <(pm images -a -q --no-trunc | sort -u))
	pm rmi -f "$IMAGE" >/dev/null 2>&1
	[ -z "$ids" ] || pm rmi -f $ids >/dev/null 2>&1
	return 0
}
on_exit remove_images
t0=$(date +%s)
pm build "${BUILD_OPTS[@]}" -t "$IMAGE" "$TOP" >"$T/build.log" 2>&1 ||
	fail "podman build: $(tail -n 30 "$T/build.log")"
info "image built in $(($(date +%s) - t0)) s: $(pm image inspect -f '{{.Size}}' "$IMAGE") bytes"
# runtime libraries only: no compiler, no -dev package, no headers
pm run --rm --network=none "${LIMITS[@]}" --entrypoint /bin/sh "$IMAGE" -c \
	'dpkg-query -W -f="\${Package}\n"' >"$T/packages" || fail "listing the image's packages"
BUILD_PKGS='-dev$|^(gcc|cpp|clang|llvm)(-[0-9]+)?$|^(make|bpftool|binutils)$'
assert_eq "$(grep -cE -- "$BUILD_PKGS" "$T/packages" || true)" 0 \
	"build packages in the image ($(grep -E -- "$BUILD_PKGS" "$T/packages" | head -3 | tr '\n' ' '))"
grep -qx libbpf1 "$T/packages" || fail "libbpf1 not in the image"

# The engine's default seccomp profile lets bpf(2) through only with CAP_SYS_ADMIN (the kernel
# asks CAP_BPF since 5.8): the same profile with bpf allowed to CAP_BPF instead.
python3 - "$(pm info -f '{{.Host.Security.SECCOMPProfilePath}}')" >"$T/seccomp.json" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
rules = []
for r in p["syscalls"]:
    if "bpf" in r["names"]:
        r["names"] = [n for n in r["names"] if n != "bpf"]
        if not r["names"]:
            continue
    rules.append(r)
rules.append({"names": ["bpf"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_BPF"]}})
p["syscalls"] = rules
json.dump(p, sys.stdout)
EOF

# ---- the host's side: a slow filesystem, a place for the sockets -----------------------------
make_files "$T/back/a" $N
make_files "$T/back/b" $N
slowfs_mount "$T/back" "$T/mnt" --latency-us 1000
NAME=dirahead-test-$$
on_exit "pm rm -f -t 0 '$NAME'"
RUN=$T/run
DAEMON_SOCK=$RUN/diraheadd.sock

# run_case LABEL DIR [podman options...]: run the image with the config in $T/conf, wait until
# its control socket answers, then an outside `ls -l` of DIR; asserts on both sides, stops it.
run_case() {
	local label=$1 dir=$2 cid dpid st own i; shift 2
	rm -rf "$RUN" "$T/state" && mkdir -p "$RUN" "$T/state"
	cid=$(pm run -d --name "$NAME" --network=none "${LIMITS[@]}" --pids-limit 512 \
		--cap-drop ALL $(printf -- '--cap-add %s ' $CAPS) \
		--security-opt no-new-privileges --security-opt seccomp="$T/seccomp.json" \
		-v /sys/kernel/btf:/sys/kernel/btf:ro -v "$T/conf:/etc/dirahead/dirahead.conf:ro" \
		-v "$RUN:/run/dirahead" -v "$T/state:/var/lib/dirahead" "$@" "$IMAGE") ||
		fail "$label: podman run failed"
	for ((i = 0; i < 600; i++)); do
		ctl status >/dev/null 2>&1 && break
		[ "$(pm inspect -f '{{.State.Running}}' "$cid")" = true ] ||
			fail "$label: the daemon exited: $(pm logs "$cid" 2>&1 | tail -n 20)"
		sleep 0.1
	done
	ctl status >/dev/null 2>&1 || fail "$label: not ready in 60 s: $(pm logs "$cid" 2>&1 | tail -n 20)"
	dpid=$(pm inspect -f '{{.State.Pid}}' "$cid")
	# exactly the unit's capabilities (the same mask systemd-nspawn.sh reads under the unit)
	st=$(cat "/proc/$dpid/status")
	assert_eq "$(awk '$1 == "Name:" { print $2 }' <<<"$st")" diraheadd "$label: the container's process"
	assert_eq "$(awk '$1 == "CapEff:" { print $2 }' <<<"$st")" 000000c0000800c5 "$label: CapEff"
	assert_eq "$(awk '$1 == "CapBnd:" { print $2 }' <<<"$st")" 000000c0000800c5 "$label: CapBnd"
	assert_eq "$(awk '$1 == "NoNewPrivs:" { print $2 }' <<<"$st")" 1 "$label: NoNewPrivs"
	assert_eq "$(awk '$1 == "Seccomp:" { print $2 }' <<<"$st")" 2 "$label: seccomp filter"

	drop_caches
	slowfs_ctl reset >/dev/null
	ls -l "$dir" >/dev/null &
	app=$!
	wait $app
	own=$(slowfs_stat "pid.$app.lookup")
	info "$label: ls -l of $N files: $own lookups by ls itself, $(daemon_stat entries_prefetched) prefetched"
	assert_ge "$(daemon_stat scans_started)" 1 "$label: scans started"
	assert_le "$own" $((N / 5)) "$label: lookups sent by ls itself"
	assert_eq "$(daemon_stat skips.open_failed)" 0 "$label: scans that could not be opened"
	# the metrics endpoint, a Unix socket in the shared directory
	curl -sf --unix-socket "$RUN/metrics.sock" http://localhost/metrics >"$T/metrics" ||
		fail "$label: GET /metrics on the shared socket"
	grep -q '^dirahead_build_info' "$T/metrics" || fail "$label: no dirahead_build_info in the metrics"

	pm logs "$cid" >"$T/$label.log" 2>&1
	pm stop -t 15 "$cid" >/dev/null || fail "$label: podman stop"
	assert_eq "$(pm inspect -f '{{.State.ExitCode}}' "$cid")" 0 "$label: exit status after SIGTERM"
	pm logs "$cid" >"$T/$label.log" 2>&1
	! grep -qE 'Sanitizer|runtime error' "$T/$label.log" || fail "$label: $(cat "$T/$label.log")"
	pm rm -f "$cid" >/dev/null
}

printf '[daemon]\nlog_level = debug\n[metrics]\naddress = unix:/run/dirahead/metrics.sock\n' >"$T/conf"
run_case A-hostpid "$T/mnt/a" --pid=host

printf '[daemon]\nlog_level = debug\nproc = /host/proc\n[metrics]\naddress = unix:/run/dirahead/metrics.sock\n' >"$T/conf"
run_case B-hostproc "$T/mnt/b" -v /proc:/host/proc:ro
assert_contains "$(cat "$T/B-hostproc.log")" "in a PID namespace of its own" "B: the daemon found its host PID"
echo "PASS"
