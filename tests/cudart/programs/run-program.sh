#!/bin/sh
# Runs a test program against the stand-in: it must exit 0 and print PASSED as its last line.
# $PRELOAD: libraries the program preloads (the sanitizer runtimes of a sanitized stand-in);
# $SKIP: a reason to skip (exit 77).
#   run-program.sh STAND_IN_DIR PROGRAM [ARGS...]
set -u
if [ -n "${SKIP:-}" ]; then
  echo "run-program.sh: skipped: $SKIP"
  exit 77
fi
dir=$1 program=$2
shift 2
out=$(LD_PRELOAD="${PRELOAD:-}" LD_LIBRARY_PATH="$dir" "$program" "$@")
status=$?
printf '%s\n' "$out"
if [ $status -ne 0 ]; then
  echo "run-program.sh: $program exited with status $status" >&2
  exit 1
fi
if [ "$(printf '%s\n' "$out" | tail -n 1)" != PASSED ]; then
  echo "run-program.sh: $program did not print PASSED last" >&2
  exit 1
fi
