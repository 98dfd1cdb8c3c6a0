"""Booting one guest for `atsdbench guest`: the qemu command line of a machine (its console to a file, no
display, network or reboot), running it until the guest powers off or the timeout kills it (with a
progress line on a terminal), and whether KVM can be used here."""
import os
import subprocess
import sys
import tempfile
import time

from ..errors import UsageError

# name: arch, qemu binary, Debian package with it, machine options, console, extra kernel arguments
MACHINES = {
    "power9": {"arch": "ppc64le", "qemu": "qemu-system-ppc64", "package": "qemu-system-ppc",
               "options": ["-M", "pseries", "-cpu", "power9"], "console": "hvc0", "append": ""},
    "power9-hash": {"arch": "ppc64le", "qemu": "qemu-system-ppc64", "package": "qemu-system-ppc",
                    "options": ["-M", "pseries", "-cpu", "power9"], "console": "hvc0", "append": "disable_radix"},
    "power8": {"arch": "ppc64le", "qemu": "qemu-system-ppc64", "package": "qemu-system-ppc",
               "options": ["-M", "pseries", "-cpu", "power8"], "console": "hvc0", "append": ""},
    "x86_64": {"arch": "x86_64", "qemu": "qemu-system-x86_64", "package": "qemu-system-x86",
               "options": [], "console": "ttyS0", "append": ""},
    "aarch64": {"arch": "aarch64", "qemu": "qemu-system-aarch64", "package": "qemu-system-arm",
                "options": ["-M", "virt", "-cpu", "max"], "console": "ttyAMA0", "append": ""},
}
DEFAULT_MACHINE = {"ppc64le": "power9", "x86_64": "x86_64", "aarch64": "aarch64"}


class Missing(UsageError):
    """A piece the guest needs is not on this machine: the message names the Debian package."""


def host_arch():
    import platform

    m = platform.machine()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(m, m)


def qemu_command(machine, kernel, initrd, console_log, smp=2, mem="2G", append="", accel="tcg"):
    """The qemu command line of one guest: its console to console_log, no display, no network, no reboot."""
    spec = MACHINES[machine]
    options = list(spec["options"])
    if accel == "kvm" and "-cpu" in options:
        options[options.index("-cpu") + 1] = "host"
    elif accel == "kvm":
        options += ["-cpu", "host"]
    args = " ".join(a for a in (f"console={spec['console']}", "quiet", "panic=-1", spec["append"], append) if a)
    return [spec["qemu"], *options, "-accel", accel, "-m", str(mem), "-smp", str(smp), "-display", "none",
            "-nodefaults", "-monitor", "none", "-serial", f"file:{console_log}", "-no-reboot",
            "-kernel", kernel, "-initrd", initrd, "-append", args]


def boot(cmd, console_log, timeout, progress=None):
    """Run qemu until the guest powers off or timeout seconds pass (then it is killed).
    Returns (qemu's exit status or None when killed, seconds, qemu's own messages)."""
    start = time.monotonic()
    stage = "booting"
    with tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=err, stderr=err)
        try:
            while True:
                try:
                    rc = p.wait(timeout=0.5)
                    break
                except subprocess.TimeoutExpired:
                    pass
                elapsed = time.monotonic() - start
                if elapsed > timeout:
                    p.kill()
                    p.wait()
                    rc = None
                    break
                if progress:
                    stage = _stage(console_log, stage)
                    progress(stage, elapsed)
        except BaseException:
            p.kill()
            p.wait()
            raise
        err.seek(0)
        return rc, time.monotonic() - start, err.read()


def _stage(console_log, stage):
    try:
        with open(console_log, "rb") as f:
            text = f.read()
    except OSError:
        return stage
    if b"@@ done" in text:
        return "done"
    at = text.rfind(b"@@ running")
    if at >= 0:
        what = text[at + 11:].split(b"\n", 1)[0].strip().decode("ascii", "replace")
        return f"running atsd ({what.replace('=', ' ')})" if what.startswith("run=") else f"running the {what}"
    return stage


KVM_DEVICE = "/dev/kvm"
KVM_GET_API_VERSION = 0xAE00  # _IO(KVMIO, 0x00), linux/kvm.h
KVM_API_VERSION = 12


def kvm_problem(device=None):
    """Why KVM cannot be used here, in words, or None: the device opens read-write and answers
    KVM_GET_API_VERSION with the version qemu speaks.  (A KVM that opens but cannot run a guest, as on
    the VM this was written on, is only seen when qemu starts.)"""
    import errno
    import fcntl

    device = device or KVM_DEVICE
    try:
        fd = os.open(device, os.O_RDWR | os.O_CLOEXEC)
    except OSError as e:
        if e.errno == errno.ENOENT:
            return (f"{device}: no such device (no KVM on this machine: the kvm module is not loaded, or a VM "
                    "without nested virtualization); leave --accel out for emulation (TCG)")
        if e.errno in (errno.EACCES, errno.EPERM):
            return f"{device}: permission denied (join its group, often kvm, or leave --accel out for TCG)"
        return f"{device}: {e.strerror}"
    try:
        version = fcntl.ioctl(fd, KVM_GET_API_VERSION)
    except OSError as e:
        return f"{device} is not a KVM device (KVM_GET_API_VERSION: {e.strerror})"
    finally:
        os.close(fd)
    if version != KVM_API_VERSION:
        return f"{device} speaks KVM API {version}, qemu speaks {KVM_API_VERSION}"
    return None


def accel_name(accel):
    return "kvm" if accel == "kvm" else "qemu-tcg"


def tty_progress(label):
    """A one-line progress report on stderr, only on a terminal."""
    if not sys.stderr.isatty():
        return None

    def show(stage, elapsed):
        sys.stderr.write(f"\r{'':70}\r{label}: {stage}, {elapsed:.0f} s")
        sys.stderr.flush()
    return show
