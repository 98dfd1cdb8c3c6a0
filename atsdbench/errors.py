"""The one exception type for bad input: the CLI prints its message on one line and exits 2."""


class UsageError(ValueError):
    """Bad input from the user (options, files, plans the host cannot run)."""
