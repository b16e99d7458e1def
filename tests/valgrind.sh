#!/usr/bin/env bash
# Run every Check suite of a build under valgrind's memcheck.  Any memory
# error or definite leak, in a suite or in a weft process it starts, fails.
#   tests/valgrind.sh [BUILD_DIR]      (default: build)
# Suites run JOBS at a time (default: the number of cores), since
# valgrind runs a program on one core.
set -euo pipefail
build=${1:-build}
jobs=${JOBS:-$(nproc)}
# Check's per-test timeouts assume native speed; no suite may take more
# than PER_SUITE seconds in all, so that a hang cannot stretch the run
# into hours.
export CK_TIMEOUT_MULTIPLIER=${CK_TIMEOUT_MULTIPLIER:-10}
# The property tests run a few cases of each property here: the release
# suite runs hundreds, and memory errors show in any case.
export WEFT_PROPERTY_CASES=${WEFT_PROPERTY_CASES:-8}
# Likewise the engine's heap against its reference: fewer operations.
export WEFT_HEAP_OPS=${WEFT_HEAP_OPS:-50000}
# And the suites whose tables run the same checks on fabrics from one
# server to two racks: the smaller fabrics at the head of each table.
export WEFT_TEST_SMALL=${WEFT_TEST_SMALL:-1}
per_suite=${PER_SUITE:-900}

one() {
  local suite=$1 skip="*gnuplot*" t0=$SECONDS
  # gnuplot's own findings are not weft's.  The results suite runs whole
  # sweeps of weft processes; test-cli already runs weft itself under
  # valgrind, so there only the suite is checked.
  case "$suite" in *test-results|*test-sweep) skip="*gnuplot*,*/weft,*mpirun*,*mpiexec*,*orterun*,*prterun*,*orted*" ;; esac
  if timeout "$per_suite" valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
       --trace-children=yes --trace-children-skip="$skip" --child-silent-after-fork=no "$suite" > "$suite.valgrind.log" 2>&1; then
    echo "valgrind: $suite clean ($(( SECONDS - t0 )) s)"
  else
    echo "valgrind: $suite failed after $(( SECONDS - t0 )) s:"
    tail -60 "$suite.valgrind.log"
    return 1
  fi
}

# The slowest suites start first, so that the last to finish is a short one.
slow=(test-collective test-cli test-schedule test-analytical test-scenario test-routing
      test-trace test-validation test-results)
suites=()
for name in "${slow[@]}"; do [ -x "$build/tests/$name" ] && suites+=("$build/tests/$name"); done
for suite in "$build"/tests/test-*; do
  [ -x "$suite" ] && [ -f "$suite" ] || continue
  case " ${slow[*]} " in *" $(basename "$suite") "*) continue ;; esac
  suites+=("$suite")
done

status=0
running=0
for suite in "${suites[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || status=1
    running=$(( running - 1 ))
  fi
  one "$suite" &
  running=$(( running + 1 ))
done
while [ "$running" -gt 0 ]; do
  wait -n || status=1
  running=$(( running - 1 ))
done
exit $status
