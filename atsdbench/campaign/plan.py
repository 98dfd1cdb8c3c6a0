"""The campaign's plan: kernels given as NAME=IMAGE[,initrd=FILE][,append=ARGS][,release=R], what each
image says it is (release and version string, read from it without booting), and the schedule: which
kernel the next boot should be, from the boots finished so far."""
import os
import re
import struct

from ..data import campaign as store
from ..errors import UsageError


def parse_kernel(spec):
    """'NAME=IMAGE[,initrd=FILE][,append=ARGS][,release=R]' -> dict; append= takes the rest of the
    spec (kernel arguments may hold commas)."""
    name, eq, rest = spec.partition("=")
    if not eq or not rest:
        raise UsageError(f"--kernel {spec!r}: give NAME=IMAGE[,initrd=FILE][,append=ARGS]")
    if not store.NAME.fullmatch(name):
        raise UsageError(f"--kernel {spec!r}: the name {name!r} must be letters, digits and ._+- (at most 64)")
    out = {"name": name, "image": None, "initrd": None, "append": None, "release": None}
    head, sep, append = rest.partition(",append=")
    if sep:
        out["append"] = append
    parts = head.split(",")
    out["image"] = parts[0]
    for p in parts[1:]:
        key, eq, value = p.partition("=")
        if key not in ("initrd", "release") or not eq or not value:
            raise UsageError(f"--kernel {spec!r}: {p!r} is not initrd=FILE, append=ARGS or release=R")
        out[key] = value
    if not out["image"]:
        raise UsageError(f"--kernel {spec!r}: no image")
    return out


def image_identity(path, head_bytes=None):
    """(release, version string) an image carries, or (None, None): a bzImage's setup header points at
    'RELEASE (builder) VERSION'; an uncompressed vmlinux holds the 'Linux version RELEASE (...) VERSION'
    banner.  The version string is what uname -v says once it runs (e.g. '#1 SMP PREEMPT_DYNAMIC Debian
    6.1.123-1 (2025-01-02)')."""
    with open(path, "rb") as f:
        head = f.read(0x10000) if head_bytes is None else head_bytes
        if head[0x202:0x206] == b"HdrS" and len(head) >= 0x210:  # a cut-off header says nothing
            offset = struct.unpack_from("<H", head, 0x20E)[0] + 0x200
            text = head[offset:offset + 512].split(b"\0")[0].decode("utf-8", "replace")
            return _split_banner(text)
        if head[:4] == b"\x7fELF":
            import mmap

            try:
                with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                    at = m.find(b"Linux version ")
                    if at >= 0:
                        text = m[at + 14:at + 14 + 512].split(b"\n")[0].split(b"\0")[0]
                        return _split_banner(text.decode("utf-8", "replace"))
            except ValueError:
                pass
    return None, None


def _split_banner(text):
    """'6.1.0-47-amd64 (debian-kernel@lists.debian.org) #1 SMP ... (2025-01-02)' -> release, version.
    The builder's part is parenthesized and may nest ('(gcc-12 (Debian 12.2.0-14) 12.2.0, ...)')."""
    text = text.strip()
    if not text:
        return None, None
    release, _, rest = text.partition(" ")
    version = None
    hash_at = re.search(r"(?:^|\s)(#\S+.*)$", rest)
    if hash_at:
        version = hash_at.group(1).strip()
    return release, version


def identify(kernels, release, version):
    """The planned kernel this running one is (release equal; the version string equal where the plan
    knows it), or None.  Two that fit are refused at init, so at most one does."""
    fits = [k for k in kernels if k["release"] == release and (k.get("version") in (None, version))]
    return fits[0]["name"] if len(fits) == 1 else None


