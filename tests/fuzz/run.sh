#!/bin/sh
# Run every fuzz target for SECONDS (default 30) from its seed corpus in
# tests/fuzz/corpus/TARGET; what it finds new is kept in a scratch folder,
# never in the repository.  A crash, a hang over 10 s or an input that
# makes a loader take over 4 GiB stops it, with the input saved
# as crash-*, timeout-* or oom-* in the current folder.
#
#   tests/fuzz/run.sh BUILD_DIR [SECONDS]
#
# BUILD_DIR is a build with -DWEFT_FUZZ=ON and CC=clang.  The seed corpora
# also run in every build as the tests test-corpus-TARGET (replay.c), so
# an input kept there is checked each time, sanitizers and valgrind too.
set -eu
build=${1:?usage: tests/fuzz/run.sh BUILD_DIR [SECONDS]}
seconds=${2:-30}
src=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for target in scenario trace schedule chakra; do
  mkdir -p "$work/$target"
  echo "fuzz: $target for ${seconds} s"
  "$build/tests/fuzz/fuzz-$target" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=4096 -print_final_stats=1 "$work/$target" \
      "$src/corpus/$target" 2> "$work/$target.log" || {
    tail -40 "$work/$target.log"
    echo "fuzz: $target failed" >&2
    exit 1
  }
  grep -E "stat::number_of_executed_units|stat::new_units_added" \
      "$work/$target.log" | sed 's/^/  /'
done
echo "fuzz: no failure"
