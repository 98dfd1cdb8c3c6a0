"""lab submit against a fake LAVA server on 127.0.0.1 (tests/support/fake_lava.py): the jobs from a
template, A B B A per board and interleaved across boards, each recorded as its submit returns; every
fault one line; the token nowhere."""
import json
import os
import signal

import pytest

from fake_lava import TOKEN, FakeLava, lava  # noqa: F401  (lava: the fixture)

TEMPLATE = """device_type: qemu
job_name: atsdbench {NAME}
visibility: public
actions:
- deploy:
    images:
      kernel:
        url: {KERNEL}
- test:
    definitions:
    - parameters:
        RUN_OPTIONS: "{RUN_OPTIONS}"
"""


@pytest.fixture
def template(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(TEMPLATE)
    return path


def _submit(cli, lava, tmp_path, fleet, *extra, env=None):
    return cli("lab", "submit", fleet, "--kernel", "old=http://k.example/old", "--kernel",
               "new=http://k.example/new", "--device-type", "qemu", "--template", tmp_path / "job.yaml", *extra,
               env=env or lava.env(tmp_path))


def _manifest(fleet):
    return json.loads((fleet / "fleet.json").read_text())


def _no_token_anywhere(fleet, *processes):
    for p in processes:
        assert TOKEN not in p.stdout + p.stderr
    for root, _, names in os.walk(fleet):
        for name in names:
            assert TOKEN.encode() not in open(os.path.join(root, name), "rb").read(), name


def test_jobs_go_a_b_b_a_per_board_interleaved_and_each_is_recorded(cli, lava, tmp_path, template):
    fleet = tmp_path / "fleet"
    p = _submit(cli, lava, tmp_path, fleet, "--device", "qemu01", "--device", "qemu02", "--boots", "2",
                "--", "--rounds", "3")
    assert p.returncode == 0, p.stderr
    jobs = _manifest(fleet)["jobs"]
    order = [(j["requested"], j["side"], j["boot"]) for j in jobs]
    assert order == [("qemu01", "old", 1), ("qemu02", "old", 1), ("qemu01", "new", 1), ("qemu02", "new", 1),
                     ("qemu01", "new", 2), ("qemu02", "new", 2), ("qemu01", "old", 2), ("qemu02", "old", 2)]
    assert [j["id"] for j in jobs] == list(range(1, 9)) and all(j["state"] == "submitted" for j in jobs)
    # what the server got is what the manifest names: the side's kernel, its board's tag, the run options
    for j in jobs:
        definition = lava.jobs[j["id"]]["definition"]
        assert (fleet / j["definition"]).read_text() == definition
        assert f"url: http://k.example/{j['side']}" in definition
        assert definition.endswith(f'tags:\n- "{j["requested"]}"\n') and 'RUN_OPTIONS: "--rounds 3"' in definition
    assert _manifest(fleet)["server"] == f"http://127.0.0.1:{lava.port}/"
    assert all(ok for _, ok in lava.calls)  # every call carried the identity
    _no_token_anywhere(fleet, p)


def test_dry_run_writes_the_jobs_and_needs_no_server(cli, tmp_path, template):
    fleet = tmp_path / "fleet"
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}  # no identity at all
    p = cli("lab", "submit", fleet, "--kernel", "old=http://k/old", "--kernel", "new=http://k/new",
            "--device-type", "qemu", "--template", template, "--boots", "2", "--dry-run", env=env)
    assert p.returncode == 0, p.stderr
    assert len(os.listdir(fleet / "jobs")) == 4 and not (fleet / "fleet.json").exists()
    assert "none submitted" in p.stdout


