import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import pytest


def _test_the_installed_package(root=pathlib.Path(__file__).resolve().parent.parent, path=sys.path,
                                 modules=sys.modules):
    """`python -m pytest` puts the working directory first on sys.path, and from the checkout that is the
    source tree, whose atsdbench has no compiled core after a plain `pip install .` (it is built into
    the installed copy): then the checkout leaves sys.path and the tests import the installed package,
    as `pytest` does.  With an in-place core (`pip install -e .`) the checkout is the package and stays."""
    if any((root / "atsdbench").glob("_atsd*.so")) or "atsdbench" in modules:
        return
    path[:] = [p for p in path if pathlib.Path(p or ".").resolve() != root]


_test_the_installed_package()

FIXTURES = pathlib.Path(__file__).parent / "fixtures"


def _core_missing():
    """Why the compiled core does not load here (a pure install, a failed build), or None.  Without it
    the quick set still runs: what needs the core is skipped, saying so (a test module that imports
    it, a test that does, a command that says it needs it); the pure side's tests run."""
    try:
        import atsdbench.measure.core  # noqa: F401
    except ImportError as e:  # another import error is the tests' to show, where they meet it
        return str(e) if type(e).__name__ == "CoreMissing" else None
    return None


CORE_MISSING = _core_missing()


class _ModuleWithoutCore(pytest.Module):
    def _getobj(self):
        try:
            return super()._getobj()
        except self.CollectError as e:
            if "CoreMissing" in str(e):
                pytest.skip(f"needs the compiled core: {CORE_MISSING}", allow_module_level=True)
            raise


def pytest_pycollect_makemodule(module_path, parent):
    if CORE_MISSING and module_path.name.startswith("test_"):
        return _ModuleWithoutCore.from_parent(parent, path=module_path)
    return None


_SAID_CORE_MISSING = [False]  # a command the test ran in process said "compiled core missing"


def _without_core():
    """Where the core does not load, a test that needed it is skipped: it imported it, or a command it
    ran said so ("compiled core missing", the one line every command gives) and the test failed."""
    _SAID_CORE_MISSING[0] = False
    try:
        return (yield)
    except (ImportError, AssertionError) as e:
        if CORE_MISSING and (type(e).__name__ == "CoreMissing" or _SAID_CORE_MISSING[0]
                             or "compiled core missing" in str(e)):
            pytest.skip(f"needs the compiled core: {CORE_MISSING}")
        raise


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):  # a fixture that needs the core
    return (yield from _without_core())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    return (yield from _without_core())


# The tests' helpers that are no tests (sources, bad_plans, noise_sim, traced, the fakes) live in
# tests/support/ and are imported by their plain names from any folder: `import sources`, `import noise_sim`.
SUPPORT = pathlib.Path(__file__).parent / "support"
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))

# The `live` marker (pyproject.toml): a test that measures or builds on this machine.  Files and tests
# say so themselves; a test that asks for one of these fixtures is live through it.
LIVE_FIXTURES = {"small_run", "atsd"}


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true",
                     help="run the tests marked slow too (the studies and storms; CI does): left out otherwise")


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(config, items):
    for item in items:
        if LIVE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.live)
        if CORE_MISSING and item.get_closest_marker("core"):
            item.add_marker(pytest.mark.skip(reason=f"needs the compiled core: {CORE_MISSING}"))
    # `slow` is opt-in: --slow, a -m that names it, or a test named by its id runs it
    if config.getoption("--slow") or "slow" in (config.getoption("markexpr") or ""):
        return
    named = [_node_id(config, arg) for arg in config.args if "::" in arg]
    slow = [item for item in items if item.get_closest_marker("slow")
            and not any(item.nodeid == n or item.nodeid.startswith((n + "[", n + "::")) for n in named)]
    if slow:
        config.hook.pytest_deselected(items=slow)
        left = set(map(id, slow))
        items[:] = [item for item in items if id(item) not in left]
        config.stash[_SLOW_LEFT] = len(slow)


_SLOW_LEFT = pytest.StashKey[int]()


def _node_id(config, arg):
    path, _, rest = arg.partition("::")
    try:
        path = pathlib.Path(path).resolve().relative_to(config.rootpath).as_posix()
    except ValueError:
        pass
    return f"{path}::{rest}"


