#!/bin/sh
# The trace benchmark: a generated training job of 1,039,104 ops over the
# 1,024 GPUs of scenarios/h100-1024-fat-tree.yaml (tensor parallel 8,
# pipeline 4, data parallel 32, 32 layers, 8 microbatches, 6 steps),
# loaded and replayed at flow fidelity by `weft-bench trace`, RUNS times
# (default 3) with each collective in CHUNKS pieces (default 1) and auto's
# candidates JOBS at once (default 1).
#
#   tests/bench/trace.sh [RUNS] [CHUNKS] [JOBS]
#
# Run from the source directory after building into build/.
set -eu
runs=${1:-3}
chunks=${2:-1}
jobs=${3:-1}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
build/weft trace generate --tp 8 --pp 4 --dp 32 --layers 32 \
  --microbatches 8 --steps 6 -o "$dir/job.yaml"
i=0
while [ "$i" -lt "$runs" ]; do
  build/weft-bench trace --chunks "$chunks" --jobs "$jobs" "$dir/job.yaml"
  i=$((i + 1))
done
