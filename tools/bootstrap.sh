#!/bin/sh
# Installs, with apt, what building and testing gcap needs and this machine lacks.
set -e
need=""
command -v cc >/dev/null 2>&1 || need="$need gcc"
command -v meson >/dev/null 2>&1 || need="$need meson"
command -v ninja >/dev/null 2>&1 || need="$need ninja-build"
command -v pkg-config >/dev/null 2>&1 || need="$need pkg-config"
pkg-config --exists cmocka 2>/dev/null || need="$need libcmocka-dev"
# Saved graphs and gcap-inspect (optional: without jansson they are left out and say so).
pkg-config --exists jansson 2>/dev/null || need="$need libjansson-dev"
[ "${GCAP_BOOTSTRAP_VALGRIND:-0}" = 1 ] && ! command -v valgrind >/dev/null 2>&1 && need="$need valgrind"
[ -z "$need" ] && exit 0
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
echo "installing:$need"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $need
