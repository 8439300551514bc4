#!/bin/sh
# test_install.sh BUILD_DIR SOURCE_DIR [PYTHON]: `cmake --install` into a temporary prefix (not
# the configure-time one), then build tests/install/hello.c against it twice, with pkg-config
# and with find_package(blockflow), run both, check the installed files (CLI, SONAME link,
# header, .pc, CMake config, the manual page), import the installed Python package with PYTHON
# (when it has numpy) from the prefix and from a moved copy of it, each loading its own
# libblockflow.so. Neither the program nor libblockflow.so needs a CUDA library; in a CUDA
# build the backend (libblockflow_cuda.so) is installed beside libblockflow.so, and with the
# CUDA libraries hidden from the loader (ld.so --inhibit-cache: no /etc/ld.so.cache) the
# installed program still runs a page on the CPU and says why there is no GPU, as does Python.
set -eu
build=$1
src=$2
py=${3:-}
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
# the program and the library link no CUDA library (only the backend does, see below)
for f in "$prefix/bin/blockflow" "$libdir/libblockflow.so.0.1.0"; do
    if objdump -p "$f" | grep NEEDED | grep -E 'libcud|libcublas'; then
        echo "$f links a CUDA library" >&2
        exit 1
    fi
done
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
# the README's recipe for a custom prefix: the library's folder in the program (-rpath)
cc -o "$tmp/hello_rpath" "$src/tests/install/hello.c" $(pkg-config --cflags --libs blockflow) \
    -Wl,-rpath,"$(pkg-config --variable=libdir blockflow)"
env -u LD_LIBRARY_PATH "$tmp/hello_rpath"

# find_package(blockflow)
cmake -S "$src/tests/install" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
LD_LIBRARY_PATH="$libdir" "$tmp/consumer/hello"
# The Python package, from the installed tree only (no BLOCKFLOW_LIBRARY, no source tree): it
# must load the libblockflow.so of its own prefix, wherever that prefix is, and run a page.
check_python() { # PREFIX
    site=$(dirname "$(dirname "$(find "$1" -name _install_paths.py | head -n 1)")")
    (cd "$tmp" && env -u BLOCKFLOW_LIBRARY -u LD_LIBRARY_PATH PYTHONPATH="$site" \
        PYTHONDONTWRITEBYTECODE=1 "$py" - "$1" "$src/examples/filter_grad_same.json" <<'EOF'
import importlib, os, sys
import blockflow
prefix, page = os.path.realpath(sys.argv[1]), sys.argv[2]
loaded = os.path.realpath(importlib.import_module("blockflow._lib").lib.path)
assert loaded.startswith(prefix + os.sep), f"loaded {loaded}, not the library under {prefix}"
dw = blockflow.load(page).run(fetch=["dw"])["dw"]
assert dw[:, :, 0, 0].tolist()[0] == [160.0, 210.0, 176.0], dw[:, :, 0, 0]
EOF
    )
}
if [ -n "$py" ] && "$py" -c "import numpy" 2>/dev/null; then
    check_python "$prefix"
    mv "$prefix" "$tmp/moved" # a relocated tree finds its own library too
    check_python "$tmp/moved"
    mv "$tmp/moved" "$prefix"
else
    echo "install test: no Python with numpy (${py:-none given}): the Python package is not checked"
fi
# ---- the CUDA backend (CUDA builds) ------------------------------------------------------------
backend="$libdir/libblockflow_cuda.so"
if [ -f "$backend" ]; then
    page="$src/examples/filter_grad_same.json"
    site=$(dirname "$(dirname "$(find "$prefix" -name _install_paths.py | head -n 1)")")
    # it alone links the CUDA runtime and cuDNN, and exports one symbol of ours
    objdump -p "$backend" | grep NEEDED | grep -q 'libcudart\.so'
    objdump -p "$backend" | grep NEEDED | grep -q 'libcudnn\.so'
    test "$(nm -D --defined-only "$backend" | awk '$3 ~ /^bf_/ { print $3 }')" = bf_cuda_backend_v1
    # Found beside the installed library (bin/../lib): the devices line names no load problem
    # (on this machine: a GPU, or the CUDA runtime's reason there is none).
    if [ -n "$py" ] && "$py" -c "import numpy" 2>/dev/null; then
        devs=$(cd "$tmp" && env -u BLOCKFLOW_LIBRARY -u BLOCKFLOW_CUDA_BACKEND PYTHONPATH="$site" \
            PYTHONDONTWRITEBYTECODE=1 "$py" -c 'import blockflow; print(blockflow.devices())')
        echo "installed, devices: $devs"
        case $devs in *libblockflow_cuda*) echo "the backend did not load" >&2; exit 1 ;; esac
    fi
    out=$(env -u BLOCKFLOW_CUDA_BACKEND "$prefix/bin/blockflow" run "$page" --device gpu --out "$tmp/gpu" 2>&1) || true
    case $out in *libblockflow_cuda*) echo "the program did not load the backend: $out" >&2; exit 1 ;; esac

    # The CUDA libraries hidden: the loader started by hand without its cache (and with no
    # LD_LIBRARY_PATH) finds only what lies in its default folders.
    interp=$(readelf -l "$prefix/bin/blockflow" | sed -n 's/.*program interpreter: \(.*\)]$/\1/p')
    hidden() { env -u LD_LIBRARY_PATH -u BLOCKFLOW_CUDA_BACKEND -u BLOCKFLOW_LIBRARY "$interp" --inhibit-cache "$@"; }
    if ! hidden --list "$backend" 2>&1 | grep -qE 'libcudart[^ ]*( => not found|: cannot open)'; then
        echo "install test: the CUDA runtime lies in the loader's default folders here: not hidden"
    else
        # the program starts and runs a page on the CPU, with the same result as usual
        hidden "$prefix/bin/blockflow" run "$page" --out "$tmp/hidden" >/dev/null
        "$prefix/bin/blockflow" run "$page" --device cpu --out "$tmp/cpu" >/dev/null
        cmp "$tmp/hidden/dw.npy" "$tmp/cpu/dw.npy"
        # asked for the GPU, it says why there is none: the backend's missing CUDA runtime
        if out=$(hidden "$prefix/bin/blockflow" run "$page" --device gpu --out "$tmp/h2" 2>&1); then
            echo "--device gpu ran with the CUDA libraries hidden" >&2
            exit 1
        fi
        echo "hidden, run --device gpu: $out"
        echo "$out" | grep -q 'no GPU can be used (cannot load libblockflow_cuda.so: libcudart\.so\.[0-9]*: cannot open shared object file'
        out=$(hidden "$prefix/bin/blockflow" bench --device gpu) && exit 1
        echo "hidden, bench --device gpu: $out"
        echo "$out" | grep -q '^no GPU: cannot load libblockflow_cuda.so: libcudart'
        if [ -n "$py" ] && "$py" -c "import numpy" 2>/dev/null; then
            devs=$(cd "$tmp" && export PYTHONPATH="$site" PYTHONDONTWRITEBYTECODE=1 &&
                hidden "$(readlink -f "$py")" -c 'import blockflow; print(blockflow.devices())')
            echo "hidden, Python devices: $devs"
            echo "$devs" | grep -q 'gpu: none (cannot load libblockflow_cuda.so: libcudart'
        fi
    fi
fi
echo "install test: ok"
