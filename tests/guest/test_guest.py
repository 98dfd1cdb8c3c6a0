"""`atsdbench guest` (atsdbench/guest/): image detection, the machine, run options,
the qemu command line and the console, all without booting; the boots themselves are @pytest.mark.live."""
import base64
import gzip
import os
import re
import shutil
import struct
import sys

import pytest

from atsdbench.errors import UsageError
from atsdbench.guest import console, home, image, initramfs, options, qemu
from atsdbench.measure import core


def elf(path, machine, little=True, banner=True):
    e = "<" if little else ">"
    head = b"\x7fELF" + bytes([2, 1 if little else 2, 1]) + bytes(9)
    head += struct.pack(e + "HHI", 2, machine, 1) + bytes(64 - 24)
    path.write_bytes(head + bytes(64) + (b"Linux version 6.1.0-test (gcc) #1 SMP" if banner else b""))
    return str(path)


def bzimage(path, version="6.12.0-test (x@y) #1"):
    data = bytearray(0x4000)
    data[0x1FE:0x200] = b"\x55\xaa"
    data[0x202:0x206] = b"HdrS"
    struct.pack_into("<H", data, 0x20E, 0x1000)
    data[0x1200:0x1200 + len(version)] = version.encode()
    path.write_bytes(bytes(data))
    return str(path)


def arm64_image(path):
    data = bytearray(0x100)
    data[0x38:0x3C] = b"ARM\x64"
    path.write_bytes(bytes(data))
    return str(path)


def test_image_formats_from_the_header(tmp_path):
    assert image.detect_image(elf(tmp_path / "vmlinux", 21)) == ("ppc64le", "vmlinux")
    assert image.detect_image(bzimage(tmp_path / "bzImage")) == ("x86_64", "bzImage")
    assert image.detect_image(arm64_image(tmp_path / "Image")) == ("aarch64", "Image")
    with gzip.open(tmp_path / "Image.gz", "wb") as f:
        f.write((tmp_path / "Image").read_bytes())
    assert image.detect_image(str(tmp_path / "Image.gz")) == ("aarch64", "Image.gz")
    from atsdbench.campaign import plan

    assert plan.image_identity(str(tmp_path / "bzImage"))[0] == "6.12.0-test"


@pytest.mark.parametrize("make,message", [
    (lambda p: (p.write_text("root:x:0:0\n"), str(p))[1], "is not a kernel image (no vmlinux, bzImage or arm64"),
    (lambda p: elf(p, 21, banner=False), "is an ELF file but not a Linux kernel"),
    (lambda p: elf(p, 21, little=False), "is a big-endian ppc64 kernel"),
    (lambda p: elf(p, 62), "is an x86_64 vmlinux (ELF): give the bzImage"),
    (lambda p: elf(p, 183), "is an arm64 vmlinux (ELF): give the Image"),
])
def test_not_a_bootable_image_is_one_line(tmp_path, make, message):
    path = make(tmp_path / "k")
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")) as e:
        image.detect_image(path)
    assert "\n" not in str(e.value)
    with pytest.raises(UsageError, match="No such file"):
        image.detect_image(str(tmp_path / "missing"))


def test_machine_is_guessed_from_the_arch_and_checked_against_it():
    assert image.choose_machine("ppc64le", None, "k") == "power9"
    assert image.choose_machine("x86_64", None, "k") == "x86_64"
    assert image.choose_machine("aarch64", None, "k") == "aarch64"
    assert image.choose_machine("ppc64le", "power9-hash", "k") == "power9-hash"
    with pytest.raises(UsageError, match="--kernel k is an x86_64 kernel; --machine power8 boots ppc64le"):
        image.choose_machine("x86_64", "power8", "k")
    with pytest.raises(UsageError, match="--machine must be one of power9, power9-hash, power8, x86_64, aarch64"):
        image.choose_machine("ppc64le", "power10", "k")


def checked(*words):
    return options.atsd_words(options.check_run_options(list(words), core.options()))


def test_run_options_are_atsd_s():
    assert checked("--bystanders", "0,1", "--size=64M", "--latency", "--seed", "1") == \
        ["--bystanders=0,1", "--size=64M", "--latency", "--seed=1"]
    assert checked() == []
    assert checked("--op", "madvise,munmap") == ["--op=madvise,munmap"]  # the guest's atsd times them too


