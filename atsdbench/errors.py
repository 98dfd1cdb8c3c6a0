"""The exception types and exit statuses: bad input (the CLI prints its message on one line and exits
2), a failed correctness check (exit 3), and the missing (or stale) compiled core."""
import os

EXIT_USAGE = 2
# a run that read a stale translation (CPU or device), or a --workload loop whose read-back failed:
# every finished pass is saved first, then the loud line and this status
EXIT_STALE = 3
# compare --fail-on T (analysis/gate.py): a slowdown beyond T proven, and no verdict to judge by
# (125 is `git bisect run`'s "skip this commit")
EXIT_SLOWER = 1
EXIT_NO_VERDICT = 125


class UsageError(ValueError):
    """Bad input from the user (options, files, plans the host cannot run)."""


class ArgumentError(UsageError):
    """A command line argparse refused: the CLI prints `usage`, a short usage line of the command
    meant, before the message."""

    def __init__(self, message, usage):
        super().__init__(message)
        self.usage = usage


class ReadBackFailed(OSError):
    """A --workload loop read back something else than its page must hold after MADV_DONTNEED: the
    run keeps what it finished, says so in one line and exits EXIT_STALE, never a rate."""


def checkout_of(package_dir):
    """The source checkout holding this package directory (pyproject.toml and build_atsd.py beside
    it: where `pip install -e` builds the core in place), or None."""
    top = os.path.dirname(os.path.abspath(package_dir))
    marks = ("pyproject.toml", "build_atsd.py")
    return top if all(os.path.isfile(os.path.join(top, m)) for m in marks) else None


def _installed_from():
    """pip's record of where the installed atsdbench came from (PEP 610's direct_url.json), or None:
    from an index, or not installed at all."""
    import json

    try:
        from importlib import metadata

        text = metadata.distribution("atsdbench").read_text("direct_url.json")
        return json.loads(text) if text else None
    except (ImportError, OSError, ValueError):  # PackageNotFoundError is an ImportError
        return None


def rebuild_hint(package_dir, installed_from=None):
    """How to get a compiled core that matches, from where this atsdbench came: the checkout it is
    imported from, the directory or archive pip installed it from, or the index."""
    checkout = checkout_of(package_dir)
    if checkout:
        # After a plain `pip install .` run from the checkout, the source tree shadows the installed
        # package: either way out works.
        return (f"a source tree: build it with `pip install -e {checkout}`, or run from another directory to use "
                "the installed atsdbench")
    url = (installed_from or {}).get("url", "")
    source = "atsdbench"
    if url.startswith("file://"):
        from urllib.parse import unquote, urlparse

        editable = "-e " if (installed_from.get("dir_info") or {}).get("editable") else ""
        source = editable + unquote(urlparse(url).path)
    return f"reinstall with `pip install --force-reinstall --no-deps {source}`"


class CoreMissing(ImportError):
    """The compiled core (atsdbench._atsd) cannot be imported, or is not the one this Python side was
    written for: one line saying why and the way out."""

    @classmethod
    def explain(cls, package_dir, error=None):
        """error: the ImportError, where the module was there but would not load."""
        why = "missing in" if error is None else f"does not load ({error}) in"
        return cls(f"compiled core {why} {package_dir}, {rebuild_hint(package_dir, _installed_from())}")

    @classmethod
    def stale(cls, package_dir, found, expected):
        return cls(f"compiled core in {package_dir} is stale (ABI {found}, this atsdbench expects {expected}), "
                   f"{rebuild_hint(package_dir, _installed_from())}")
