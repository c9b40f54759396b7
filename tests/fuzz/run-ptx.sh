#!/bin/sh
# Fuzzes the PTX front end with libFuzzer (clang): fuzz_ptx.c parses each input in full and in
# declarations-only mode and checks that every module it gets back is self-consistent, then loads
# it on the simulator and launches its kernels under every check set, IMMEDIATE and DEFERRED. Builds the
# library with AddressSanitizer and UndefinedBehaviorSanitizer in build-fuzz/ (shared with run.sh
# and run-api.sh), runs one worker for the given number of seconds over tests/fuzz/corpus-ptx,
# then merges what it found back into that corpus.
#   sh tests/fuzz/run-ptx.sh [seconds]        (default 600)
# FUZZ_PTX_MERGE=0 leaves the kept corpus as it is (CI's short run); FUZZ_BUILD names another
# build folder than build-fuzz.
# A crash or leak stops the run and leaves its input in build-fuzz/artifacts-ptx/; once fixed,
# minimize it (build-fuzz/fuzz_ptx -minimize_crash=1 -runs=10000 FILE) and copy it into
# tests/fuzz/corpus-ptx/ (named crash-...) so that the fuzz_ptx_corpus test replays it.
set -eu
cd "$(dirname "$0")/../.."
seconds=${1:-600}
CC=${CC:-clang}
corpus=tests/fuzz/corpus-ptx
b=${FUZZ_BUILD:-build-fuzz}
if [ ! -d "$b" ]; then
  CC=$CC meson setup "$b" -Dcuda=disabled -Djson=enabled -Dtests=disabled -Dexamples=disabled -Dbench=disabled \
    -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized -Dc_args=-fsanitize=fuzzer-no-link
fi
ninja -C "$b" src/libgcap_objects.a
$CC -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Iinclude -I"$b"/include \
  -Isrc tests/fuzz/fuzz_ptx.c "$b"/src/libgcap_objects.a -ljansson -lpthread -ldl -lm \
  -o "$b"/fuzz_ptx
mkdir -p $corpus "$b"/found-ptx "$b"/artifacts-ptx
# The library's objects are built with recoverable UBSan: undefined behaviour there stops the run too.
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
# New inputs go to $b/found-ptx; the kept corpus is only read, then merged into at the end.
"$b"/fuzz_ptx -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$b"/artifacts-ptx/ -print_final_stats=1 "$b"/found-ptx $corpus
if [ "${FUZZ_PTX_MERGE:-1}" != 0 ]; then
  "$b"/fuzz_ptx -merge=1 -max_len=16384 $corpus "$b"/found-ptx
fi
echo "corpus: $(ls $corpus | wc -l) files"