@pytest.mark.parametrize("words,message", [
    (["--gpu", "0"], "--gpu is `atsdbench run`'s only: atsd has no --gpu"),
    (["--until", "5%"], "--until is `atsdbench run`'s only"),
    (["--bogus"], "atsd has no option --bogus"),
    (["-o", "x"], "-o is guest's own: it names the result files"),
    (["--output=x"], "--output is guest's own"),
    (["--size"], "--size needs a value (SIZE)"),
    (["--latency=1"], "--latency takes no value"),
    (["file.txt"], "run option 'file.txt' is not an option"),
    (["--label", "a b"], "values with spaces"),
])
def test_options_atsd_lacks_are_refused(words, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        checked(*words)


def test_every_option_atsd_has_is_accepted():
    for o in core.options():
        if o["atsd"] and o["name"] != "output":
            value = [] if o["metavar"] is None else ["1"]
            assert checked(f"--{o['name']}", *value)


def test_qemu_command_lines():
    cmd = qemu.qemu_command("power9-hash", "vmlinux", "initrd", "/tmp/c.log", smp=2, mem="2G", append="nosmt")
    assert cmd[:5] == ["qemu-system-ppc64", "-M", "pseries", "-cpu", "power9"]
    assert cmd[cmd.index("-accel") + 1] == "tcg" and cmd[cmd.index("-serial") + 1] == "file:/tmp/c.log"
    assert cmd[-1] == "console=hvc0 quiet panic=-1 disable_radix nosmt"
    assert "-no-reboot" in cmd and "-nodefaults" in cmd and cmd[cmd.index("-kernel") + 1] == "vmlinux"
    x86 = qemu.qemu_command("x86_64", "bzImage", "i", "c", smp=4, mem="1G")
    assert x86[0] == "qemu-system-x86_64" and x86[-1] == "console=ttyS0 quiet panic=-1"
    assert x86[x86.index("-smp") + 1] == "4" and x86[x86.index("-m") + 1] == "1G"
    kvm = qemu.qemu_command("x86_64", "bzImage", "i", "c", accel="kvm")
    assert kvm[kvm.index("-accel") + 1] == "kvm" and kvm[kvm.index("-cpu") + 1] == "host"
    arm = qemu.qemu_command("aarch64", "Image", "i", "c")
    assert arm[:5] == ["qemu-system-aarch64", "-M", "virt", "-cpu", "max"] and "console=ttyAMA0" in arm[-1]
    assert home.result_name("6.1.0-57-powerpc64le", "power9", "ppc64le") == "6.1.0-57-powerpc64le.json"
    assert home.result_name("6.1.0-57-powerpc64le", "power9-hash", "ppc64le") == \
        "6.1.0-57-powerpc64le-power9-hash.json"
    assert home.result_name("a/b c", "x86_64", "x86_64") == "a_b_c.json"


def test_cpio_is_newc(tmp_path):
    data = initramfs.cpio([("etc", 0o40755, None), ("etc/atsd.args", 0o100644, b"--size=64M\n")])
    assert data.startswith(b"070701") and b"etc/atsd.args\0" in data and data.endswith(b"\0" * 4) is not None
    assert b"TRAILER!!!" in data and len(data) % 4 == 0
    if shutil.which("cpio"):
        import subprocess

        p = subprocess.run(["cpio", "-t", "--quiet"], input=data, capture_output=True)
        assert p.stdout.decode().split() == ["etc", "etc/atsd.args"]


def test_console_of_a_real_guest(fixtures):
    """power-check's radix console: values, the atsd blocks, and the first atsd output imports."""
    from atsdbench.data import atsd_output

    text = (fixtures / "power" / "power9-radix.console").read_text()
    values, blocks, errors = console.parse_console(text)
    assert values["MMU"] == "Radix" and values["page_size"] == "65536" and errors == []
    assert [b["attrs"] for b in blocks if b["name"] == "atsd"][0] == {"size": "64M", "bystanders": "0"}
    values, output, table = console.atsd_output(text)
    result = atsd_output.to_result(output)
    assert result.host["mmu"] == "Radix" and result.complete and table.startswith("mprotect(PROT_NONE) rate")


def test_console_failures_say_what_and_show_the_tail(fixtures):
    text = (fixtures / "power" / "power9-radix.console").read_text()
    with pytest.raises(UsageError, match=r"the guest hung: killed after 60 s; console tail:\n") as e:
        console.atsd_output(text[:2000], qemu_rc=None, timeout=60)
    assert str(e.value).count("\n") <= 9
    with pytest.raises(UsageError, match=r"the kernel did not reach /init \(qemu exit 1: qemu: bad\)"):
        console.atsd_output("[    0.0] Kernel panic - not syncing: VFS\n", qemu_rc=1, qemu_messages="qemu: bad\n")
    cut = text[:text.index("@@ end atsd")]
    with pytest.raises(UsageError, match="the guest stopped before atsd's output was complete"):
        console.atsd_output(cut)
    failed = "@@ guest\n@@ begin atsd\n@@ end atsd rc=2\n@@ atsd-error atsd: --size: bad size\n@@ done\n"
    with pytest.raises(UsageError, match="atsd in the guest failed: atsd: --size: bad size"):
        console.atsd_output(failed)


def test_elf_arch_tells_static_from_dynamic(tmp_path):
    assert image.elf_arch(elf(tmp_path / "v", 21)) == ("ppc64le", True)
    assert image.elf_arch("/bin/sh")[1] is False


def test_bad_input_is_one_line_before_anything_boots(cli, tmp_path):
    kernel = bzimage(tmp_path / "bzImage")
    for args, message in [
        (["--kernel", "/etc/passwd"], "is not a kernel image"),
        (["--kernel", kernel, "--machine", "power9"], "is an x86_64 kernel; --machine power9 boots ppc64le"),
        (["--kernel", kernel, "--machine", "sparc"], "--machine must be one of"),
        (["--kernel", kernel, "--", "--gpu", "0"], "atsd has no --gpu"),
        (["--kernel", kernel, "--", "--size", "lots"], "size 'lots' is not a size"),
        ([], "guest needs --kernel IMAGE"),
        (["--kernel", kernel, "--mem", "lots"], "--mem must be a size such as 2G"),
        (["--kernel", kernel, "--smp", "0"], "--smp at least 1"),
        (["--kernel", kernel, "--accel", "hvf"], "--accel must be tcg or kvm"),
        (["--kernel", kernel, "--initrd", "/etc/passwd"], "--initrd /etc/passwd is not a cpio archive"),
        (["--kernel", kernel, "--initrd", tmp_path / "none.cpio"], "none.cpio: No such file"),
        (["--kernel", kernel, "--trace-buffer", "1K"], "--trace-buffer must be a size of at least 4K per CPU"),
        (["--kernel", kernel, "--trace-buffer", "lots"], "--trace-buffer 'lots' is not a size"),
        (["--kernel", kernel, "--", "--size", "16M", "--"], "an empty run between two `--`"),
        (["--kernel", kernel, "--command", " "], "--command needs a shell command line"),
        (["--kernel", kernel, "--", "--size", "16M", "--", "--tracepoints", "tlbie"], "'tlbie' is not SUBSYSTEM/EVENT"),
        (["--kernel", kernel, "--", "--size", "16M", "--", "--gpu", "0"], "atsd has no --gpu"),
        (["--kernel", kernel, "--timeout", "0"], "--timeout must be at least 1 s"),
        (["--kernel", kernel, "--timeout", "100", "--", "--runs", "2", "--gap", "50s", "--", "--runs", "2",
          "--gap", "1m"], "--timeout 100 is not longer than the runs' --gap and --spread sleeps alone (110 s)"),
        (["--kernel", kernel, "--timeout", "600", "--", "--rounds", "5", "--spread", "20m"],
         "--timeout 600 is not longer than the runs' --gap and --spread sleeps alone (960 s)"),
    ]:
        p = cli("guest", "-o", tmp_path / "out", *args)
        assert p.returncode == 2 and p.stdout == "" and len(p.stderr.splitlines()) == 1, (args, p.stderr)
        assert message in p.stderr, (args, p.stderr)
    assert not (tmp_path / "out").exists()


def test_the_default_timeout_grows_by_the_gap_sleeps():
    assert options.guest_timeout(None, 0) == options.GUEST_TIMEOUT
    assert options.guest_timeout(None, 7 * 150.0) == options.GUEST_TIMEOUT + 1050  # -- --runs 8 --gap 150s
    assert options.guest_timeout(None, 0.4) == options.GUEST_TIMEOUT + 1
    assert options.guest_timeout(1200, 1050.0) == 1200
    assert core.least_sleep(8, 150.0, 5, 0.0) == 1050.0
    assert core.least_sleep(1, 20.0, 5, 100.0) == 80.0  # the 5th round starts 4/5 of the spread in
    assert core.least_sleep(3, 20.0, 5, 100.0) == 80.0 * 3  # sub-runs longer than the gap: back to back
    assert core.least_sleep(3, 100.0, 2, 10.0) == 2 * 100.0 + 5.0


def test_missing_qemu_names_the_debian_package(cli, tmp_path):
    kernel = elf(tmp_path / "vmlinux", 21)
    env = dict(os.environ, PATH=str(tmp_path / "empty"), HOME=str(tmp_path))
    import sys

    p = cli("guest", "--kernel", kernel, env=dict(env, PATH=os.path.dirname(sys.executable)))
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1
    assert p.stderr.startswith("atsdbench: guest needs qemu-system-ppc") and "apt-get install" in p.stderr


LIVE_KERNEL = os.environ.get("ATSD_GUEST_KERNEL")  # a bzImage or ppc64le vmlinux to boot


@pytest.mark.live
@pytest.mark.skipif(not LIVE_KERNEL, reason="ATSD_GUEST_KERNEL names no kernel image to boot")
def test_guest_boots_and_imports(cli, tmp_path):
    import json

    p = cli("guest", "--kernel", LIVE_KERNEL, "-o", tmp_path, "--timeout", "300", "--",
            "--size", "16M", "--rounds", "2", "--reps", "1", "--bystanders", "0,1", "--seed", "1",
            cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert p.returncode == 0, p.stderr
    [path] = tmp_path.glob("*.json")
    data = json.loads(path.read_text())
    assert data["host"]["virtualized"] == "qemu-tcg" and data["complete"]
    assert path.name == data["host"]["kernel_release"] + ".json" or "-power" in path.name


def test_power_check_s_verdict_on_guest_results(fixtures, script, monkeypatch, capsys):
    """scripts/power_verdict.py --result: atsdbench guest's result files against the flush rule, with the
    ceilings the guest's debugfs gave (recorded in host).  Its main() in this process: --result starts none."""
    power_verdict = script("power_verdict")

    def verdict(name, mmu, path):
        monkeypatch.setattr(sys, "argv", ["power_verdict.py", "--guest", name, "--mmu", mmu, "--cpu", "POWER9",
                                          "--out", "/nonexistent", "--result", str(path)])
        rc = power_verdict.main()
        out, err = capsys.readouterr()
        assert err == "", err
        return rc, out.strip()

    rc, line = verdict("power9", "Radix", fixtures / "guest" / "6.1.0-57-powerpc64le.json")
    assert rc == 0 and "b0 (ceiling 256):" in line and "2M 32/0, 4M 64/0" in line and "4M 3/1" in line, line
    rc, line = verdict("power9-hash", "Hash", fixtures / "guest" / "6.1.0-57-powerpc64le-power9-hash.json")
    assert rc == 0 and "b0: 64K 1+0, 1M 0+4, 2M 0+8, 4M 0+16" in line, line
    rc, line = verdict("power9", "Hash", fixtures / "guest" / "6.1.0-57-powerpc64le.json")
    assert rc == 1 and line.startswith("power9 FAILED: the guest booted MMU Radix"), line


@pytest.mark.live
@pytest.mark.skipif(not LIVE_KERNEL, reason="ATSD_GUEST_KERNEL names no kernel image to boot")
def test_a_hung_guest_is_killed_and_reported(cli, tmp_path):
    p = cli("guest", "--kernel", LIVE_KERNEL, "-o", tmp_path, "--timeout", "2", "--", "--size", "16M",
            cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert p.returncode == 1 and "the guest hung: killed after 2 s; console tail:" in p.stderr
    assert list(tmp_path.glob("*.failed.console")) and not list(tmp_path.glob("*.json"))


# ---- several runs, tracepoints, a command, added archives, KVM: without booting ----

def test_runs_are_split_at_each_dash_dash_and_tracepoints_are_guest_s():
    assert options.split_runs(["--size", "64M", "--", "--size", "16M"]) == [["--size", "64M"], ["--size", "16M"]]
    assert options.split_runs([]) == [[]]
    checked, events = options.check_run(["--size", "16M", "--tracepoints", "powerpc/tlbie,tlb:tlb_flush",
                                       "--tracepoints=powerpc/tlbie"], core.options())
    assert events == ["powerpc/tlbie", "tlb/tlb_flush"] and options.atsd_words(checked) == ["--size=16M"]
    assert options.run_attrs(checked, events) == "size=16M tracepoints=powerpc/tlbie,tlb/tlb_flush"
    assert options.check_run(["--latency"], core.options())[1] is None
    assert options.run_attrs(*options.check_run(["--latency"], core.options())) == "latency=1"


@pytest.mark.parametrize("words,message", [
    (["--tracepoints", "tlbie"], "'tlbie' is not SUBSYSTEM/EVENT"),
    (["--tracepoints"], "--tracepoints needs a value"),
    (["--tracepoints", "powerpc/tlbie,"], "'' is not SUBSYSTEM/EVENT"),
    (["--trace"], "--trace is `atsdbench run`'s only: atsd has no --trace; use --tracepoints EVENT"),
])
def test_bad_tracepoints_are_one_line(words, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")) as e:
        options.check_run(words, core.options())
    assert "\n" not in str(e.value)


def test_init_is_valid_shell(tmp_path):
    """The one /init: at least the shell has to read it (it runs only in a guest)."""
    import subprocess

    sh = shutil.which("busybox") or shutil.which("sh")
    p = subprocess.run([sh, "sh", "-n"] if sh.endswith("busybox") else [sh, "-n"], input=initramfs.INIT, text=True,
                       capture_output=True)
    assert p.returncode == 0, p.stderr


def read_cpio(data):
    """{name: data} of concatenated newc archives (what the kernel unpacks, in order; later names win)."""
    files, at = {}, 0
    while at + 110 <= len(data):
        if data[at:at + 6] not in (b"070701", b"070702"):
            at += 4  # padding between archives
            continue
        size, namesize = int(data[at + 54:at + 62], 16), int(data[at + 94:at + 102], 16)
        name = data[at + 110:at + 110 + namesize - 1].decode()
        at += 110 + namesize
        at += -at % 4
        files[name] = data[at:at + size]
        at += size
        at += -at % 4
    return files


def test_the_initrd_holds_the_added_archives_the_base_and_the_runs(tmp_path):
    added = tmp_path / "root.cpio"
    added.write_bytes(initramfs.cpio([("usr", 0o40755, None), ("usr/bin", 0o40755, None),
                                  ("usr/bin/python3", 0o100755, b"py" * 3), ("init", 0o100755, b"not this one")]))
    base = tmp_path / "base.cpio"
    base.write_bytes(initramfs.cpio([("init", 0o100755, initramfs.INIT.encode()), ("bin", 0o40755, None)]))
    runs = [{"words": ["--size=64M"], "attrs": "size=64M", "tracepoints": None},
            {"words": ["--size=16M", "--reps=1"], "attrs": "size=16M reps=1 tracepoints=powerpc/tlbie",
             "tracepoints": ["powerpc/tlbie"]}]
    path = initramfs.run_initramfs(str(base), runs, str(tmp_path), command="echo hi > $OUT/x", trace_buffer_kb=2048,
                               archives=[str(added)])
    data = open(path, "rb").read()
    assert data.index(b"usr/bin/python3\0") < data.index(initramfs.INIT.encode()[:40])  # added first: the base wins
    files = read_cpio(data)
    assert files["init"] == initramfs.INIT.encode() and files["usr/bin/python3"] == b"pypypy"
    assert files["etc/atsd/1.args"] == b"--size=64M\n" and "etc/atsd/1.tracepoints" not in files
    assert files["etc/atsd/2.args"] == b"--size=16M --reps=1\n" and files["etc/atsd/2.tracepoints"] == b"powerpc/tlbie\n"
    assert files["etc/atsd/command"] == b"echo hi > $OUT/x\n" and files["etc/atsd/trace_buffer_kb"] == b"2048\n"
    if shutil.which("cpio"):  # the real tool reads the archives the same way
        import subprocess

        p = subprocess.run(["cpio", "-t", "--quiet"], input=data, capture_output=True)
        assert "usr/bin/python3" in p.stdout.decode().split()
    with pytest.raises(UsageError, match="is not a cpio archive"):
        initramfs.check_archive("/etc/passwd")
    initramfs.check_archive(str(added))


def several_runs_console(fixtures, hang_in=None, fail_in=None):
    """A console as INIT prints it for two runs (the second traced) and a command, built from the atsd output
    of a real radix guest."""
    _, blocks, _ = console.parse_console((fixtures / "power" / "power9-radix.console").read_text())
    output = [b for b in blocks if b["name"] == "atsd"][0]["lines"]
    packed = lambda data: base64.encodebytes(gzip.compress(data)).decode().split()  # noqa: E731
    lines = ["[    0.00] Linux version 6.1.0-fake", "@@ guest", "@@ release 6.1.0-fake", "@@ page_size 65536"]
    for k, attrs in ((1, "run=1 size=64M bystanders=0"), (2, "run=2 size=16M tracepoints=powerpc/tlbie,a/b")):
        lines.append(f"@@ running {attrs.split()[0]}")
        if k == hang_in:
            return "\r\n".join(lines + ["[   9.0] rcu: stall"])
        rc = 2 if k == fail_in else 0
        lines += [f"@@ begin atsd {attrs}", *output, f"@@ end atsd rc={rc}", f"@@ begin table {attrs}", "t", "@@ end table"]
        lines += ["@@ atsd-error atsd: no memory"] if rc else []
    lines += ["@@ begin trace run=2 size=16M tracepoints=powerpc/tlbie,a/b events=powerpc/tlbie",
              *packed(b"tlbie: lpid=0, local=1\n"), "@@ end trace rc=0 overrun=7",
              "@@ running command", "@@ begin command", "@@ begin cli-info x", "hello", "@@ end cli-info rc=0",
              "@@ end command rc=3", "@@ begin file path=a/b.json", *packed(b"{}"), "@@ end file",
              "@@ begin file path=../up", *packed(b"x"), "@@ end file", "@@ skipped-file two words",
              "@@ begin kernel-log", "@@ end kernel-log", "@@ done"]
    return "\r\n".join(lines) + "\r\n"


def test_each_run_of_a_console_comes_home_with_its_trace(fixtures):
    text = several_runs_console(fixtures)
    first = console.run_output(text, 1)
    assert first["output"].startswith("atsd-output 1") and first["trace"] is None and first["table"] == "t"
    second = console.run_output(text, 2)
    assert second["trace"] == {"text": "tlbie: lpid=0, local=1\n", "lost": 7, "events": ["powerpc/tlbie"]}
    with pytest.raises(UsageError, match="the guest stopped before atsd's output was complete"):
        console.run_output(text, 3)
    code, output, files, left = console.command_output(text)
    assert code == 3 and "@@ begin cli-info x\nhello" in output and files == {"a/b.json": b"{}"}
    assert left == ["two words", "../up"]
    # a guest that hung in run 2 still brings run 1 home; one whose run 1 failed says why
    hung = several_runs_console(fixtures, hang_in=2)
    assert console.run_output(hung, 1, qemu_rc=None, timeout=60)["output"].startswith("atsd-output 1")
    with pytest.raises(UsageError, match=r"(?s)the guest hung: killed after 60 s; console tail:\n  .*rcu: stall"):
        console.run_output(hung, 2, qemu_rc=None, timeout=60)
    with pytest.raises(UsageError, match="the guest hung: killed after 60 s before the command finished"):
        console.command_output(hung, qemu_rc=None, timeout=60)
    with pytest.raises(UsageError, match="atsd in the guest failed: atsd: no memory"):
        console.run_output(several_runs_console(fixtures, fail_in=1), 1)


FAKE_QEMU = r'''#!PYTHON
"""A fake qemu-system-*: records its command line, reads the runs and the command from the initrd guest made,
and writes the console guest's /init would print there, with a real atsd output (nothing boots)."""
import base64, gzip, json, os, re, sys

READ_CPIO

argv = sys.argv[1:]
with open(os.environ["FAKE_QEMU_ARGV"], "w") as f:
    json.dump(argv, f)
files = read_cpio(open(argv[argv.index("-initrd") + 1], "rb").read())
output = open(os.environ["FAKE_ATSD_OUTPUT"]).read().splitlines()
packed = lambda data: base64.encodebytes(gzip.compress(data)).decode().split()
if os.environ.get("FAKE_FRESH_BOOTS"):  # guest --boots: every boot a boot_id of its own
    import struct, uuid
    boot_id = str(uuid.uuid4())
    # and the release of the kernel it boots, as uname -r in it would say (the bzImage's header banner)
    head = open(argv[argv.index("-kernel") + 1], "rb").read(0x10000)
    at = struct.unpack_from("<H", head, 0x20E)[0] + 0x200
    release = head[at:at + 512].split(b"\0")[0].decode().split()[0]
    output = [re.sub(r"\tboot_id=[^\t]*", "", re.sub(r"\tkernel_release=[^\t]*", "\tkernel_release=" + release, x))
              + "\tboot_id=" + boot_id if x.startswith("host\t") else x for x in output]
    # and its own samples: copies of one run's samples are one run, whatever boot they name
    late = 1 + uuid.UUID(boot_id).int % 1000
    output = [re.sub(r"\tns=(\d+)", lambda m: f"\tns={int(m.group(1)) + late}", x) if x.startswith("sample\t")
              else x for x in output]
lines = ["[    0.000000] Linux version 6.1.0-fake", "@@ guest", "@@ release 6.1.0-fake", "@@ page_size 65536",
         "@@ ceiling 33"]
k = 1
while f"etc/atsd/{k}.args" in files:
    attrs = f"run={k} " + files[f"etc/atsd/{k}.attrs"].decode().strip()
    rc = 2 if str(k) == os.environ.get("FAKE_FAIL_RUN") else 0
    if os.environ.get("FAKE_STALE") and "verify=1" in attrs:  # atsd --verify read a stale translation
        rc, output = 3, output[:-1] + [
            "verify\tround=0\twarmup=1\top=mprotect\tstride_bytes=65536\tthreads=1\tinvalidator_cpus=1\t"
            "checker_cpus=0\tcalls=256\tchecks=256\tfaults=250\tzeros=0\tstale=6\theld=256\tns=1\tcell=0",
            output[-1]]
    lines += [f"@@ running run={k}", f"@@ begin atsd {attrs}", *(output if rc in (0, 3) else []), f"@@ end atsd rc={rc}",
              f"@@ begin table {attrs}", "fake table", "@@ end table"] + (["@@ atsd-error atsd: fake"] if rc else [])
    if f"etc/atsd/{k}.tracepoints" in files:  # the last tracepoint asked for is not in this kernel
        events = files[f"etc/atsd/{k}.tracepoints"].decode().strip().split(",")[:-1]
        lines += [f"@@ begin trace {attrs} events={','.join(events)}", *packed(b"fake event\n"),
                  f"@@ end trace rc={rc} overrun=0"]
    k += 1
if "etc/atsd/command" in files:
    lines += ["@@ running command", "@@ begin command", "ran " + files["etc/atsd/command"].decode().strip(),
              "@@ end command rc=0", "@@ begin file path=sub/made.txt", *packed(b"made"), "@@ end file"]
lines += ["@@ begin kernel-log", "@@ end kernel-log", "@@ done"]
serial = argv[argv.index("-serial") + 1].split(":", 1)[1]
with open(serial, "w") as f:
    f.write("\r\n".join(lines) + "\r\n")
'''


@pytest.fixture
def fake_qemu(tmp_path, fixtures, monkeypatch):
    """qemu-system-x86_64 on PATH is the fake above; the cache holds stand-ins for the static atsd and busybox
    (nothing is built).  Returns a function giving the command line qemu got."""
    import inspect
    import json
    import sys

    arch = "x86_64"
    cc, _ = initramfs.compiler(arch)
    if cc is None or not shutil.which("make"):
        pytest.skip("no compiler for x86_64 or no make (guest's missing-tools check)")
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    qemu = bin_dir / "qemu-system-x86_64"
    # read_cpio's own text, not an import of this file: that would load pytest and atsdbench in every boot
    qemu.write_text(FAKE_QEMU.replace("PYTHON", sys.executable, 1).replace("READ_CPIO", inspect.getsource(read_cpio),
                                                                           1))
    qemu.chmod(0o755)
    cache = tmp_path / "cache"
    d = cache / "atsdbench" / arch
    d.mkdir(parents=True)
    (d / "busybox").write_bytes(b"fake busybox")
    (d / f"atsd-{initramfs._sources_hash(initramfs.source_dir(), cc)}").write_bytes(b"fake atsd")
    _, blocks, _ = console.parse_console((fixtures / "power" / "power9-radix.console").read_text())
    (tmp_path / "atsd-output.txt").write_text("\n".join([b for b in blocks if b["name"] == "atsd"][0]["lines"]))
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.setenv("FAKE_QEMU_ARGV", str(tmp_path / "argv.json"))
    monkeypatch.setenv("FAKE_ATSD_OUTPUT", str(tmp_path / "atsd-output.txt"))
    return lambda: json.loads((tmp_path / "argv.json").read_text())


def guest_cli(capsys, *args):
    from atsdbench import cli

    rc = cli.main(["guest", *map(str, args)])
    out, err = capsys.readouterr()
    return rc, out, err


def test_several_runs_traces_and_a_command_come_home(fake_qemu, tmp_path, capsys):
    import json

    kernel = bzimage(tmp_path / "bzImage")
    root = tmp_path / "root.cpio"
    root.write_bytes(initramfs.cpio([("usr", 0o40755, None)]))
    out = tmp_path / "out"
    rc, stdout, stderr = guest_cli(capsys, "--kernel", kernel, "-o", out, "--initrd", root, "--command", "ls /",
                                   "--", "--size", "16M", "--bystanders", "0", "--", "--size", "16M", "--reps", "1",
                                   "--tracepoints", "powerpc/tlbie,powerpc/tlbia")
    assert rc == 0, stderr
    assert stderr.splitlines() == ["atsdbench: warning: guest bzImage (x86_64): run 2: powerpc/tlbia: no such "
                                   "tracepoint (not traced)"]
    assert sorted(p.name for p in out.iterdir()) == ["6.1.0-fake", "6.1.0-fake-run1.json", "6.1.0-fake-run2.json",
                                                     "6.1.0-fake-run2.trace", "6.1.0-fake.console", "6.1.0-fake.out"]
    assert (out / "6.1.0-fake-run2.trace").read_text() == "fake event\n"
    assert (out / "6.1.0-fake" / "sub" / "made.txt").read_text() == "made"
    assert (out / "6.1.0-fake.out").read_text() == "ran ls /\n"
    data = json.loads((out / "6.1.0-fake-run1.json").read_text())
    assert data["host"]["virtualized"] == "qemu-tcg" and data["host"]["qemu_machine"] == "x86_64"
    assert data["host"]["tlb_single_page_flush_ceiling"] == 33
    # a long path puts what follows it on the next line
    assert " ".join(stdout.split()).startswith(f"wrote {out}/6.1.0-fake-run1.json (6.1.0-fake, x86_64, qemu-tcg, run 1 of 2)")
    said = re.split(r"\n(?=wrote )", stdout)  # each "wrote" with the lines it wraps onto
    assert "its trace" in said[1]
    assert "1 file it left in /out" in " ".join(stdout.split())
    argv = fake_qemu()
    assert argv[argv.index("-accel") + 1] == "tcg" and argv[argv.index("-kernel") + 1] == kernel


def test_a_failed_run_keeps_the_others(fake_qemu, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FAKE_FAIL_RUN", "1")
    out = tmp_path / "out"
    rc, stdout, stderr = guest_cli(capsys, "--kernel", bzimage(tmp_path / "bzImage"), "-o", out, "--",
                                   "--size", "16M", "--", "--size", "32M")
    assert rc == 1 and (out / "6.1.0-fake-run2.json").exists() and not (out / "6.1.0-fake-run1.json").exists()
    assert stderr.splitlines()[0].startswith("atsdbench: guest bzImage (x86_64): run 1: atsd in the guest failed: "
                                             "atsd: fake; console tail:")
    assert stderr.splitlines()[-1] == f"(the whole console: {out}/6.1.0-fake.console)"


def test_kvm_boots_with_the_host_cpu_and_says_so(fake_qemu, tmp_path, capsys, monkeypatch):
    """The KVM path with a fake qemu: the real one is unverified here (this VM's KVM opens but runs no guest)."""
    import json

    if qemu.host_arch() != "x86_64":
        pytest.skip("the fake boots an x86_64 image")
    monkeypatch.setattr(qemu, "kvm_problem", lambda device=None: None)
    out = tmp_path / "out"
    rc, stdout, stderr = guest_cli(capsys, "--kernel", bzimage(tmp_path / "bzImage"), "--accel", "kvm", "-o", out,
                                   "--", "--size", "16M")
    assert rc == 0, stderr
    argv = fake_qemu()
    assert argv[argv.index("-accel") + 1] == "kvm" and argv[argv.index("-cpu") + 1] == "host"
    assert json.loads((out / "6.1.0-fake.json").read_text())["host"]["virtualized"] == "kvm"
    assert " ".join(stdout.split()).startswith(f"wrote {out}/6.1.0-fake.json (6.1.0-fake, x86_64, kvm, ")


def test_kvm_that_is_missing_or_unusable_is_one_line(fake_qemu, tmp_path, capsys, monkeypatch):
    kernel = bzimage(tmp_path / "bzImage")
    assert "no such device" in qemu.kvm_problem(str(tmp_path / "nokvm"))
    (tmp_path / "file").write_text("")
    assert qemu.kvm_problem(str(tmp_path / "file")).endswith("is not a KVM device (KVM_GET_API_VERSION: "
                                                              "Inappropriate ioctl for device)")
    for device, message in ((tmp_path / "nokvm", "no such device (no KVM on this machine"),
                            (tmp_path / "file", "is not a KVM device")):
        if qemu.host_arch() != "x86_64":
            break
        monkeypatch.setattr(qemu, "KVM_DEVICE", str(device))
        rc, stdout, stderr = guest_cli(capsys, "--kernel", kernel, "--accel", "kvm", "-o", tmp_path / "out")
        assert rc == 2 and stdout == "" and len(stderr.splitlines()) == 1, stderr
        assert stderr.startswith(f"atsdbench: --accel kvm: {device}") and message in stderr
    if qemu.host_arch() != "ppc64le":
        rc, _, stderr = guest_cli(capsys, "--kernel", elf(tmp_path / "vmlinux", 21), "--accel", "kvm")
        assert rc == 2 and len(stderr.splitlines()) == 1
        assert f"--accel kvm runs guests of this machine's own arch ({qemu.host_arch()})" in stderr
    assert not (tmp_path / "out").exists()


# ---- refused before booting: cut-off images, archives that are not cpio, a bad -o ----

def whole_bzimage(path, setup_sects=3, syssize=0x100, cut=None):
    """A bzImage whose boot header (protocol 2.15) says how long it is; cut: keep only that many bytes."""
    data = bytearray((setup_sects + 1) * 512 + syssize * 16)
    data[0x1F1] = setup_sects
    data[0x1FE:0x200] = b"\x55\xaa"
    data[0x202:0x206] = b"HdrS"
    struct.pack_into("<H", data, 0x206, 0x20F)
    struct.pack_into("<I", data, 0x1F4, syssize)
    path.write_bytes(bytes(data[:cut]))
    return str(path)


def test_a_cut_off_bzimage_is_refused_by_its_boot_header(tmp_path):
    assert image.detect_image(whole_bzimage(tmp_path / "whole")) == ("x86_64", "bzImage")
    signed = tmp_path / "signed"
    signed.write_bytes((tmp_path / "whole").read_bytes() + b"~Module signature appended~\n")
    assert image.detect_image(str(signed)) == ("x86_64", "bzImage")  # more than it says is fine
    need = 4 * 512 + 0x100 * 16
    path = whole_bzimage(tmp_path / "cut", cut=need - 1)
    with pytest.raises(UsageError) as e:
        image.detect_image(path)
    assert str(e.value) == f"--kernel {path} is cut off: header says {need} bytes, file has {need - 1}"
    zero = whole_bzimage(tmp_path / "zero", setup_sects=0, cut=5 * 512 + 0x100 * 16 - 16)  # 0 sectors means 4
    with pytest.raises(UsageError, match="header says 6656 bytes"):
        image.detect_image(zero)


def vmlinux(path, segments, size=None):
    """A ppc64le ELF64 with program headers [(p_type, p_offset, p_filesz)] and a Linux banner."""
    phoff, phentsize = 64, 56
    head = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    head += struct.pack("<HHIQQQIHHHHHH", 2, 21, 1, 0, phoff, 0, 0, 64, phentsize, len(segments), 64, 0, 0)
    table = b"".join(struct.pack("<IIQQQQQQ", kind, 0, offset, 0, 0, filesz, filesz, 0)
                     for kind, offset, filesz in segments)
    data = head + table + b"Linux version 6.1.0-test (gcc) #1 SMP"
    data += bytes(max(0, (size or 0) - len(data)))
    path.write_bytes(data[:size])
    return str(path)


def test_a_cut_off_vmlinux_is_refused_by_its_program_headers(tmp_path):
    assert image.detect_image(vmlinux(tmp_path / "v", [(1, 0x1000, 0x3000), (4, 0x200, 8)], 0x4000)) == \
        ("ppc64le", "vmlinux")
    path = vmlinux(tmp_path / "cut", [(1, 0x1000, 0x3000), (0, 0x9000, 0x9000)], 0x3FFF)  # PT_NULL: no bytes
    with pytest.raises(UsageError) as e:
        image.detect_image(path)
    assert str(e.value) == f"--kernel {path} is cut off: ELF segment 0 ends at byte 16384, file has 16383"
    short = tmp_path / "short"
    short.write_bytes((tmp_path / "v").read_bytes()[:100])  # inside the program header table
    with pytest.raises(UsageError, match="is an ELF file but not a Linux kernel|its ELF program headers end at"):
        image.detect_image(str(short))


def newc(entries):
    return initramfs.cpio(entries)


ROOT = [("bin", 0o40755, None), ("bin/tool", 0o100755, b"#!/bin/sh\necho tool\n" * 10)]


def test_whole_archives_are_taken(tmp_path):
    import bz2
    import lzma

    whole = newc(ROOT)
    forms = {
        "plain": whole,
        "padded": whole + bytes(512 - len(whole) % 512),  # cpio -o pads its output to 512-byte blocks
        "two": whole + bytes(8) + newc([("etc", 0o40755, None)]),
        "gzip": gzip.compress(whole),
        "gzip-two-members": gzip.compress(whole) + gzip.compress(newc([("etc", 0o40755, None)])),
        "microcode-then-gzip": whole + gzip.compress(whole),  # as distributions' initrds are made
        "xz": lzma.compress(whole, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32),
        "bzip2": bz2.compress(whole),
        "zstd-unchecked": b"\x28\xb5\x2f\xfd" + bytes(60),  # no zstd here: taken with no claim
        "plain-then-lz4-unchecked": whole + b"\x02\x21\x4c\x18junk",
    }
    for name, data in forms.items():
        (tmp_path / name).write_bytes(data)
        initramfs.check_archive(str(tmp_path / name))


@pytest.mark.parametrize("make,message", [
    (lambda w: gzip.compress(b"not an archive at all" * 50),
     "its gzip data is not a cpio archive (it starts b'not an', no newc header)"),
    (lambda w: w[:len(w) // 2], "is cut off in 'bin/tool'"),
    (lambda w: w[:len(w) - 60], "is cut off in the header of the entry after 'bin/tool'"),
    (lambda w: w[:112], "is cut off in the name of its first entry (at byte 0)"),
    (lambda w: b"070701", "is the magic 070701 alone (no entry follows it)"),
    (lambda w: b"070701" + b"Z" * 104, "a damaged header at byte 0 (fields not hex)"),
    (lambda w: w[:w.index(b"070701", 8)] + b"x" * 200, "has no newc header at byte"),
    (lambda w: gzip.compress(w[:len(w) // 2]), "(in its gzip data) is cut off in 'bin/tool'"),
    (lambda w: gzip.compress(w)[:-30], "its gzip data is cut off (it ends before the gzip stream does)"),
    (lambda w: gzip.compress(w)[:2] + b"\x07" + gzip.compress(w)[3:], "its gzip data is damaged (Error -3 "),
    (lambda w: gzip.compress(w + b"junk"), "its gzip data has bytes at"),
    (lambda w: gzip.compress(bytes(64)), "its gzip data holds no cpio archive"),
    (lambda w: w + b"garbage!", "neither zero padding nor another archive"),
    (lambda w: b"", "is empty (or zeros only): no cpio archive"),
    (lambda w: b"root:x:0:0\n", "is not a cpio archive (newc, as `cpio -o -H newc` writes it"),
])
def test_an_archive_that_is_no_cpio_is_one_line_naming_it(tmp_path, make, message):
    path = tmp_path / "bad.cpio"
    path.write_bytes(make(newc(ROOT)))
    with pytest.raises(UsageError) as e:
        initramfs.check_archive(str(path))
    assert str(e.value).startswith(f"--initrd {path}") and "\n" not in str(e.value)
    assert message in str(e.value), str(e.value)


def test_initramfs_unpacking_failed_is_shown(tmp_path):
    text = ("[    0.9] Initramfs unpacking failed: invalid magic at start of compressed archive\r\n"
            "[    1.2] Kernel panic - not syncing: No working init found.\r\n" + "[    1.3] trace line\r\n" * 12)
    with pytest.raises(UsageError) as e:
        console.reached_init(text, qemu_rc=0)
    first = str(e.value).splitlines()[0]
    assert first == ("the kernel did not reach /init (qemu exit 0); the kernel said 'Initramfs unpacking failed: "
                     "invalid magic at start of compressed archive'; console tail:")
    with pytest.raises(UsageError, match=r"^the kernel did not reach /init \(qemu exit 0\); console tail"):
        console.reached_init(text.split("\n", 1)[1], qemu_rc=0)


def test_a_fresh_name_for_each_guest_and_nothing_overwritten(tmp_path):
    taken = set()
    assert home.claim(str(tmp_path), "6.1.0", taken) == f"{tmp_path}/6.1.0"
    assert (tmp_path / "6.1.0.console").read_bytes() == b""  # claimed at once
    assert home.claim(str(tmp_path), "6.1.0", taken) == f"{tmp_path}/6.1.0-2"  # taken by this invocation
    for existing in ("6.1.0-3-run2.json", "6.1.0-4.out", "6.1.0-5", "6.1.0-6-run1.trace"):
        (tmp_path / existing).mkdir() if "." not in existing[6:] else (tmp_path / existing).write_text("")
    assert home.claim(str(tmp_path), "6.1.0", set()) == f"{tmp_path}/6.1.0-7"
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "6.1.0.5.json").write_text("")  # another release's file is not this one's
    assert home.claim(str(tmp_path / "other"), "6.1.0", set()) == f"{tmp_path}/other/6.1.0"
    assert home.claim(str(tmp_path), "k-x86_64", set(), ".failed.console") == f"{tmp_path}/k-x86_64"
    assert home.claim(str(tmp_path), "k-x86_64", set(), ".failed.console") == f"{tmp_path}/k-x86_64-2"


def test_two_guests_at_once_take_two_names(tmp_path, monkeypatch):
    """Another guest into the same -o listed the folder before this one claimed its name: the exclusive
    create of the console still sends it to the next."""
    first = home.claim(str(tmp_path), "6.1.0", set())
    monkeypatch.setattr(os, "listdir", lambda path: [])  # as listed before the first one's claim
    assert home.claim(str(tmp_path), "6.1.0", set()) == f"{first}-2"


def test_the_output_directory_is_checked_before_booting(tmp_path, monkeypatch):
    home.check_output_dir(str(tmp_path), 1 << 20)
    home.check_output_dir(str(tmp_path / "new" / "deeper"), 1 << 20)  # made when the guest boots
    assert not (tmp_path / "new").exists()
    (tmp_path / "file").write_text("")
    os.mkfifo(tmp_path / "fifo")
    for path, message in ((tmp_path / "file", f"-o {tmp_path}/file is a regular file, not a directory"),
                          (tmp_path / "fifo", f"-o {tmp_path}/fifo is a FIFO, not a directory"),
                          (tmp_path / "file" / "sub", f"-o {tmp_path}/file/sub: Not a directory"),
                          ("", "-o needs a directory")):
        with pytest.raises(UsageError) as e:
            home.check_output_dir(str(path), 0)
        assert str(e.value).startswith(message), str(e.value)
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling")
    with pytest.raises(UsageError, match="is a symbolic link to nothing"):
        home.check_output_dir(str(tmp_path / "dangling"), 0)
    with pytest.raises(UsageError, match=r"MiB free, guests need about \d+ MiB"):
        home.check_output_dir(str(tmp_path), 1 << 62)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p).startswith(str(tmp_path)) else
                        real_access(p, mode))  # as a user without write permission (tests run as root)
    with pytest.raises(UsageError, match=f"-o {tmp_path}: cannot write in it: Permission denied"):
        home.check_output_dir(str(tmp_path), 0)
    with pytest.raises(UsageError, match=f"-o {tmp_path}/a/b: cannot make it in {tmp_path}: Permission denied"):
        home.check_output_dir(str(tmp_path / "a" / "b"), 0)
    assert home.expected_bytes(2, 1, 8192, 2) == home.expected_bytes(2, 0, 8192, 2) + 4 * 8192 * 1024 * 2


def test_a_second_guest_of_the_same_kernel_writes_a_fresh_name(fake_qemu, tmp_path, capsys):
    import json

    kernel = bzimage(tmp_path / "bzImage")
    out = tmp_path / "out"
    rc, first, _ = guest_cli(capsys, "--kernel", kernel, "-o", out, "--", "--size", "16M", "--seed", "1")
    assert rc == 0 and first.startswith(f"wrote {out}/6.1.0-fake.json")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    rc, second, stderr = guest_cli(capsys, "--kernel", kernel, "--kernel", kernel, "-o", out, "--", "--size", "32M")
    assert rc == 0, stderr
    assert [line.split()[1] for line in second.splitlines() if line.startswith("wrote ")] == \
        [f"{out}/6.1.0-fake-2.json", f"{out}/6.1.0-fake-3.json"]
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.name in before} == before  # the first kept whole
    assert sorted(p.name for p in out.iterdir()) == [f"6.1.0-fake{n}.{ext}" for n in ("-2", "-3", "")
                                                     for ext in ("console", "json")]
    assert "size=16M seed=1" in (out / "6.1.0-fake.console").read_text()
    assert "size=32M" in (out / "6.1.0-fake-2.console").read_text()
    assert json.loads((out / "6.1.0-fake-3.json").read_text())["complete"]


def test_a_bad_output_or_archive_refuses_before_booting(fake_qemu, tmp_path, capsys):
    kernel = bzimage(tmp_path / "bzImage")
    (tmp_path / "file").write_text("")
    junk = tmp_path / "junk.cpio.gz"
    junk.write_bytes(gzip.compress(b"junk" * 100))
    for args, message in (([ "-o", tmp_path / "file"], f"-o {tmp_path}/file is a regular file, not a directory"),
                          (["--initrd", junk], f"--initrd {junk}: its gzip data is not a cpio archive"),
                          (["--kernel", whole_bzimage(tmp_path / "cut", cut=1000)], "is cut off: header says")):
        rc, stdout, stderr = guest_cli(capsys, "--kernel", kernel, *args)
        assert rc == 2 and stdout == "" and len(stderr.splitlines()) == 1, stderr
        assert stderr.startswith("atsdbench: ") and message in stderr, stderr
    assert not (tmp_path / "argv.json").exists()  # nothing booted


def test_a_result_that_cannot_be_written_is_rescued_and_the_next_kernel_still_boots(fake_qemu, tmp_path, capsys,
                                                                                  monkeypatch):
    """A full disk under -o for the first kernel's files (a fake write raising ENOSPC): each is rescued and
    named, and the second kernel boots and writes its own."""
    import errno
    import tempfile

    from atsdbench.data import files

    rescue = tmp_path / "rescue"
    rescue.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(rescue))
    real = files.write_atomically
    full = {"on": True}

    def write_atomically(path, write, binary=False):
        if full["on"] and "/out/" in str(path):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
        return real(path, write, binary)

    monkeypatch.setattr(files, "write_atomically", write_atomically)
    from atsdbench.guest import qemu
    real_boot = qemu.boot

    def boot(*a, **k):  # the disk has room again for the second kernel
        full["on"] = boots.append(1) or len(boots) == 1
        return real_boot(*a, **k)

    boots = []
    monkeypatch.setattr(qemu, "boot", boot)
    out = tmp_path / "out"
    kernel = bzimage(tmp_path / "bzImage")
    rc, stdout, stderr = guest_cli(capsys, "--kernel", kernel, "--kernel", kernel, "-o", out, "--", "--size", "16M",
                                   "--", "--size", "16M")
    assert rc == 1 and len(boots) == 2
    lines = stderr.splitlines()
    for run in (1, 2):
        [line] = [x for x in lines if f"{out}/6.1.0-fake-run{run}.json" in x]
        assert f"run {run}: cannot write output {out}/6.1.0-fake-run{run}.json: No space left on device; the result " \
               f"was saved to {rescue}/" in line
    [line] = [x for x in lines if f"cannot write {out}/6.1.0-fake.console" in x]
    assert f"the console was saved to {rescue}/" in line
    assert len(list(rescue.glob("atsdbench-rescued-*.json"))) == 2 and len(list(rescue.glob("*.console"))) == 1
    assert sorted(p.name for p in out.iterdir()) == ["6.1.0-fake-2-run1.json", "6.1.0-fake-2-run2.json",
                                                     "6.1.0-fake-2.console"]
    assert " ".join(stdout.split()).startswith(f"wrote {out}/6.1.0-fake-2-run1.json (6.1.0-fake, x86_64, qemu-tcg, "
                                               "run 1 of 2) ")


def test_init_ships_as_package_data():
    """/init is a file of the package (read with importlib.resources): pyproject must name it, or a
    `pip install .` would ship guest without it."""
    import pathlib
    import tomllib

    root = pathlib.Path(__file__).resolve().parent.parent.parent
    pyproject = tomllib.loads((root / "pyproject.toml").read_text())
    assert "init.sh" in pyproject["tool"]["setuptools"]["package-data"]["atsdbench.guest"]
    assert initramfs.INIT == (root / "atsdbench" / "guest" / "init.sh").read_text()
    assert initramfs.INIT.startswith("#!/bin/busybox sh\n") and initramfs.INIT.endswith("poweroff -f\n")


def test_verify_in_a_guest_is_as_loud_as_on_the_host(fake_qemu, tmp_path, capsys, monkeypatch):
    """atsd --verify in the guest exits 3 after its output: the file is written, then the loud line, exit 3."""
    import json

    monkeypatch.setenv("FAKE_STALE", "1")
    out = tmp_path / "out"
    rc, stdout, stderr = guest_cli(capsys, "--kernel", bzimage(tmp_path / "bzImage"), "-o", out, "--",
                                   "--size", "16M", "--verify")
    assert rc == 3, stderr
    data = json.loads((out / "6.1.0-fake.json").read_text())
    assert sum(v["stale"] for v in data["verify"]) == 6
    assert " ".join(stderr.split()) == (f"{out}/6.1.0-fake.json: STALE TRANSLATION: 6 of 256 checks read through a "
                                        "translation after the invalidation returned (mprotect, 64K, CPUs 1 -> 0)")
    argv = fake_qemu()
    assert argv[argv.index("-smp") + 1] == "2"


def test_verify_in_a_guest_of_one_vcpu_is_refused_before_it_boots(tmp_path, capsys):
    rc, _, stderr = guest_cli(capsys, "--kernel", bzimage(tmp_path / "bzImage"), "--smp", "1", "-o", tmp_path,
                              "--", "--size", "16M", "--verify")
    assert rc == 2 and stderr == ("atsdbench: --verify in a guest checks each call from another vCPU: give --smp 2 "
                                  "or more (got 1)\n")


def test_boots_alternate_into_a_campaign_directory(fake_qemu, tmp_path, capsys, monkeypatch, cli):
    """guest --kernel A --kernel B --boots 2: four fresh boots, A,B,A,B, each file in DIR/NAME/BOOT_ID.json
    with the journal, and compare DIR reads them 2 a side (rates emulated: no verdict, the counts compared)."""
    from atsdbench.data import campaign as store

    monkeypatch.setenv("FAKE_FRESH_BOOTS", "1")
    a = bzimage(tmp_path / "vmlinuz-a", "6.1.0-test (x@y) #1 SMP Debian 6.1.1-1")
    b = bzimage(tmp_path / "vmlinuz-b", "6.12.0-test (x@y) #1 SMP Debian 6.12.1-1")
    out = tmp_path / "camp"
    rc, stdout, stderr = guest_cli(capsys, "--kernel", a, "--kernel", b, "--boots", "2", "-o", out, "--",
                                   "--size", "64M")
    assert rc == 0, stderr
    c = store.load(str(out))
    assert [e["kernel"] for e in c.done] == ["6.1.0-test", "6.12.0-test", "6.1.0-test", "6.12.0-test"]
    assert len({e["boot_id"] for e in c.done}) == 4 and c.plan["method"] == "qemu"
    for e in c.done:
        assert (out / e["file"]).exists() and (out / e["file"]).with_suffix(".console").exists()
    assert stdout.count("wrote ") == 4
    r = cli("compare", str(out))
    assert r.returncode == 0 and "2/2" in r.stdout and "boots in order ABAB" in r.stdout, r.stdout + r.stderr
    r = cli("campaign", "step", str(out))
    assert r.returncode == 2 and "guest --boots" in r.stderr
    rc, _, stderr = guest_cli(capsys, "--kernel", a, "--kernel", b, "--boots", "2", "-o", out, "--", "--size", "64M")
    assert rc == 2 and "is not empty" in stderr
    rc, _, stderr = guest_cli(capsys, "--kernel", a, "--boots", "2", "-o", tmp_path / "x", "--", "--size", "64M")
    assert rc == 2 and "two or more kernels" in stderr


def test_breakdown_is_atsd_s_and_profile_is_not():
    assert checked("--size", "16M", "--breakdown") == ["--size=16M", "--breakdown"]
    with pytest.raises(UsageError, match="--profile is `atsdbench run`'s only"):
        checked("--profile")


def test_a_breakdown_in_a_guest_comes_home_cut_into_stages_and_marked_emulated(fake_qemu, tmp_path, capsys,
                                                                                monkeypatch, fixtures):
    """atsd --breakdown's output (version 2, real x86 trace lines of this project's VM) through the console:
    the result file has the breakdown section and guest prints its table, marked emulated."""
    import json

    lines = (fixtures / "breakdown" / "x86-mprotect-64k-bystanders1.trace").read_text().splitlines()
    output = "\n".join([
        "atsd-output 2",
        "host\thostname=g\tarch=x86_64\tkernel_release=6.1.0-fake\tkernel_version=#1\tcpu_model=c\tmmu=unknown"
        "\tonline_cpus=0-1\tpage_size=4096\thugepage_size=2097152\tthp_enabled=[never]\tboot_id=b",
        "config\tsize=4194304\tstrides=65536\trounds=1\treps=1\twarmup=0\twarmup_rounds=0\tpages=base\top=mprotect"
        "\tbystanders=1\tcpu=1\tbystander_cpus=0\tlatency=0\tretouch=1\tseed=1\tbreakdown=1\tbreakdown_calls_max=2048"
        "\tbreakdown_clock=x86-tsc\tbreakdown_have=tlb,csd,ipi\tbreakdown_missing=\tbreakdown_events=tlb:tlb_flush",
        "sample\tround=0\trep=0\torder=0\tstride_bytes=65536\twarmup=0\tns=640000\tcalls=64\ttraced=0",
        "breakdown\tstride_bytes=65536\tregion_bytes=4194304\tcalls=64\tlost=0\top=mprotect\tcpu=1\ttid=16626",
        *("trace\t" + x for x in lines),
        "end\tcomplete=1\tbreakdown_complete=1"])
    (tmp_path / "atsd-output.txt").write_text(output + "\n")
    out = tmp_path / "out"
    rc, stdout, stderr = guest_cli(capsys, "--kernel", bzimage(tmp_path / "bzImage"), "-o", out, "--",
                                   "--size", "4M", "--strides", "64K", "--bystanders", "1", "--breakdown")
    assert rc == 0, stderr
    data = json.loads((out / "6.1.0-fake.json").read_text())
    (p,) = data["config"]["breakdown"]["passes"]
    assert p["calls"] == 64 and p["syscall_us"] > 0 and p["untraced_us"] == 10.0
    assert "Where a call's time goes" in stdout and "emulated (qemu-tcg): the µs are the emulator's, read the shares" in stdout


def test_atsd_command_copies_the_cached_static_atsd_and_keeps_an_existing_file(tmp_path, monkeypatch, cli):
    """`atsdbench atsd`: the static atsd guest builds (here a stand-in in the cache: nothing is built),
    copied to -o, executable; an existing -o is refused unless --force."""
    arch = qemu.host_arch()
    cc, _ = initramfs.compiler(arch) if arch in initramfs.CROSS else (None, None)
    if cc is None or not shutil.which("make"):
        pytest.skip(f"no compiler for {arch} or no make")
    d = tmp_path / "cache" / "atsdbench" / arch
    d.mkdir(parents=True)
    (d / f"atsd-{initramfs._sources_hash(initramfs.source_dir(), cc)}").write_bytes(b"static atsd")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    out = tmp_path / "atsd"
    p = cli("atsd", "-o", out)
    assert p.returncode == 0 and p.stdout.startswith(f"wrote {out} (atsd for {arch}, static"), p.stderr
    assert out.read_bytes() == b"static atsd" and os.stat(out).st_mode & 0o111
    p = cli("atsd", "-o", out)
    assert p.returncode == 2 and p.stderr == f"atsdbench: output {out} exists: --force replaces it\n"
    assert cli("atsd", "-o", out, "--force").returncode == 0


def test_atsd_command_names_the_cross_compiler_it_lacks(tmp_path, cli):
    other = next(a for a in sorted(initramfs.CROSS) if a != qemu.host_arch())
    cross, packages = initramfs.CROSS[other]
    if shutil.which(cross):
        pytest.skip(f"{cross} is installed")
    p = cli("atsd", "--arch", other, "-o", tmp_path / "atsd", env=dict(os.environ, XDG_CACHE_HOME=str(tmp_path)))
    assert p.returncode == 2 and p.stderr == f"atsdbench: the {other} atsd needs apt-get install {' '.join(packages)}\n"
    assert not (tmp_path / "atsd").exists()


def test_a_broken_install_without_atsd_s_sources_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(initramfs, "source_dir", lambda: None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(qemu.Missing, match=r"^no atsd sources in this install \(reinstall atsdbench\) and no "
                       f"static atsd at {tmp_path}/atsdbench/x86_64/atsd$"):
        initramfs.static_atsd("x86_64")


def test_the_sources_are_the_package_s_own_before_the_checkout_s(tmp_path, monkeypatch):
    """An installed package carries atsdbench/csrc/ (setup.py): that copy is used, wherever the
    command runs; $ATSDBENCH_CSRC names another."""
    import atsdbench

    package = os.path.dirname(atsdbench.__file__)
    monkeypatch.delenv("ATSDBENCH_CSRC", raising=False)
    monkeypatch.chdir(tmp_path)
    mine = os.path.join(package, "csrc")
    assert initramfs.source_dir() == (mine if os.path.isdir(mine) else os.path.join(os.path.dirname(package), "csrc"))
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "atsd_main.c").write_text("")
    monkeypatch.setenv("ATSDBENCH_CSRC", str(tmp_path / "other"))
    assert initramfs.source_dir() == str(tmp_path / "other")
