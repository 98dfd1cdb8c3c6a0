"""Without the compiled core: every command that only reads files works, `--help` too, and
what needs the core says in one line how to get it; a core of another ABI is refused the same way."""
import importlib
import json
import pathlib
import shutil
import subprocess
import sys
import types

import pytest

from atsdbench import cli, errors

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"

# The installed package copied without its compiled core, first on sys.path.  An editable install's
# import hook would still find the in-place build through the package's name, so it is set aside:
# nothing can supply atsdbench._atsd, as after deleting it.  The commands run in this one process
# (one interpreter start for all of them), each from a fresh parse, as `atsdbench ARGS` would.
DRIVER = """
import contextlib, io, json, sys
sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]
sys.path.insert(0, sys.argv[1])
import atsdbench
from atsdbench import cli
out = {"package": atsdbench.__file__, "runs": []}
for argv in json.loads(sys.argv[2]):
    o, e = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
        try:
            code = cli.main(argv)
        except SystemExit as x:  # --help
            code = x.code
    loaded = sorted(m for m in sys.modules if m.startswith(("atsdbench._atsd", "atsdbench.measure")) or m == "pandas")
    out["runs"].append({"argv": argv, "code": code, "out": o.getvalue(), "err": e.getvalue(), "loaded": loaded})
print(json.dumps(out))
"""


def _without_core(tmp_path, commands):
    import atsdbench

    lib = tmp_path / "lib"
    # the bytecode travels with the sources (copied with their times, so still valid), as in an
    # installed package: only the core is missing, and the interpreter need not compile every module
    shutil.copytree(pathlib.Path(atsdbench.__file__).parent, lib / "atsdbench", ignore=shutil.ignore_patterns("_atsd*"))
    p = subprocess.run([sys.executable, "-c", DRIVER, str(lib), json.dumps(commands)], capture_output=True,
                       text=True, cwd=tmp_path, timeout=600)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    assert got["package"] == str(lib / "atsdbench" / "__init__.py")
    return {tuple(r["argv"]): r for r in got["runs"]}, lib / "atsdbench"


@pytest.mark.slow  # a process of its own (the quick set stays in process)
def test_pure_commands_and_help_work_without_the_core(tmp_path):
    (tmp_path / "x").write_text("1\n2\n3\n4\n")
    before, after = str(FIXTURES / "before.json"), str(FIXTURES / "after.json")
    pure = [["--help"], ["show", before], ["compare", before, after],
            ["plot", before, after, "-o", "p.png"], ["model", before, after],
            ["import", "--table", str(FIXTURES / "npu_table.txt"), "--page-size", "64K", "-o", "npu.json"],
            ["guest", "--help"], ["campaign", "--help"]]
    # stat reads its files with the C reader (ministat's ReadSet, strtod and all: csrc/atsd.c), info
    # reads tracefs by csrc/atsd_trace.c's rules: one reader, one rule, so they need the core too.
    needs_core = [["run", "--help"], ["calibrate", "--size", "16M"], ["run", "--size", "16M"], ["info"],
                  ["stat", "x"]]
    runs, package = _without_core(tmp_path, pure + needs_core)
    for argv in pure:
        r = runs[tuple(argv)]
        assert r["code"] == 0, (argv, r["err"])
        # the pure commands never reach measure/, nor pandas (the Python API's frames; its import was
        # 0.4 s of every command's start)
        assert r["loaded"] == [], (argv, r["loaded"])
    top = runs[("--help",)]["out"]
    runs = {argv[0]: r for argv, r in runs.items() if argv in map(tuple, pure)} | runs
    for command in ("run", "calibrate", "show", "compare", "stat", "info", "plot", "import", "guest", "model",
                    "campaign"):
        assert f"\n    {command} " in top or f"\n    {command}\n" in top, command
    assert "measure and write a result file" in top
    assert "Stride" in runs["show"]["out"] and "Speedup" in runs["compare"]["out"]
    assert (tmp_path / "p.png").stat().st_size > 0 and (tmp_path / "npu.json").exists()
    assert "fixed" in runs["model"]["out"] and "--kernel" in runs["guest"]["out"]
    assert "init" in runs["campaign"]["out"] and "install" in runs["campaign"]["out"]
    for argv in needs_core:
        r = runs[tuple(argv)]
        assert r["code"] == 2 and r["out"] == "", argv
        line = r["err"]
        assert line.count("\n") == 1 and line.startswith("atsdbench: compiled core"), (argv, line)
        assert f"missing in {package}, reinstall with `pip install --force-reinstall --no-deps" in line


def test_run_help_without_the_core_is_one_line_at_the_real_entry(tmp_path):
    """As the `atsdbench` command leaves (signals.end), not only through cli.main."""
    import atsdbench

    lib = tmp_path / "lib"
    shutil.copytree(pathlib.Path(atsdbench.__file__).parent, lib / "atsdbench", ignore=shutil.ignore_patterns("_atsd*"))
    code = (f"import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]; "
            f"sys.path.insert(0, {str(lib)!r}); import runpy; sys.argv = ['atsdbench', 'run', '--help']; "
            "runpy.run_module('atsdbench', run_name='__main__')")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and "atsdbench: compiled core missing in " in p.stderr, p.stderr


