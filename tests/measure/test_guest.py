"""`atsdbench guest` (measure/guest.py): image detection, the machine, run options, the qemu command line and
the console, all without booting; the boots themselves are @pytest.mark.live at the end."""
import gzip
import os
import shutil
import struct

import pytest

from atsdbench.errors import UsageError
from atsdbench.measure import core, guest


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
    assert guest.detect_image(elf(tmp_path / "vmlinux", 21)) == ("ppc64le", "vmlinux")
    assert guest.detect_image(bzimage(tmp_path / "bzImage")) == ("x86_64", "bzImage")
    assert guest.detect_image(arm64_image(tmp_path / "Image")) == ("aarch64", "Image")
    with gzip.open(tmp_path / "Image.gz", "wb") as f:
        f.write((tmp_path / "Image").read_bytes())
    assert guest.detect_image(str(tmp_path / "Image.gz")) == ("aarch64", "Image.gz")
    assert guest.bzimage_version(str(tmp_path / "bzImage")) == "6.12.0-test"


@pytest.mark.parametrize("make,message", [
    (lambda p: (p.write_text("root:x:0:0\n"), str(p))[1], "is not a kernel image (no ELF vmlinux, bzImage or arm64"),
    (lambda p: elf(p, 21, banner=False), "is an ELF file but not a Linux kernel"),
    (lambda p: elf(p, 21, little=False), "is a big-endian ppc64 kernel"),
    (lambda p: elf(p, 62), "is an x86_64 vmlinux (ELF): give the bzImage"),
    (lambda p: elf(p, 183), "is an arm64 vmlinux (ELF): give the Image"),
])
def test_not_a_bootable_image_is_one_line(tmp_path, make, message):
    path = make(tmp_path / "k")
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")) as e:
        guest.detect_image(path)
    assert "\n" not in str(e.value)
    with pytest.raises(UsageError, match="No such file"):
        guest.detect_image(str(tmp_path / "missing"))


def test_machine_is_guessed_from_the_arch_and_checked_against_it():
    assert guest.choose_machine("ppc64le", None, "k") == "power9"
    assert guest.choose_machine("x86_64", None, "k") == "x86_64"
    assert guest.choose_machine("aarch64", None, "k") == "aarch64"
    assert guest.choose_machine("ppc64le", "power9-hash", "k") == "power9-hash"
    with pytest.raises(UsageError, match="--kernel k is an x86_64 kernel; --machine power8 boots ppc64le"):
        guest.choose_machine("x86_64", "power8", "k")
    with pytest.raises(UsageError, match="--machine must be one of power9, power9-hash, power8, x86_64, aarch64"):
        guest.choose_machine("ppc64le", "power10", "k")


def checked(*words):
    return guest.atsd_words(guest.check_run_options(list(words), core.options()))


def test_run_options_are_atsd_s():
    assert checked("--bystanders", "0,1", "--size=64M", "--latency", "--seed", "1") == \
        ["--bystanders=0,1", "--size=64M", "--latency", "--seed=1"]
    assert checked() == []


