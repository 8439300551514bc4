"""Build step of the blockflow package: bundle libblockflow.so when one has been built.

pyproject.toml holds the metadata; this file only adds the library. It is taken from
BLOCKFLOW_LIBRARY, else from the repository's build tree (../build/libblockflow.so), and copied
into the package, where blockflow/_lib.py looks second (after BLOCKFLOW_LIBRARY), with the CUDA
backend libblockflow_cuda.so when one was built beside it (the library loads it from its own
folder; it needs the CUDA runtime and cuDNN only when used). The wheel is then marked as
platform-specific, as it holds a native library. Without a built library the
package is pure Python and finds libblockflow.so at import time (BLOCKFLOW_LIBRARY, the
system loader path).
"""
import os
import shutil
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def built_library():
    env = os.environ.get("BLOCKFLOW_LIBRARY")
    for path in ([Path(env)] if env else []) + [HERE.parent / "build" / "libblockflow.so"]:
        if path.is_file():
            return path
    return None


class BuildPy(build_py):
    def run(self):
        super().run()
        lib = built_library()
        if lib is None:
            self.warn("no built libblockflow.so (run `make` first, or set BLOCKFLOW_LIBRARY): "
                      "the package will look for it at import time")
            return
        dest = Path(self.build_lib) / "blockflow" / "libblockflow.so"
        shutil.copyfile(lib, dest)
        self.announce(f"bundled {lib} as {dest}", level=2)
        backend = lib.parent / "libblockflow_cuda.so"
        if backend.is_file():
            shutil.copyfile(backend, dest.parent / backend.name)
            self.announce(f"bundled {backend}", level=2)


class MaybeBinaryDistribution(Distribution):
    def has_ext_modules(self):
        return built_library() is not None


setup(cmdclass={"build_py": BuildPy}, distclass=MaybeBinaryDistribution)
