"""A fleet through a LAVA server: `atsdbench lab submit|status|collect` (docs/lab.md#fleets)."""
