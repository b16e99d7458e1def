# Wall time and peak memory of the scale series (tests/bench/scale.sh)
# against GPU count, log-log.
#   gnuplot -e "data='scale.dat'; out='docs/img/scale.png'" tests/bench/scale.gp
set terminal pngcairo size 1100,450 font "sans,10"
set output out
set multiplot layout 1,2
set logscale xy 2
set grid
set key top left
set xlabel "GPUs"
set format x "%.0f"
set xtics (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
set title "Wall time of one 1 GiB all_reduce (flow fidelity)"
set ylabel "seconds"
set format y "%g"
plot data index 0 using 2:3 with linespoints title "hierarchical-rhd", \
     data index 1 using 2:3 with linespoints title "hierarchical-tree", \
     data index 0 using 2:(($2 / 1024.0) ** (log(2.5) / log(2))) \
          with lines dashtype 2 lc rgb "gray" title "2.5x per doubling, from 1 s"
set title "Peak memory"
set ylabel "MiB"
plot data index 0 using 2:4 with linespoints title "hierarchical-rhd", \
     data index 1 using 2:4 with linespoints title "hierarchical-tree"
unset multiplot
