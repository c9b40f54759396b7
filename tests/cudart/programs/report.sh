#!/bin/sh
# gcap-run --report: at exit, the program's kernels by name (demangled) with their launches and
# lane-instructions, its graph counts, the errors its calls met, and the unsupported functions.
#   report.sh GCAP_RUN STAND_IN_DIR VECTOR_ADD_PROGRAM
set -u
if [ -n "${SKIP:-}" ]; then
  echo "report.sh: skipped: $SKIP"
  exit 77
fi
run=$1 dir=$2 program=$3
err=$(LD_PRELOAD="${PRELOAD:-}" GCAP_CUDART_DIR="$dir" "$run" --report "$program" 2>&1 >/dev/null)
status=$?
fail() { printf 'report.sh: %s; stderr:\n%s\n' "$1" "$err" >&2; exit 1; }
[ $status -eq 0 ] || fail "exit status $status"
# vector_add: one launch of 5000 threads in blocks of 256 (20 blocks, 5120 lanes); scale: one
# launch of 4 blocks of 128.
echo "$err" | grep -q '^gcap-run report: 2 kernels ran$' || fail "no kernel count"
echo "$err" | grep -Eq '^ +1 launches +[1-9][0-9]* lane-instructions  vector_add\(float const\*, float const\*, float\*, int\)$' ||
  fail "no line for vector_add"
echo "$err" | grep -Eq '^ +1 launches +[1-9][0-9]* lane-instructions  \(anonymous namespace\)::scale\(float\*, float, int\)$' ||
  fail "no line for scale"
echo "$err" | grep -qx '  captures 0, graphs instantiated 0, graph launches 0' || fail "no graph counts"
echo "$err" | grep -qx '  error cudaErrorInvalidConfiguration (9): 2 calls' || fail "no error line"
echo "$err" | grep -qx '  unsupported functions called: none' || fail "no unsupported line"
echo "report.sh: the report names what vector_add ran"
