#!/usr/bin/env bash
# Run every Check suite of a build under valgrind's memcheck.  Any memory
# error or definite leak, in a suite or in a weft process it starts, fails.
#   tests/valgrind.sh [BUILD_DIR]      (default: build)
set -euo pipefail
build=${1:-build}
status=0
# Check's per-test timeouts assume native speed; no suite may take more
# than PER_SUITE seconds in all, so that a hang cannot stretch the run
# into hours.
export CK_TIMEOUT_MULTIPLIER=${CK_TIMEOUT_MULTIPLIER:-10}
# The property tests run a few cases of each property here: the release
# suite runs hundreds, and memory errors show in any case.
export WEFT_PROPERTY_CASES=${WEFT_PROPERTY_CASES:-8}
# Likewise the engine's heap against its reference: fewer operations.
export WEFT_HEAP_OPS=${WEFT_HEAP_OPS:-50000}
per_suite=${PER_SUITE:-900}
for suite in "$build"/tests/test-*; do
  [ -x "$suite" ] || continue
  echo "valgrind: $suite"
  # gnuplot's own findings are not weft's.  The results suite runs whole
  # sweeps of weft processes; test-cli already runs weft itself under
  # valgrind, so there only the suite is checked.
  skip="*gnuplot*"
  case "$suite" in *test-results|*test-sweep) skip="*gnuplot*,*/weft,*mpirun*,*mpiexec*,*orterun*,*prterun*,*orted*" ;; esac
  if ! timeout "$per_suite" valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
       --trace-children=yes --trace-children-skip="$skip" --child-silent-after-fork=no "$suite" > "$suite.valgrind.log" 2>&1; then
    echo "valgrind: $suite failed:"
    tail -60 "$suite.valgrind.log"
    status=1
  fi
done
exit $status
