"""The house: what needs the machine lives in measure/; data/, analysis/ and render/ only
read results and never import it, nor the compiled core; no module imports itself round a cycle."""
import ast
import functools
import subprocess
import sys

import pytest

import sources

PKG = sources.PKG
PURE = ("data", "analysis", "render")
# What may import render, the leaf that words every table: render itself and the command line.
CLI_LAYER = ("atsdbench.commands", "atsdbench.cli", "atsdbench.__main__", "atsdbench.guest.command",
             "atsdbench.campaign.command")


def _module_name(path):
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path):
    """Every atsdbench module a file imports, at the top or inside a function (lazy imports count)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in sources.nodes(path):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("atsdbench")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if not mod.startswith("atsdbench"):
                continue
            for a in node.names:  # `from .pkg import mod` imports a module; `from .mod import name` a name
                sub = f"{mod}.{a.name}"
                out.add(sub if (PKG.parent / (sub.replace(".", "/") + ".py")).exists()
                        or (PKG.parent / sub.replace(".", "/")).is_dir() else mod)
    return out


@functools.cache  # three tests read it; parsing every module is most of their cost
def _parsed():
    return {_module_name(p): frozenset(_imports(p) - {_module_name(p)}) for p in sources.paths()}


def _graph():
    return {m: set(deps) for m, deps in _parsed().items()}


def test_no_import_cycle():
    graph = _graph()
    graph = {m: {d for d in deps if d in graph and not graph.get(d) is None} for m, deps in graph.items()}
    # A package's __init__ is imported by its modules; what it imports is not a cycle through them.
    state, stack, cycles = {}, [], []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for d in sorted(graph.get(m, ())):
            if d.startswith(m + "."):
                continue
            if state.get(d) == 1:
                cycles.append(stack[stack.index(d):] + [d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_pure_side_never_imports_measure_or_the_core():
    bad = [f"{m} imports {d}" for m, deps in _graph().items() if m.split(".")[1:2] and m.split(".")[1] in PURE
           for d in deps if d.startswith(("atsdbench.measure", "atsdbench._atsd"))]
    assert not bad, bad


@pytest.mark.slow  # a process of its own (the quick set stays in process)
def test_importing_the_pure_side_leaves_the_core_unloaded():
    mods = sorted(m for m in _graph() if m.split(".")[1:2] and m.split(".")[1] in PURE)
    code = ("import sys\n" + "".join(f"import {m}\n" for m in mods) +
            "loaded = sorted(m for m in sys.modules if m.startswith(('atsdbench._atsd', 'atsdbench.measure')))\n"
            "print(loaded)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       cwd=str(PKG.parent.parent))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]", p.stdout


def _render_importers():
    return [f"{m} imports {d}" for m, deps in sorted(_graph().items()) for d in sorted(deps)
            if (d == "atsdbench.render" or d.startswith("atsdbench.render."))
            and not (m == "atsdbench.render" or m.startswith("atsdbench.render.")) and m not in CLI_LAYER]


def test_nothing_below_the_command_line_imports_render():
    """render is a leaf: data, analysis, measure, campaign, guest's rooms, errors and units give
    records and raise their own words; only the command line turns records into tables and notes."""
    bad = _render_importers()
    assert not bad, bad


def test_every_module_is_in_a_house():
    top = sorted(p.stem for p in PKG.glob("*.py"))
    assert top == ["__init__", "__main__", "_cli", "carried", "cli", "commands", "errors", "ministat", "signals",
                   "units"]
