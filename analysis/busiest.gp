# Utilization over time of the busiest links.
# Variables: data (blocks: t_us utilization, first line the link's name),
# out, term, title_text.
set terminal term size 900,520 font ",10"
set output out
set title title_text noenhanced
set xlabel "time (us)"
set ylabel "utilization"
set yrange [0:1.05]
set xrange [0:*]
set key outside right noenhanced
set grid
plot for [i=0:*] data index i using 1:2 with lines lw 1.5 title columnheader(1)
