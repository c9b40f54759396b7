#!/bin/sh
# gcap-run: options become the simulator's environment variables, the stand-in's folder goes
# first on LD_LIBRARY_PATH, the program's exit status comes back, and the refusals: no program,
# bad options, no stand-in (127), a malformed ELF file, a program built with the static runtime.
#   test_gcap_run.sh GCAP_RUN WORKDIR [BUILD_CUDART_DIR]
set -u
run=$1 dir=$2 build_cudart=${3:-}
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$dir" && mkdir -p "$dir/cudart" "$dir/empty" || fail "cannot make $dir"
: >"$dir/cudart/libcudart.so.13"
GCAP_CUDART_DIR=$dir/cudart
export GCAP_CUDART_DIR
# Only what the options set is checked: start without any of these variables.
unset GCAP_BACKEND GCAP_SIM_EXEC GCAP_SIM_ORDER GCAP_SIM_SEED GCAP_SIM_THREADS GCAP_SIM_CHECKS \
  GCAP_SIM_STRICT_MEMORY GCAP_SIM_CHECK_RACES GCAP_SIM_TRACE GCAP_CUDART_GRAPHS GCAP_CUDART_REPORT

# Every option sets its variable; fifo is the simulator's "capture" order.
out=$(LD_LIBRARY_PATH=/old/path "$run" --backend=cuda --exec=deferred --order=fifo --seed=42 --threads=3 \
  --checks=memory,init --strict-memory --race-check --trace="$dir/t.json" --graphs="$dir/g" --report -- env) ||
  fail "env: exit $?"
for want in GCAP_BACKEND=cuda GCAP_SIM_EXEC=deferred GCAP_SIM_ORDER=capture GCAP_SIM_SEED=42 \
  GCAP_SIM_THREADS=3 GCAP_SIM_CHECKS=memory,init GCAP_SIM_STRICT_MEMORY=1 GCAP_SIM_CHECK_RACES=1 \
  "GCAP_SIM_TRACE=$dir/t.json" "GCAP_CUDART_GRAPHS=$dir/g" GCAP_CUDART_REPORT=1 \
  "LD_LIBRARY_PATH=$dir/cudart:/old/path"; do
  echo "$out" | grep -qxF "$want" || fail "$want not in the program's environment: $out"
done
out=$(env -u LD_LIBRARY_PATH "$run" --order=shuffle env) || fail "env: exit $?"
echo "$out" | grep -qxF GCAP_SIM_ORDER=shuffle || fail "--order=shuffle"
echo "$out" | grep -qxF "LD_LIBRARY_PATH=$dir/cudart" || fail "LD_LIBRARY_PATH without an old one: $out"
echo "$out" | grep -q '^GCAP_SIM_EXEC=' && fail "GCAP_SIM_EXEC set without --exec"

# The program's exit status and arguments pass through.
"$run" sh -c 'exit 7' && fail "exit status 0"
"$run" sh -c 'exit 7'
[ $? -eq 7 ] || fail "exit status not passed through"
out=$("$run" -- printf '%s|' a 'b c' --seed=1) || fail "printf: exit $?"
[ "$out" = "a|b c|--seed=1|" ] || fail "arguments: $out"

# Refusals: usage errors and a missing program are 2, with a message.
expect() { # STATUS PATTERN command...
  want=$1 pattern=$2
  shift 2
  msg=$("$@" 2>&1)
  got=$?
  [ $got -eq "$want" ] || fail "$*: exit $got (want $want): $msg"
  echo "$msg" | grep -q -- "$pattern" || fail "$*: message lacks '$pattern': $msg"
}
expect 2 "no program to run" "$run"
expect 2 "no program to run" "$run" --seed=1 --
expect 2 "unknown option '--bogus'" "$run" --bogus env
expect 2 '--order="lifo" is not fifo or shuffle' "$run" --order=lifo env
expect 2 "is not a decimal number" "$run" --seed=x1 env
expect 2 "is not none, all" "$run" --checks=memory,bogus env
expect 2 "is not sim or cuda" "$run" --backend=gpu env
expect 2 "needs a value" "$run" --trace env
expect 2 "takes no value" "$run" --race-check=1 env
expect 2 "takes no value" "$run" --report=yes env
expect 2 "needs a value" "$run" --graphs env
expect 2 "no such file" "$run" "$dir/nonexistent"
expect 2 "no such file on PATH" "$run" gcap-run-no-such-program
expect 0 "usage: gcap-run" "$run" --help

# No stand-in: 127, naming the folder.
expect 127 "libcudart.so.13 not found in $dir/empty" env GCAP_CUDART_DIR="$dir/empty" "$run" env

