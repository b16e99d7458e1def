#!/usr/bin/env bash
# The layout's one rule, checked on every file: dependencies point one way,
#   sim  <-  models/topology  <-  network  <-  collectives  <-  traces
#        <-  analysis  <-  sim/cli (the weft program),
# only analysis/ talks to SQLite and only the config loader to libyaml.
# Prints each include that breaks it and exits 1.
set -uo pipefail
cd "$(dirname "$0")/.."

status=0
sim_headers=$(cd sim && ls -- *.h)
analysis_headers=$(cd analysis && ls -- *.h)

# allowed FILE: the stages a file of this folder may include, as patterns
allowed() {
  case "$1" in
    sim/cli/*) echo "sim cli topology network collectives traces analysis" ;;
    sim/*) echo "sim" ;;
    models/topology/*) echo "sim topology" ;;
    models/network/*) echo "sim topology network" ;;
    models/collectives/*) echo "sim topology network collectives" ;;
    models/traces/*) echo "sim topology network collectives traces generated" ;;
    analysis/*) echo "sim topology network collectives traces analysis" ;;
    *) echo "" ;;
  esac
}

# stage HEADER INCLUDING-FILE: which stage an include names
stage() {
  local h=$1 file=$2
  case "$h" in
    topology/* | network/* | collectives/* | traces/*) echo "${h%%/*}"; return ;;
    chakra.pb-c.h) echo "generated"; return ;;
  esac
  if [ -f "$(dirname "$file")/$h" ] && [ "$(dirname "$file")" = sim/cli ]; then
    echo cli; return
  fi
  if grep -qx -- "$h" <<< "$sim_headers"; then echo sim; return; fi
  if grep -qx -- "$h" <<< "$analysis_headers"; then echo analysis; return; fi
  echo "unknown"
}

while IFS= read -r file; do
  ok=$(allowed "$file")
  [ -n "$ok" ] || continue
  while IFS= read -r h; do
    s=$(stage "$h" "$file")
    if ! grep -qw -- "$s" <<< "$ok"; then
      echo "layout: $file includes \"$h\" ($s), which it may not (it may use: $ok)"
      status=1
    fi
  done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$file")
done < <(find sim models analysis -name '*.[ch]' | sort)

for pair in "sqlite3.h:analysis/" "yaml.h:sim/config.c"; do
  h=${pair%%:*} where=${pair#*:}
  while IFS= read -r file; do
    case "$file" in "$where"*) ;; *)
      echo "layout: $file includes <$h>, which only $where may"
      status=1 ;;
    esac
  done < <(grep -rl --include='*.[ch]' "#include <$h>" sim models analysis)
done

[ $status -eq 0 ] && echo "layout: every include points one way"
exit $status
