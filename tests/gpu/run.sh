#!/usr/bin/env bash
# The one prepared script for a GPU machine: build with -Dcuda=enabled, run the whole suite on
# the CUDA backend (and once on the simulator), run the GPU benchmarks, print every figure.
# Needs no package registry: tools/fetch-gpu-deps.sh, run where apt works, leaves meson, ninja,
# pkg-config, cmocka and jansson unpacked in build-gpu-deps/root and the CUDA headers gcap was
# built with in build-gpu-deps/cuda; this script uses both when present. On a machine without a
# GPU it still builds and runs the simulator suite, and says which GPU parts it skipped.
# The whole run keeps within GCAP_GPU_BUDGET seconds (default 300), the summary included; with
# $OUT set, logs are copied there. Exit status: nonzero when a build or a test failed.
set -u
cd "$(dirname "$0")/../.."
start=$(date +%s)
budget=${GCAP_GPU_BUDGET:-300}
log_dir=${OUT:-build-gpu/logs}
mkdir -p "$log_dir"
failed=0

say() { echo; echo "=== $*"; }
# Seconds left for a step: what the budget has left after keeping `reserve` for later steps.
left() { local r=$(( budget - ($(date +%s) - start) - $1 )); [ $r -lt 10 ] && r=10; echo $r; }

meson_cmd=(meson)
deps="$PWD/build-gpu-deps/root"
if [ -d "$deps" ]; then
  # Dependencies' headers are system headers: -Werror's pedantic checks must not fire inside cmocka's macros.
  pc="$PWD/build-gpu-deps/pkgconfig"
  mkdir -p "$pc"
  for f in "$deps"/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc; do
    sed -e "s|^prefix=.*|prefix=$deps/usr|" -e "s|-I/usr/include|-isystem $deps/usr/include|g" \
        -e "s|-I\${includedir}|-isystem \${includedir}|g" -e "s|^includedir=/usr|includedir=$deps/usr|" \
        -e "s|^libdir=/usr|libdir=$deps/usr|" -e "s|-L/usr/lib|-L$deps/usr/lib|g" "$f" >"$pc/$(basename "$f")"
  done
  export PATH="$deps/usr/bin:$PATH"
  export PYTHONPATH="$deps/usr/lib/python3/dist-packages${PYTHONPATH:+:$PYTHONPATH}"
  export PKG_CONFIG_PATH="$pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # Started through python3: the unpacked script's #! names an interpreter path that may not exist here.
  meson_cmd=(python3 "$deps/usr/bin/meson")
  echo "using tools from build-gpu-deps: meson $("${meson_cmd[@]}" --version 2>&1 || echo 'does not start'), ninja $(ninja --version 2>&1)"
fi

say "machine"
has_driver=0
if command -v nvidia-smi >/dev/null; then timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; fi
{ ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1 '; } && has_driver=1
[ $has_driver -eq 1 ] || echo "no CUDA driver (libcuda.so.1) here: the CUDA suite will skip and the GPU benchmarks will not run"
toolkit=""
carried=""
if [ -f build-gpu-deps/cuda/include/cudaTypedefs.h ]; then
  # Meson takes no include directory inside the source tree by absolute path: use a copy outside it.
  carried="${TMPDIR:-/tmp}/gcap-gpu-cuda-headers"
  rm -rf "$carried" && mkdir -p "$carried" && cp -r build-gpu-deps/cuda/include "$carried/"
fi
for dir in "$carried" "${CUDA_PATH:-}" /usr/local/cuda /usr; do
  [ -n "$dir" ] && [ -f "$dir/include/cuda.h" ] && [ -f "$dir/include/cudaTypedefs.h" ] && { toolkit="$dir"; break; }
done
echo "CUDA headers: ${toolkit:-none found} $( [ -n "$toolkit" ] && grep -m1 '#define CUDA_VERSION' "$toolkit/include/cuda.h")"

say "configure and build (-Dcuda=enabled)"
setup_args=(-Dcuda=enabled -Dtests=enabled ${toolkit:+-Dtoolkit_dir=$toolkit}) # no cmocka must fail here, not skip the suite
if ! timeout 90 "${meson_cmd[@]}" setup build-gpu "${setup_args[@]}" --wipe >"$log_dir/setup.log" 2>&1 &&
   ! timeout 90 "${meson_cmd[@]}" setup build-gpu "${setup_args[@]}" >"$log_dir/setup.log" 2>&1; then
  cat "$log_dir/setup.log"; echo "FAILED: meson setup"; exit 1
fi
grep -A3 Backends "$log_dir/setup.log"
if ! timeout "$(left 120)" ninja -C build-gpu >"$log_dir/build.log" 2>&1; then
  tail -40 "$log_dir/build.log"; echo "FAILED: build"; exit 1
fi

# Each test gets at most 60 s (multiplier 0.5 on the suite's 120 s); the whole suite what the budget leaves.
say "suite on the CUDA backend (GCAP_BACKEND=cuda)"
GCAP_BACKEND=cuda timeout "$(left 100)" "${meson_cmd[@]}" test -C build-gpu --print-errorlogs --no-suite headers \
  --timeout-multiplier 0.5 >"$log_dir/test-cuda.log" 2>&1 || failed=1
cp build-gpu/meson-logs/testlog.json "$log_dir/testlog-cuda.json" 2>/dev/null
grep -E "^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped|Timeout):" "$log_dir/test-cuda.log" | grep -vE " OK +[0-9.]+s$"
grep -E "^(Ok|Fail|Skipped|Timeout):" "$log_dir/test-cuda.log" >/dev/null || echo "the CUDA suite ran out of time; see test-cuda.log"
[ $failed -eq 0 ] || grep -B2 -A25 -E "FAIL|ERROR" "$log_dir/test-cuda.log" | head -150

say "suite on the simulator, same build"
timeout "$(left 40)" "${meson_cmd[@]}" test -C build-gpu --print-errorlogs --timeout-multiplier 0.5 \
  >"$log_dir/test-sim.log" 2>&1 || failed=1
grep -E "^(Ok|Fail|Skipped|Timeout):" "$log_dir/test-sim.log" || echo "the simulator suite ran out of time"
[ $failed -eq 0 ] || grep -B2 -A25 -E "FAIL|ERROR" "$log_dir/test-sim.log" | head -80

say "GPU benchmarks"
if [ $has_driver -eq 0 ]; then
  echo "skipped: no CUDA driver here"
elif [ -x build-gpu/bench/bench_gpu ]; then
  timeout "$(left 20)" build-gpu/bench/bench_gpu >"$log_dir/bench-gpu.json" 2>"$log_dir/bench-gpu.txt"
  echo "bench_gpu exit status $?"
  cat "$log_dir/bench-gpu.txt" "$log_dir/bench-gpu.json"
else
  echo "skipped: bench_gpu was not built"
fi

say "summary"
cp build-gpu/meson-logs/testlog.json "$log_dir/testlog-sim.json" 2>/dev/null || true
echo "elapsed $(( $(date +%s) - start )) s of $budget; $( [ $failed -eq 0 ] && echo 'all tests passed or skipped' || echo 'SOME TESTS FAILED')"
exit $failed
