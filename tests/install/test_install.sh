#!/bin/sh
# test_install.sh BUILD_DIR SOURCE_DIR: `cmake --install` into a temporary prefix, then build
# tests/install/hello.c against it twice, with pkg-config and with find_package(blockflow),
# run both, and check the installed files (CLI, SONAME link, header, .pc, CMake config, the
# manual page).
set -eu
build=$1
src=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bf_install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(find "$prefix" -name 'libblockflow.so' | head -n 1)")
test -x "$prefix/bin/blockflow"
test -f "$prefix/include/blockflow.h"
test -L "$libdir/libblockflow.so"
test -f "$libdir/libblockflow.so.0.1.0"
# the SONAME carries the ABI version
objdump -p "$libdir/libblockflow.so.0.1.0" | grep -q 'SONAME.*libblockflow\.so\.0$'
"$prefix/bin/blockflow" version | grep -q '^blockflow 0\.1\.0$'
# the manual page, made from --help: it names every command and renders without warnings
man1="$prefix/share/man/man1/blockflow.1"
test -f "$man1"
for c in run check fmt blocks explain gradcheck grad bench serve help version; do
    "$prefix/bin/blockflow" --help | grep -q "^  $c\b"
    grep -q "^  $c\b" "$man1"
done
grep -q '^  \\-\\-max\\-ws\\-queue' "$man1" # serve --help's limits are in too
if command -v groff >/dev/null 2>&1; then
    test -z "$(groff -man -Tutf8 -ww -z "$man1" 2>&1)"
fi

# pkg-config
export PKG_CONFIG_PATH="$libdir/pkgconfig"
test "$(pkg-config --modversion blockflow)" = 0.1.0
cc -o "$tmp/hello_pc" "$src/tests/install/hello.c" $(pkg-config --cflags --libs blockflow)
LD_LIBRARY_PATH="$libdir" "$tmp/hello_pc"

# find_package(blockflow)
cmake -S "$src/tests/install" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
LD_LIBRARY_PATH="$libdir" "$tmp/consumer/hello"
echo "install test: ok"
