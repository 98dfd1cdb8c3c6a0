"""campaign/methods: grub's entry from grub.cfg, kexec's facts and errors (fakes: the C call is not made)."""
import errno
import subprocess

import pytest

from atsdbench.campaign import methods
from atsdbench.errors import UsageError

GRUB_CFG = r"""
set default="${saved_entry}"
menuentry 'Debian GNU/Linux' --class debian $menuentry_id_option 'gnulinux-simple-1234' {
	linux	/boot/vmlinuz-6.12.117+deb12-amd64 root=UUID=1234 ro quiet
}
submenu 'Advanced options for Debian GNU/Linux' $menuentry_id_option 'gnulinux-advanced-1234' {
	menuentry 'Debian GNU/Linux, with Linux 6.12.117+deb12-amd64' $menuentry_id_option 'gnulinux-6.12.117+deb12-amd64-advanced-1234' {
		linux	/boot/vmlinuz-6.12.117+deb12-amd64 root=UUID=1234 ro quiet
	}
	menuentry 'Debian GNU/Linux, with Linux 6.1.0-47-amd64 (recovery mode)' $menuentry_id_option 'gnulinux-6.1.0-47-amd64-recovery-1234' {
		linux	/boot/vmlinuz-6.1.0-47-amd64 root=UUID=1234 ro single
	}
	menuentry 'Debian GNU/Linux, with Linux 6.1.0-47-amd64' $menuentry_id_option 'gnulinux-6.1.0-47-amd64-advanced-1234' {
		linux	/boot/vmlinuz-6.1.0-47-amd64 root=UUID=1234 ro quiet
	}
}
menuentry "Plain title" {
	linux /vmlinuz-custom root=/dev/sda1
}
"""


def test_grub_entry_by_ids_recovery_last():
    assert methods.grub_entry(GRUB_CFG, "/boot/vmlinuz-6.1.0-47-amd64") == \
        "gnulinux-advanced-1234>gnulinux-6.1.0-47-amd64-advanced-1234"
    assert methods.grub_entry(GRUB_CFG, "/boot/vmlinuz-6.12.117+deb12-amd64") == "gnulinux-simple-1234"
    assert methods.grub_entry(GRUB_CFG, "/boot/vmlinuz-custom") == "Plain title"
    assert methods.grub_entry(GRUB_CFG, "/boot/vmlinuz-9.9") is None


def _grub(tmp_path, default="GRUB_DEFAULT=saved\n", calls=None, rc=0):
    (tmp_path / "grub.cfg").write_text(GRUB_CFG)
    (tmp_path / "grub").write_text(default)

    def run(cmd, **kw):
        calls.append(cmd) if calls is not None else None
        return subprocess.CompletedProcess(cmd, rc, "", "grub-reboot: error: no such entry\n" if rc else "")
    return methods.Grub(cfg=str(tmp_path / "grub.cfg"), default=str(tmp_path / "grub"), run=run)


def test_grub_needs_saved_default_and_entries(tmp_path):
    k = [{"name": "a", "image": "/boot/vmlinuz-6.1.0-47-amd64"}]
    with pytest.raises(UsageError, match="GRUB_DEFAULT=saved"):
        _grub(tmp_path, default="GRUB_DEFAULT=0\n").check(k)
    _grub(tmp_path).check(k)
    with pytest.raises(UsageError, match="no entry .* boots vmlinuz-7"):
        _grub(tmp_path).check([{"name": "b", "image": "/x/vmlinuz-7"}])


def test_grub_arranges_with_grub_reboot_and_says_its_failure(tmp_path):
    calls = []
    g = _grub(tmp_path, calls=calls)
    assert "grub-reboot" in g.arrange({"name": "a", "image": "/boot/vmlinuz-6.1.0-47-amd64"})
    assert calls == [["grub-reboot", "gnulinux-advanced-1234>gnulinux-6.1.0-47-amd64-advanced-1234"]]
    with pytest.raises(UsageError, match="no such entry"):
        _grub(tmp_path, rc=1).arrange({"name": "a", "image": "/boot/vmlinuz-6.1.0-47-amd64"})


