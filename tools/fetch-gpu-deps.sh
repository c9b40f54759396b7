#!/bin/sh
# Run on a machine with apt (Debian 12): fetches what building and testing gcap needs as .deb
# files and unpacks them into build-gpu-deps/root, for a GPU machine with no package registry,
# and copies this machine's CUDA headers (cuda.h, cudaTypedefs.h) and libcudadevrt.a into
# build-gpu-deps/cuda, so that the GPU machine builds against the headers gcap was built and
# tested with here and links device-runtime PTX (the conditional example) without a toolkit.
# With nvcc here it also copies the runtime API headers (for the runtime stand-in, -Dcudart) and
# builds the stand-in's test programs (tests/cudart/programs/programs.txt) into
# build-gpu-deps/cudart-programs, so that the GPU machine runs them through the CUDA backend
# without a toolkit of its own.
# tests/gpu/run.sh uses all of these when they are there. build-gpu-deps/ is ignored by git (build*).
set -e
cd "$(dirname "$0")/.."
dest=build-gpu-deps
rm -rf "$dest"
mkdir -p "$dest/debs" "$dest/root" "$dest/cuda/include"
cd "$dest/debs"
apt-get download meson ninja-build libcmocka0 libcmocka-dev libjansson4 libjansson-dev pkgconf pkgconf-bin libpkgconf3 \
  python3-pkg-resources 2>&1 | grep -v '^W: Download is performed unsandboxed' || true
cd - >/dev/null
for deb in "$dest"/debs/*.deb; do dpkg -x "$deb" "$dest/root"; done
rm -rf "$dest/debs" # the unpacked tree is what travels
toolkit=""
for dir in "${CUDA_PATH:-}" "${CUDA_HOME:-}" /usr/local/cuda /usr; do
  [ -n "$dir" ] && [ -f "$dir/include/cuda.h" ] && [ -f "$dir/include/cudaTypedefs.h" ] && { toolkit="$dir"; break; }
done
if [ -n "$toolkit" ]; then
  cp "$toolkit/include/cuda.h" "$toolkit/include/cudaTypedefs.h" "$dest/cuda/include/"
  echo "CUDA headers from $toolkit/include ($(grep -m1 '#define CUDA_VERSION' "$dest/cuda/include/cuda.h"))"
  for lib in "$toolkit/lib64/libcudadevrt.a" "$toolkit/lib/x86_64-linux-gnu/libcudadevrt.a"; do
    [ -f "$lib" ] && { mkdir -p "$dest/cuda/lib64" && cp "$lib" "$dest/cuda/lib64/"; echo "libcudadevrt.a from $lib"; break; }
  done
  # The runtime API's headers, with what they include, for -Dcudart.
  printf '#include <cuda_runtime_api.h>\n' | cc -M -I"$toolkit/include" -x c - 2>/dev/null | tr ' \\' '\n\n' |
    sed -n "s|^$toolkit/include/||p" | sort -u | while read -r h; do
      mkdir -p "$dest/cuda/include/$(dirname "$h")" && cp "$toolkit/include/$h" "$dest/cuda/include/$h"
    done
  echo "CUDA runtime API headers: $(find "$dest/cuda/include" -type f | wc -l) files"
else
  rmdir "$dest/cuda/include" "$dest/cuda"
  echo "no CUDA headers here: the GPU machine's own will be used"
fi
nvcc=$(command -v nvcc || true)
[ -z "$nvcc" ] && [ -n "$toolkit" ] && [ -x "$toolkit/bin/nvcc" ] && nvcc=$toolkit/bin/nvcc
if [ -n "$nvcc" ]; then
  mkdir -p "$dest/cudart-programs"
  programs=tests/cudart/programs
  grep -v '^#' "$programs/programs.txt" | while IFS='|' read -r name sources flags; do
    name=$(echo $name)
    [ -n "$name" ] || continue
    set -- $flags
    case " $flags " in *" -gencode "*) ;; *) set -- -arch=sm_80 "$@" ;; esac
    srcs=$(for f in $sources; do printf '%s ' "$programs/$f"; done)
    sh "$programs/build-program.sh" "$nvcc" "$dest/cudart-programs/$name" $srcs -- "$@"
  done
  echo "the runtime stand-in's test programs: $(ls "$dest/cudart-programs" | wc -l), built with $nvcc"
else
  echo "no nvcc here: the runtime stand-in's test programs run on the GPU machine only if it has nvcc"
fi
echo "what must travel with the working tree:"
du -sh "$dest"/*
du -sh "$dest"
find "$dest" -name libcudadevrt.a -exec ls -l {} +
