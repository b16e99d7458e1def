# weft compare's picture: above, busbw against size, measured (the user's
# nccl-tests log) and simulated; below, weft's error at each size.
# Variables: data (size measured_busbw weft_busbw error_percent), out,
# term, title_text.
set terminal term size 900,720 font ",11"
set output out
set multiplot layout 2,1 title title_text noenhanced
set logscale x 2
set format x "%.0b%B"
set grid
set key top left noenhanced
set lmargin 10
set ylabel "busbw (GB/s)"
set yrange [0:*]
unset xlabel
plot data using 1:2 with linespoints pt 6 ps 0.9 lw 1.5 dt 2 title "measured (the log)", \
     data using 1:3 with linespoints pt 7 ps 0.7 lw 2 title "weft"
set xlabel "size (bytes)"
set ylabel "error (%, time)"
set yrange [*:*]
set key off
plot 0 with lines lc rgb "gray" lw 1 notitle, \
     data using 1:4 with linespoints pt 7 ps 0.7 lw 2 lc rgb "#c0392b" notitle
unset multiplot
