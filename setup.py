"""The core's build (build_atsd.py), and the checkout's folders carried in the package (atsdbench/carried.py
finds them): atsd's sources as atsdbench/csrc/, from which `atsdbench guest`, `atsdbench atsd` and a
campaign of `--runner atsd` build the static atsd (atsdbench/guest/initramfs.py), and the LAVA files as
atsdbench/lava/, lab submit's job template among them, so a wheel, an sdist or a git URL install is
the whole tool."""
import pathlib
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = pathlib.Path(__file__).resolve().parent


def atsd_sources():
    """What `make -C csrc` reads: the C files, the headers and the Makefile."""
    return sorted(p for p in (ROOT / "csrc").iterdir() if p.suffix in (".c", ".h") or p.name == "Makefile")


def lava_files():
    """lava/ whole: the test definition, the job templates and the device's files (docs/lab.md)."""
    return sorted(p for p in (ROOT / "lava").rglob("*") if p.is_file() and not p.name.startswith("."))


class BuildPy(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):  # an editable install reads the checkout's folders
            return
        for path in atsd_sources() + lava_files():
            dest = pathlib.Path(self.build_lib) / "atsdbench" / path.relative_to(ROOT)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)


setup(cffi_modules=["build_atsd.py:ffibuilder"], cmdclass={"build_py": BuildPy})
