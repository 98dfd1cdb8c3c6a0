"""`atsdbench show`: one file's per-stride summary, over rounds (default) or passes, built by
render.tables.stride_table, the builder of run's table too (one block per cell; csv: one table,
the cell and its axis values leading each row)."""
from .tables import FORMATS, show_table as render  # noqa: F401
