#!/bin/sh
# tools/bootstrap.sh on a machine where it may not install: a user without root or sudo, and a
# machine without apt-get. It must print what to run, fail, and never call apt-get itself.
# Usage: test_bootstrap.sh BOOTSTRAP_SH SCRATCH_DIR
set -u
script=$1
bin=$2/bin
rm -rf "$2" && mkdir -p "$bin" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

# Fakes: a non-root user who has a compiler, meson and ninja, and whose pkg-config finds nothing.
printf '#!/bin/sh\necho 1000\n' > "$bin/id"
printf '#!/bin/sh\nexit 1\n' > "$bin/pkg-config"
printf '#!/bin/sh\necho "apt-get was called" > "%s/apt-called"\n' "$2" > "$bin/apt-get"
for tool in cc meson ninja; do printf '#!/bin/sh\n' > "$bin/$tool"; done
chmod +x "$bin"/*

unset GCAP_BOOTSTRAP_VALGRIND GCAP_BOOTSTRAP_CLANG # CI asks for more packages; this test is about the base set
PATH=$bin /bin/sh "$script" > "$2/out" 2>&1 && fail "succeeded without root or sudo"
[ -e "$2/apt-called" ] && fail "called apt-get without root or sudo"
grep -q 'as root, run:' "$2/out" || fail "did not say to run it as root: $(cat "$2/out")"
grep -q 'apt-get update && apt-get install -y libcmocka-dev libjansson-dev$' "$2/out" ||
  fail "did not print the command for root: $(cat "$2/out")"

rm "$bin/apt-get"
PATH=$bin /bin/sh "$script" > "$2/out" 2>&1 && fail "succeeded without apt-get"
grep -q 'no apt-get.* libcmocka-dev libjansson-dev$' "$2/out" || fail "did not name the packages: $(cat "$2/out")"

# Nothing missing: nothing to install, success, even without root or sudo.
printf '#!/bin/sh\nexit 0\n' > "$bin/pkg-config"
PATH=$bin /bin/sh "$script" > "$2/out" 2>&1 || fail "failed with nothing missing: $(cat "$2/out")"
echo "ok"
