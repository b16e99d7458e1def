#!/bin/sh
# Compare two builds of weft-bench on one benchmark, in ABBA order: A, B,
# B, A, repeated N times, so that each build runs first as often as second
# (on a shared virtual machine the second of two runs in a row tends to be
# the faster).  Prints each run, then each build's medians of wall, user
# and kernel time (GNU time's %e, %U and %S).
#
#   tests/bench/abba.sh N BUILD_A BUILD_B BENCHMARK [OPTIONS...]
#
# for example, from the source directory, a build of the commit before in
# ../before-build and this one in build/:
#
#   tests/bench/abba.sh 4 ../before-build build scale --servers 2048 \
#       --threads 2 scenarios/h100-131072-fat-tree.yaml
set -eu
if [ $# -lt 4 ]; then
  echo "usage: $0 N BUILD_A BUILD_B BENCHMARK [OPTIONS...]" >&2
  exit 2
fi
n=$1
a=$2
b=$3
shift 3
for build in "$a" "$b"; do
  if [ ! -x "$build/weft-bench" ]; then
    echo "$0: $build/weft-bench: no such program" >&2
    exit 2
  fi
done
if [ ! -x /usr/bin/time ]; then
  echo "$0: /usr/bin/time (Debian's time package) is needed" >&2
  exit 2
fi

runs=$(mktemp)
trap 'rm -f "$runs" "$runs.t"' EXIT
i=0
while [ "$i" -lt "$n" ]; do
  for build in "$a" "$b" "$b" "$a"; do
    /usr/bin/time -f "%e %U %S" -o "$runs.t" "$build/weft-bench" "$@" \
      > /dev/null
    echo "$build $(cat "$runs.t")" | tee -a "$runs"
  done
  i=$((i + 1))
done

# The median of column $2 of the lines of build $1 (the mean of the two
# middle values when there are an even number).
median () {
  awk -v b="$1" '$1 == b { print $'"$2"' }' "$runs" | sort -n \
    | awk '{ v[NR] = $1 }
           END { if (NR % 2) printf "%.3f", v[(NR + 1) / 2];
                 else printf "%.3f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
for build in "$a" "$b"; do
  echo "$build: $((2 * n)) runs, medians: wall $(median "$build" 2) s," \
       "user $(median "$build" 3) s, kernel $(median "$build" 4) s"
done
