#!/bin/sh
# Installs, with apt-get, whatever the build and the tests need and this
# Debian 12 machine lacks. Does nothing (and needs no network) when all is
# there already.
set -eu
PKGS="gcc libc6-dev libflint-dev libflint-arb-dev libtcc-dev tcc meson ninja-build
      python3 python3-sympy texlive-latex-base make pkg-config groff-base
      valgrind clang libclang-rt-14-dev libsundials-dev"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
        || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "deps: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq $missing >/dev/null
fi
