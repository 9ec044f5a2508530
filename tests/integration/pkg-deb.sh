#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# `make deb` builds the three binary packages from a copy of the tree (all under $T here), lintian
# finds no error in them, and unpacked into a scratch root they hold what they should: the daemon
# runs from there, the config is a conffile, the unit is enabled and started by the maintainer
# scripts, the library has its symbols and the -dev links resolve.  Takes a minute or two.
. "$(dirname "$0")/../lib/lib.sh"
need_cmd dpkg-buildpackage dh dpkg-deb dpkg-checkbuilddeps lintian make

VERSION=$(sed -n 's/^VERSION *:= *//p' "$TOP/Makefile")
assert_eq "$(dpkg-parsechangelog -l "$TOP/packaging/debian/changelog" -S Version)" "$VERSION" \
	"debian/changelog version vs Makefile VERSION"
ARCH=$(dpkg --print-architecture)
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
case "$ARCH" in amd64 | arm64) ;; *) skip "packages are built for amd64 and arm64 only" ;; esac
out=$(dpkg-checkbuilddeps -P nocheck "$TOP/packaging/debian/control" 2>&1) ||
	skip "build dependencies missing (make deps): $out"

start=$(date +%s)
timeout 240 make -s -C "$TOP" deb BUILD="$T/build" >"$T/deb.log" 2>&1 ||
	fail "make deb failed: $(tail -n 40 "$T/deb.log")"
info "make deb: $(($(date +%s) - start)) s"
D=$T/build/deb
for p in dirahead libdirahead0 libdirahead-dev; do
	[ -f "$D/${p}_${VERSION}_$ARCH.deb" ] || fail "missing ${p}_${VERSION}_$ARCH.deb; have: $(ls "$D")"
done
[ ! -e "$T/build/pkg-scratch" ] || fail "make deb left its scratch copy behind"

# ---- lintian: no errors; the rest is printed for the log -----------------------------------------
lintian --tag-display-limit 0 "$D"/*.changes >"$T/lintian.txt" 2>&1 || true
info "lintian: $(grep -c '^E:' "$T/lintian.txt" || true) errors, $(grep -c '^W:' "$T/lintian.txt" || true) warnings"
grep -v 'running with root privileges' "$T/lintian.txt" | sed 's/^/#   /' || true
! grep -q '^E:' "$T/lintian.txt" || fail "lintian errors: $(grep '^E:' "$T/lintian.txt")"

# ---- contents ---------------------------------------------------------------------------------------
R=$T/root
for f in "$D"/*.deb; do dpkg-deb -x "$f" "$R"; done
has() { [ -e "$R$1" ] || [ -L "$R$1" ] || fail "$2 does not ship $1"; }
for f in /usr/sbin/diraheadd /usr/sbin/diraheadctl /lib/systemd/system/dirahead.service \
	 /etc/dirahead/dirahead.conf /usr/share/man/man8/diraheadd.8.gz \
	 /usr/share/man/man8/diraheadctl.8.gz /usr/share/man/man5/dirahead.conf.5.gz \
	 /usr/share/doc/dirahead/copyright; do has "$f" dirahead; done
for f in /usr/lib/$MA/libdirahead.so.0 /usr/lib/$MA/libdirahead.so.$VERSION; do has "$f" libdirahead0; done
for f in /usr/include/dirahead.h /usr/lib/$MA/libdirahead.so /usr/lib/$MA/libdirahead.a \
	 /usr/lib/$MA/pkgconfig/dirahead.pc /usr/share/man/man3/dirreadahead.3.gz \
	 /usr/share/man/man3/dirahead_xreaddir.3.gz; do has "$f" libdirahead-dev; done
[ -f "$(readlink -f "$R/usr/lib/$MA/libdirahead.so")" ] || fail "libdirahead.so does not resolve"
dpkg-deb -c "$D/libdirahead-dev_${VERSION}_$ARCH.deb" | awk '{ print $6 }' | qgrep 'libdirahead\.so\.0' &&
	fail "libdirahead-dev ships the runtime library"
grep -qx "libdir=\${prefix}/lib/$MA" "$R/usr/lib/$MA/pkgconfig/dirahead.pc" || fail ".pc libdir is not multiarch"

out=$("$R/usr/sbin/diraheadd" --version) || fail "diraheadd --version from the package: $out"
assert_eq "$out" "diraheadd $VERSION" "diraheadd --version"
out=$("$R/usr/sbin/diraheadctl" --version) || fail "diraheadctl --version from the package: $out"
assert_contains "$out" "$VERSION" "diraheadctl --version"
"$R/usr/sbin/diraheadd" --check-config "$R/etc/dirahead/dirahead.conf" >/dev/null ||
	fail "the packaged dirahead.conf does not pass --check-config"

# ---- control data -----------------------------------------------------------------------------------
C=$T/control
dpkg-deb -e "$D/dirahead_${VERSION}_$ARCH.deb" "$C"
grep -qx /etc/dirahead/dirahead.conf "$C/conffiles" || fail "dirahead.conf is not a conffile"
grep -q 'deb-systemd-helper.*enable.*dirahead.service\|deb-systemd-helper unmask' "$C/postinst" &&
	grep -q "dirahead.service" "$C/postinst" || fail "postinst does not enable dirahead.service"
grep -q 'deb-systemd-invoke \$_dh_action .*dirahead.service' "$C/postinst" ||
	fail "postinst does not start dirahead.service"
grep -q 'deb-systemd-invoke stop .*dirahead.service' "$C/prerm" || fail "prerm does not stop the service"
grep -q 'deb-systemd-helper purge .*dirahead.service' "$C/postrm" || fail "postrm does not purge the unit state"
deps=$(dpkg-deb -f "$D/dirahead_${VERSION}_$ARCH.deb" Depends)
for lib in libbpf libsystemd0 libinih libmicrohttpd libjson-c liburing; do
	assert_contains "$deps" "$lib" "dirahead Depends"
done
dpkg-deb -e "$D/libdirahead0_${VERSION}_$ARCH.deb" "$T/libcontrol"
grep -q '^libdirahead.so.0 libdirahead0' "$T/libcontrol/symbols" || fail "libdirahead0 has no symbols file"
grep -q 'dirreadahead@DIRAHEAD_0.1' "$T/libcontrol/symbols" || fail "symbols lacks dirreadahead"
grep -q 'activate-noawait ldconfig' "$T/libcontrol/triggers" || fail "libdirahead0 does not trigger ldconfig"
assert_eq "$(dpkg-deb -f "$D/libdirahead-dev_${VERSION}_$ARCH.deb" Depends | grep -o "libdirahead0 (= $VERSION)")" \
	"libdirahead0 (= $VERSION)" "libdirahead-dev Depends"
info "contents, conffile, maintainer scripts and dependencies as expected"
echo "PASS"