# The quick set (`-m "not live"`) runs on up to 4 CPUs where pytest-xdist is installed: a third less time
# on this 2-core VM (docs/development.md#tests).  Each worker collects for itself (3-4 s, and up to 264 MiB,
# one process's peak over the whole set), so more workers gain little.  A run that selects live tests stays
# in one process: they measure this machine, and a second test beside them would be in their figures.
# -n 0 or -p no:xdist asks for one process.
MAX_WORKERS = 4


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which turns -n into workers
def pytest_cmdline_main(config):
    option = config.option
    if (not config.pluginmanager.has_plugin("xdist") or hasattr(config, "workerinput")  # a worker: no more
            or getattr(option, "numprocesses", 0) is not None
            or option.collectonly or option.usepdb or option.capture == "no" or not _live_left_out(option.markexpr)):
        return
    cpus = min(len(os.sched_getaffinity(0)), MAX_WORKERS)
    if cpus > 1:
        option.numprocesses = cpus


def _live_left_out(markexpr):
    if not markexpr:
        return False
    try:
        from _pytest.mark.expression import Expression

        expression = Expression.compile(markexpr)
    except Exception:  # not an expression, or a pytest whose parser moved: one process, as before
        return False
    return not any(expression.evaluate(lambda name, **_: name in marks) for marks in ({"live"}, {"live", "slow"}))


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    # under xdist the workers collect, so the count of slow tests left out comes from them
    left = getattr(node, "workeroutput", {}).get("slow_left", 0)
    node.config.stash[_SLOW_LEFT] = max(node.config.stash.get(_SLOW_LEFT, 0), left)


def pytest_sessionfinish(session):
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["slow_left"] = session.config.stash.get(_SLOW_LEFT, 0)


def pytest_terminal_summary(terminalreporter, config):
    left = config.stash.get(_SLOW_LEFT, 0)
    if left:
        terminalreporter.write_line(f"{left} slow test{'s' * (left != 1)} left out (studies, storms, the sdist's "
                                    "run): --slow runs them, as CI does")


def pytest_collection_finish(session):
    # What is loaded by now (numpy, pandas, the modules under test) is not garbage: a full collection
    # (the collector's own, and plot's for a big file) need not walk it again, thousands of times
    _freeze()
    # and the youngest generation is collected every 50,000 allocations, not 700: the tests make and
    # drop many small containers (frames, dicts of records); 4-6% of the quick set, alternated runs
    import gc

    gc.set_threshold(50_000, 20, 100)


def _freeze():
    import gc

    gc.collect()
    gc.freeze()


_TESTS_SINCE_FREEZE = [0]


def pytest_runtest_logfinish():
    # what the tests so far left alive (caches, fonts, reports) joins it every 200 tests
    _TESTS_SINCE_FREEZE[0] += 1
    if _TESTS_SINCE_FREEZE[0] == 200:
        _TESTS_SINCE_FREEZE[0] = 0
        _freeze()


def unwrap(text):
    """stderr or a report with each warning on one line again: a warning wrapped to 100 columns continues
    on lines indented by two spaces (atsdbench/_cli.wrapped)."""
    return text.replace("\n  ", " ")


def table_of(arrays):
    """A result's table (data/columns.Columns) of {field: array of every pass}, a frame's columns too."""
    import numpy as np

    from atsdbench.data.columns import Columns

    fields = {k: np.asarray(v) for k, v in arrays.items()}
    return Columns({}, len(next(iter(fields.values()))) if fields else 0).with_fields(fields)


@pytest.fixture
def fixtures():
    return FIXTURES


# Run a command with tracefs at /sys/kernel/tracing in a mount namespace of its own (this machine's stays
# as it is); where it is already mounted (systemd's default) the namespace has it and mount would fail.
@pytest.fixture(scope="session")
def in_tracefs():
    return ('grep -q " /sys/kernel/tracing tracefs " /proc/mounts || '
            'mount -t tracefs nodev /sys/kernel/tracing || exit; ')


@pytest.fixture(scope="session")
def wheel(tmp_path_factory):
    """The wheel built from the sdist of the tracked files (tests/support/built.py), once a session:
    test_install installs it, tests/lab's guests install it."""
    import built

    return built.wheel(tmp_path_factory.mktemp("wheel"))


SCRIPTS = pathlib.Path(__file__).parent.parent / "scripts"


def _load_script(name):
    import importlib.util

    if str(SCRIPTS) not in sys.path:  # the script's own folder on sys.path, as running it puts it
        sys.path.insert(0, str(SCRIPTS))
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def script():
    """script("bench_verdict"): scripts/bench_verdict.py loaded as a module (scripts/ is no package)."""
    return _load_script


