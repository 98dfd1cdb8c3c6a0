"""Every usage error and warning is worded where it is raised; filled with values of a realistic
length, each fits in WIDTH columns after the prefix the CLI puts before it ("atsdbench: " for an
error, "atsdbench: warning: " for a warning), on one line; and the plan's refusals that C words
(csrc/), which both front ends print, the same way."""
import ast
import functools
import re

import sources
from atsdbench._cli import WIDTH

PKG = sources.PKG
ERROR, WARNING = "atsdbench: ", "atsdbench: warning: "
# FreeBSD ministat's own words, kept output for output (docs/stat.md); the missing-core line names two
# install paths, whole and pasteable, so it is one line but not held to WIDTH.
OWN_WORDS = {"ministat.py"}
TWO_PATHS = re.compile(r"compiled core|pip install --force-reinstall|build it with `pip install -e")
# a value's realistic text, by the name the expression ends in: file names and labels as users give them
SAMPLES = {"path": "results/before.json", "name": "before.json", "file": "before.json", "label": "Before",
           "directory": "campaigns/tlb", "default": "/etc/default/grub", "kernel": "patched", "image": "vmlinuz-6.18.0", "release": "6.18.0-rc1",
           "strerror": "Permission denied", "why": "fewer than 2 observations", "format_size": "64K",
           "cut": "256MB", "shorten": "256MB", "len": "3", "join": "64K, 1M", "boot_id": "1a2b3c4d",
           "what": "--size", "op": "mprotect", "axis": "bystanders", "test": "welch", "stride": "64K",
           "runs": "1", "calibrate_runs": "8", "number": "256", "unit": "M", "shift": "20", "k": "0",
           "size": "16383", "end": "4096", "need": "16384", "machine": "183", "version": " #1", "smp": "1"}
# a name inside a record: a kernel's name in a campaign, a side's path beside the first one named
KEYS = {"name": "patched", "path": "after.json"}
DEFAULT = "123456"


def _sample(expr):
    """A value's text for one formatted expression: by its last name, else six characters."""
    node = expr.func if isinstance(expr, ast.Call) else expr
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
    if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant):
        return KEYS.get(expr.slice.value, SAMPLES.get(expr.slice.value, DEFAULT))
    if isinstance(node, ast.Attribute) and not isinstance(node.value, ast.Name):
        return KEYS.get(name, SAMPLES.get(name, DEFAULT))
    if isinstance(expr, ast.BinOp):
        return SAMPLES["need"]
    if isinstance(expr, ast.Constant):
        return str(expr.value)
    if isinstance(expr, ast.IfExp):
        return max((_sample(expr.body), _sample(expr.orelse)), key=len)
    return SAMPLES.get(name, DEFAULT)


def _fills(node):
    """Every text a message expression can print (each branch of a conditional), its values sampled;
    None where the expression is no message (a variable built elsewhere, a call)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        out = [""]
        for part in node.values:
            if isinstance(part, ast.Constant):
                out = [o + part.value for o in out]
            else:
                sub = _fills(part.value) if isinstance(part.value, (ast.IfExp, ast.JoinedStr)) else None
                out = [o + s for o in out for s in (sub or [_sample(part.value)])]
        return out
    if isinstance(node, ast.IfExp):
        return (_fills(node.body) or []) + (_fills(node.orelse) or []) or None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _fills(node.left), _fills(node.right)
        if left is None and right is None:
            return None
        return [a + b for a in (left or [DEFAULT]) for b in (right or [""])]
    return None


def _raised():
    """(module, line, prefix, message node) for each usage error raised and each warning given."""
    for path in sources.paths():
        rel = str(path.relative_to(PKG))
        if rel in OWN_WORDS:
            continue
        for node in sources.nodes(path):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            owner = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else None
            if name in ("UsageError", "CudaError"):  # CudaError: a UsageError of measure/gpu's own
                yield rel, node.lineno, ERROR, node.args[0]
            elif name in ("OSError", "ReadBackFailed") and len(node.args) == 2:
                yield rel, node.lineno, ERROR, node.args[1]  # the CLI prints its strerror
            elif name in ("warn", "_warn") or name == "append" and owner in ("warnings", "warns", "problems"):
                yield rel, node.lineno, WARNING, node.args[0]


# The sites are found when a test asks, not at collection, and each test checks all of its kind and
# names every one that does not fit (where it is, its width, its words): one test of hundreds of
# sites costs what their check costs, not hundreds of pytest items.
@functools.cache
def sites():
    return [(rel, line, prefix, text) for rel, line, prefix, node in _raised() for text in (_fills(node) or [])]


def _too_wide(cases):
    return [f"{where}: {len(out)} columns: {out}" for where, out, fits in cases if not fits]


def test_the_sites_are_found():
    """The scan sees the package's words: hundreds of them, in every house."""
    assert len(sites()) > 250
    assert {rel.split("/")[0] for rel, *_ in sites()} >= {"analysis", "campaign", "data", "measure", "commands.py"}


