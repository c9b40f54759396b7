#!/bin/sh
# tools/bootstrap.sh on a machine where it may not install: a user without root or sudo, and a
# machine without apt-get. It must print what to run, fail, and never call apt-get itself.
# Then as root with a fake apt-get that prints 300 lines: what it installs and a line as each step
# starts and ends by default, all of apt-get's output with -v or GCAP_BOOTSTRAP_VERBOSE=1, and
# when a step fails the command and its last 40 lines.
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

unset GCAP_BOOTSTRAP_VALGRIND GCAP_BOOTSTRAP_CLANG GCAP_BOOTSTRAP_PYTHON GCAP_BOOTSTRAP_RUST GCAP_BOOTSTRAP_VERBOSE # CI asks for more packages; this test is about the base set
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
[ "$(cat "$2/out")" = "bootstrap.sh: nothing to install: what it looks for is here" ] ||
  fail "nothing missing: want one line saying so: $(cat "$2/out")"

# Root, with an apt-get that logs its arguments, prints 300 lines (a dry run, -s: 7 packages to
# install) and fails when FAKE_APT_FAIL names its first argument ("install"). tail and date are
# the real tools the script uses.
printf '#!/bin/sh\nexit 1\n' > "$bin/pkg-config"
printf '#!/bin/sh\necho 0\n' > "$bin/id"
cat > "$bin/apt-get" << EOF
#!/bin/sh
echo "\$*" >> "$2/apt-log"
if [ "\$2" = -s ]; then
  for p in gcc-12 cpp-12 meson ninja-build pkgconf libcmocka-dev libjansson-dev; do echo "Inst \$p (1.0 Debian:12/stable [amd64])"; done
  exit 0
fi
i=1
while [ \$i -le 300 ]; do echo "apt-get \$1 line \$i"; i=\$((i + 1)); done
[ "\$1" != "\${FAKE_APT_FAIL:-}" ]
EOF
chmod +x "$bin/apt-get"
ln -sf "$(command -v tail)" "$bin/tail"
ln -sf "$(command -v date)" "$bin/date"
scratch=$2
lines() { wc -l < "$scratch/out"; }

rm -f "$2/apt-log"
PATH=$bin /bin/sh "$script" > "$2/out" 2>&1 || fail "as root: failed: $(cat "$2/out")"
[ "$(lines)" -eq 5 ] || fail "as root: $(lines) lines of output, want 5: $(head -n 20 "$2/out")"
grep -qx 'bootstrap.sh: missing: libcmocka-dev libjansson-dev' "$2/out" ||
  fail "as root: did not name the packages: $(cat "$2/out")"
grep -q "^bootstrap.sh: \[1/2\] apt-get update: .*(-v shows apt-get's output) \.\.\.$" "$2/out" ||
  fail "as root: did not say that apt-get update runs: $(cat "$2/out")"
grep -qx 'bootstrap.sh: \[1/2\] done in [0-9]* s' "$2/out" || fail "as root: the update's end not shown: $(cat "$2/out")"
grep -q '^bootstrap.sh: \[2/2\] apt-get install: 7 packages: libcmocka-dev libjansson-dev and what they need; .*\.\.\.$' "$2/out" ||
  fail "as root: did not say what apt-get install installs: $(cat "$2/out")"
grep -qx 'bootstrap.sh: \[2/2\] done in [0-9]* s: installed libcmocka-dev libjansson-dev' "$2/out" ||
  fail "as root: the install's end not shown: $(cat "$2/out")"
grep -q 'line' "$2/out" && fail "as root: apt-get's output shown without -v"
[ "$(cat "$2/apt-log")" = "update -qq
install -s -qq libcmocka-dev libjansson-dev
install -y -qq libcmocka-dev libjansson-dev" ] || fail "as root: apt-get was not run as before: $(cat "$2/apt-log")"

for verbose in "-v" "GCAP_BOOTSTRAP_VERBOSE=1"; do
  if [ "$verbose" = -v ]; then PATH=$bin /bin/sh "$script" -v > "$2/out" 2>&1
  else GCAP_BOOTSTRAP_VERBOSE=1 PATH=$bin /bin/sh "$script" > "$2/out" 2>&1; fi || fail "$verbose: failed: $(cat "$2/out")"
  [ "$(grep -c '^apt-get .* line ' "$2/out")" -eq 600 ] || fail "$verbose: want all 600 lines of apt-get's output"
done
PATH=$bin /bin/sh "$script" --no-such-option > "$2/out" 2>&1
[ $? -eq 2 ] || fail "an unknown option: want exit 2"
grep -q '^usage: ' "$2/out" || fail "an unknown option: no usage: $(cat "$2/out")"

FAKE_APT_FAIL=install PATH=$bin /bin/sh "$script" > "$2/out" 2>&1 && fail "succeeded with apt-get install failing"
grep -q 'failed.*: apt-get install -y -qq libcmocka-dev libjansson-dev$' "$2/out" || fail "failing step: command not named: $(cat "$2/out")"
grep -qx 'apt-get install line 300' "$2/out" && grep -qx 'apt-get install line 261' "$2/out" ||
  fail "failing step: the tail of its output not shown: $(cat "$2/out")"
grep -q 'line 260$' "$2/out" && fail "failing step: more than its last 40 lines shown"
grep -q 'apt-get update line' "$2/out" && fail "failing step: the output of the step before it shown"
[ "$(lines)" -le 46 ] || fail "failing step: $(lines) lines of output"
FAKE_APT_FAIL=update PATH=$bin /bin/sh "$script" > "$2/out" 2>&1 && fail "succeeded with apt-get update failing"
grep -q 'failed.*: apt-get update -qq$' "$2/out" || fail "failing update: command not named: $(cat "$2/out")"
echo "ok"