def _proc(tmp_path, cap="000001ffffffffff", lockdown=None, disabled="0", cmdline="BOOT_IMAGE=/vmlinuz-6.1 root=/dev/vda ro initrd=x quiet"):
    (tmp_path / "self").mkdir()
    (tmp_path / "self" / "status").write_text(f"Name:\tx\nCapEff:\t{cap}\n")
    (tmp_path / "sys" / "kernel").mkdir(parents=True)
    (tmp_path / "sys" / "kernel" / "kexec_load_disabled").write_text(disabled + "\n")
    (tmp_path / "cmdline").write_text(cmdline + "\n")
    sysroot = tmp_path / "sysfs"
    if lockdown:
        (sysroot / "kernel" / "security").mkdir(parents=True)
        (sysroot / "kernel" / "security" / "lockdown").write_text(lockdown + "\n")
    return str(tmp_path), str(sysroot)


def test_kexec_facts(tmp_path):
    proc, sysroot = _proc(tmp_path, lockdown="none [integrity] confidentiality")
    f = methods.kexec_facts(proc, sysroot)
    assert f["cap_sys_boot"] is True and f["lockdown"] == "integrity" and not f["disabled"]


class FakeCore:
    def __init__(self, err=None):
        self.err, self.loaded, self.rebooted = err, [], 0

    def kexec_load(self, image, initrd, cmdline):
        if self.err:
            raise OSError(self.err, "x", image)
        self.loaded.append((image, initrd, cmdline))

    def kexec_reboot(self):
        self.rebooted += 1


def test_kexec_loads_with_this_boots_cmdline_and_the_kernels_append(tmp_path):
    proc, sysroot = _proc(tmp_path)
    core = FakeCore()
    k = methods.Kexec(proc=proc, sys_root=sysroot, core=core, systemd=False)
    k.arrange({"name": "b", "image": "/d/vmlinuz", "initrd": "/d/initrd", "append": "mitigations=off"})
    assert core.loaded == [("/d/vmlinuz", "/d/initrd", "root=/dev/vda ro quiet mitigations=off")]
    k.reboot()
    assert core.rebooted == 1


@pytest.mark.parametrize("cap,lockdown,disabled,err,expect", [
    ("0000000000000000", None, "0", None, "lacks CAP_SYS_BOOT"),
    ("000001ffffffffff", None, "1", None, "kexec_load_disabled is 1"),
    ("000001ffffffffff", "none integrity [confidentiality]", "0", errno.EPERM, "lockdown \\(confidentiality"),
    ("000001ffffffffff", "[none] integrity", "0", errno.EKEYREJECTED, "signature did not verify"),
    ("000001ffffffffff", "[none] integrity", "0", errno.ENOSYS, "no kexec_file_load"),
    ("000001ffffffffff", "[none] integrity", "0", errno.ENOEXEC, "not a kernel this one can load"),
    ("000001ffffffffff", "[none] integrity", "0", errno.EPERM, "see dmesg"),
])
def test_kexec_errors_are_one_line(tmp_path, cap, lockdown, disabled, err, expect):
    proc, sysroot = _proc(tmp_path, cap=cap, lockdown=lockdown, disabled=disabled)
    k = methods.Kexec(proc=proc, sys_root=sysroot, core=FakeCore(err), systemd=False)
    with pytest.raises(UsageError, match=expect) as e:
        k.arrange({"name": "b", "image": "/d/vmlinuz", "initrd": None, "append": None})
    assert "\n" not in str(e.value) and len(str(e.value)) <= 200


def test_the_real_kexec_wrapper_maps_errno(tmp_path):
    """The C wrapper itself: a file that is not regular is refused before the syscall; on this machine
    (root or not) the rest is the kernel's answer, turned into an OSError with its errno."""
    from atsdbench.measure import core

    with pytest.raises(OSError) as e:
        core.kexec_load(str(tmp_path), None, "")
    assert e.value.errno == errno.EINVAL
    with pytest.raises(OSError) as e:
        core.kexec_load(str(tmp_path / "absent"), None, "")
    assert e.value.errno == errno.ENOENT
    junk = tmp_path / "junk"
    junk.write_bytes(b"not a kernel" * 100)
    with pytest.raises(OSError) as e:  # never loads: ENOEXEC, or EPERM without CAP_SYS_BOOT / in a container
        core.kexec_load(str(junk), None, "quiet")
    assert e.value.errno in (errno.ENOEXEC, errno.EPERM, errno.ENOSYS, errno.EINVAL)