def test_a_second_submit_refuses_without_add_and_adds_with_it(cli, lava, tmp_path, template):
    fleet = tmp_path / "fleet"
    assert _submit(cli, lava, tmp_path, fleet).returncode == 0
    p = _submit(cli, lava, tmp_path, fleet)
    assert p.returncode == 2 and "is a fleet already (2 jobs): lab submit --add adds to it" in p.stderr
    assert len(_manifest(fleet)["jobs"]) == 2 and len(lava.jobs) == 2
    p = _submit(cli, lava, tmp_path, fleet, "--add")
    assert p.returncode == 0, p.stderr
    jobs = _manifest(fleet)["jobs"]
    assert [j["id"] for j in jobs] == [1, 2, 3, 4] and [j["boot"] for j in jobs] == [1, 1, 2, 2]
    p = cli("lab", "submit", fleet, "--kernel", "old=http://k.example/other", "--kernel", "new=http://k.example/new",
            "--device-type", "qemu", "--template", template, "--add", env=lava.env(tmp_path))
    assert p.returncode == 2 and "other kernels" in p.stderr and len(_manifest(fleet)["jobs"]) == 4


def test_a_fleet_of_another_server_is_refused(cli, lava, tmp_path, template):
    fleet = tmp_path / "fleet"
    assert _submit(cli, lava, tmp_path, fleet).returncode == 0
    other = FakeLava().start()
    try:
        p = _submit(cli, other, tmp_path, fleet, "--add")
        assert p.returncode == 2 and f"is a fleet of http://127.0.0.1:{lava.port}/, not of" in p.stderr
        p = cli("lab", "collect", fleet, env=other.env(tmp_path))
        assert p.returncode == 2 and len(p.stderr.splitlines()) == 1 and "is a fleet of" in p.stderr
        assert not other.jobs
    finally:
        other.stop()


def test_a_placeholder_left_unfilled_is_one_line_before_anything_is_submitted(cli, lava, tmp_path):
    fleet = tmp_path / "fleet"
    p = cli("lab", "submit", fleet, "--kernel", "old=file:///k/old", "--kernel", "new=file:///k/new",
            "--device-type", "qemu", "--set", "ROOTFS=file:///r", env=lava.env(tmp_path))  # the project's template
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1
    assert "{BASELINE}, {INITRD}, {INSTALL}, {REPOSITORY}, {REVISION}, {SOURCE} left unfilled" in p.stderr
    assert not lava.jobs and not (fleet / "fleet.json").exists()


@pytest.mark.parametrize("extra, words", [
    (("--device", "qemu09"), "has no device 'qemu09'"),
    (("--tag", "power9"), "has no tag power9"),
    (("--require-tag", "gpu"), "has no tag gpu"),
])
def test_an_unknown_device_or_tag_is_refused_before_anything_is_submitted(cli, lava, tmp_path, template, extra,
                                                                          words):
    p = _submit(cli, lava, tmp_path, tmp_path / "fleet", *extra)
    assert p.returncode == 2 and words in p.stderr and len(p.stderr.splitlines()) == 1, p.stderr
    assert not lava.jobs


def test_an_unknown_device_type_and_a_device_without_its_tag(cli, tmp_path, template):
    lava = FakeLava(devices={"qemu01": ("qemu", []), "x1": ("x86", ["x1"])}).start()
    try:
        p = cli("lab", "submit", tmp_path / "f", "--kernel", "a=http://k/a", "--kernel", "b=http://k/b",
                "--device-type", "arm", "--template", template, env=lava.env(tmp_path))
        assert p.returncode == 2 and "has no device type 'arm'" in p.stderr
        p = _submit(cli, lava, tmp_path, tmp_path / "f", "--device", "qemu01")
        assert p.returncode == 2 and "device qemu01 has no tag 'qemu01'" in p.stderr
        p = _submit(cli, lava, tmp_path, tmp_path / "f", "--device", "x1")
        assert p.returncode == 2 and "device x1 is of type 'x86', not 'qemu'" in p.stderr
        assert not lava.jobs
    finally:
        lava.stop()


def test_a_server_that_does_not_answer_and_a_wrong_token(cli, lava, tmp_path, template):
    p = _submit(cli, lava, tmp_path, tmp_path / "f", env=lava.env(tmp_path, token="wrong"))
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1
    assert "refused admin's token (401" in p.stderr and "wrong" not in p.stderr
    port = lava.port
    lava.stop()
    env = dict(lava.env(tmp_path), LAVA_URI=f"http://127.0.0.1:{port}/RPC2")
    p = _submit(cli, lava, tmp_path, tmp_path / "g", env=env)
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1
    assert f"LAVA server http://127.0.0.1:{port}/ does not answer (Connection refused)" in p.stderr
    assert TOKEN not in p.stderr


