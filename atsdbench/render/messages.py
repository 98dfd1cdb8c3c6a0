"""The one template measure/core.py still takes from render (the other usage errors and warnings are
worded where they are raised); it goes to its raise site when measure/ stops importing render."""

VERIFY_CHECKER_LATE = 'verify pass: a checker did not reach call {call} of stride {stride} in time (CPU taken?)'
