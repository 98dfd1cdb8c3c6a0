"""The scripts' one loader of the tests' noise simulator (tests/support/noise_sim.py): puts tests/support on
sys.path, as tests/conftest.py does for the tests, so `from _support import noise_sim` (or, after
`import _support`, `from noise_sim import ...`) loads the one copy of it.  Not a script: nothing to run."""
import os
import sys

SUPPORT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "support")
if SUPPORT not in sys.path:
    sys.path.insert(0, SUPPORT)

import noise_sim  # noqa: E402,F401
