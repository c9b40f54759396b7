#!/bin/sh
# Installs, with apt, what building and testing gcap needs and this machine lacks.
# Without root and without sudo it installs nothing: it prints the command for root and fails.
# It prints what it is about to install and a line as each apt-get step starts and ends, not
# apt-get's output, which -v (or GCAP_BOOTSTRAP_VERBOSE=1) shows as well; with nothing to install,
# one line. When an install step fails it prints the command and the last 40 lines of its output,
# and fails.
# --python (or GCAP_BOOTSTRAP_PYTHON=1) adds what `python3 -m venv v && v/bin/pip install .` needs;
# --rust (or GCAP_BOOTSTRAP_RUST=1) adds what the Rust crate needs: a rustc and cargo of 1.70 or
# newer (Debian's rustc where it is that new, else rustc-web and cargo-web, Debian 12's newer
# toolchain; none where a new enough cargo is on the PATH already, from rustup say), rustfmt, and
# bindgen with libclang, which tools/gen-rust-ffi.sh --check runs.
#   bootstrap.sh [-v] [--python] [--rust]
set -e
verbose=${GCAP_BOOTSTRAP_VERBOSE:-0}
python=${GCAP_BOOTSTRAP_PYTHON:-0}
rust=${GCAP_BOOTSTRAP_RUST:-0}
for arg; do
  case $arg in
  -v | --verbose) verbose=1 ;;
  --python) python=1 ;;
  --rust) rust=1 ;;
  *) echo "usage: bootstrap.sh [-v] [--python] [--rust]   (-v: show apt-get's output; --python, --rust: what the Python package or the Rust crate's checks need)" >&2; exit 2 ;;
  esac
done

# One install step. Its output is kept, not shown, unless verbose; if it fails, the command and
# the end of its output go to stderr and the script exits with the step's status.
step() {
  if [ "$verbose" = 1 ]; then
    "$@" && return 0 || status=$?
    echo "bootstrap.sh: failed (exit status $status): $*" >&2
  else
    output=$("$@" 2>&1) && return 0 || status=$?
    echo "bootstrap.sh: failed (exit status $status): $*" >&2
    if [ -n "$output" ]; then
      echo "bootstrap.sh: the last 40 lines of its output (all of it with -v):" >&2
      printf '%s\n' "$output" | tail -n 40 >&2
    else
      echo "bootstrap.sh: it printed nothing" >&2
    fi
  fi
  exit "$status"
}
need=""
command -v cc >/dev/null 2>&1 || need="$need gcc"
command -v meson >/dev/null 2>&1 || need="$need meson"
command -v ninja >/dev/null 2>&1 || need="$need ninja-build"
command -v pkg-config >/dev/null 2>&1 || need="$need pkg-config"
pkg-config --exists cmocka 2>/dev/null || need="$need libcmocka-dev"
# Saved graphs and gcap-inspect (optional: without jansson they are left out and say so).
pkg-config --exists jansson 2>/dev/null || need="$need libjansson-dev"
[ "${GCAP_BOOTSTRAP_VALGRIND:-0}" = 1 ] && ! command -v valgrind >/dev/null 2>&1 && need="$need valgrind"
[ "${GCAP_BOOTSTRAP_CLANG:-0}" = 1 ] && ! command -v clang >/dev/null 2>&1 && need="$need clang"
[ "${GCAP_BOOTSTRAP_CLANG:-0}" = 1 ] && ! command -v clang-format >/dev/null 2>&1 && need="$need clang-format"
# The Rust crate: a toolchain of 1.70 or newer (rust_toolchain below picks the packages once apt
# knows what it offers), rustfmt, and bindgen with libclang (whose headers include stdbool.h).
rust_toolchain=""
if [ "$rust" = 1 ]; then
  rust_minor=$(rustc --version 2>/dev/null | sed -n 's/^rustc 1\.\([0-9]*\).*/\1/p')
  if ! command -v cargo >/dev/null 2>&1 || [ "${rust_minor:-0}" -lt 70 ]; then
    rust_toolchain=yes
  elif ! command -v rustfmt >/dev/null 2>&1; then
    need="$need rustfmt"
  fi
  command -v bindgen >/dev/null 2>&1 || need="$need bindgen"
  { ls /usr/lib/llvm-*/lib/libclang*.so* && ls /usr/lib/llvm-*/lib/clang/*/include/stdbool.h; } >/dev/null 2>&1 ||
    need="$need libclang-dev"
fi
# Debian's rustc and cargo where the candidate is 1.70 or newer, else rustc-web and cargo-web (in
# Debian 12's own repositories: bookworm, bookworm-updates, bookworm-security).
rust_packages() {
  minor=$(apt-cache policy rustc 2>/dev/null | sed -n 's/^ *Candidate: 1\.\([0-9]*\).*/\1/p')
  if [ "${minor:-0}" -lt 70 ] && apt-cache show rustc-web >/dev/null 2>&1; then
    echo "rustc-web cargo-web rustfmt-web"
  else
    echo "rustc cargo rustfmt"
  fi
}
[ -n "$rust_toolchain" ] && need="$need $(rust_packages)"
# The Python package (pip install .): a virtual environment with pip in it.
if [ "$python" = 1 ]; then
  command -v python3 >/dev/null 2>&1 || need="$need python3"
  # Debian's python3 imports ensurepip but cannot run it without python3-venv: make a venv to know.
  probe=$(mktemp -d)
  python3 -m venv "$probe/v" >/dev/null 2>&1 || need="$need python3-venv"
  rm -rf "$probe"
