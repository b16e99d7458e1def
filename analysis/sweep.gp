# busbw against a sweep parameter, one line per message size.
# Variables: data (blocks: index value busbw; first line the size), key, out,
# term, title_text.
set terminal term size 900,540 font ",11"
set output out
set title title_text noenhanced
set xlabel key noenhanced
set ylabel "busbw (GB/s)"
set key outside right noenhanced
set grid
set offsets 0.3, 0.3, 0, 0
plot for [i=0:*] data index i using 1:3:xtic(2) with linespoints pt 7 lw 2 \
     title columnheader(1)
