# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Cost per packet against distinct keys (sluice-bench cost, scale rows).
# gnuplot -e "datafile='scale.dat'; outfile='cost-vs-keys.png'" cost-vs-keys.gp
set terminal pngcairo size 900,560 font ",11"
set output outfile
set title "sluice: in-kernel cost per packet against distinct keys (1M-key tables: lru, sets)"
set xlabel "distinct source keys"
set ylabel "ns per packet (median, min-max)"
set logscale x
set format x "10^{%L}"
set xrange [0.5:1.2e7]
set yrange [0:*]
set key top left
set grid
plot datafile using 1:2:3:4 with yerrorlines lw 2 title "lru IPv4", \
     datafile using 1:5:6:7 with yerrorlines lw 2 title "lru IPv6", \
     datafile using 1:9:10:11 with yerrorlines lw 2 title "sets IPv4", \
     datafile using 1:12:13:14 with yerrorlines lw 2 title "sets IPv6", \
     datafile using 1:8 with lines dt 2 lw 2 title "bare XDP\\_DROP"