def check_distinct(kernels):
    """Two kernels the running system could not tell apart (same release, and a version string unknown
    or the same) are refused: a boot would be recorded as the wrong one."""
    for i, a in enumerate(kernels):
        for b in kernels[i + 1:]:
            if a["release"] == b["release"] and (a.get("version") is None or b.get("version") is None
                                                 or a["version"] == b["version"]):
                version = "" if a.get("version") is None or b.get("version") is None else f" {a['version']}"
                raise UsageError(f"--kernel {a['name']} and {b['name']} both run as {a['release']}{version}: "
                                 "a boot could not be told apart")


def next_kernel(c):
    """The kernel the next boot should run, or None when the plan is done (or every kernel left is stuck).

    alternate: the kernel with the most boots left, ties broken away from the one just run, then in
    the plan's order: A,B,A,B,... and, after a missed slot, the kernel that fell behind first.
    abba: the pattern A,B,B,A (A,B,C,C,B,A for three) at the position of the boots done, where that
    kernel still has boots left; else as alternate."""
    left = c.remaining()
    stuck = set(c.stuck())
    open_ = [n for n in c.names if left[n] and n not in stuck]
    if not open_:
        return None
    done = [e["kernel"] for e in c.done]
    if c.plan["schedule"] == "abba":
        pattern = c.names + c.names[::-1]
        want = pattern[len(done) % len(pattern)]
        if want in open_:
            return want
    last = done[-1] if done else None
    return max(open_, key=lambda n: (left[n], n != last, -c.names.index(n)))


def next_reason(c, nxt):
    """Why next_kernel chose nxt (a phrase for status), by the same rule."""
    left, done = c.remaining(), [e["kernel"] for e in c.done]
    if c.plan["schedule"] == "abba":
        pattern = c.names + c.names[::-1]
        if pattern[len(done) % len(pattern)] == nxt:
            return f"boot {len(done) + 1} of the abba order is {nxt}"
    others = [n for n in c.names if n != nxt and left[n] and n not in c.stuck()]
    tied = [n for n in others if left[n] == left[nxt]]
    if tied:
        return f"{nxt} has as many boots left as {', '.join(tied)} ({left[nxt]}), and did not run last"
    rest = ", ".join(f"{n} {left[n]}" for n in others) or "no other kernel has any"
    return f"{nxt} has the most boots left ({left[nxt]}; {rest})"


def planned_order(plan):
    """The whole order as planned (no slot missed), for status and the init line."""
    c = store.Campaign("", plan, [])
    order = []
    while True:
        n = next_kernel(c)
        if n is None:
            return order
        order.append(n)
        c.events.append({"event": "done", "kernel": n, "boot_id": str(len(order))})


def resolve_image(kernel):
    """The image (and initrd) made absolute and checked to be regular files; release and version read
    from the image where the plan does not give the release."""
    out = dict(kernel)
    for field in ("image", "initrd"):
        if out.get(field) is None:
            continue
        path = os.path.abspath(out[field])
        if not os.path.isfile(path):
            raise UsageError(f"--kernel {kernel['name']}: {field} {out[field]} is not a regular file")
        out[field] = path
    from ..guest.image import bzimage_short

    short = bzimage_short(out["image"])
    if short:
        raise UsageError(f"--kernel {kernel['name']}: {out['image']} is cut short ({short[0]} of {short[1]} bytes)")
    release, version = image_identity(out["image"])
    if out.get("release") is None:
        if release is None:
            raise UsageError(f"--kernel {kernel['name']}: {out['image']} says no release: add ,release=R (its "
                             "uname -r)")
        out["release"], out["version"] = release, version
    elif release is not None and release != out["release"]:
        # the banner is what the booted kernel's uname -r reports: a step would never recognise it
        raise UsageError(f"--kernel {kernel['name']}: release={out['release']}, but the image says {release} (its "
                         "uname -r)")
    else:
        out["version"] = version if release == out["release"] else None
    return out


def complete_line(directory):
    """What step and status say once every kernel has its boots."""
    return f"campaign {directory} is complete: atsdbench compare {directory}"
