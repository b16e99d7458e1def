# busbw against message size, as nccl-tests users plot it.
# Variables: data (simulated: size busbw time_us, one block per operation
# or run, named in the first line of each block), ref (measured: size busbw
# time_us, or ""), out, term, title_text.
set terminal term size 900,560 font ",11"
set output out
set title title_text noenhanced
set logscale x 2
set format x "%.0b%B"
set xlabel "size (bytes)"
set ylabel "busbw (GB/s)"
set yrange [0:*]
set key bottom right noenhanced font ",10"
set grid
if (strlen(ref) > 0) {
  plot for [i=0:*] data index i using 1:2 with linespoints pt 7 ps 0.7 lw 2 title columnheader(1), \
       ref using 1:2 with linespoints pt 6 ps 0.9 lw 1.5 dt 2 title "measured (nccl-tests)"
} else {
  plot for [i=0:*] data index i using 1:2 with linespoints pt 7 ps 0.7 lw 2 title columnheader(1)
}
