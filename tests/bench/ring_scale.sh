#!/bin/sh
# The ring series: `weft run` of one ring all_reduce of 1 GiB (one channel,
# one piece, the protocol NCCL's model picks, the database and its link
# statistics) over S servers of scenarios/h100-131072-fat-tree.yaml cut
# down to them (--set), S doubling from 128 (1,024 GPUs) to MAX_SERVERS
# (default 2048: 16,384 GPUs).  A ring's time grows with the square of its
# ranks by nature (2 (n - 1) steps a rank); its memory should grow with
# the ranks alone.  One run each: the last takes minutes.
# Prints a table and writes it to OUT (default: ring-scale.dat), which
# tests/bench/ring_scale.gp plots.
#
#   tests/bench/ring_scale.sh [MAX_SERVERS] [OUT]
#
# Run from the source directory after building into build/.
set -eu
max=${1:-2048}
out=${2:-ring-scale.dat}
weft=${WEFT:-build/weft}
db=$(mktemp -d)
trap 'rm -rf "$db"' EXIT

echo "# gpus wall_s peak_MiB simulated_us busbw" > "$out"
s=128
while [ "$s" -le "$max" ]; do
  last=$((s - 1))
  /usr/bin/time -f "%e %M" -o "$db/time" "$weft" run \
    scenarios/h100-131072-fat-tree.yaml \
    --set "nodes.0.name=node[0-$last]" \
    --set "fabrics.0.endpoints=node[0-$last]/nic[0-7]" \
    -a ring --channels 1 --chunks 1 -b 1G -e 1G --db "$db/$s.db" \
    > "$db/out"
  row=$(awk '/^ +1073741824 / { print $6, $8 }' "$db/out")
  wall=$(cut -d' ' -f1 "$db/time")
  peak=$(awk '{ printf "%.0f", $2 / 1024 }' "$db/time")
  echo "$((s * 8)) $wall $peak $row" | tee -a "$out"
  s=$((s * 2))
done
