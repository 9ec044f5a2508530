# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
#
# The speedup chart of make bench: off/daemon and off/explicit per cell, horizontal bars on a log
# scale (one row per cell reads better than ninety rotated labels).
# bench.py calls: gnuplot -e "datafile='...'; outfile='...'; rows=N; xmin=X" speedup.gp
# datafile: "label<TAB>daemon<TAB>explicit" per line (explicit may be nan), top row first.
if (!exists("rows")) rows = 40
if (!exists("xmin")) xmin = 0.5
set terminal pngcairo size 1200, 160 + 17 * rows font "DejaVu Sans,9"
set output outfile
set datafile separator "\t"
set title "dirahead: speedup over no daemon (median of runs; right of the dashed line = faster)"
set xlabel "off / mode (x, log scale)"
set logscale x
set xrange [xmin:*]
set yrange [rows - 0.5:-0.5]
set ytics scale 0 font ",8" noenhanced
set grid xtics
set key outside top center horizontal
set style fill solid 0.85 border -1
set lmargin 34
set arrow from 1, graph 0 to 1, graph 1 nohead lc rgb "#444444" dt 2
# bars from xmin to the value, daemon above explicit within each row
plot datafile using (sqrt(xmin * $2)):($0 - 0.18):(xmin):($2):($0 - 0.36):($0):ytic(1) \
         with boxxyerror title "daemon" lc rgb "#1f77b4", \
     '' using (sqrt(xmin * $3)):($0 + 0.18):(xmin):($3):($0):($0 + 0.36) \
         with boxxyerror title "explicit (diraheadctl prefetch)" lc rgb "#ff7f0e"
