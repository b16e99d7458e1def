# Link utilization over time: links (grouped by link type) against time.
# Variables: data (x_us y utilization), tics (a gnuplot ytics list), rows,
# down (1 if the last rows are links that are down), out, term, title_text.
set terminal term size 1000,640 font ",10"
set output out
set title title_text noenhanced
set xlabel "time (us)"
set ylabel "links, grouped by type"
set cblabel "utilization"
# Links a fault took down (down=1) are at -0.1, grey below the scale.
if (down) {
  set cbrange [-0.1:1]
  set palette defined (-0.1 "#606060", -0.0001 "#606060", 0 "white", 0.25 "#ffe08a", 0.6 "#f08030", 1 "#800020")
} else {
  set cbrange [0:1]
  set palette defined (0 "white", 0.25 "#ffe08a", 0.6 "#f08030", 1 "#800020")
}
set yrange [-0.5:rows - 0.5]
set xrange [0:*]
eval("set ytics (" . tics . ")")
set ytics nomirror
unset key
plot data using 1:2:3 with image
