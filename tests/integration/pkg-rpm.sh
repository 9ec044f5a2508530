#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# packaging/rpm/dirahead.spec parses (rpmspec -P), carries the Makefile's version and the systemd
# scriptlets, and `make rpm` builds the three packages with the expected files (rpmbuild
# --nodeps: a Debian host has no rpm database for BuildRequires).
. "$(dirname "$0")/../lib/lib.sh"
need_cmd rpmspec rpm make

SPEC=$TOP/packaging/rpm/dirahead.spec
VERSION=$(sed -n 's/^VERSION *:= *//p' "$TOP/Makefile")
parsed=$(rpmspec -P "$SPEC" 2>&1) || fail "rpmspec -P: $parsed"
assert_eq "$(rpmspec -q --qf '%{VERSION}\n' "$SPEC" 2>/dev/null | sort -u)" "$VERSION" "spec Version vs Makefile"
for s in post preun postun; do
	awk -v s="%$s" '$1 == s { on = 1; next } /^%/ { on = 0 } on' <<<"$parsed" |
		qgrep 'dirahead\.service' || fail "%$s does not handle dirahead.service"
done
grep -q '^%systemd_post dirahead.service' "$SPEC" && grep -q '^%systemd_preun dirahead.service' "$SPEC" &&
	grep -q '^%systemd_postun_with_restart dirahead.service' "$SPEC" || fail "systemd scriptlet macros missing"
info "spec parses; version $VERSION; scriptlets present"

command -v rpmbuild >/dev/null || { echo "PASS (rpmbuild missing: not built)"; exit 0; }
timeout 240 make -s -C "$TOP" rpm BUILD="$T/build" >"$T/rpm.log" 2>&1 || fail "make rpm: $(tail -n 40 "$T/rpm.log")"
[ ! -e "$T/build/pkg-scratch" ] || fail "make rpm left its scratch copy behind"
arch=$(rpm --eval '%{_arch}')
dir=$T/build/rpm/$arch
libdir=$(rpm --eval '%{_libdir}')
q() { rpm -qp "$@" 2>/dev/null; }
main=$dir/dirahead-$VERSION-1.$arch.rpm libs=$dir/dirahead-libs-$VERSION-1.$arch.rpm
devel=$dir/dirahead-devel-$VERSION-1.$arch.rpm
for f in "$main" "$libs" "$devel"; do [ -f "$f" ] || fail "missing $(basename "$f"); have: $(ls "$dir")"; done
check_files() {
	local rpmf=$1 f list; shift
	list=$(q -l "$rpmf")
	for f; do grep -qx -- "$f" <<<"$list" || fail "$(basename "$rpmf") lacks $f"; done
}
check_files "$main" /usr/sbin/diraheadd /usr/sbin/diraheadctl /usr/lib/systemd/system/dirahead.service \
	/etc/dirahead/dirahead.conf /usr/share/man/man8/diraheadd.8 /usr/share/man/man8/diraheadctl.8 \
	/usr/share/man/man5/dirahead.conf.5
check_files "$libs" "$libdir/libdirahead.so.0" "$libdir/libdirahead.so.$VERSION"
check_files "$devel" /usr/include/dirahead.h "$libdir/libdirahead.so" "$libdir/libdirahead.a" \
	"$libdir/pkgconfig/dirahead.pc" /usr/share/man/man3/dirreadahead.3 \
	/usr/share/man/man3/dirahead_xreaddir.3
q --qf '[%{FILEFLAGS:fflags} %{FILENAMES}\n]' "$main" | qgrep -x 'cn /etc/dirahead/dirahead.conf' ||
	fail "dirahead.conf is not %config(noreplace)"
q --scripts "$main" | qgrep 'dirahead.service' || fail "no systemd scriptlets in the rpm"
q --provides "$libs" | qgrep 'libdirahead.so.0(DIRAHEAD_0.1)' || fail "libs does not provide the versioned soname"
q --requires "$devel" | qgrep "dirahead-libs(.*) = $VERSION-1" || fail "devel does not require libs"
info "rpm packages built with the expected files"
echo "PASS"