def test_a_server_gone_in_the_middle_leaves_a_true_manifest(cli, lava, tmp_path, template):
    fleet = tmp_path / "fleet"
    lava.submit_hook = lambda job: job == 3 and lava.stop()  # the 4th submit finds no server
    p = _submit(cli, lava, tmp_path, fleet, "--boots", "2")
    assert p.returncode == 2 and "after 3 of 4 jobs, each in" in p.stderr and len(p.stderr.splitlines()) == 1
    assert [j["id"] for j in _manifest(fleet)["jobs"]] == sorted(lava.jobs) == [1, 2, 3]


def test_ctrl_c_during_submit_stops_after_that_job_with_it_recorded(cli, lava, tmp_path, template):
    fleet = tmp_path / "fleet"
    lava.submit_hook = lambda job: job == 2 and os.kill(os.getpid(), signal.SIGINT)
    p = _submit(cli, lava, tmp_path, fleet, "--boots", "3")
    assert p.returncode == 130 and "stopped after 2 of 6 jobs" in p.stderr
    assert [j["id"] for j in _manifest(fleet)["jobs"]] == sorted(lava.jobs) == [1, 2]


def test_an_identity_of_lavacli_yaml(cli, lava, tmp_path, template):
    config = tmp_path / ".config"
    config.mkdir()
    (config / "lavacli.yaml").write_text(f"default:\n  uri: http://127.0.0.1:1/RPC2\nlab:\n  uri: {lava.uri}\n"
                                         f"  username: admin\n  token: '{TOKEN}'\n")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    p = _submit(cli, lava, tmp_path, tmp_path / "f", "--identity", "lab", env=env)
    assert p.returncode == 0, p.stderr
    assert len(lava.jobs) == 2 and all(ok for _, ok in lava.calls)
    p = _submit(cli, lava, tmp_path, tmp_path / "g", "--identity", "nope", env=env)
    assert p.returncode == 2 and "no identity 'nope' (it has default, lab)" in p.stderr


def test_the_project_s_template_is_the_package_s_own_wherever_submit_runs(cli, tmp_path, monkeypatch):
    """An installed package carries atsdbench/lava/ (setup.py, atsdbench/carried.py): that template is
    filled from any folder; $ATSDBENCH_LAVA names another; a broken install is one line."""
    import atsdbench
    from atsdbench.lab import jobs

    package = os.path.dirname(atsdbench.__file__)
    mine = os.path.join(package, "lava")
    monkeypatch.delenv("ATSDBENCH_LAVA", raising=False)
    assert jobs.lava_dir() == (mine if os.path.isdir(mine) else os.path.join(os.path.dirname(package), "lava"))
    other = tmp_path / "other"
    (other / "jobs").mkdir(parents=True)
    (other / "jobs" / "qemu-amd64.yaml").write_text(TEMPLATE.replace("atsdbench {NAME}", "mine {NAME}"))
    away = tmp_path / "away"
    away.mkdir()
    args = ("lab", "submit", "fleet", "--kernel", "old=http://k/old", "--kernel", "new=http://k/new",
            "--device-type", "qemu", "--dry-run")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "ATSDBENCH_LAVA": str(other)}
    p = cli(*args, cwd=away, env=env)
    assert p.returncode == 0, p.stderr
    [job] = sorted((away / "fleet" / "jobs").iterdir())[:1]
    assert "job_name: mine old boot 1 on any" in job.read_text()
    p = cli(*args[:2], "fleet2", *args[3:], cwd=away, env=dict(env, ATSDBENCH_LAVA=str(tmp_path / "none")))
    assert p.returncode == 2 and p.stderr == ("atsdbench: no LAVA job template in this install (reinstall "
                                              "atsdbench, or give --template FILE)\n")
    assert not (away / "fleet2").exists()
