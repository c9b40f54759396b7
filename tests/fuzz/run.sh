#!/bin/sh
# Fuzzes gcap_graph_load with libFuzzer (clang and libclang-rt-dev from Debian), over the kept
# corpus in tests/fuzz/corpus, then merges what it found back into it.
#   sh tests/fuzz/run.sh [seconds]        (default 600; one worker)
set -eu
cd "$(dirname "$0")/../.."
seconds=${1:-600}
CC=${CC:-clang}
if [ ! -d build-fuzz ]; then
  CC=$CC meson setup build-fuzz -Dcuda=disabled -Djson=enabled -Dtests=false -Dexamples=false -Dbench=false \
    -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized -Dc_args=-fsanitize=fuzzer-no-link
fi
ninja -C build-fuzz src/libgcap_objects.a
$CC -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Ibuild-fuzz/include \
  tests/fuzz/fuzz_load.c build-fuzz/src/libgcap_objects.a -ljansson -lpthread -ldl -o build-fuzz/fuzz_load
mkdir -p build-fuzz/found build-fuzz/artifacts
# New inputs go to build-fuzz/found; the kept corpus is only read, then merged into at the end.
build-fuzz/fuzz_load -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix=build-fuzz/artifacts/ -print_final_stats=1 build-fuzz/found tests/fuzz/corpus
build-fuzz/fuzz_load -merge=1 tests/fuzz/corpus build-fuzz/found
echo "corpus: $(ls tests/fuzz/corpus | wc -l) files"