def test_every_message_fits_one_line():
    bad = _too_wide((f"{rel}:{line}", prefix + text,
                     "\n" not in text and (len(prefix + text) <= WIDTH or TWO_PATHS.search(text)))
                    for rel, line, prefix, text in sites())
    assert not bad, "\n".join(bad)


# C words the plan's refusals (both front ends print them): each format string, its conversions filled
# with values of a realistic length, held to the same width after the CLI's prefix.
C_CALL = re.compile(r"\b(?:atsd_plan_)?fail\(-E\w+, msg, msglen,\s*((?:\"(?:[^\"\\]|\\.)*\"\s*(?:PRI\w+\s*)?)+)")
C_CONVERSION = re.compile(r"%(?:\.\*)?[-.0-9]*(?:ll|l|z)?[sdiucgf%]")
# most strings are sizes or values cut short (a size four characters); counts of CPUs, threads and
# rounds three digits
C_SAMPLE = {"s": "256M", "c": "M", "g": "0.05", "f": "12.3", "%": "%"}


def _c_formats():
    for path in sorted((PKG.parent / "csrc").glob("*.c")):
        text = path.read_text()
        for m in C_CALL.finditer(text):  # "%" PRId64 " ..." reads as %d
            fmt = "".join(lit or "d" for lit, _ in re.findall(r"\"((?:[^\"\\]|\\.)*)\"|(PRI\w+)", m.group(1)))
            line = text.count("\n", 0, m.start()) + 1
            yield f"{path.name}:{line}", fmt.replace("\\'", "'").replace('\\"', '"')


def _c_fill(fmt):
    return C_CONVERSION.sub(lambda m: C_SAMPLE.get(m.group(0)[-1], "128"), fmt)


def test_the_c_sites_are_found():
    assert len(list(_c_formats())) > 50


def test_every_c_refusal_fits_one_line():
    bad = _too_wide((where, ERROR + _c_fill(fmt), "\n" not in ERROR + _c_fill(fmt)
                     and len(ERROR + _c_fill(fmt)) <= WIDTH) for where, fmt in _c_formats())
    assert not bad, "\n".join(bad)


# What atsd itself prints to a person (its refusals through die(), its lines on stderr, printf's on
# stdout), each format filled the same way; atsd's prefix "atsd: " is shorter than ours.  A format
# passed to put_wrapped (the table's notes, "wrote PATH") is wrapped where printed, so not held here.
C_PRINT = re.compile(r"\b(?:die\(|fprintf\(stderr,\s*|printf\()\s*((?:\"(?:[^\"\\]|\\.)*\"\s*(?:PRI\w+\s*)?)+)")


def _c_prints():
    for path in sorted((PKG.parent / "csrc").glob("*.c")):
        text = path.read_text()
        for m in C_PRINT.finditer(text):
            fmt = "".join(lit or "d" for lit, _ in re.findall(r"\"((?:[^\"\\]|\\.)*)\"|(PRI\w+)", m.group(1)))
            line = text.count("\n", 0, m.start()) + 1
            prefix = "atsd: " if m.group(0).startswith("die(") else ""
            for out in (prefix + fmt.replace("\\'", "'").replace('\\"', '"')).split("\\n"):
                if out:
                    yield f"{path.name}:{line}", out


def test_the_c_prints_are_found():
    prints = list(_c_prints())
    assert len(prints) > 40 and {w.split(":")[0] for w, _ in prints} >= {"atsd_main.c", "atsd_pass.c"}


def test_every_c_line_fits():
    bad = _too_wide((where, _c_fill(fmt), len(_c_fill(fmt)) <= WIDTH) for where, fmt in _c_prints())
    assert not bad, "\n".join(bad)
