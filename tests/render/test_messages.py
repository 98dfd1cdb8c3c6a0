"""The CLI's one-line failures and warnings (render/messages.py, with render/text.py the one home of
what atsdbench prints): each template, its fields filled with values of a realistic length, fits in
text.WIDTH columns after the longest prefix the CLI puts before it ("atsdbench: warning: "), and no
module outside the home raises UsageError, appends a warning or prints a sentence of its own."""
import ast
import re

import pytest

import sources
from atsdbench.render import messages, text

PKG = sources.PKG
HOME = {"render/text.py", "render/messages.py"}
# ministat's messages are FreeBSD ministat's own words, kept output for output (docs/stat.md);
# errors.py builds the missing-core line from where atsdbench was installed (a path).
OWN_WORDS = {"ministat.py", "errors.py"}
PREFIX = "atsdbench: warning: "
# a field's realistic value: file names and labels as users give them, numbers, option values
SAMPLES = {"k": "0", "machine": "183", "size": "16383", "need": "16384", "end": "4096",
           "runs": "1", "rounds": "1", "calibrate_runs": "8", "mib": "64 KiB", "mib2": "1024.0 MiB",
           "what": "--size", "cut": "256MB", "number": "256", "unit": "M", "shift": "20",
           "path": "results/before.json", "name": "before.json", "file": "before.json", "file2": "after.json",
           "label": "Before", "places": "64K, 1M", "why": "fewer than 2 observations", "listing": "64K, 4K",
           "directory": "campaigns/tlb", "kernel": "patched", "image": "vmlinuz-6.18.0", "misses": "3",
           "stuck": "patched", "release": "6.18.0-rc1", "boot": "1a2b3c4d", "event": "result patched"}
TEMPLATES = {k: v for k, v in vars(messages).items() if k.isupper() and isinstance(v, str)}


# where a generic field name means a short value
OVERRIDES = {"UNITS_SIZES_ARE_BINARY_WRITE": {"value": "6"}, "GUEST_IMAGE_KERNEL_CUT_OFF_ELF_2": {"value": "16384"}}


def _filled(template, name=None):
    fields = {field for _, field, _, _ in __import__("string").Formatter().parse(template) if field}
    values = {f: OVERRIDES.get(name, {}).get(f, SAMPLES.get(f, "123456")) for f in fields}

    out = []
    for literal, name, spec, conv in __import__("string").Formatter().parse(template):
        out.append(literal)
        if name:
            v = values[name]
            if spec and spec[-1] in "gfde":
                v = format(12.5, spec)
            elif conv == "r":
                v = repr(v)
            out.append(str(v))
    return "".join(out)


def _warnings():
    """The templates the code appends to a list of warnings or hands to commands._warn: printed after
    "atsdbench: warning: "; the rest are errors, after "atsdbench: "."""
    found = set()
    for path in sources.paths():
        for node in sources.nodes(path):
            if isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)) and \
                    getattr(node.func, "attr", getattr(node.func, "id", None)) in ("append", "_warn"):
                found |= {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
                          and isinstance(n.value, ast.Name) and n.value.id == "messages"}
    return found


WARNINGS = _warnings()


# The missing-core line names where the core should be and the directory to rebuild from: two
# install paths, so it is one line but not held to text.WIDTH (not yet shortened: the way out must stay
# whole and pasteable).
TWO_PATHS = {"CORE_PROBLEM", "CORE_STALE", "CORE_IN_CHECKOUT", "CORE_REINSTALL"}


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_every_message_fits_one_line(name):
    prefix = PREFIX if name in WARNINGS else "atsdbench: "
    line = prefix + _filled(TEMPLATES[name], name)
    assert "\n" not in line and (len(line) <= text.WIDTH or name in TWO_PATHS), (len(line), line)


def _sentences(node):
    """The literal sentences (a str constant with a space) inside a call's arguments."""
    found = []
    for arg in list(node.args) + [k.value for k in node.keywords]:
        for sub in ast.walk(arg):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and re.search(r"[a-z]+ [a-z]+", sub.value):
                found.append(sub.value)
    return found


def _calls(path):
    for node in sources.nodes(path):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
        owner = f.value if isinstance(f, ast.Attribute) else None
        owner = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else None
        if name == "UsageError" or name == "append" and owner in ("warnings", "warns"):
            yield node
        elif name in ("_warn", "print") or name == "out" and owner == "self":  # campaign step's self.out
            yield node  # a warning, a line on stderr, or one on stdout (campaign status, guest's "wrote")


def test_no_module_words_its_own_usage_errors_or_warnings():
    own = {}
    for path in sources.paths():
        rel = str(path.relative_to(PKG))
        if rel in HOME | OWN_WORDS:
            continue
        for node in _calls(path):
            for sentence in _sentences(node):
                own.setdefault(rel, []).append(f"{node.lineno}: {sentence[:60]}")
    assert not own, own


def test_every_template_is_used():
    """A message nobody raises is a stale one."""
    code = "".join(sources.text(p) for p in sources.paths() if p.name != "messages.py")
    assert not [k for k in TEMPLATES if f"messages.{k}" not in code]
