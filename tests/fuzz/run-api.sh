#!/bin/sh
# Fuzzes the public API with libFuzzer (clang): fuzz_api.c turns input bytes into sequences of
# gcap calls on the simulator and checks every call's contract. Builds the library with
# AddressSanitizer and UndefinedBehaviorSanitizer in build-fuzz/ (shared with run.sh), runs one
# worker for the given number of seconds over tests/fuzz/corpus-api, then merges what it found
# back into that corpus.
#   sh tests/fuzz/run-api.sh [seconds]        (default 600)
# FUZZ_API_MERGE=0 leaves the kept corpus as it is (CI's short run).
# A crash or leak stops the run and leaves its input in build-fuzz/artifacts-api/; once fixed,
# minimize it (build-fuzz/fuzz_api -minimize_crash=1 -runs=10000 FILE) and copy it into
# tests/fuzz/corpus-api/ (named crash-...) so that the fuzz_api_corpus test replays it.
set -eu
cd "$(dirname "$0")/../.."
seconds=${1:-600}
CC=${CC:-clang}
corpus=tests/fuzz/corpus-api
if [ ! -d build-fuzz ]; then
  CC=$CC meson setup build-fuzz -Dcuda=disabled -Djson=enabled -Dtests=disabled -Dexamples=disabled -Dbench=disabled \
    -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized -Dc_args=-fsanitize=fuzzer-no-link
fi
ninja -C build-fuzz src/libgcap_objects.a
$CC -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Iinclude -Ibuild-fuzz/include \
  -Isrc tests/fuzz/fuzz_api.c build-fuzz/src/libgcap_objects.a -ljansson -lpthread -ldl -o build-fuzz/fuzz_api
mkdir -p $corpus build-fuzz/found-api build-fuzz/artifacts-api
# New inputs go to build-fuzz/found-api; the kept corpus is only read, then merged into at the end.
build-fuzz/fuzz_api -max_total_time="$seconds" -max_len=2048 -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix=build-fuzz/artifacts-api/ -print_final_stats=1 build-fuzz/found-api $corpus
if [ "${FUZZ_API_MERGE:-1}" != 0 ]; then
  build-fuzz/fuzz_api -merge=1 -max_len=2048 $corpus build-fuzz/found-api
fi
echo "corpus: $(ls $corpus | wc -l) files"
