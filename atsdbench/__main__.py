"""The `atsdbench` command and `python -m atsdbench`: signal handling first, then the CLI, so a
Ctrl-C while the CLI is still being imported exits 130 with one line too."""
from . import signals


def entry():
    signals.install()
    from .cli import main

    signals.end(main())


if __name__ == "__main__":
    entry()
