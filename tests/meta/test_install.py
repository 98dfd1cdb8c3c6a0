"""A plain install is the whole tool: the wheel (built here from the sdist, as pip builds one from an
sdist or a git URL) carries atsd's sources, and from a fresh venv outside the checkout `atsdbench
atsd` builds the static atsd from them and `atsdbench guest` boots a guest."""
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import zipfile

import pytest

import built

ROOT = pathlib.Path(__file__).resolve().parents[2]
# scripts/x86-guest-check's kernel (where it ran first, as in .ci/run), or ATSD_GUEST_KERNEL
KERNEL = os.environ.get("ATSD_GUEST_KERNEL") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "atsdbench", "kernels", "vmlinuz-amd64")


@pytest.mark.slow  # a process of its own (the quick set stays in process)
def test_the_built_package_carries_the_checkout_s_folders_once(tmp_path):
    """setup.py's build_py copies csrc/'s sources and lava/'s files into the package (atsdbench/csrc/,
    atsdbench/lava/: what a wheel holds), and git tracks each once, in the checkout's folder."""
    setuptools = pytest.importorskip("setuptools")
    if int(setuptools.__version__.split(".")[0]) < 77:  # pyproject's build requirement
        pytest.skip(f"setuptools {setuptools.__version__} cannot build this project (the test extra asks >= 77)")
    tracked = built.tracked()
    assert not [n for n in tracked if n.startswith(("atsdbench/csrc/", "atsdbench/lava/"))]
    src = tmp_path / "src"
    for name in tracked:
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, src / name)
    p = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(tmp_path / "lib")],
                       cwd=src, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    made = {str(f.relative_to(tmp_path / "lib")) for f in (tmp_path / "lib").rglob("*") if f.is_file()}
    want = {"atsdbench/" + n for n in tracked if n.startswith("lava/") or n.startswith("csrc/")
            and n.endswith((".c", ".h", "/Makefile"))}
    assert {"atsdbench/lava/jobs/qemu-amd64.yaml", "atsdbench/lava/atsdbench.yaml",
            "atsdbench/lava/devices/qemu-amd64.jinja2", "atsdbench/csrc/atsd_main.c"} <= want <= made
    for name in want:
        assert (tmp_path / "lib" / name).read_bytes() == (ROOT / name[len("atsdbench/"):]).read_bytes(), name


@pytest.fixture(scope="module")
def installed(tmp_path_factory, wheel):
    """(a fresh venv's bin/ holding the wheel built from the sdist, the wheel's names, a folder outside
    the checkout).  The venv reaches numpy and the rest through this environment's site-packages as a
    plain path (its .pth files, an editable install's hook among them, are not run)."""
    tmp = tmp_path_factory.mktemp("install")
    env = built.build_env()
    names = set(zipfile.ZipFile(wheel).namelist())
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    bin_ = venv / "bin"
    py = bin_ / "python"
    purelib = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    (pathlib.Path(purelib) / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # --ignore-installed: the atsdbench that deps.pth reaches (this environment's, when it is not editable)
    # would otherwise be "already satisfied", and nothing installed into the venv
    p = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps",
                        "--no-index", "--ignore-installed", str(wheel)], capture_output=True, text=True,
                       timeout=300, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    away = tmp / "elsewhere"
    away.mkdir()
    return bin_, names, away, env


