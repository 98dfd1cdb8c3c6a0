"""How a campaign's next boot is arranged: `manual` (say which kernel, and the command after), `grub`
(grub-reboot ENTRY: the entry found in grub.cfg from the image) and `kexec` (kexec_file_load from
the C core, then a reboot into it).  Each has arrange(kernel) -> what was done (a line), and
reboot(); every path and command is injectable so the tests run them on fakes."""
import errno
import os
import re
import shlex
import subprocess

from ..errors import UsageError

CAP_SYS_BOOT = 22


class Manual:
    name = "manual"

    def __init__(self, directory):
        self.directory = directory

    def check(self, kernels):
        pass

    def describe(self, kernel):
        return f"next: boot {kernel['name']} ({kernel['release']}), then run: atsdbench campaign step {self.directory}"

    def arrange(self, kernel):
        return self.describe(kernel)

    def reboot(self):
        return None


# ---- grub ----

_WORDS = re.compile(r"""'[^']*'|"(?:\\.|[^"\\])*"|\S+""")


def _unquote(word):
    if len(word) >= 2 and word[0] == word[-1] and word[0] in "'\"":
        return word[1:-1]
    return word


def grub_entries(cfg_text):
    """Every menuentry of a grub.cfg: {'path': [(title, id) of each submenu and the entry], 'linux':
    the kernel's path, 'args'} in file order."""
    entries, stack, current = [], [], None
    for raw in cfg_text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        words = _WORDS.findall(line)
        if words[0] in ("menuentry", "submenu"):
            title = _unquote(words[1]) if len(words) > 1 else ""
            ident = None
            for i, w in enumerate(words):
                if w in ("$menuentry_id_option", "--id") and i + 1 < len(words):
                    ident = _unquote(words[i + 1])
            stack.append((words[0], title, ident))
            if words[0] == "menuentry":
                current = {"path": [(t, i) for _, t, i in stack], "linux": None, "args": ""}
                entries.append(current)
            if line.endswith("}"):  # a one-line entry
                stack.pop()
            continue
        if words[0] in ("linux", "linuxefi", "linux16") and current is not None and len(words) > 1:
            current["linux"], current["args"] = words[1], " ".join(words[2:])
        if line == "}" and stack:
            kind, _, _ = stack.pop()
            if kind == "menuentry":
                current = None
    return entries


def grub_entry(cfg_text, image):
    """grub-reboot's ENTRY for the image: 'SUBMENU>ENTRY' by their ids where grub.cfg gives them, else by
    titles; the entry whose linux line names the image's file, recovery entries ('single') last."""
    base = os.path.basename(image)
    fits = [e for e in grub_entries(cfg_text) if e["linux"] and os.path.basename(e["linux"]) == base]
    if not fits:
        return None
    fits.sort(key=lambda e: "single" in e["args"].split() or "recovery" in e["path"][-1][0].lower())
    return ">".join(ident or title for title, ident in fits[0]["path"])


