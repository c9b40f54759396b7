#!/bin/sh
# Generates rust/src/sys/bindings.rs, the Rust crate's FFI declarations, from include/gcap/gcap.h and
# include/gcap/sim.h with bindgen (Debian: apt-get install bindgen).
#   gen-rust-ffi.sh           rewrite the file
#   gen-rust-ffi.sh --check   fail if the committed file differs from what bindgen makes now
#                             (exit 77 when bindgen is not installed)
cd "$(dirname "$0")/.." || exit 1
if ! command -v bindgen >/dev/null 2>&1; then
  echo "gen-rust-ffi.sh: bindgen is not installed (Debian: apt-get install bindgen)" >&2
  exit 77
fi
out=rust/src/sys/bindings.rs
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
bindgen rust/wrapper.h --allowlist-function 'gcap_.*' --allowlist-type 'gcap_.*' --allowlist-var 'GCAP_.*' \
  --opaque-type '_IO_FILE' --size_t-is-usize --no-prepend-enum-name --no-doc-comments --no-layout-tests \
  -- -Iinclude >"$tmp" || exit 1
case ${1:-} in
--check)
  if cmp -s "$tmp" "$out"; then
    echo "gen-rust-ffi.sh: $out is what bindgen makes from the headers"
  else
    diff -u "$out" "$tmp" | head -40
    echo "gen-rust-ffi.sh: $out differs from the headers; run tools/gen-rust-ffi.sh and commit it" >&2
    exit 1
  fi ;;
"") cp "$tmp" "$out" && echo "wrote $out" ;;
*) echo "usage: gen-rust-ffi.sh [--check]" >&2; exit 2 ;;
esac