fi
if [ -z "$need" ]; then
  echo "bootstrap.sh: nothing to install: what it looks for is here"
  exit 0
fi

install="apt-get update && apt-get install -y$need"
if ! command -v apt-get >/dev/null 2>&1; then
  echo "bootstrap.sh: this machine has no apt-get; install these (Debian package names) with its package manager:$need" >&2
  exit 1
fi
if [ "$(id -u)" = 0 ]; then
  sudo=""
elif command -v sudo >/dev/null 2>&1; then
  sudo=sudo
else
  echo "bootstrap.sh: missing:$need" >&2
  echo "bootstrap.sh: not root and no sudo here; as root, run:" >&2
  echo "  $install" >&2
  echo "bootstrap.sh: then run this command again." >&2
  exit 1
fi
# Seconds since the step began, for its closing line (nothing where `date` is missing).
began() { start=$(date +%s 2>/dev/null) || start=""; }
took() {
  end=$(date +%s 2>/dev/null) || end=""
  [ -n "$start" ] && [ -n "$end" ] && echo " in $((end - start)) s"
  return 0
}
# How many packages apt-get will install: the named ones and what they need, from a dry run.
planned() {
  apt-get install -s -qq "$@" 2>/dev/null | {
    n=0
    while read -r word rest; do [ "$word" = Inst ] && n=$((n + 1)); done
    echo "$n"
  }
}
echo "bootstrap.sh: missing:$need"
[ "$verbose" = 1 ] || quiet=" (-v shows apt-get's output)"
echo "bootstrap.sh: [1/2] apt-get update: reading the repositories' package lists${quiet:-} ..."
export DEBIAN_FRONTEND=noninteractive
began
step $sudo apt-get update -qq
echo "bootstrap.sh: [1/2] done$(took)"
# Now that apt knows the repositories' packages, pick the Rust toolchain again.
[ -n "$rust_toolchain" ] && need="$(printf '%s\n' "$need" | sed 's/ rustc-web cargo-web rustfmt-web\| rustc cargo rustfmt//') $(rust_packages)"
n=$(planned $need)
[ "${n:-0}" -gt 0 ] && count="$n packages: " || count=""
echo "bootstrap.sh: [2/2] apt-get install: ${count}$(echo $need) and what they need; downloading and unpacking, often a minute or more${quiet:-} ..."
began
step $sudo apt-get install -y -qq $need
echo "bootstrap.sh: [2/2] done$(took): installed$need"