NEUTRAL = tempfile.mkdtemp(prefix="atsdbench-tests-")


def run_cli(*args, stdin=None, cwd=None, env=None):
    """Run `python -m atsdbench ARGS` as a user would; returns CompletedProcess (text).

    Never from the checkout's root: there `-m atsdbench` would find the source tree, which has no
    compiled core, instead of the installed package."""
    return subprocess.run([sys.executable, "-m", "atsdbench", *map(str, args)], input=stdin, capture_output=True,
                          text=True, cwd=cwd or NEUTRAL, env=env, timeout=600)


def _text(data):
    # as subprocess.run(text=True) reads a pipe: universal newlines
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def run_cli_here(*args, stdin=None, cwd=None, env=None):
    """`cli.main(ARGS)` in this process, as run_cli would run it in a fresh one: the same CompletedProcess
    (exit status, stdout, stderr), its own stdin, stdout and stderr (not a terminal, UTF-8), cwd, environment
    (env, as subprocess's, replaces it whole), the interpreter's default warning filters with warnings printed
    on its stderr, and the signal handlers and signals module state put back after.  A process start imports
    numpy, pandas and scipy again; here they are loaded once.

    What only a process shows stays with run_cli (the `cli_process` fixture): the entry point's signal
    handling and exit status (signals.install, signals.end), closed or non-UTF-8 streams, a fresh interpreter's
    imports, a C library loaded and kept by an earlier command, and what a child process or C code writes to
    descriptors 1 and 2 themselves (here it is not in stdout and stderr)."""
    import io
    import signal
    import traceback
    import warnings

    from atsdbench import cli, signals

    argv = [str(a) for a in args]
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace", line_buffering=True)
    inp = io.TextIOWrapper(io.BytesIO((stdin or "").encode()), encoding="utf-8")
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_hooks = sys.excepthook, sys.unraisablehook
    saved_handlers = {s: signal.getsignal(s) for s in signals.SIGNALS}
    saved_state = signals._depth, list(signals._pending), dict(signals._callers), list(signals._received), \
        list(signals._said)
    saved_env = dict(os.environ) if env is not None else None
    saved_cwd = os.getcwd()

    def show(message, category, filename, lineno, file=None, line=None):
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        os.chdir(cwd or NEUTRAL)
        sys.stdin, sys.stdout, sys.stderr = inp, out, err
        with warnings.catch_warnings():
            warnings.resetwarnings()  # what a fresh `python` has (pytest turns more on and records them)
            for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
                warnings.simplefilter("ignore", category)
            warnings.showwarning = show
            try:
                code = cli.main(argv)
            except SystemExit as e:  # argparse's --help and --version
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except Exception:  # what the interpreter would print, and its status
                traceback.print_exc()
                code = 1
        for stream in (out, err):
            stream.flush()
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        sys.excepthook, sys.unraisablehook = saved_hooks
        for s, h in saved_handlers.items():
            signal.signal(s, h)
        signals._depth, signals._pending[:], signals._callers, signals._received[:], signals._said[:] = (
            saved_state[0], saved_state[1], saved_state[2], saved_state[3], saved_state[4])
        os.chdir(saved_cwd)
        if saved_env is not None:
            os.environ.clear()
            os.environ.update(saved_env)
        _close_figures()
    said = _text(err.buffer.getvalue())
    _SAID_CORE_MISSING[0] |= "compiled core missing" in said
    return subprocess.CompletedProcess(["atsdbench", *argv], code, _text(out.buffer.getvalue()), said)


def _close_figures():
    # a process's figures end with it; here plot's would pile up (matplotlib warns at 20)
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")


@pytest.fixture
def cli():
    """cli(*args, stdin=None, cwd=None, env=None) -> CompletedProcess: `atsdbench ARGS` in this process."""
    return run_cli_here


@pytest.fixture
def cli_process():
    """The same in a fresh `python -m atsdbench` process, for what only a process shows (run_cli_here)."""
    return run_cli


@pytest.fixture(scope="session")
def small_run(tmp_path_factory):
    """One real, small run shared by the tests that read a live result."""
    import atsdbench

    result = atsdbench.run(size="64M", strides="64K,1M", rounds=2, reps=2, seed=1)
    path = tmp_path_factory.mktemp("run") / "small.json"
    from atsdbench.data import results

    results.save(result, str(path))
    return path


