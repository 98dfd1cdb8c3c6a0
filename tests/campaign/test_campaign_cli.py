"""campaign init/status/step and compare/plot/model DIR through the command line, in-process."""
import json
import os

import pytest

from atsdbench.campaign import step as steps, unit
from atsdbench.data import campaign as store
from atsdbench.errors import UsageError

import campaign_fakes as fakes
from conftest import unwrap


@pytest.fixture
def images(tmp_path):
    return (fakes.bzimage(tmp_path / "vmlinuz-6.1.0-47-amd64", fakes.A_BANNER),
            fakes.bzimage(tmp_path / "vmlinuz-6.12.117+deb12-amd64", fakes.B_BANNER))


def test_init_writes_the_plan_with_what_each_image_says(cli, tmp_path, images):
    d = str(tmp_path / "c")
    r = cli("campaign", "init", d, "--kernel", f"old={images[0]}", "--kernel",
            f"new={images[1]},append=mitigations=off", "--boots", "3", "--method", "manual", "--",
            "--size", "16M", "--rounds", "3")
    assert r.returncode == 0, r.stderr
    assert "old,new,old,new,old,new" in r.stdout and "by manual" in r.stdout
    plan = json.load(open(os.path.join(d, "campaign.json")))
    assert [k["release"] for k in plan["kernels"]] == ["6.1.0-47-amd64", "6.12.117+deb12-amd64"]
    assert plan["kernels"][1]["append"] == "mitigations=off"
    assert plan["run_options"] == ["--size", "16M", "--rounds", "3"] and plan["boots"] == 3
    r = cli("campaign", "init", d, "--kernel", f"old={images[0]}", "--kernel", f"new={images[1]}")
    assert r.returncode == 2 and "is a campaign already" in r.stderr


@pytest.mark.parametrize("extra,expect", [
    (["--", "--bogus"], "run: no option '--bogus'"),
    (["--", "--size", "lots"], "size 'lots' is not a size"),
    (["--", "-o", "x.json"], "no -o in the run options"),
    (["--schedule", "random"], "--schedule must be alternate or abba"),
    (["--method", "pxe"], "--method must be kexec, grub or manual"),
    (["--boots", "0"], "--boots must be 1 to 1000"),
    # run's own refusal after the plan check: a campaign found it at its first boot, exit 2 every boot
    (["--", "--workload", "tlb_flush2", "--size", "1M", "--breakdown"], "--breakdown adds passes of an --op"),
])
def test_init_refuses_bad_options_now_in_one_line(cli, tmp_path, images, extra, expect):
    d = str(tmp_path / "c")
    r = cli("campaign", "init", d, "--kernel", f"old={images[0]}", "--kernel", f"new={images[1]}", *extra)
    # argparse's refusals come after a usage line of their own
    lines = [x for x in r.stderr.strip().splitlines() if not x.startswith("usage: ")]
    assert r.returncode == 2 and expect in r.stderr and len(lines) == 1, r.stderr
    assert not os.path.exists(os.path.join(d, "campaign.json"))


def test_init_refuses_one_kernel_and_twins(cli, tmp_path, images):
    r = cli("campaign", "init", str(tmp_path / "c"), "--kernel", f"old={images[0]}")
    assert r.returncode == 2 and "two or more --kernel" in r.stderr
    r = cli("campaign", "init", str(tmp_path / "c"), "--kernel", f"a={images[0]}", "--kernel", f"b={images[0]}")
    assert r.returncode == 2 and "could not be told apart" in r.stderr


def _ran(tmp_path, images, boots=2):
    """A campaign whose boots ran (the fakes' /proc and runner), alternating."""
    d = str(tmp_path / "c")
    fakes.plan(d, [("old", fakes.A_BANNER, images[0]), ("new", fakes.B_BANNER, images[1])], boots=boots)
    proc, method = str(tmp_path / "proc"), fakes.Method()
    runner = fakes.Runner(proc)
    banner = fakes.A_BANNER
    for i in range(2 * boots):
        fakes.proc(proc, f"{i + 1:02d}aaaaaa-0000-4000-8000-000000000000", banner)
        steps.Step(d, method, proc=proc, runner=runner, out=lambda line: None)()
        banner = fakes.B_BANNER if method.arranged and method.arranged[-1] == "new" else fakes.A_BANNER
    return d


def test_status_shows_progress_and_next(cli, tmp_path, images):
    d = str(tmp_path / "c")
    fakes.plan(d, [("old", fakes.A_BANNER, images[0]), ("new", fakes.B_BANNER, images[1])], boots=2)
    r = cli("campaign", "status", d)
    assert r.returncode == 0 and "0/2" in r.stdout and "next: old" in r.stdout
    d = _ran(tmp_path / "x", images)
    r = cli("campaign", "status", d)
    assert "boots done in order: old,new,old,new" in r.stdout and "complete" in r.stdout


def test_status_of_a_directory_that_is_no_campaign(cli, tmp_path):
    r = cli("campaign", "status", str(tmp_path))
    assert r.returncode == 2 and "not a campaign directory" in r.stderr


def test_compare_dir_is_the_replicate_design_with_the_campaign_in_the_legend(cli, tmp_path, images):
    d = _ran(tmp_path, images)
    r = cli("compare", d)
    assert r.returncode == 0, r.stderr
    assert "N (base/new) = 2/2" in r.stdout or "2/2" in r.stdout
    assert "observation = one file" in r.stdout or "one file" in r.stdout
    assert "boots in order ABAB; 3 of 3 consecutive boots switch kernel" in r.stdout
    assert "A = old: boot_ids " in r.stdout and "B = new: boot_ids " in r.stdout
    c = store.load(d)
    assert all(e["boot_id"][:8] in r.stdout for e in c.done)
    js = cli("compare", d, "--format", "json")
    rows = json.loads(js.stdout)
    assert {row["n_base"] for row in rows} == {2} and {row["base_label"] for row in rows} == {"old"}