@pytest.mark.parametrize("words,message", [
    (["--gpu", "0"], "--gpu is `atsdbench run`'s only: the standalone atsd has no --gpu"),
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
    cmd = guest.qemu_command("power9-hash", "vmlinux", "initrd", "/tmp/c.log", smp=2, mem="2G", append="nosmt")
    assert cmd[:5] == ["qemu-system-ppc64", "-M", "pseries", "-cpu", "power9"]
    assert cmd[cmd.index("-accel") + 1] == "tcg" and cmd[cmd.index("-serial") + 1] == "file:/tmp/c.log"
    assert cmd[-1] == "console=hvc0 quiet panic=-1 disable_radix nosmt"
    assert "-no-reboot" in cmd and "-nodefaults" in cmd and cmd[cmd.index("-kernel") + 1] == "vmlinux"
    x86 = guest.qemu_command("x86_64", "bzImage", "i", "c", smp=4, mem="1G")
    assert x86[0] == "qemu-system-x86_64" and x86[-1] == "console=ttyS0 quiet panic=-1"
    assert x86[x86.index("-smp") + 1] == "4" and x86[x86.index("-m") + 1] == "1G"
    kvm = guest.qemu_command("x86_64", "bzImage", "i", "c", accel="kvm")
    assert kvm[kvm.index("-accel") + 1] == "kvm" and kvm[kvm.index("-cpu") + 1] == "host"
    arm = guest.qemu_command("aarch64", "Image", "i", "c")
    assert arm[:5] == ["qemu-system-aarch64", "-M", "virt", "-cpu", "max"] and "console=ttyAMA0" in arm[-1]
    assert guest.result_name("6.1.0-57-powerpc64le", "power9", "ppc64le") == "6.1.0-57-powerpc64le.json"
    assert guest.result_name("6.1.0-57-powerpc64le", "power9-hash", "ppc64le") == \
        "6.1.0-57-powerpc64le-power9-hash.json"
    assert guest.result_name("a/b c", "x86_64", "x86_64") == "a_b_c.json"


def test_cpio_is_newc(tmp_path):
    data = guest.cpio([("etc", 0o40755, None), ("etc/atsd.args", 0o100644, b"--size=64M\n")])
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
    values, blocks, errors = guest.parse_console(text)
    assert values["MMU"] == "Radix" and values["page_size"] == "65536" and errors == []
    assert [b["attrs"] for b in blocks if b["name"] == "atsd"][0] == {"size": "64M", "bystanders": "0"}
    values, output, table = guest.atsd_output(text)
    result = atsd_output.to_result(output)
    assert result.host["mmu"] == "Radix" and result.complete and table.startswith("mprotect(PROT_NONE) rate")


def test_console_failures_say_what_and_show_the_tail(fixtures):
    text = (fixtures / "power" / "power9-radix.console").read_text()
    with pytest.raises(UsageError, match=r"the guest hung: killed after 60 s; console tail:\n") as e:
        guest.atsd_output(text[:2000], qemu_rc=None, timeout=60)
    assert str(e.value).count("\n") <= 9
    with pytest.raises(UsageError, match=r"the kernel did not reach /init \(qemu exit 1: qemu: bad\)"):
        guest.atsd_output("[    0.0] Kernel panic - not syncing: VFS\n", qemu_rc=1, qemu_messages="qemu: bad\n")
    cut = text[:text.index("@@ end atsd")]
    with pytest.raises(UsageError, match="the guest stopped before atsd's output was complete"):
        guest.atsd_output(cut)
    failed = "@@ guest\n@@ begin atsd\n@@ end atsd rc=2\n@@ atsd-error atsd: --size: bad size\n@@ done\n"
    with pytest.raises(UsageError, match="atsd in the guest failed: atsd: --size: bad size"):
        guest.atsd_output(failed)


def test_elf_arch_tells_static_from_dynamic(tmp_path):
    assert guest.elf_arch(elf(tmp_path / "v", 21)) == ("ppc64le", True)
    assert guest.elf_arch("/bin/sh")[1] is False


def test_bad_input_is_one_line_before_anything_boots(cli, tmp_path):
    kernel = bzimage(tmp_path / "bzImage")
    for args, message in [
        (["--kernel", "/etc/passwd"], "is not a kernel image"),
        (["--kernel", kernel, "--machine", "power9"], "is an x86_64 kernel; --machine power9 boots ppc64le"),
        (["--kernel", kernel, "--machine", "sparc"], "--machine must be one of"),
        (["--kernel", kernel, "--", "--gpu", "0"], "the standalone atsd has no --gpu"),
        (["--kernel", kernel, "--", "--size", "lots"], "size 'lots' is not a size"),
        ([], "guest needs --kernel IMAGE"),
        (["--kernel", kernel, "--mem", "lots"], "--mem must be a size such as 2G"),
        (["--kernel", kernel, "--smp", "0"], "--smp at least 1"),
        (["--kernel", kernel, "--accel", "hvf"], "--accel must be tcg or kvm"),
    ]:
        p = cli("guest", "-o", tmp_path / "out", *args)
        assert p.returncode == 2 and p.stdout == "" and len(p.stderr.splitlines()) == 1, (args, p.stderr)
        assert message in p.stderr, (args, p.stderr)
    assert not (tmp_path / "out").exists()


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


def test_power_check_s_verdict_on_guest_results(fixtures):
    """scripts/power_verdict.py --result: atsdbench guest's result files against the flush rule, with the
    ceilings the guest's debugfs gave (recorded in host)."""
    import subprocess
    import sys

    script = fixtures.parent.parent / "scripts" / "power_verdict.py"

    def verdict(name, mmu, path):
        p = subprocess.run([sys.executable, str(script), "--guest", name, "--mmu", mmu, "--cpu", "POWER9", "--out",
                            "/nonexistent", "--result", str(path)], capture_output=True, text=True)
        return p.returncode, p.stdout.strip()

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
