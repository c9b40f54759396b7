#!/bin/sh
# Fuzzes gcap_graph_load with libFuzzer (clang; libFuzzer comes with Debian's libclang-rt-dev):
# builds the library with AddressSanitizer and UndefinedBehaviorSanitizer in build-fuzz/, writes
# the seed graphs (seeds.c) into tests/fuzz/corpus where missing, runs one worker for the given
# number of seconds over the corpus, then merges what it found back into the corpus.
#   sh tests/fuzz/run.sh [seconds]        (default 600)
# A crash or leak stops the run and leaves its input in build-fuzz/artifacts/; once fixed, copy
# it into tests/fuzz/corpus/ (named crash-...) so that the fuzz_corpus test replays it.
set -eu
cd "$(dirname "$0")/../.."
seconds=${1:-600}
CC=${CC:-clang}
corpus=tests/fuzz/corpus
if [ ! -d build-fuzz ]; then
  CC=$CC meson setup build-fuzz -Dcuda=disabled -Djson=enabled -Dtests=disabled -Dexamples=disabled -Dbench=disabled \
    -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized -Dc_args=-fsanitize=fuzzer-no-link
fi
ninja -C build-fuzz src/libgcap_objects.a
libs="build-fuzz/src/libgcap_objects.a -ljansson -lpthread -ldl"
$CC -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Ibuild-fuzz/include \
  tests/fuzz/fuzz_load.c $libs -o build-fuzz/fuzz_load
$CC -g -O1 -fsanitize=address,undefined -Iinclude -Ibuild-fuzz/include tests/fuzz/seeds.c $libs -o build-fuzz/fuzz_seeds
mkdir -p $corpus build-fuzz/found build-fuzz/artifacts
build-fuzz/fuzz_seeds $corpus
# New inputs go to build-fuzz/found; the kept corpus is only read, then merged into at the end.
build-fuzz/fuzz_load -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix=build-fuzz/artifacts/ -print_final_stats=1 build-fuzz/found $corpus
build-fuzz/fuzz_load -merge=1 -max_len=4096 $corpus build-fuzz/found
echo "corpus: $(ls $corpus | wc -l) files"
