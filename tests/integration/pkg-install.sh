#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# `make install DESTDIR=... PREFIX=...` puts every file in place with the right modes and links;
# the installed library, header and pkg-config file build and run the examples of dirreadahead(3)
# (shared and static); `make uninstall` removes it all again.
. "$(dirname "$0")/../lib/lib.sh"
need_cmd make pkg-config readelf cc

mk() { make -s -C "$TOP" BUILD="$BUILD" "$@"; }

mk install-bins >"$T/build.log" 2>&1 || fail "build failed: $(tail -n 20 "$T/build.log")"
R=$T/root
mk install DESTDIR="$R" PREFIX=/usr >"$T/install.log" 2>&1 || fail "make install: $(cat "$T/install.log")"
UNITDIR=$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null || echo /lib/systemd/system)

# path mode: regular files with their mode; symlinks checked separately
while read -r path mode; do
	[ -f "$R$path" ] && [ ! -L "$R$path" ] || fail "not installed (or not a file): $path"
	assert_eq "$(stat -c %a "$R$path")" "$mode" "mode of $path"
done <<EOF
/usr/sbin/diraheadd 755
/usr/sbin/diraheadctl 755
/usr/lib/libdirahead.so.0.1.0 644
/usr/lib/libdirahead.a 644
/usr/include/dirahead.h 644
/usr/lib/pkgconfig/dirahead.pc 644
$UNITDIR/dirahead.service 644
/etc/dirahead/dirahead.conf 644
/usr/share/man/man3/dirreadahead.3 644
/usr/share/man/man3/dirahead_xreaddir.3 644
/usr/share/man/man5/dirahead.conf.5 644
/usr/share/man/man8/diraheadd.8 644
/usr/share/man/man8/diraheadctl.8 644
EOF
assert_eq "$(readlink "$R/usr/lib/libdirahead.so.0")" libdirahead.so.0.1.0 "soname link"
assert_eq "$(readlink "$R/usr/lib/libdirahead.so")" libdirahead.so.0 "development link"
readelf -d "$R/usr/lib/libdirahead.so.0.1.0" | qgrep 'SONAME.*\[libdirahead\.so\.0\]' ||
	fail "SONAME of the library is not libdirahead.so.0"
cmp -s "$R/etc/dirahead/dirahead.conf" "$TOP/packaging/dirahead.conf" || fail "dirahead.conf differs"
grep -qx 'ExecStart=/usr/sbin/diraheadd' "$R$UNITDIR/dirahead.service" || fail "unit ExecStart="
# nothing else slipped in
extra=$(cd "$R" && find . \( -type f -o -type l \) | sort | grep -vE \
	'^\./(usr/sbin/dirahead(d|ctl)|usr/lib/libdirahead\.(so(\.0(\.1\.0)?)?|a)|usr/include/dirahead\.h|usr/lib/pkgconfig/dirahead\.pc|etc/dirahead/dirahead\.conf|usr/share/man/man[358]/.*|.*/systemd/system/dirahead\.service)$' || true)
[ -z "$extra" ] || fail "unexpected files installed: $extra"
"$R/usr/sbin/diraheadd" --version | qgrep '0\.1\.0' || fail "installed diraheadd --version"
info "files, modes and links in place"

# ---- the library as a user of the -dev files sees it ----------------------------------------
pc() { PKG_CONFIG_PATH=$R/usr/lib/pkgconfig pkg-config --define-variable=prefix="$R/usr" "$@" dirahead; }
assert_eq "$(pc --modversion)" 0.1.0 "pkg-config version"
grep -qx 'libdir=${prefix}/lib' "$R/usr/lib/pkgconfig/dirahead.pc" || fail ".pc libdir is not relative to prefix"
cflags=$(pc --cflags) libs=$(pc --libs) static_libs=$(pc --static --libs)
assert_contains "$cflags" "-I$R/usr/include" "pkg-config --cflags"
assert_contains "$libs" "-L$R/usr/lib" "pkg-config --libs"
assert_contains "$static_libs" "-luring" "pkg-config --static --libs"
# The examples of dirreadahead(3), taken from the page itself, then a main() calling them.
awk '/^\.EX/ { on = 1; next } /^\.EE/ { on = 0; print "" } on' "$TOP/packaging/man/dirreadahead.3" |
	sed -e 's/\\-/-/g' -e "s/\\\\(aq/'/g" -e 's/\\e/\\/g' >"$T/example.c"
