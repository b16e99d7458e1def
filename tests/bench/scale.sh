#!/bin/sh
# The scale series: one hierarchical all_reduce of 1 GiB at flow fidelity
# over the first S servers (8 S GPUs) of scenarios/h100-131072-fat-tree.yaml,
# S doubling from 128 to MAX_SERVERS (default 16384), each algorithm in
# ALGORITHMS (default: hierarchical-rhd hierarchical-tree), on THREADS
# threads (default 1; see weft-bench scale --threads).  Points up to
# 2048 servers (16,384 GPUs) run three times and report the median; larger
# ones once.
# Prints a table and writes it to OUT (default: scale.dat), which
# tests/bench/scale.gp plots.
#
#   tests/bench/scale.sh [MAX_SERVERS] [OUT]
#
# Run from the source directory after building into build/.
set -eu
max=${1:-16384}
out=${2:-scale.dat}
algorithms=${ALGORITHMS:-"hierarchical-rhd hierarchical-tree"}
bench=${BENCH:-build/weft-bench}
threads=${THREADS:-1}

echo "# algorithm gpus run_s peak_rss_MiB events simulated_us busbw" > "$out"
for alg in $algorithms; do
  s=128
  while [ "$s" -le "$max" ]; do
    runs=1
    [ "$s" -le 2048 ] && runs=3
    i=0
    : > "$out.runs"
    while [ "$i" -lt "$runs" ]; do
      "$bench" scale --servers "$s" --algorithm "$alg" --threads "$threads" \
        >> "$out.runs"
      i=$((i + 1))
    done
    # The median run by wall time.
    line=$(sed 's/.*run_s=\([0-9.]*\).*/\1 &/' "$out.runs" | sort -n \
           | sed -n "$(( (runs + 1) / 2 ))p" | cut -d' ' -f2-)
    field () { echo "$line" | sed "s/.* $1=\([^ ]*\).*/\1/"; }
    row="$alg $(field gpus) $(field run_s) $(field peak_rss_MiB) $(field events) $(field simulated_us) $(field busbw)"
    echo "$row" | tee -a "$out"
    s=$((s * 2))
  done
  printf '\n\n' >> "$out"
done
rm -f "$out.runs"
