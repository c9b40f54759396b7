#!/usr/bin/env bash
# The one prepared script for a GPU machine: build with -Dcuda=enabled, run the whole suite on
# the CUDA backend (and once on the simulator), run the GPU benchmarks, print every figure.
# Needs no package registry: tools/fetch-gpu-deps.sh, run where apt works, leaves meson, ninja,
# pkg-config and cmocka unpacked in build-gpu-deps/root, which this script uses when present.
# Finishes within 5 minutes; with $OUT set, logs are copied there. Exit status: nonzero when a
# test failed.
set -u
cd "$(dirname "$0")/../.."
start=$(date +%s)
log_dir=${OUT:-build-gpu/logs}
mkdir -p "$log_dir"
failed=0

say() { echo; echo "=== $*"; }

deps="$PWD/build-gpu-deps/root"
if [ -d "$deps" ]; then
  pc="$PWD/build-gpu-deps/pkgconfig"
  mkdir -p "$pc"
  for f in "$deps"/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc; do
    sed -e "s|^prefix=.*|prefix=$deps/usr|" -e "s|-I/usr/include|-I$deps/usr/include|g" \
        -e "s|-L/usr/lib|-L$deps/usr/lib|g" "$f" >"$pc/$(basename "$f")"
  done
  export PATH="$deps/usr/bin:$PATH"
  export PYTHONPATH="$deps/usr/lib/python3/dist-packages${PYTHONPATH:+:$PYTHONPATH}"
  export PKG_CONFIG_PATH="$pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "using tools from build-gpu-deps ($(meson --version 2>/dev/null || echo 'meson does not start'))"
fi

say "machine"
command -v nvidia-smi >/dev/null && timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
for dir in "${CUDA_PATH:-}" /usr/local/cuda /usr; do
  [ -n "$dir" ] && [ -f "$dir/include/cuda.h" ] && { toolkit="$dir"; break; }
done
echo "CUDA headers: ${toolkit:-none found}"

say "configure and build (-Dcuda=enabled)"
rm -rf build-gpu/meson-private 2>/dev/null
if ! timeout 60 meson setup build-gpu -Dcuda=enabled ${toolkit:+-Dtoolkit_dir=$toolkit} --wipe >"$log_dir/setup.log" 2>&1 &&
   ! timeout 60 meson setup build-gpu -Dcuda=enabled ${toolkit:+-Dtoolkit_dir=$toolkit} >"$log_dir/setup.log" 2>&1; then
  cat "$log_dir/setup.log"; echo "FAILED: meson setup"; exit 1
fi
grep -A3 Backends "$log_dir/setup.log"
if ! timeout 120 ninja -C build-gpu >"$log_dir/build.log" 2>&1; then
  tail -40 "$log_dir/build.log"; echo "FAILED: build"; exit 1
fi

say "suite on the CUDA backend (GCAP_BACKEND=cuda)"
GCAP_BACKEND=cuda timeout 120 meson test -C build-gpu --print-errorlogs --no-suite headers >"$log_dir/test-cuda.log" 2>&1 || failed=1
grep -E "^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped|Timeout):" "$log_dir/test-cuda.log"
[ $failed -eq 0 ] || grep -B2 -A25 -E "FAIL|ERROR" "$log_dir/test-cuda.log" | head -150

say "suite on the simulator, same build"
timeout 60 meson test -C build-gpu --print-errorlogs >"$log_dir/test-sim.log" 2>&1 || failed=1
grep -E "^(Ok|Fail|Skipped|Timeout):" "$log_dir/test-sim.log"

say "GPU benchmarks"
timeout 60 build-gpu/bench/bench_gpu >"$log_dir/bench-gpu.json" 2>"$log_dir/bench-gpu.txt"
echo "bench_gpu exit status $?"
cat "$log_dir/bench-gpu.txt" "$log_dir/bench-gpu.json"

say "summary"
cp build-gpu/meson-logs/testlog.json "$log_dir/" 2>/dev/null || true
echo "elapsed $(( $(date +%s) - start )) s; $( [ $failed -eq 0 ] && echo 'all tests passed or skipped' || echo 'SOME TESTS FAILED')"
exit $failed
