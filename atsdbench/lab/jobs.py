"""Job definitions from a template: the project's (lava/jobs/, carried in the package) or a user's, with
{NAME} placeholders (capitals, digits, _) that lab submit fills; LAVA's own lower-case ones ({kernel},
{rootfs}) stay."""
import os
import re

from .. import carried
from ..errors import UsageError

PLACEHOLDER = re.compile(r"\{([A-Z][A-Z0-9_]*)\}")
_DEVICE_TYPE = re.compile(r"^device_type:.*$", re.M)
_TAGS = re.compile(r"^tags:", re.M)
PROJECT_TEMPLATE = os.path.join("jobs", "qemu-amd64.yaml")
# a side's image URLs as the project's template names them
IMAGES = {"initrd": "INITRD", "modules": "MODULES"}


def lava_dir():
    """The LAVA files ($ATSDBENCH_LAVA, the package's atsdbench/lava/, the checkout's lava/:
    carried.find); None in a broken install."""
    return carried.find("lava", "ATSDBENCH_LAVA", PROJECT_TEMPLATE)


def project_template():
    where = lava_dir()
    if where is None:
        raise UsageError("no LAVA job template in this install (reinstall atsdbench, or give --template FILE)")
    return os.path.join(where, PROJECT_TEMPLATE)


def parse_kernel(spec):
    """--kernel NAME=URL[,initrd=URL][,modules=URL][,PLACEHOLDER=VALUE...]: (name, {placeholder: value})."""
    head, *rest = spec.split(",")
    name, sep, url = head.partition("=")
    if not sep or not name or not url:
        raise UsageError(f"--kernel {spec!r} is not NAME=KERNEL_URL[,initrd=URL][,modules=URL][,KEY=VALUE]")
    values = {"KERNEL": url}
    for item in rest:
        key, sep, value = item.partition("=")
        if not sep or not value:
            raise UsageError(f"--kernel {name}: {item!r} is not KEY=VALUE")
        if key in IMAGES:
            key = IMAGES[key]
        elif not re.fullmatch(r"[A-Z][A-Z0-9_]*", key):
            raise UsageError(f"--kernel {name}: {key!r} is no initrd, modules or PLACEHOLDER (capitals, "
                             "digits, _)")
        values[key] = value
    return name, values


def parse_set(items):
    """--set PLACEHOLDER=VALUE (repeat): the values every job gets."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not re.fullmatch(r"[A-Z][A-Z0-9_]*", key):
            raise UsageError(f"--set {item!r} is not PLACEHOLDER=VALUE (a placeholder is capitals, digits, _)")
        out[key] = value
    return out


def _lines(text):
    """(is a comment, line) of each line: a comment's braces are words, not placeholders."""
    return [(line.lstrip().startswith("#"), line) for line in text.splitlines(keepends=True)]


def placeholders(text):
    return sorted({k for comment, line in _lines(text) if not comment for k in PLACEHOLDER.findall(line)})


def fill(template, values, where, device_type, tags):
    """The job definition: every placeholder filled (one left is refused), the device type set and
    the tags that pin it to its board added."""
    for key, value in values.items():
        if "\n" in value or '"' in value or "\\" in value:
            raise UsageError(f"{where}: the value of {key} holds a newline, \" or \\ (templates quote "
                             "values)")
    left = [k for k in placeholders(template) if k not in values]
    if left:
        shown = ", ".join("{" + k + "}" for k in left)
        raise UsageError(f"{where}: {shown} left unfilled (--set KEY=VALUE, or one side's --kernel "
                         "...,KEY=V)")
    text = "".join(line if comment else PLACEHOLDER.sub(lambda m: values[m.group(1)], line)
                   for comment, line in _lines(template))
    if not _DEVICE_TYPE.search(text):
        raise UsageError(f"{where}: no top-level device_type: line")
    text = _DEVICE_TYPE.sub(lambda m: f"device_type: {device_type}", text, count=1)
    if tags:
        if _TAGS.search(text):
            raise UsageError(f"{where}: has tags of its own: give them with --tag instead")
        text = text.rstrip("\n") + "\ntags:\n" + "".join(f'- "{t}"\n' for t in tags)
    return text


def order(sides, boots):
    """One board's sequence of sides: A B B A A B ... (each boot's pair reversed from the last), so a drift
    over the run and the order within a pair fall on every side alike."""
    out = []
    for k in range(boots):
        out.extend((s, k + 1) for s in (sides if k % 2 == 0 else list(reversed(sides))))
    return out


def plan(sides, boots, boards):
    """[(board, side, boot)] in submit order: every board's A B B A ... interleaved, one job of each board
    in turn, so the boards run alongside."""
    seq = order(sides, boots)
    return [(board, side, boot) for side, boot in seq for board in boards]