@pytest.mark.live
@pytest.mark.slow  # builds the sdist, the wheel (the core) and atsd
def test_the_wheel_carries_atsd_s_sources_and_builds_atsd_anywhere(installed):
    bin_, names, away, env = installed
    sources = {n for n in os.listdir(ROOT / "csrc") if n.endswith((".c", ".h")) or n == "Makefile"}
    assert {f"atsdbench/csrc/{n}" for n in sources} <= names
    assert "atsdbench/csrc/atsd" not in names and any(n.startswith("atsdbench/_atsd") for n in names)
    where = subprocess.run([bin_ / "python", "-c", "import atsdbench.guest.initramfs as i; "
                            "print(i.__file__); print(i.source_dir())"], cwd=away, capture_output=True,
                           text=True, check=True, env=env).stdout.split()
    assert where[0].startswith(str(bin_.parent)) and where[1].startswith(str(bin_.parent)), where
    # the core the wheel built from the sdist: its cdef cut from the sdist's csrc/atsd.h (build_atsd.py)
    names = subprocess.run([bin_ / "python", "-c", "from atsdbench.measure import core; "
                            "print(' '.join(o['name'] for o in core.options()))"], cwd=away, capture_output=True,
                           text=True, check=True, env=env).stdout.split()
    assert {"size", "strides", "output"} <= set(names), names
    env = dict(env, XDG_CACHE_HOME=str(away / "cache"))
    p = subprocess.run([bin_ / "atsdbench", "atsd", "-o", "atsd"], cwd=away, capture_output=True, text=True,
                       timeout=600, env=env)
    assert p.returncode == 0 and p.stdout.startswith("wrote atsd (atsd for "), p.stderr
    ran = subprocess.run([away / "atsd", "--help"], capture_output=True, text=True)
    assert ran.returncode == 0 and ran.stdout.startswith("usage: atsd"), ran.stderr
    p = subprocess.run([bin_ / "atsdbench", "atsd", "-o", "atsd"], cwd=away, capture_output=True, text=True,
                       env=env)
    assert p.returncode == 2 and "atsd exists: --force replaces it" in p.stderr


@pytest.mark.live
@pytest.mark.slow  # builds the sdist and the wheel (the core)
def test_lab_submit_fills_the_project_s_template_from_the_installed_wheel(installed):
    bin_, names, away, env = installed
    assert {f"atsdbench/{n}" for n in built.tracked() if n.startswith("lava/")} <= names
    env = {k: v for k, v in env.items() if k != "ATSDBENCH_LAVA"}
    p = subprocess.run([bin_ / "atsdbench", "lab", "submit", "fleet", "--kernel", "old=http://k/old",
                        "--kernel", "new=http://k/new", "--device-type", "qemu", "--dry-run", "--set",
                        "INITRD=http://k/i", "--set", "ROOTFS=http://k/r", "--set", "REPOSITORY=http://g",
                        "--set", "REVISION=main", "--set", "INSTALL=venv", "--set", "SOURCE=x",
                        "--set", "BASELINE=", "--", "--size", "16M"], cwd=away, capture_output=True, text=True,
                       timeout=300, env=env)
    assert p.returncode == 0, p.stderr
    first = sorted((away / "fleet" / "jobs").iterdir())[0].read_text()
    project = (ROOT / "lava" / "jobs" / "qemu-amd64.yaml").read_text()
    assert first.startswith(project.split("\n")[0]) and "url: http://k/old" in first
    assert "path: lava/atsdbench.yaml" in first and 'RUN_OPTIONS: "--size 16M"' in first


@pytest.mark.live
@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("qemu-system-x86_64") and os.path.isfile(KERNEL)),
                    reason="no qemu-system-x86_64, or no kernel (ATSD_GUEST_KERNEL, or scripts/x86-guest-check's "
                    "cached Debian kernel)")
def test_a_guest_boots_from_the_installed_wheel(installed):
    import json

    bin_, _, away, env = installed
    p = subprocess.run([bin_ / "atsdbench", "guest", "--kernel", KERNEL, "-o", away / "out", "--timeout", "300",
                        "--", "--size", "16M", "--rounds", "2", "--reps", "1", "--seed", "1"],
                       cwd=away, capture_output=True, text=True, timeout=900, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    [path] = (away / "out").glob("*.json")
    data = json.loads(path.read_text())
    assert data["host"]["virtualized"] == "qemu-tcg" and data["complete"]
