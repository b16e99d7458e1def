# A timeline of operations per rank: one bar per rank and operation, from
# its first step to its last.  In a trace, compute takes the lower half of a
# rank's row and communication the upper, coloured by kind.
# Variables: data (y start_us end_us colour half_height), ranks, trace, out,
# term, title_text.
set terminal term size 1000,560 font ",10"
set output out
set title title_text noenhanced
set xlabel "time (us)"
set ylabel "rank"
set yrange [-0.6:ranks - 0.4]
set xrange [0:*]
set style fill solid 0.85 border lc rgb "#404040"
set palette defined (0 "#1b9e77", 1 "#d95f02", 2 "#7570b3", 3 "#e7298a", \
                     4 "#66a61e", 5 "#e6ab02", 6 "#a6761d", 7 "#666666")
set cbrange [0:7]
unset colorbox
if (trace) {
  set key outside top center horizontal
  plot data using (($2 + $3) / 2):1:(($3 - $2) / 2):5:4 \
         with boxxyerror lc palette notitle, \
       keyentry with boxes fc rgb "#1b9e77" title "compute", \
       keyentry with boxes fc rgb "#d95f02" title "collective", \
       keyentry with boxes fc rgb "#7570b3" title "send / recv", \
       keyentry with boxes fc rgb "#666666" title "sleep"
} else {
  unset key
  plot data using (($2 + $3) / 2):1:(($3 - $2) / 2):5:4 \
       with boxxyerror lc palette
}