def test_compare_dir_refuses_a_plain_directory_and_an_empty_side(cli, tmp_path, images):
    r = cli("compare", str(tmp_path))
    assert r.returncode == 2 and "one campaign directory alone" in r.stderr
    d = str(tmp_path / "c")
    fakes.plan(d, [("old", fakes.A_BANNER, images[0]), ("new", fakes.B_BANNER, images[1])])
    r = cli("compare", d)
    assert r.returncode == 2 and "has no finished boot yet" in r.stderr


def test_a_stray_file_in_a_campaign_is_warned_about_not_read(cli, tmp_path, images):
    d = _ran(tmp_path, images)
    src = os.path.join(d, store.load(d).done[0]["file"])
    with open(src) as f, open(os.path.join(d, "old", "mine.json"), "w") as g:
        g.write(f.read())
    r = cli("compare", d)
    assert "mine.json is not in the campaign's journal: left out" in unwrap(r.stderr) and "2/2" in r.stdout


def test_model_and_plot_take_a_campaign(cli, tmp_path, images):
    d = _ran(tmp_path, images)
    r = cli("model", d)
    assert r.returncode == 0 and "old" in r.stdout and "new" in r.stdout, r.stderr
    pytest.importorskip("matplotlib")
    out = str(tmp_path / "p.png")
    r = cli("plot", d, "-o", out)
    assert r.returncode == 0 and os.path.getsize(out) > 0, r.stderr


def test_step_dry_run_through_the_cli(cli, tmp_path, images):
    """Only --dry-run runs from the command line here: a real step would measure and arrange a boot."""
    d = str(tmp_path / "c")
    fakes.plan(d, [("old", fakes.A_BANNER, images[0]), ("new", fakes.B_BANNER, images[1])])
    r = cli("campaign", "step", d, "--dry-run")
    # this machine runs neither planned kernel: recorded (would be), not measured
    assert r.returncode == 1 and "not in the plan" in r.stdout and "would record foreign" in r.stdout, r.stdout
    assert not os.path.exists(os.path.join(d, "journal"))


def test_unit_file_and_install_with_a_fake_systemctl(tmp_path):
    d = str(tmp_path / "c")
    name = unit.unit_name(d)
    body = unit.unit_text(d, name, python="/usr/bin/python3", settle=30)
    assert "ExecStartPre=/bin/sleep 30" in body
    assert f"ExecStart=/usr/bin/python3 -m atsdbench campaign step --disable {name} {os.path.abspath(d)}" in body
    assert "WantedBy=multi-user.target" in body and "Type=oneshot" in body
    calls = []

    def run(cmd, **kw):
        import subprocess
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, "", "")
    path, got = unit.install(d, unit_dir=str(tmp_path), run=run)
    assert got == name and open(path).read() == unit.unit_text(d, name)
    assert calls == [["systemctl", "daemon-reload"], ["systemctl", "enable", name]]


def test_init_with_the_atsd_runner_checks_atsd_s_options(cli, tmp_path, images):
    d = str(tmp_path / "c")
    r = cli("campaign", "init", d, "--kernel", f"old={images[0]}", "--kernel", f"new={images[1]}", "--runner",
            "atsd", "--", "--until", "1%")
    assert r.returncode == 2 and "--until" in r.stderr and len(r.stderr.splitlines()) == 1
    r = cli("campaign", "init", d, "--kernel", f"old={images[0]}", "--kernel", f"new={images[1]}", "--runner",
            "atsd", "--method", "manual", "--", "--size", "16M", "--rounds", "1")
    assert r.returncode == 0, r.stderr
    plan = json.load(open(os.path.join(d, "campaign.json")))
    assert plan["runner"] == "atsd" and plan["run_options"] == ["--size=16M", "--rounds=1"]


def test_the_unit_doubles_systemd_specifiers_and_refuses_what_it_cannot_quote(tmp_path):
    """systemd expands %h and $X in a unit: a campaign directory named with them must reach the step as it
    is; a quote or backslash, which systemd's quoting cannot carry inside a word, is refused in one line."""
    d = str(tmp_path / "c 50% $HOME")
    name = unit.unit_name(d)
    body = unit.unit_text(d, name, python="/usr/bin/python3", settle=0)
    where = os.path.abspath(d)
    assert f"ExecStart=/usr/bin/python3 -m atsdbench campaign step --disable {name} '{where}'".replace(
        "%", "%%").replace("$", "$$") in body
    assert f"Description=atsdbench campaign in {where.replace('%', '%%')}\n" in body
    assert f"RequiresMountsFor='{where.replace('%', '%%')}'\n" in body
    for bad in ("it's", 'a"b', "a\\b", "a\nb"):
        with pytest.raises(UsageError, match="a unit cannot hold"):
            unit.unit_text(str(tmp_path / bad), name)


def test_init_on_a_full_disk_leaves_no_empty_directory(cli, full_disk, images):
    d = str(full_disk / "c")
    r = cli("campaign", "init", d, "--kernel", f"old={images[0]}", "--kernel", f"new={images[1]}", "--method",
            "manual", "--", "--size", "16M")
    assert r.returncode == 2 and "No space left on device" in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
    assert not os.path.exists(d)