# Without GCAP_CUDART_DIR, gcap-run in the build tree uses the build's src/cudart.
if [ -n "$build_cudart" ]; then
  msg=$(env -u GCAP_CUDART_DIR -u LD_LIBRARY_PATH "$run" env 2>&1)
  rc=$?
  if [ -e "$build_cudart/libcudart.so.13" ]; then
    [ $rc -eq 0 ] && echo "$msg" | grep -qxF "LD_LIBRARY_PATH=$build_cudart" || fail "build tree: $rc: $msg"
  else
    [ $rc -eq 127 ] && echo "$msg" | grep -qF "not found in $build_cudart " || fail "build tree: $rc: $msg"
  fi
fi

# Without GCAP_CUDART_DIR: a copy outside the build tree looks under <libdir>/gcap/cudart
# relative to its own folder (as installed), and runs the program once the library is there.
mkdir -p "$dir/prefix/bin" && cp "$run" "$dir/prefix/bin/gcap-run" || fail "cannot copy gcap-run"
msg=$(env -u GCAP_CUDART_DIR "$dir/prefix/bin/gcap-run" env 2>&1)
[ $? -eq 127 ] || fail "installed copy without the library: not 127: $msg"
libdir=$(echo "$msg" | sed -n "s|^gcap-run: libcudart.so.13 not found in \($dir/prefix/bin/\.\./[^ ]*/gcap/cudart\) .*|\1|p")
[ -n "$libdir" ] || fail "installed copy: the folder looked in is not <prefix>/<libdir>/gcap/cudart: $msg"
mkdir -p "$libdir" && : >"$libdir/libcudart.so.13"
out=$(env -u GCAP_CUDART_DIR -u LD_LIBRARY_PATH "$dir/prefix/bin/gcap-run" env) || fail "installed copy: exit $?"
echo "$out" | grep -qxF "LD_LIBRARY_PATH=$libdir" || fail "installed copy: LD_LIBRARY_PATH: $out"

# Truncated and garbage ELF files are refused without running or crashing.
cp "$(command -v env)" "$dir/whole" && chmod +x "$dir/whole"
head -c 100 "$dir/whole" >"$dir/truncated" && chmod +x "$dir/truncated"
expect 2 "not a valid ELF file" "$run" "$dir/truncated"
head -c 10 "$dir/whole" >"$dir/tiny" && chmod +x "$dir/tiny"
expect 2 "not a valid ELF file" "$run" "$dir/tiny"
{ head -c 64 "$dir/whole"; head -c 4096 /dev/urandom; } >"$dir/garbage" && chmod +x "$dir/garbage"
expect 2 "not a valid ELF file" "$run" "$dir/garbage"
"$run" "$dir/whole" true || fail "a copy of env did not run"

# A program built with the static runtime is refused; the same built with -cudart shared runs.
nvcc=$(command -v nvcc || true)
[ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
if [ -z "$nvcc" ]; then
  echo "SKIP: nvcc not found (PATH, /usr/local/cuda/bin): the static-runtime check needs it"
  exit 77
fi
cat >"$dir/prog.cu" <<'CU'
#include <cstdio>
__global__ void k(int *p) { *p = 1; }
int main() {
  int *p = nullptr;
  cudaMalloc(&p, sizeof *p);
  k<<<1, 1>>>(p);
  std::printf("ran\n");
  return 3;
}
CU
"$nvcc" -cudart static -o "$dir/static" "$dir/prog.cu" || fail "nvcc -cudart static"
"$nvcc" -cudart shared -o "$dir/shared" "$dir/prog.cu" || fail "nvcc -cudart shared"
expect 2 "built with the static CUDA runtime" "$run" "$dir/static"
expect 2 "nvcc -cudart shared" "$run" "$dir/static"
expect 2 "CMAKE_CUDA_RUNTIME_LIBRARY=Shared" "$run" "$dir/static"
strip -o "$dir/static-stripped" "$dir/static" && chmod +x "$dir/static-stripped"
expect 2 "built with the static CUDA runtime" "$run" "$dir/static-stripped"
# The shared build is not refused: it reaches the dynamic loader, which finds the empty
# libcudart.so.13 unusable (the real stand-in is tested in tests/cudart).
msg=$("$run" "$dir/shared" 2>&1)
rc=$?
echo "$msg" | grep -q "static CUDA runtime" && fail "the -cudart shared build was refused: $msg"
[ $rc -ne 0 ] || fail "the -cudart shared build ran with an empty libcudart.so.13"
echo "PASS"
