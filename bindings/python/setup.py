"""Build steps pyproject.toml cannot say: where libpagoda was when the package was built, and a
platform tag for a wheel that carries the library inside.

- Building from a source tree with libpagoda installed where pkg-config finds it, the library's
  folder is recorded in ``pagoda/_built_with.py``, which the package looks in before the system's
  search path (see ``pagoda/_library.py``).
- With libraries in ``pagoda/_lib/`` (the CMake target ``python_wheel`` puts them there), the
  wheel holds machine code: it is tagged for this platform, not ``py3-none-any``.
"""
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))


def pkg_config_libdir():
    """libpagoda's folder as pkg-config tells it, or None."""
    if shutil.which("pkg-config") is None:
        return None
    try:
        out = subprocess.run(["pkg-config", "--variable=libdir", "pagoda"], capture_output=True, text=True,
                             check=True)
    except subprocess.CalledProcessError:
        return None
    return os.path.normpath(out.stdout.strip()) if out.stdout.strip() else None


class BuildWithLibraryPath(build_py):
    """Writes ``_built_with.py`` into the built package (never into the source tree)."""

    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "pagoda", "_built_with.py")
        with open(target, "w", encoding="utf-8") as f:
            f.write('"""Written by setup.py when the package was built."""\n')
            f.write(f"LIBDIR = {pkg_config_libdir()!r}\n")


class MaybeBinaryDistribution(Distribution):
    """A distribution with machine code when the wheel bundles libpagoda."""

    def has_ext_modules(self):
        return os.path.isdir(os.path.join(HERE, "pagoda", "_lib"))


setup(cmdclass={"build_py": BuildWithLibraryPath}, distclass=MaybeBinaryDistribution)
