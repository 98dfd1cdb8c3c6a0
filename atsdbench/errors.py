"""The one exception type for bad input (the CLI prints its message on one line and exits 2), and the
missing compiled core."""
import os


class UsageError(ValueError):
    """Bad input from the user (options, files, plans the host cannot run)."""


class CoreMissing(ImportError):
    """The compiled core (atsdbench._atsd) cannot be imported: one line saying why and the way out."""

    @classmethod
    def explain(cls, package_dir):
        checkout = os.path.exists(os.path.join(package_dir, os.pardir, "csrc", "atsd.h"))
        if checkout:
            return cls(f"atsdbench's compiled core is missing: Python imported the source tree {package_dir} "
                       "(the current directory, or on sys.path), not the installed package; run from another "
                       "directory, or build it in place with `pip install -e .`")
        return cls(f"atsdbench's compiled core (atsdbench._atsd) is missing from {package_dir}: "
                   "reinstall with `pip install --force-reinstall atsdbench`")
