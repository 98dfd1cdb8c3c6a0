"""The checkout's folders a plain install carries inside the package (setup.py copies them in as
atsdbench/NAME/): atsd's sources (csrc/, for guest, `atsdbench atsd` and a campaign of `--runner
atsd`) and the LAVA files (lava/: lab submit's job template, the test definition, the device's
files).  One rule finds each, so an editable install and a wheel read the same names."""
import os

PACKAGE = os.path.dirname(os.path.abspath(__file__))


def find(name, env, marker):
    """The folder holding `marker`: $env where set, else the package's own copy (atsdbench/NAME/: a
    wheel, an sdist or a git URL install), else the checkout's NAME/ (an editable install); None
    where none holds it (a broken install)."""
    value = os.environ.get(env)
    for d in [value] if value else (os.path.join(PACKAGE, name), os.path.join(os.path.dirname(PACKAGE), name)):
        if os.path.isfile(os.path.join(d, marker)):
            return d
    return None
