"""atsdbench's own modules, each read and parsed once for the tests that read the code (the house,
the one home of sentences, the one number formatter): parsing and walking every module was most of
their cost, paid again by each."""
import ast
import functools
import pathlib

PKG = pathlib.Path(__file__).resolve().parents[2] / "atsdbench"


@functools.cache
def paths():
    """Every module's path, sorted."""
    return tuple(sorted(PKG.rglob("*.py")))


@functools.cache
def text(path):
    return pathlib.Path(path).read_text()


@functools.cache
def tree(path):
    return ast.parse(text(path))


@functools.cache
def nodes(path):
    """Every node of a module's tree, in ast.walk's order (the tuple is shared: do not change the nodes)."""
    return tuple(ast.walk(tree(path)))
