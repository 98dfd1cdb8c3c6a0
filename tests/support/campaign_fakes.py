"""Fakes for the campaign's tests: kernel images that say their release, a /proc of a given boot, a
runner that 'measures' by copying a fixture, a boot method that records what it was asked."""
import json
import os
import pathlib
import struct

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"


def bzimage(path, banner):
    """A file with an x86 boot header whose kernel_version points at `banner`."""
    head = bytearray(0x10000)
    head[0x202:0x206] = b"HdrS"
    head[0x206:0x208] = (0x020F).to_bytes(2, "little")  # the boot protocol: 2.15
    struct.pack_into("<H", head, 0x20E, 0x1000 - 0x200)
    head[0x1000:0x1000 + len(banner)] = banner.encode()
    pathlib.Path(path).write_bytes(bytes(head))
    return str(path)


A_BANNER = "6.1.0-47-amd64 (debian-kernel@lists.debian.org) #1 SMP PREEMPT_DYNAMIC Debian 6.1.158-1 (2025-11-09)"
B_BANNER = "6.12.117+deb12-amd64 (debian-kernel@lists.debian.org) #1 SMP PREEMPT_DYNAMIC Debian 6.12.117-1~deb12u1"


def banner_parts(banner):
    release, _, rest = banner.partition(" ")
    return release, rest[rest.index("#"):]


def proc(root, boot_id, banner, cmdline="console=ttyS0 quiet"):
    """A fake /proc for one boot of the kernel `banner` names."""
    release, version = banner_parts(banner)
    k = pathlib.Path(root) / "sys" / "kernel"
    (k / "random").mkdir(parents=True, exist_ok=True)
    (k / "random" / "boot_id").write_text(boot_id + "\n")
    (k / "osrelease").write_text(release + "\n")
    (k / "version").write_text(version + "\n")
    (pathlib.Path(root) / "cmdline").write_text(cmdline + "\n")
    return str(root)


class Runner:
    """Writes a copy of a fixture result (base for the first kernel's release, another for the rest),
    its host's boot_id and release set to the boot's; rc as given (a partial file with rc 130)."""

    def __init__(self, proc_root):
        self.proc_root, self.calls, self.rc, self.complete = proc_root, [], 0, False

    def __call__(self, words, output):
        self.calls.append((list(words), output))
        k = pathlib.Path(self.proc_root) / "sys" / "kernel"
        release = (k / "osrelease").read_text().strip()
        data = json.loads((FIXTURES / ("before.json" if release.startswith("6.1.") else "after.json")).read_text())
        data["host"]["boot_id"] = (k / "random" / "boot_id").read_text().strip()
        data["host"]["kernel_release"] = release
        for sample in data["samples"]:  # each boot a run of its own: copies of one run are one observation
            sample["fake_run"] = len(self.calls)
        if self.rc and not self.complete:  # complete: a finished run with a nonzero exit (3: stale)
            data["complete"] = False
        if self.rc != 2:  # 2: a run that could not write its file (disk full): nothing here
            pathlib.Path(output).write_text(json.dumps(data))
        return self.rc


class Method:
    name = "fake"

    def __init__(self, fail=None):
        self.arranged, self.reboots, self.fail = [], 0, fail

    def check(self, kernels):
        pass

    def describe(self, kernel):
        return f"fake {kernel['name']}"

    def arrange(self, kernel):
        if self.fail:
            from atsdbench.errors import UsageError
            raise UsageError(self.fail)
        self.arranged.append(kernel["name"])
        return f"fake arranged {kernel['name']}"

    def reboot(self):
        self.reboots += 1


def plan(directory, kernels, boots=2, schedule="alternate", method="manual", options=("--size", "16M")):
    """A plan written straight (no core needed): kernels as (name, banner, image path)."""
    from atsdbench.campaign import plan as plans

    ks = []
    for name, banner, image in kernels:
        release, version = banner_parts(banner)
        ks.append({"name": name, "image": image, "initrd": None, "append": None, "release": release,
                   "version": version})
    data = {"format": "atsdbench-campaign", "version": 1, "created": 0, "kernels": ks, "boots": boots,
            "schedule": schedule, "method": method, "run_options": list(options)}
    os.makedirs(directory, exist_ok=True)
    pathlib.Path(directory, "campaign.json").write_text(json.dumps(data))
    assert plans.planned_order(data)
    return data
