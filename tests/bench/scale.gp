# Wall time and peak memory of the scale series (tests/bench/scale.sh)
# against GPU count, log-log, with the targets.
#   gnuplot -e "data='scale.dat'; out='docs/img/scale.png'" tests/bench/scale.gp
set terminal pngcairo size 1100,450 font "sans,10" noenhanced
set output out
set multiplot layout 1,2
set logscale xy 2
set grid
set key top left
set xlabel "GPUs"
set xrange [800:170000]
set format x "%.0f"
set xtics (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072) rotate by -30
set title "Wall time of one 1 GiB all_reduce (flow fidelity)"
set ylabel "seconds"
set yrange [0.0625:2048]
set format y "%g"
set samples 200
growth(x) = (x / 1024.0) ** (log(2.5) / log(2))
$targets << END
1024 1
16384 15
131072 120
END
plot data index 0 using 2:3 with linespoints pt 7 title "hierarchical-rhd", \
     data index 1 using 2:3 with linespoints pt 5 title "hierarchical-tree", \
     growth(x) with lines dashtype 2 lc rgb "gray" \
       title "2.5x per doubling from 1 s", \
     $targets using 1:2 with points pt 8 ps 2 lc rgb "red" title "targets"
set title "Peak memory"
set ylabel "MiB"
set yrange [16:32768]
$memtarget << END
131072 16384
END
plot data index 0 using 2:4 with linespoints pt 7 title "hierarchical-rhd", \
     data index 1 using 2:4 with linespoints pt 5 title "hierarchical-tree", \
     $memtarget using 1:2 with points pt 8 ps 2 lc rgb "red" title "target (16 GiB)"
unset multiplot
