"""The core's build (build_atsd.py), and atsd's sources carried in the package as atsdbench/csrc/:
`atsdbench guest`, `atsdbench atsd` and a campaign of `--runner atsd` build the static atsd from them
(atsdbench/guest/initramfs.py), so a wheel, an sdist or a git URL install is the whole tool."""
import pathlib
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

CSRC = pathlib.Path(__file__).resolve().parent / "csrc"


def atsd_sources():
    """What `make -C csrc` reads: the C files, the headers and the Makefile."""
    return sorted(p for p in CSRC.iterdir() if p.suffix in (".c", ".h") or p.name == "Makefile")


class BuildPy(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):  # an editable install reads the checkout's csrc/
            return
        dest = pathlib.Path(self.build_lib) / "atsdbench" / "csrc"
        dest.mkdir(parents=True, exist_ok=True)
        for path in atsd_sources():
            shutil.copyfile(path, dest / path.name)


setup(cffi_modules=["build_atsd.py:ffibuilder"], cmdclass={"build_py": BuildPy})
