# busbw against a sweep parameter: one line per value of the other
# parameters, each run's largest size.  Variables: data (blocks: x value
# busbw; first line the line's name), key (the axis' label), numeric (1:
# x is a number of the key's unit; 0: x numbers the values in order, each
# named on the axis), out, term, title_text.
set terminal term size 900,540 font ",11"
set output out
set title title_text noenhanced
set xlabel key noenhanced
set ylabel "busbw (GB/s)"
set yrange [0:*]
set key outside right noenhanced
set grid
set offsets graph 0.05, graph 0.05, 0, 0
if (numeric) {
  plot for [i=0:*] data index i using 1:3 with linespoints pt 7 lw 2 \
       title columnheader(1)
} else {
  # Values may be long (a fault, a scenario's path): slanted, they keep apart.
  set xtics rotate by 20 right
  plot for [i=0:*] data index i using 1:3:xtic(2) with linespoints pt 7 \
       lw 2 title columnheader(1)
}
