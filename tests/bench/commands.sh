#!/bin/sh
# The commands users type, timed as they type them: weft with its
# defaults, writing its database.  Each command runs RUNS times (default
# 3) in a fresh folder; the table gives the median wall time and the
# largest peak memory (GNU time's %e and %M), which docs/performance.md
# quotes, beside the memory weft run --check estimates for it.
#
#   tests/bench/commands.sh [SET]      SET: quick (default), large or all
#
# Run from the source directory after building into build/.  The large
# set takes hours on a 2-core machine.
set -eu
set_name=${1:-quick}
runs=${RUNS:-3}
weft=$(pwd)/build/weft
src=$(pwd)
[ -x "$weft" ] || { echo "$0: no build/weft (build first)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "$0: needs GNU time (apt-get install time)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

quick="
run
run scenarios/gb200-nvl72.yaml
run scenarios/gb200-nvl72-x2-ndr.yaml
run scenarios/gb200-nvl72-x2-xdr.yaml -o all_gather
run scenarios/gb200-nvl72.yaml -o all_to_all
run --fidelity packet -b 8 -e 64M
run scenarios/h100-256-rail.yaml --algorithm hierarchical -b 16M -e 4G -f 4
run scenarios/dgx-h100.yaml --trace scenarios/traces/dgx-h100-step.yaml
run scenarios/h100-1024-fat-tree.yaml --algorithm hierarchical -b 1G -e 1G
run scenarios/h100-1024-fat-tree.yaml --algorithm ring -b 1G -e 1G
topo scenarios/h100-131072-fat-tree.yaml
sweep scenarios/dgx-h100.yaml --grid link_types.nvlink4.latency=100ns,200ns --grid algorithm=ring,nvls -b 1M -e 256M
"
large="
run scenarios/h100-1024-fat-tree.yaml --algorithm ring -b 1G -e 1G --protocol Simple --chunks 1
run scenarios/h100-131072-fat-tree.yaml --algorithm hierarchical-rhd -b 1G -e 1G
run scenarios/h100-4096-star.yaml --algorithm ring --protocol raw --channels 1 --chunks 1 -b 1M -e 1M
run scenarios/gb200-nvl72-x18-ndr.yaml -b 64M -e 16G
run scenarios/gb200-nvl72-x128-ndr.yaml -b 256M -e 4G
"
case "$set_name" in
  quick) list=$quick ;;
  large) list=$large ;;
  all) list="$quick$large" ;;
  *) echo "$0: SET is quick, large or all" >&2; exit 2 ;;
esac

printf '%-10s %-10s %-12s  %s\n' "wall (s)" "peak (MiB)" "est. (MiB)" "command"
echo "$list" | while IFS= read -r cmd; do
  [ -n "$cmd" ] || continue
  : > "$work/times"
  i=0
  while [ "$i" -lt "$runs" ]; do
    rm -rf "$work/run" && mkdir "$work/run"
    db="--db $work/run/weft.db"
    case "$cmd" in topo*) db="" ;; esac
    # shellcheck disable=SC2086 # the command's words, split on purpose
    if ! (cd "$src" && /usr/bin/time -f "%e %M" -o "$work/one" \
            "$weft" $cmd $db > /dev/null 2> "$work/err"); then
      echo "$0: weft $cmd failed:" >&2
      cat "$work/err" >&2
      exit 1
    fi
    cat "$work/one" >> "$work/times"
    i=$((i + 1))
  done
  wall=$(cut -d' ' -f1 "$work/times" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  peak=$(cut -d' ' -f2 "$work/times" | sort -n | tail -1)
  # What weft run --check said the run would take at most.
  est=-
  case "$cmd" in
    run*--trace*) ;;
    run*)
      # shellcheck disable=SC2086 # the command's words, split on purpose
      est=$(cd "$src" && "$weft" $cmd --check |
            awk '/^# memory: about/ { v = $4; if ($5 == "GiB") v *= 1024;
                                      printf "%d", v }') ;;
  esac
  printf '%-10s %-10s %-12s  weft %s\n' "$wall" "$((peak / 1024))" "$est" "$cmd"
done
