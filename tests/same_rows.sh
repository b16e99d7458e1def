#!/usr/bin/env bash
# Database rows and printed tables of a fixed set of runs, against the ones
# stored in tests/data/rows.txt: a change that should not change results
# (a new layout, a faster solver) must leave every line the same.
#
#   tests/same_rows.sh [BUILD_DIR]            compare (exit 1 on a difference)
#   tests/same_rows.sh --record [BUILD_DIR]   store this build's rows
#
# Each case runs in a database of its own; each table is dumped in a fixed
# order, without the columns that differ between two runs of the same input
# (when a run started, how long it took, weft's version, the command line).
set -euo pipefail
cd "$(dirname "$0")/.."

record=0
if [ "${1:-}" = "--record" ]; then record=1; shift; fi
build=${1:-build}
weft="$build/weft"
[ -x "$weft" ] || { echo "same_rows: no $weft (build first)" >&2; exit 2; }
command -v sqlite3 >/dev/null || { echo "same_rows: needs the sqlite3 program" >&2; exit 2; }
stored=tests/data/rows.txt

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# name|arguments of weft run (scenario paths relative to the source tree)
cases=(
  "h100-sweep|scenarios/dgx-h100.yaml -b 1K -e 8G"
  "a100-sweep|scenarios/dgx-a100.yaml -b 1K -e 8G"
  "h200-sweep|scenarios/dgx-h200.yaml -b 1K -e 8G"
  "tutorial-1|scenarios/dgx-h100.yaml -b 16M -e 4G -f 4"
  "tutorial-2|scenarios/h100-256-rail.yaml --ranks node[0-1]/gpu[0-7] --algorithm hierarchical -b 16M -e 4G -f 4"
  "tutorial-3|scenarios/h100-256-rail.yaml --ranks node[0-3]/gpu[0-7] --algorithm hierarchical -b 16M -e 4G -f 4"
  "tutorial-4|scenarios/h100-256-rail.yaml --algorithm hierarchical -b 16M -e 4G -f 4"
  "trace|scenarios/dgx-h100.yaml --trace scenarios/traces/dgx-h100-step.yaml"
  "hier-1024|scenarios/h100-1024-fat-tree.yaml --algorithm hierarchical -b 1G -e 1G"
  "ops|scenarios/dgx-a100.yaml -o all_gather -b 1M -e 64M -f 8"
  "rs-tree|scenarios/dgx1-v100.yaml -o reduce_scatter -b 4K -e 4M -f 32"
  "bcast|scenarios/dgx-h100.yaml -o broadcast -b 64K -e 64M -f 32"
  "a2a|scenarios/pcie-8gpu.yaml -o all_to_all -b 64K -e 16M -f 16"
  "file-ring|scenarios/dgx-h100.yaml --algorithm scenarios/algorithms/ring-allreduce-8.yaml -b 1M -e 64M -f 8"
  "packet|scenarios/dgx-h100.yaml --fidelity packet -b 8 -e 1M -f 16"
  "analytical|scenarios/dgx-h100.yaml --fidelity analytical -b 8 -e 1G -f 8"
  "nvl72|scenarios/gb200-nvl72.yaml -b 1M -e 1G -f 8"
  "rhd|scenarios/h100-256-rail.yaml --algorithm hierarchical-rhd -b 64M -e 64M"
  "tree|scenarios/h100-256-rail.yaml --ranks node[0-7]/gpu[0-7] --algorithm tree -b 1M -e 64M -f 8"
)

# What a run's rows are, column by column, in an order that does not depend
# on the order they were written in.
dump() {
  local db=$1
  sqlite3 -batch "$db" <<'SQL'
.mode list
.separator |
SELECT 'runs', id, scenario_sha256, fidelity, seed, events, status, message FROM runs ORDER BY id;
SELECT 'run_params', * FROM run_params ORDER BY run_id, key;
SELECT 'nodes', * FROM nodes ORDER BY run_id, id;
SELECT 'links', * FROM links ORDER BY run_id, id;
SELECT 'link_util', * FROM link_util ORDER BY run_id, link_id, t0_ps, t1_ps, bytes;
SELECT 'ops', * FROM ops ORDER BY run_id, id;
SELECT 'rank_ops', * FROM rank_ops ORDER BY run_id, op_id, rank;
SELECT 'trace_ops', * FROM trace_ops ORDER BY run_id, op_id;
SELECT 'trace_ranks', * FROM trace_ranks ORDER BY run_id, job, rank;
SQL
}

out="$work/rows.txt"
: > "$out"
for c in "${cases[@]}"; do
  name=${c%%|*}
  args=${c#*|}
  db="$work/$name.db"
  # shellcheck disable=SC2086 # the arguments are words, split on purpose
  if ! "$weft" run $args --db "$db" > "$work/$name.out" 2> "$work/$name.err"; then
    echo "same_rows: $name: weft run $args failed:" >&2
    cat "$work/$name.err" >&2
    exit 1
  fi
  # The printed table, but its first line (it names weft's version).
  printf '%s stdout %s\n' "$name" "$(tail -n +2 "$work/$name.out" | sha256sum | cut -d' ' -f1)" >> "$out"
  dump "$db" > "$work/$name.rows"
  for table in runs run_params nodes links link_util ops rank_ops trace_ops trace_ranks; do
    awk -F'|' -v t="$table" '$1 == t' "$work/$name.rows" > "$work/table"
    lines=$(wc -l < "$work/table")
    sum=$(sha256sum < "$work/table" | cut -d' ' -f1)
    printf '%s %s %s %s\n' "$name" "$table" "$lines" "$sum" >> "$out"
  done
  echo "same_rows: $name done"
done

if [ $record -eq 1 ]; then
  cp "$out" "$stored"
  echo "same_rows: stored $(wc -l < "$stored") lines in $stored"
  exit 0
fi
if diff -u "$stored" "$out"; then
  echo "same_rows: every row is the same"
else
  echo "same_rows: rows differ (above: - stored, + this build)" >&2
  exit 1
fi
