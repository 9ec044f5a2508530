#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# A run of stats by path (unlisted_stats = 8) names its directory by path only; its SCAN carries
# what the program's own stat of the run's last name returned (device as user space sees it,
# inode; read from the program's stat buffer), and whether that stat followed a symbolic link:
# the daemon checks the directory it finds against it.  For each stat family: newfstatat
# (Python's os.lstat, os.stat), statx (coreutils stat, stat -L).  The name's id is the file's,
# as stat(1) reports it.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/detector.bash"
need_cmd stat

A=$T/top/a
make_files "$A" 20
cat >"$T/run.py" <<'PY'
import os, sys
f = os.lstat if sys.argv[1] == "lstat" else os.stat
for i in range(1, 13):
    f(os.path.join(sys.argv[2], "f%06d" % i))
PY
names=()
for i in $(seq 1 12); do names+=("$A/$(printf 'f%06d' "$i")"); done

trace_start -u 8
mark
run p_lstat "$PY" "$T/run.py" lstat "$A"
run p_stat "$PY" "$T/run.py" stat "$A"
run p_statx stat -c %i "${names[@]}"
run p_statx_l stat -L -c %i "${names[@]}"
flush
for m in lstat stat statx statx_l; do
	var=p_$m
	line=$(since_mark | grep "^SCAN tgid=${!var} " | grep ' unlisted=1 ' | grep " path=$A\$" || true)
	assert_eq "$(grep -c . <<<"$line")" 1 "$m: one SCAN of the run by path"
	name=$(field "$line" name)
	want="$(devno "$A/$name"):$(ino "$A/$name")"
	case $m in stat|statx_l) want+=":follow" ;; esac
	info "$m: name=$name nameid=$(field "$line" nameid)"
	assert_eq "$(field "$line" nameid)" "$want" "$m: the name's device and inode, as its stat returned"
done
echo "PASS"