class Grub:
    name = "grub"

    def __init__(self, cfg="/boot/grub/grub.cfg", default="/etc/default/grub", run=subprocess.run):
        self.cfg, self.default, self.run = cfg, default, run

    def _cfg(self):
        try:
            with open(self.cfg, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError as e:
            raise UsageError(f"--method grub: cannot read {self.cfg}: {e.strerror}") from None

    def check(self, kernels):
        """Before anything is planned: GRUB_DEFAULT=saved (else grub-reboot's choice is never read) and an
        entry for every image."""
        try:
            with open(self.default, encoding="utf-8", errors="replace") as f:
                default = f.read()
        except OSError:
            default = ""
        values = re.findall(r"^\s*GRUB_DEFAULT=[\"']?([^\"'\s]*)", default, re.M)
        if not values or values[-1] != "saved":
            # grub-reboot's choice holds only where grub boots the saved entry
            raise UsageError(f"--method grub needs GRUB_DEFAULT=saved in {self.default} (then update-grub)")
        cfg = self._cfg()
        for k in kernels:
            if grub_entry(cfg, k["image"]) is None:
                raise UsageError(f"--method grub: no entry in {self.cfg} boots {os.path.basename(k['image'])}: run "
                                 "update-grub")

    def describe(self, kernel):
        entry = grub_entry(self._cfg(), kernel["image"])
        return f"grub-reboot {shlex.quote(entry or '?')}, then reboot"

    def arrange(self, kernel):
        entry = grub_entry(self._cfg(), kernel["image"])
        if entry is None:
            raise UsageError(f"--method grub: no entry in {self.cfg} boots {os.path.basename(kernel['image'])} now "
                             "(an update-grub?)")
        p = self.run(["grub-reboot", entry], capture_output=True, text=True)
        if p.returncode:
            why = (p.stderr or p.stdout or "").strip().splitlines()
            raise UsageError(f"grub-reboot {entry!r} failed (exit {p.returncode}): {why[-1] if why else 'no message'}")
        return f"grub-reboot {shlex.quote(entry)}"

    def reboot(self):
        p = self.run(["systemctl", "reboot"], capture_output=True, text=True)
        if p.returncode:
            p = self.run(["reboot"], capture_output=True, text=True)
        if p.returncode:
            raise UsageError("could not reboot (systemctl reboot, reboot): reboot by hand; the next kernel is set")


# ---- kexec ----

def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def kexec_facts(proc="/proc", sys_root="/sys"):
    """What decides whether kexec_file_load may work here: CAP_SYS_BOOT in this process, the lockdown
    mode, kexec_load_disabled, and this boot's command line (carried forward)."""
    status = read(os.path.join(proc, "self/status")) or ""
    m = re.search(r"^CapEff:\s*([0-9a-fA-F]+)", status, re.M)
    cap = bool(int(m.group(1), 16) >> CAP_SYS_BOOT & 1) if m else None
    lock = read(os.path.join(sys_root, "kernel/security/lockdown"))
    mode = re.search(r"\[(\w+)\]", lock).group(1) if lock and re.search(r"\[(\w+)\]", lock) else None
    disabled = (read(os.path.join(proc, "sys/kernel/kexec_load_disabled")) or "0").strip() == "1"
    return {"cap_sys_boot": cap, "lockdown": mode, "disabled": disabled,
            "cmdline": (read(os.path.join(proc, "cmdline")) or "").strip()}


def kexec_refusal(facts):
    """Why kexec cannot be tried at all here (one line), or None."""
    if facts["cap_sys_boot"] is False:
        return ("kexec: this process lacks CAP_SYS_BOOT (run the step as root, or give the unit "
                "AmbientCapabilities=CAP_SYS_BOOT); or use --method grub or manual")
    if facts["disabled"]:
        return ("kexec: /proc/sys/kernel/kexec_load_disabled is 1 (it stays so until a reboot): use "
                "--method grub or manual")
    return None


def kexec_error(err, facts, image):
    """The kernel's errno from kexec_file_load as one line that says why and the way out."""
    code = err.errno
    if code == errno.EPERM:
        if kexec_refusal(facts):
            return kexec_refusal(facts)
        if facts["lockdown"] not in (None, "none"):
            return (f"kexec: refused under lockdown ({facts['lockdown']}; UEFI Secure Boot): the image must be "
                    "signed by a key the kernel trusts (shim/MOK); or use --method grub")
        return "kexec: kexec_file_load: operation not permitted (no lockdown, CAP_SYS_BOOT held): see dmesg"
    if code in (errno.EKEYREJECTED, errno.ENOKEY, errno.EBADMSG, errno.EKEYREVOKED, errno.EKEYEXPIRED):
        lockdown = facts["lockdown"]
        forced = f" and lockdown ({lockdown}) enforces it" if lockdown not in (None, "none") else ""
        return (f"kexec: {image}'s signature did not verify ({os.strerror(code)}){forced}: sign it with an "
                "enrolled key (MOK), or use --method grub")
    if code == errno.ENOSYS:
        return "kexec: this kernel has no kexec_file_load (CONFIG_KEXEC_FILE off): use --method grub or manual"
    if code == errno.ENOEXEC:
        return f"kexec: {image} is not a kernel this one can load (on x86 give the bzImage: vmlinuz-*)"
    return f"kexec: loading {image}: {os.strerror(code)}"


def kexec_cmdline(kernel, current):
    """The next kernel's command line: this boot's (BOOT_IMAGE= and initrd= dropped: they name this
    boot's files) with the kernel's append= after it."""
    words = [w for w in shlex.split(current or "", posix=False) if not w.startswith(("BOOT_IMAGE=", "initrd="))]
    if kernel.get("append"):
        words.append(kernel["append"])
    return " ".join(words)


class Kexec:
    name = "kexec"

    def __init__(self, proc="/proc", sys_root="/sys", core=None, run=subprocess.run, systemd=None):
        self.proc, self.sys_root, self._core, self.run = proc, sys_root, core, run
        self.systemd = os.path.isdir("/run/systemd/system") if systemd is None else systemd

    @property
    def core(self):
        if self._core is None:
            from ..measure import core

            self._core = core
        return self._core

    def check(self, kernels):
        why = kexec_refusal(kexec_facts(self.proc, self.sys_root))
        if why:
            raise UsageError(why)

    def check_support(self, kernels, warn):
        """At init, as grub's GRUB_DEFAULT is checked: does the running kernel have kexec_file_load
        (ENOSYS would only be found after the first boot's run)?  Where it is a planned kernel (this is
        the campaign's machine) one without is refused; else (a plan made on another machine, or in a
        third kernel) it is said, as warn(line).  Not the capability: init may run as a user."""
        if self.core.kexec_file_supported():
            return
        from . import plan as plans

        release, version = ((read(os.path.join(self.proc, f"sys/kernel/{f}")) or "").strip()
                            for f in ("osrelease", "version"))
        name = plans.identify(kernels, release, version)
        if name is not None:
            raise UsageError(f"--method kexec: this kernel ({name}) has no kexec_file_load: use grub or manual")
        warn(f"kexec: this kernel ({release}) has no kexec_file_load: the planned ones need it")

    def describe(self, kernel):
        cmdline = kexec_cmdline(kernel, kexec_facts(self.proc, self.sys_root)["cmdline"])
        return f"kexec_file_load {kernel['image']}" + (f" (initrd {kernel['initrd']})" if kernel.get("initrd") else "") \
            + f" with {cmdline!r}, then reboot into it"

    def arrange(self, kernel):
        facts = kexec_facts(self.proc, self.sys_root)
        why = kexec_refusal(facts)
        if why:
            raise UsageError(why)
        cmdline = kexec_cmdline(kernel, facts["cmdline"])
        try:
            self.core.kexec_load(kernel["image"], kernel.get("initrd"), cmdline)
        except OSError as e:
            raise UsageError(kexec_error(e, facts, kernel["image"])) from None
        return f"kexec_file_load {kernel['image']}"

    def reboot(self):
        """Under systemd, `systemctl kexec` (services stopped, file systems unmounted, then the loaded
        kernel); else the reboot(2) itself, after sync."""
        if self.systemd:
            p = self.run(["systemctl", "kexec"], capture_output=True, text=True)
            if p.returncode == 0:
                return
        try:
            self.core.kexec_reboot()
        except OSError as e:
            raise UsageError(f"kexec: the reboot into the loaded kernel failed: {e.strerror}") from None


def method(name, directory, **kw):
    if name == "manual":
        return Manual(directory)
    if name == "grub":
        return Grub(**kw)
    if name == "kexec":
        return Kexec(**kw)
    raise UsageError(f"--method must be kexec, grub or manual (got {name!r})")