cat >>"$T/example.c" <<'EOF'
#include <stdio.h>
int main(int argc, char **argv)
{
    (void)argc;
    list(argv[1]);
    int r = warm(argv[1]);
    printf("warm: %d\n", r);
    return r == 0 ? 0 : 1;
}
EOF
make_files "$T/dir" 300
# A SANITIZE=1 build installs an instrumented library; its users must carry the same runtime.
[ "${SANITIZE:-}" = 1 ] && cflags="$cflags -fsanitize=address,undefined"
cc -Wall -Werror -o "$T/ex-shared" "$T/example.c" $cflags $libs 2>"$T/cc.log" ||
	fail "the examples of dirreadahead(3) do not compile: $(cat "$T/cc.log")"
out=$(LD_LIBRARY_PATH=$R/usr/lib timeout 30 "$T/ex-shared" "$T/dir" 2>&1) || fail "example (shared): $out"
LD_LIBRARY_PATH=$R/usr/lib ldd "$T/ex-shared" | qgrep "libdirahead.so.0 => $R/usr/lib/" ||
	fail "example not linked against the installed libdirahead.so.0"
cc -Wall -Werror -o "$T/ex-static" "$T/example.c" $cflags "$R/usr/lib/libdirahead.a" \
	$(echo "$static_libs" | sed 's/-ldirahead//') 2>"$T/cc.log" || fail "static link: $(cat "$T/cc.log")"
out=$(timeout 30 "$T/ex-static" "$T/dir" 2>&1) || fail "example (static): $out"
# The example of dirahead_xreaddir(3), the same way: every entry listed with its mode.
awk '/^\.EX/ { on = 1; next } /^\.EE/ { on = 0; print "" } on' "$TOP/packaging/man/dirahead_xreaddir.3" |
	sed -e 's/\\-/-/g' -e "s/\\\\(aq/'/g" -e 's/\\e/\\/g' |
	awk '/^#define _GNU_SOURCE/ { code = 1 } code' >"$T/example2.c"
cat >>"$T/example2.c" <<'EOF'
int main(int argc, char **argv)
{
    (void)argc;
    return lsl(argv[1]) == 0 ? 0 : 1;
}
EOF
cc -Wall -Werror -o "$T/ex2" "$T/example2.c" $cflags $libs 2>"$T/cc.log" ||
	fail "the example of dirahead_xreaddir(3) does not compile: $(cat "$T/cc.log")"
out=$(LD_LIBRARY_PATH=$R/usr/lib timeout 30 "$T/ex2" "$T/dir" 2>&1) || fail "xreaddir example: $out"
assert_eq "$(grep -c ' f0' <<<"$out")" 300 "entries listed by the dirahead_xreaddir(3) example"
info "examples build and run, shared and static"

# ---- PREFIX elsewhere: the unit and the .pc follow it -----------------------------------------
mk install DESTDIR="$T/local" PREFIX=/usr/local >"$T/install2.log" 2>&1 || fail "make install PREFIX=/usr/local"
grep -qx 'ExecStart=/usr/local/sbin/diraheadd' "$T/local$UNITDIR/dirahead.service" ||
	fail "ExecStart= does not follow PREFIX"
grep -qx 'prefix=/usr/local' "$T/local/usr/local/lib/pkgconfig/dirahead.pc" || fail ".pc prefix"

# ---- uninstall ---------------------------------------------------------------------------------
mk uninstall DESTDIR="$R" PREFIX=/usr >"$T/uninstall.log" 2>&1 || fail "make uninstall: $(cat "$T/uninstall.log")"
left=$(find "$R" \( -type f -o -type l \))
[ -z "$left" ] || fail "left behind by make uninstall: $left"
# an edited configuration survives
mk install DESTDIR="$R" PREFIX=/usr >/dev/null 2>&1
echo "# edited" >>"$R/etc/dirahead/dirahead.conf"
mk uninstall DESTDIR="$R" PREFIX=/usr >/dev/null 2>&1
[ -f "$R/etc/dirahead/dirahead.conf" ] || fail "make uninstall removed an edited configuration"
info "uninstall removes everything but an edited configuration"
echo "PASS"
