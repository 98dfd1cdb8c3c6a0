"""--gpu without a GPU: the PTX text, and the Python glue against a fake libcuda compiled here."""
import os
import re
import shutil
import subprocess

import pytest

import atsdbench
from atsdbench.measure import gpu

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def fake_cuda(tmp_path_factory):
    if not shutil.which("cc"):
        pytest.skip("no C compiler")
    out = tmp_path_factory.mktemp("cuda") / "libcuda.so.1"
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-Wall", "-o", str(out),
                    os.path.join(HERE, "support", "fake_libcuda.c")], check=True)
    return str(out)


@pytest.fixture
def env(fake_cuda, tmp_path, monkeypatch):
    log = tmp_path / "calls.log"
    monkeypatch.setenv("ATSDBENCH_LIBCUDA", fake_cuda)
    monkeypatch.setenv("FAKE_CUDA_LOG", str(log))
    monkeypatch.delenv("FAKE_CUDA_FAIL", raising=False)
    monkeypatch.delenv("FAKE_CUDA_PAGEABLE", raising=False)
    return log


def test_ptx_is_well_formed():
    assert re.search(r"^\.version \d+\.\d+$", gpu.PTX, re.M) and ".target sm_70" in gpu.PTX
    entry = re.search(r"\.visible \.entry (\w+)\(([^)]*)\)", gpu.PTX)
    assert entry.group(1) == gpu.KERNEL
    assert re.findall(r"\.param \.u64 (\w+)", entry.group(2)) == [
        "atsd_touch_base", "atsd_touch_npages", "atsd_touch_step"]
    assert "ld.volatile.global.u64" in gpu.PTX and gpu.PTX.count("{") == gpu.PTX.count("}")


@pytest.mark.live  # ptxas
@pytest.mark.parametrize("arch", ["sm_70", "sm_90"])
def test_ptx_assembles(tmp_path, arch):
    ptxas = shutil.which("ptxas")
    if not ptxas:
        pytest.skip("ptxas is not installed here")
    src = tmp_path / "touch.ptx"
    src.write_text(gpu.PTX)
    p = subprocess.run([ptxas, f"-arch={arch}", "-o", str(tmp_path / "touch.cubin"), str(src)],
                       capture_output=True, text=True)
    if p.returncode and arch != "sm_90" and "not defined for option" in p.stderr:
        pytest.skip(f"this ptxas no longer targets {arch}: {p.stderr.strip()}")
    assert p.returncode == 0, p.stderr


@pytest.mark.live  # fake_cuda compiles; this runs
def test_run_with_fake_gpu(env):
    r = atsdbench.run(size="16M", strides="64K,1M", rounds=1, reps=1, warmup=0, warmup_rounds=0, gpu=0, trace="off")
    assert r.complete and r.config["gpu"] == 0
    assert r.host["gpu"]["name"] == "Fake GPU" and r.host["gpu"]["compute_capability"] == "9.0"
    assert r.host["gpu"]["path"].startswith("HMM")
    assert (r.samples["gpu_touch_ns"] > 0).all()
    calls = env.read_text().splitlines()
    assert calls[0] == "cuInit" and "cuModuleLoadData ptx-ok" in calls
    assert calls.count(f"cuLaunchKernel npages={(16 << 20) // 4096} step={os.sysconf('SC_PAGE_SIZE')}") == 2
    assert calls[-2:] == ["cuModuleUnload", "cuDevicePrimaryCtxRelease_v2"]


@pytest.mark.live
@pytest.mark.parametrize("call", ["cuInit", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetName", "cuDriverGetVersion",
                                  "cuDeviceGetAttribute", "cuDevicePrimaryCtxRetain", "cuCtxSetCurrent",
                                  "cuModuleLoadData", "cuModuleGetFunction", "cuLaunchKernel", "cuCtxSynchronize"])
def test_each_driver_error_is_one_line(env, cli_process, tmp_path, monkeypatch, call):
    monkeypatch.setenv("FAKE_CUDA_FAIL", f"{call}=999")
    p = cli_process("run", "--gpu", "--size", "16M", "--strides", "1M", "--rounds", "1", "--reps", "1", "-o",
                    tmp_path / "g.json")
    assert p.returncode == 2
    assert p.stderr == f"atsdbench: --gpu: {call} failed: CUDA_ERROR_FAKE_999 (fake error 999)\n"
    assert not (tmp_path / "g.json").exists()
    log = env.read_text()
    if "cuDevicePrimaryCtxRetain" in log and call != "cuDevicePrimaryCtxRetain":
        assert "cuDevicePrimaryCtxRelease_v2" in log  # the context is released on the error path too


@pytest.mark.live
def test_launch_failure_after_passes_keeps_them(env, cli_process, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_CUDA_FAIL", "cuLaunchKernel=700")
    monkeypatch.setenv("FAKE_CUDA_FAIL_AFTER", "2")
    out = tmp_path / "g.json"
    p = cli_process("run", "--gpu", "--size", "16M", "--strides", "64K,1M", "--rounds", "2", "--reps", "1",
                    "--warmup", "0", "--warmup-rounds", "0", "--no-trace", "-o", out)
    assert p.returncode == 2
    assert p.stderr.strip().endswith("cuLaunchKernel failed: CUDA_ERROR_FAKE_700 (fake error 700)")
    r = atsdbench.load(str(out))
    assert not r.complete and len(r.samples) == 2


@pytest.mark.live
def test_not_pageable_says_neither_ats_nor_hmm(env, cli_process, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_CUDA_PAGEABLE", "0")
    p = cli_process("run", "--gpu", "0", "--size", "16M", "-o", tmp_path / "g.json")
    assert p.returncode == 2 and "neither ATS nor HMM" in p.stderr and len(p.stderr.splitlines()) == 1


@pytest.mark.live
def test_no_such_device(env, cli_process, tmp_path):
    p = cli_process("run", "--gpu", "3", "--size", "16M", "-o", tmp_path / "g.json")
    assert p.returncode == 2 and "has 1 CUDA device(s)" in p.stderr


@pytest.mark.live
def test_no_driver(cli_process, tmp_path, monkeypatch):
    monkeypatch.setenv("ATSDBENCH_LIBCUDA", str(tmp_path / "libcuda.so.1"))
    p = cli_process("run", "--gpu", "--size", "16M", "-o", tmp_path / "g.json")
    assert p.returncode == 2 and "cannot load" in p.stderr and len(p.stderr.splitlines()) == 1


def test_compare_warns_when_one_file_had_a_gpu(cli, fixtures, tmp_path):
    import json

    data = json.loads((fixtures / "after.json").read_text())
    data["config"]["gpu"] = 0
    (tmp_path / "gpu.json").write_text(json.dumps(data))
    p = cli("compare", str(fixtures / "before.json"), str(tmp_path / "gpu.json"))
    assert "differ in gpu: none in" in p.stderr
