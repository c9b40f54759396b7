#!/usr/bin/env bash
# The one prepared command for a GPU machine: build with -Dcuda=enabled, run the GPU benchmarks
# in a slice reserved for them, run the suite on the CUDA backend (without the simulator-only,
# header, docs and internal suites) and write a verdict file: per-test results from meson's
# testlog.json and the benchmark figures.
# Needs no package registry: tools/fetch-gpu-deps.sh, run where apt works, leaves meson, ninja,
# pkg-config, cmocka and jansson unpacked in build-gpu-deps/root, and the CUDA headers and
# libcudadevrt.a gcap was built with in build-gpu-deps/cuda; this script uses both when present.
# Without a driver (a dry run) the suite runs on the simulator instead, so that every step of the
# script is still exercised, and the verdict says so.
# The whole run keeps within GCAP_GPU_BUDGET seconds (default 420), the verdict included; the
# benchmarks get GCAP_GPU_BENCH_BUDGET of them (default 60). With $OUT set, the logs and the
# verdict are written there. Exit status: nonzero when the build or a test failed.
set -u
cd "$(dirname "$0")/../.."
start=$(date +%s)
budget=${GCAP_GPU_BUDGET:-420}
bench_budget=${GCAP_GPU_BENCH_BUDGET:-60}
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
# Loaded, not looked up with ldconfig: GPU machines may mount the driver read-only and find it
# only through the library path.
if python3 -c 'import ctypes, sys; lib = ctypes.CDLL("libcuda.so.1"); sys.exit(lib.cuInit(0) != 0)' 2>/dev/null; then
  has_driver=1
  echo "CUDA driver: libcuda.so.1 loads and cuInit succeeds"
else
  echo "no usable CUDA driver (libcuda.so.1 does not load or cuInit fails): dry run, the suite runs on the simulator and the GPU benchmarks are skipped"
fi
devrt=build-gpu-deps/cuda/lib64/libcudadevrt.a
if [ -z "${GCAP_CUDADEVRT:-}" ] && [ -f "$devrt" ]; then export GCAP_CUDADEVRT="$PWD/$devrt"; fi
echo "libcudadevrt.a: ${GCAP_CUDADEVRT:-not carried; found through CUDA_HOME or CUDA_PATH if at all}"
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
# The runtime stand-in's test programs, built where nvcc is (tools/fetch-gpu-deps.sh).
[ -d build-gpu-deps/cudart-programs ] && setup_args+=(-Dcudart_programs_dir="$PWD/build-gpu-deps/cudart-programs")
if ! timeout 90 "${meson_cmd[@]}" setup build-gpu "${setup_args[@]}" --wipe >"$log_dir/setup.log" 2>&1 &&
   ! timeout 90 "${meson_cmd[@]}" setup build-gpu "${setup_args[@]}" >"$log_dir/setup.log" 2>&1; then
  cat "$log_dir/setup.log"; echo "FAILED: meson setup"; exit 1
fi
grep -A3 Backends "$log_dir/setup.log"
if ! timeout "$(left 120)" ninja -C build-gpu >"$log_dir/build.log" 2>&1; then
  tail -40 "$log_dir/build.log"; echo "FAILED: build"; exit 1
fi

say "GPU benchmarks (a reserved slice of $bench_budget s, before the suite)"
if [ $has_driver -eq 0 ]; then
  echo "skipped: no CUDA driver here" | tee "$log_dir/bench-gpu.txt"; : >"$log_dir/bench-gpu.json"
elif [ -x build-gpu/bench/bench_gpu ]; then
  timeout "$bench_budget" build-gpu/bench/bench_gpu >"$log_dir/bench-gpu.json" 2>"$log_dir/bench-gpu.txt"
  echo "bench_gpu exit status $?" | tee -a "$log_dir/bench-gpu.txt"
  cat "$log_dir/bench-gpu.txt"
else
  echo "skipped: bench_gpu was not built" | tee "$log_dir/bench-gpu.txt"; : >"$log_dir/bench-gpu.json"
fi

# The simulator-only suites prove nothing here and CI runs them on every change: headers and docs
# build no backend code, internal holds the fake-driver, loader and allocation-failure tests.
backend=sim; [ $has_driver -eq 1 ] && backend=cuda
say "suite on the $backend backend (GCAP_BACKEND=$backend), each test at most 60 s"
rm -f build-gpu/meson-logs/testlog.json
GCAP_BACKEND=$backend timeout "$(left 15)" "${meson_cmd[@]}" test -C build-gpu --print-errorlogs \
  --no-suite headers --no-suite docs --no-suite internal --timeout-multiplier 0.5 >"$log_dir/test.log" 2>&1 || failed=1
cp build-gpu/meson-logs/testlog.json "$log_dir/testlog.json" 2>/dev/null
[ $failed -eq 0 ] || grep -B2 -A25 -E "FAIL|ERROR" "$log_dir/test.log" | head -150

say "verdict ($log_dir/verdict.txt)"
python3 tests/gpu/verdict.py "$log_dir/testlog.json" "$log_dir/bench-gpu.json" "$backend" \
  "$(( $(date +%s) - start ))" "$budget" >"$log_dir/verdict.txt" || failed=1
cat "$log_dir/verdict.txt"
exit $failed