def test_run_and_calibrate_options_are_built_only_when_asked(monkeypatch):
    import atsdbench.measure.core as core

    calls = []
    monkeypatch.setattr(core, "options", lambda real=core.options: calls.append(1) or real())
    cli.build_parser("show")
    cli.build_parser(None)
    assert calls == []
    for command in ("run", "calibrate"):
        sub = cli.build_parser(command)._subparsers._group_actions[0].choices[command]
        assert "--size" in {s for a in sub._actions for s in a.option_strings}
    assert len(calls) == 2


# --- where to rebuild from ---------------------------------------------------------------------------

def test_the_hint_names_the_checkout_it_was_imported_from(tmp_path):
    (tmp_path / "atsdbench").mkdir()
    (tmp_path / "pyproject.toml").write_text("")
    assert "pip install -e" not in errors.rebuild_hint(str(tmp_path / "atsdbench"))  # both marks, or none
    (tmp_path / "build_atsd.py").write_text("")
    hint = errors.rebuild_hint(str(tmp_path / "atsdbench"))
    assert f"pip install -e {tmp_path}`" in hint and "run from another directory" in hint


def test_the_hint_names_where_pip_installed_from(tmp_path):
    site = str(tmp_path / "site-packages" / "atsdbench")
    assert errors.rebuild_hint(site) == "reinstall with `pip install --force-reinstall --no-deps atsdbench`"
    local = {"url": "file:///home/me/src/atsd%20bench", "dir_info": {}}
    assert errors.rebuild_hint(site, local).endswith("--no-deps /home/me/src/atsd bench`")
    local["dir_info"]["editable"] = True
    assert errors.rebuild_hint(site, local).endswith("--no-deps -e /home/me/src/atsd bench`")
    sdist = {"url": "file:///tmp/atsdbench-0.1.0.tar.gz", "archive_info": {}}
    assert errors.rebuild_hint(site, sdist).endswith("--no-deps /tmp/atsdbench-0.1.0.tar.gz`")
    index = {"url": "https://example.org/atsdbench-0.1.0.tar.gz", "archive_info": {}}
    assert errors.rebuild_hint(site, index).endswith("--no-deps atsdbench`")


# --- a core of another ABI ------------------------------------------------------------------------------

def _stale_core(monkeypatch, abi):
    """measure/core imported afresh over a compiled module that reports ABI `abi` (None: so old it has no
    atsd_abi_version)."""
    lib = types.SimpleNamespace(**({"atsd_abi_version": lambda: abi} if abi is not None else {}))
    monkeypatch.setitem(sys.modules, "atsdbench._atsd", types.SimpleNamespace(ffi=None, lib=lib))
    monkeypatch.delitem(sys.modules, "atsdbench.measure.core")
    monkeypatch.delattr(importlib.import_module("atsdbench.measure"), "core")  # or `from .measure import core` finds it


@pytest.mark.parametrize("abi", [7, None])
def test_a_stale_core_is_refused_at_import(monkeypatch, abi):
    from atsdbench.measure import core

    _stale_core(monkeypatch, abi)
    with pytest.raises(errors.CoreMissing) as e:
        importlib.import_module("atsdbench.measure.core")
    text = str(e.value)
    assert "\n" not in text and text.startswith("compiled core in ")
    assert f"is stale (ABI {abi or 'unknown'}, this atsdbench expects {core.ABI_VERSION})" in text
    assert "pip install" in text


@pytest.mark.core
def test_a_stale_core_is_one_line_and_exit_2_from_the_cli(monkeypatch, capsys):
    _stale_core(monkeypatch, 1)
    assert cli.main(["run", "--help"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "is stale (ABI 1," in err


# pytest run on the package copied without its core (the editable hook set aside, as above)
PYTEST_WITHOUT_CORE = """
import sys
sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]
sys.path.insert(0, sys.argv[1])
import pytest
sys.exit(pytest.main(sys.argv[2:]))
"""


@pytest.mark.slow  # a pytest process of its own
def test_the_quick_set_skips_what_needs_the_core_where_it_does_not_load(tmp_path):
    """tests/conftest.py: where the core does not load, a test that needs it is skipped, saying so (its
    module imports the core, a command it ran said so, or it is marked `core`); the rest pass."""
    import atsdbench

    lib = tmp_path / "lib"
    shutil.copytree(pathlib.Path(atsdbench.__file__).parent, lib / "atsdbench", ignore=shutil.ignore_patterns("_atsd*"))
    files = ["tests/cli/test_cli_format.py", "tests/cli/test_bad_plans.py", "tests/test_ministat.py",
             "tests/measure/test_plan.py"]
    p = subprocess.run([sys.executable, "-c", PYTEST_WITHOUT_CORE, str(lib), "-q", "-rs", "-m", "not live",
                        "-p", "no:xdist", "-p", "no:cacheprovider", *files], capture_output=True, text=True,
                       cwd=ROOT, timeout=600)
    last = p.stdout.splitlines()[-1]
    assert p.returncode == 0 and " passed" in last and " skipped" in last and "failed" not in last, p.stdout[-3000:]
    assert "needs the compiled core: compiled core missing in" in p.stdout, p.stdout[-3000:]