@pytest.fixture(scope="session")
def atsd(tmp_path_factory):
    """The standalone atsd, built from csrc/ with plain make (as for an initramfs)."""
    if not shutil.which("make") or not shutil.which("cc"):
        pytest.skip("make or cc not installed")
    out = tmp_path_factory.mktemp("atsd") / "atsd"
    subprocess.run(["make", "-s", "-C", os.path.join(os.path.dirname(__file__), "..", "csrc"), f"OUT={out}"],
                   check=True)
    return str(out)


@pytest.fixture(scope="session")
def fake_hmm(tmp_path_factory):
    """fake_hmm(stale=False) -> env: a process environment in which --device hmm opens the test double of
    the kernel's HMM test driver (tests/support/fake_hmm.c, LD_PRELOAD), coherent or (stale) never forgetting."""
    if not shutil.which("cc"):
        pytest.skip("cc not installed")
    d = tmp_path_factory.mktemp("fake_hmm")
    so, node = d / "fake_hmm.so", d / "hmm_dmirror0"
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-Wall", "-o", str(so),
                    str(SUPPORT / "fake_hmm.c"), "-ldl"], check=True)
    node.write_bytes(b"")  # the plan's check looks for a node it can open read-write

    def env(stale=False):
        e = dict(os.environ, LD_PRELOAD=str(so), ATSD_HMM_DEVICE=str(node))
        e.pop("FAKE_HMM_STALE", None)
        if stale:
            e["FAKE_HMM_STALE"] = "1"
        return e
    return env


def small_tmpfs(mnt, size):
    """A tmpfs of `size` (mount(8)'s size=, e.g. 64k) at the new folder mnt, for a `with` (needs root);
    the test is skipped where it cannot be mounted."""
    import contextlib

    @contextlib.contextmanager
    def mounted():
        mnt.mkdir()
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)], capture_output=True)
        if p.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {p.stderr.decode().strip()}")
        try:
            yield mnt
        finally:
            subprocess.run(["umount", str(mnt)], check=False)
    return mounted()


@pytest.fixture
def tiny_disk(tmp_path):
    """A 64 KiB tmpfs (needs root and mount(8)); skipped where it cannot be mounted."""
    with small_tmpfs(tmp_path / "disk", "64k") as mnt:
        yield mnt


@pytest.fixture
def full_disk(tiny_disk):
    """tiny_disk with every block taken: even a 4-byte write fails (ENOSPC)."""
    fd = os.open(tiny_disk / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"x" * 512):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    return tiny_disk


def _sweep_data(threads=(1, 2, 4), rate=lambda n, r: 10.0 * n, rounds=4, reps=2, strides=(65536,), extra=None,
               axes=None, column="gbps", per_pass=None):
    """A result of a threads sweep whose round means are exactly rate(n, round): every pass of a
    round at that rate.  axes: more axes beside threads ({axis: [values]}), cells their product with
    threads first; per_pass(n, round, rep) -> fields to add to a pass."""
    import itertools

    axes = {"threads": list(threads), **(axes or {})}
    names = list(axes)
    specs = [dict(zip(names, combo)) for combo in itertools.product(*(axes[a] for a in names))]
    size = 1 << 26
    samples = []
    for r in range(rounds):
        for c, spec in enumerate(specs):
            n = spec["threads"]
            for rep in range(reps):
                for s in strides:
                    v = rate(n, r) * (spec.get("bystanders", 0) + 1)
                    ns = max(1, int(size / v)) if column == "gbps" else 1000
                    sample = {"round": r, "rep": rep, "order": 0, "stride_bytes": s, "warmup": False, "ns": ns,
                              "seconds": ns / 1e9, "calls": size // s, "gbps": v if column == "gbps" else 1.0,
                              "us_per_call": 1.0, "traced": False, "cell": c, **spec}
                    if column != "gbps":
                        sample[column] = v
                    if per_pass:
                        sample.update(per_pass(n, r, rep))
                    samples.append(sample)
    config = {"size": size, "strides": list(strides), "rounds": rounds, "reps": reps, "pages": "base",
              "op": "madvise", "threads": threads[0], "tasks": "threads", "axes": axes, "cells": specs,
              **(extra or {})}
    return {"format": "atsdbench-result", "schema_version": 3, "complete": True, "host": {"page_size": 4096},
            "config": config, "samples": samples}


@pytest.fixture
def sweep_data():
    """sweep_data(...): a --threads sweep's result dict (_sweep_data above), for analysis and render tests."""
    return _sweep_data
