#!/bin/sh
# Run on a machine with apt (Debian 12): fetches what building and testing gcap needs as .deb
# files and unpacks them into build-gpu-deps/root, for a GPU machine with no package registry,
# and copies this machine's CUDA headers (cuda.h, cudaTypedefs.h) and libcudadevrt.a into
# build-gpu-deps/cuda, so that the GPU machine builds against the headers gcap was built and
# tested with here and links device-runtime PTX (the conditional example) without a toolkit.
# tests/gpu/run.sh uses both when they are there. build-gpu-deps/ is ignored by git (build*).
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
else
  rmdir "$dest/cuda/include" "$dest/cuda"
  echo "no CUDA headers here: the GPU machine's own will be used"
fi
echo "what must travel with the working tree:"
du -sh "$dest"/*
du -sh "$dest"
find "$dest" -name libcudadevrt.a -exec ls -l {} +
