#!/bin/sh
# Generates rust/src/sys/bindings.rs, the Rust crate's FFI declarations, from include/gcap/gcap.h and
# include/gcap/sim.h with bindgen, formatted by rustfmt (Debian: tools/bootstrap.sh --rust installs
# bindgen, libclang-dev and rustfmt).
#   gen-rust-ffi.sh           rewrite the file
#   gen-rust-ffi.sh --check   fail if the committed file differs from what bindgen makes now
#                             (exit 77 when bindgen is not installed)
cd "$(dirname "$0")/.." || exit 1
case ${1:-} in
--check | "") ;;
*) echo "usage: gen-rust-ffi.sh [--check]" >&2; exit 2 ;;
esac
if ! command -v bindgen >/dev/null 2>&1; then
  echo "gen-rust-ffi.sh: bindgen is not installed (Debian: sh tools/bootstrap.sh --rust)" >&2
  exit 77
fi
# Without rustfmt bindgen writes its output unformatted, which would differ from the committed file.
if ! command -v "${RUSTFMT:-rustfmt}" >/dev/null 2>&1; then
  echo "gen-rust-ffi.sh: rustfmt is not installed, and bindgen's output is compared formatted (Debian: sh tools/bootstrap.sh --rust)" >&2
  exit 1
fi
# libclang parses the headers without clang's own headers (stdbool.h, stddef.h) unless it is told
# where they are: clang's resource folder, from clang itself or from Debian's libclang-common-*-dev.
resource=""
command -v clang >/dev/null 2>&1 && resource="$(clang -print-resource-dir 2>/dev/null)/include"
[ -f "$resource/stdbool.h" ] || resource=$(ls -d /usr/lib/llvm-*/lib/clang/*/include 2>/dev/null | sort -V | tail -n 1)
if [ ! -f "$resource/stdbool.h" ]; then
  echo "gen-rust-ffi.sh: clang's headers (stdbool.h) are not installed (Debian: sh tools/bootstrap.sh --rust, or apt-get install libclang-dev)" >&2
  exit 1
fi
out=rust/src/sys/bindings.rs
tmp=$(mktemp)
err=$(mktemp)
trap 'rm -f "$tmp" "$err"' EXIT
if ! bindgen rust/wrapper.h --allowlist-function 'gcap_.*' --allowlist-type 'gcap_.*' --allowlist-var 'GCAP_.*' \
  --opaque-type '_IO_FILE' --size_t-is-usize --no-prepend-enum-name --no-doc-comments --no-layout-tests \
  -- -Iinclude -isystem "$resource" >"$tmp" 2>"$err"; then
  cat "$err" >&2
  if grep -qi "libclang" "$err"; then
    echo "gen-rust-ffi.sh: bindgen could not load libclang (Debian: sh tools/bootstrap.sh --rust, or apt-get install libclang-dev)" >&2
  fi
  exit 1
fi
case ${1:-} in
--check)
  if cmp -s "$tmp" "$out"; then
    echo "gen-rust-ffi.sh: $out is what bindgen makes from the headers"
  else
    diff -u "$out" "$tmp" | head -40
    echo "gen-rust-ffi.sh: $out differs from the headers; run tools/gen-rust-ffi.sh and commit it" >&2
    exit 1
  fi ;;
*) cp "$tmp" "$out" && echo "wrote $out" ;;
esac
