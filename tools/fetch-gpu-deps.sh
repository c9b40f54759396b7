#!/bin/sh
# Run on a machine with apt (Debian 12): fetches what building and testing gcap needs as .deb
# files and unpacks them into build-gpu-deps/root, for a GPU machine with no package registry.
# tests/gpu/run.sh uses that tree when it is there. build-gpu-deps/ is ignored by git (build*).
set -e
cd "$(dirname "$0")/.."
dest=build-gpu-deps
rm -rf "$dest"
mkdir -p "$dest/debs" "$dest/root"
cd "$dest/debs"
apt-get download meson ninja-build libcmocka0 libcmocka-dev libjansson4 libjansson-dev pkgconf pkgconf-bin libpkgconf3 \
  python3-pkg-resources 2>&1 | grep -v '^W: Download is performed unsandboxed' || true
cd - >/dev/null
for deb in "$dest"/debs/*.deb; do dpkg -x "$deb" "$dest/root"; done
echo "unpacked $(ls "$dest"/debs | wc -l) packages into $dest/root ($(du -sh "$dest" | cut -f1))"
