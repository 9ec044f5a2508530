# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# Shared helpers for the `diraheadctl prefetch` tests: source it after lib.sh.
#   . "$(dirname "$0")/../lib/prefetch.sh"
# Gives CTL (build/diraheadctl; the test skips if it is not built), and
# field KEY: the value of KEY= in the summary line ("prefetch: ...") in $OUT (expect_exit's);
# field_n KEY: the same without its unit.
CTL=$BUILD/diraheadctl
[ -x "$CTL" ] || skip "build/diraheadctl not built (run make)"

field() { sed -n "s/^prefetch:.* $1=\([^ ]*\).*/\1/p" <<<"$OUT" | head -n1; }
field_n() { field "$1" | sed 's/[A-Za-z]*$//'; }
