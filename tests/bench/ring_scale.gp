# Wall time and peak memory of the ring series (tests/bench/ring_scale.sh)
# against GPU count, log-log, each beside the growth it should have: time
# with the square of the ranks (a ring's steps), memory with the ranks.
#   gnuplot -e "data='ring-scale.dat'; out='docs/img/ring-scale.png'" tests/bench/ring_scale.gp
set terminal pngcairo size 1100,450 font "sans,10" noenhanced
set output out
set multiplot layout 1,2
set logscale xy 2
set grid
set key top left
set xlabel "GPUs"
set xrange [800:20000]
set format x "%.0f"
set xtics (1024, 2048, 4096, 8192, 16384)
stats data using 1:2 nooutput
first_gpus = STATS_min_x
stats data using 2 nooutput
first_time = STATS_min
stats data using 3 nooutput
first_memory = STATS_min
set title "Wall time of one 1 GiB ring all_reduce (weft run, flow fidelity)"
set ylabel "seconds"
set format y "%g"
plot data using 1:2 with linespoints pt 7 title "weft run", \
     first_time * (x / first_gpus) ** 2 with lines dashtype 2 lc rgb "gray" \
       title "n^2 from the first point"
set title "Peak memory"
set ylabel "MiB"
plot data using 1:3 with linespoints pt 7 title "weft run", \
     first_memory * (x / first_gpus) with lines dashtype 2 lc rgb "gray" \
       title "n from the first point"
unset multiplot
