# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Receive-side Mpps per system, one and two CPUs (tools/bench/e2e.sh).
# gnuplot -e "datafile='mpps.dat'; outfile='mpps.png'" mpps.gp
set terminal pngcairo size 1000,560 font ",11"
set output outfile
set title "Receive-side Mpps on a veth pair (sluice-gen live frames)\n" . \
          "* a row its own counters call invalid"
set ylabel "Mpps received"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set xtics rotate by -30
set yrange [0:*]
set key top right
set grid ytics
plot datafile using 2:xtic(1) title "1 CPU", '' using 3 title "2 CPUs"
