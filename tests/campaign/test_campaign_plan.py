"""campaign/plan: kernel specs, what an image says it is, telling kernels apart, the schedule."""
import pathlib
import re
import struct

import pytest

from atsdbench.campaign import plan as plans
from atsdbench.data import campaign as store
from atsdbench.errors import UsageError
from atsdbench.guest import image as image_module

import campaign_fakes as fakes


def test_kernel_spec_takes_initrd_release_and_append_with_commas():
    k = plans.parse_kernel("new=/b/vmlinuz,initrd=/b/initrd.img,append=quiet isolcpus=1,2 mitigations=off")
    assert k == {"name": "new", "image": "/b/vmlinuz", "initrd": "/b/initrd.img",
                 "append": "quiet isolcpus=1,2 mitigations=off", "release": None}
    assert plans.parse_kernel("a=img,release=6.1.0")["release"] == "6.1.0"


@pytest.mark.parametrize("spec", ["vmlinuz", "=img", "a/b=img", "a=", "a=img,initrd", "a=img,bogus=1"])
def test_bad_kernel_specs_are_one_line(spec):
    with pytest.raises(UsageError, match="--kernel"):
        plans.parse_kernel(spec)


def test_a_bzimage_says_its_release_and_version(tmp_path):
    image = fakes.bzimage(tmp_path / "vmlinuz", fakes.A_BANNER)
    assert plans.image_identity(image) == fakes.banner_parts(fakes.A_BANNER)


def test_a_release_the_image_contradicts_is_refused(tmp_path):
    """release= is for an image that says none: one that says another would never be recognised booted."""
    image = fakes.bzimage(tmp_path / "vmlinuz", fakes.A_BANNER)
    said = fakes.banner_parts(fakes.A_BANNER)[0]
    with pytest.raises(UsageError, match=f"release=9.9, but the image says {re.escape(said)}"):
        plans.resolve_image({"name": "a", "image": image, "initrd": None, "append": None, "release": "9.9"})
    k = plans.resolve_image({"name": "a", "image": image, "initrd": None, "append": None, "release": said})
    assert k["release"] == said and k["version"] == fakes.banner_parts(fakes.A_BANNER)[1]


def test_an_elf_vmlinux_says_it_through_its_banner(tmp_path):
    p = tmp_path / "vmlinux"
    p.write_bytes(b"\x7fELF" + b"\0" * 100 + b"Linux version 6.1.0-57-powerpc64le (x@y) (gcc (Debian 12.2.0-14) "
                  b"12.2.0) #1 SMP Debian 6.1.1-1 (2025-01-01)\n\0" + b"\0" * 100)
    release, version = plans.image_identity(str(p))
    assert release == "6.1.0-57-powerpc64le" and version == "#1 SMP Debian 6.1.1-1 (2025-01-01)"


def test_a_bzimage_cut_before_its_banner_pointer_says_nothing(tmp_path):
    """The setup header's magic, then the end of the file: unpacking its pointer was a struct.error
    (a traceback from campaign init)."""
    p = tmp_path / "vmlinuz"
    p.write_bytes(b"\0" * 0x202 + b"HdrS" + b"\0" * 4)
    assert plans.image_identity(str(p)) == (None, None)
    with pytest.raises(UsageError, match="release=R"):
        plans.resolve_image({"name": "a", "image": str(p), "initrd": None, "append": None, "release": None})


def test_an_image_that_does_not_say_needs_release(tmp_path):
    p = tmp_path / "Image"
    p.write_bytes(b"\0" * 4096)
    with pytest.raises(UsageError, match="release=R"):
        plans.resolve_image({"name": "a", "image": str(p), "initrd": None, "append": None, "release": None})
    k = plans.resolve_image({"name": "a", "image": str(p), "initrd": None, "append": None, "release": "6.9"})
    assert k["release"] == "6.9" and k["version"] is None and k["image"] == str(p)


def test_a_bzimage_header_cut_off_says_nothing_instead_of_a_traceback(tmp_path):
    """A file that ends inside the setup header (its 'HdrS' there, the banner's offset not): no release,
    so init asks for release=R in one line (struct.error escaped before)."""
    p = tmp_path / "vmlinuz"
    p.write_bytes(b"\0" * 0x202 + b"HdrS" + b"\0" * 4)
    assert plans.image_identity(str(p)) == (None, None)
    with pytest.raises(UsageError, match="release=R"):
        plans.resolve_image({"name": "a", "image": str(p), "initrd": None, "append": None, "release": None})


def test_two_kernels_that_run_as_the_same_are_refused():
    a = {"name": "a", "release": "6.1", "version": None}
    with pytest.raises(UsageError, match="could not be told apart"):
        plans.check_distinct([a, {"name": "b", "release": "6.1", "version": "#2"}])
    plans.check_distinct([{"name": "a", "release": "6.1", "version": "#1"},
                          {"name": "b", "release": "6.1", "version": "#2"}])


def test_identify_by_release_and_version():
    ks = [{"name": "a", "release": "6.1", "version": "#1 x"}, {"name": "b", "release": "6.1", "version": "#2 y"},
          {"name": "c", "release": "6.12", "version": None}]
    assert plans.identify(ks, "6.1", "#2 y") == "b"
    assert plans.identify(ks, "6.1", "#3 z") is None  # same release, another build: not mistaken
    assert plans.identify(ks, "6.12", "#9") == "c"
    assert plans.identify(ks, "5.10", "#1 x") is None


def _campaign(schedule, names=("A", "B"), boots=3, done=()):
    plan = {"kernels": [{"name": n, "image": n, "release": n} for n in names], "boots": boots,
            "schedule": schedule}
    events = [{"event": "done", "kernel": k, "boot_id": str(i)} for i, k in enumerate(done)]
    return store.Campaign("d", plan, events)


def test_alternate_and_abba_orders():
    assert plans.planned_order({"kernels": [{"name": "A"}, {"name": "B"}], "boots": 3,
                                "schedule": "alternate"}) == list("ABABAB")
    assert plans.planned_order({"kernels": [{"name": "A"}, {"name": "B"}], "boots": 4,
                                "schedule": "abba"}) == list("ABBAABBA")
    assert plans.planned_order({"kernels": [{"name": "A"}, {"name": "B"}, {"name": "C"}], "boots": 2,
                                "schedule": "abba"}) == list("ABCCBA")


def test_after_a_missed_slot_the_kernel_behind_goes_first():
    # B was arranged, A came up again (grub's fallback) and ran: B is now two behind
    assert plans.next_kernel(_campaign("alternate", done="AA")) == "B"
    assert plans.next_kernel(_campaign("alternate", done="AAB")) == "B"
    assert plans.next_kernel(_campaign("alternate", done="AABB")) == "A"  # tied again: away from the last
    assert plans.next_kernel(_campaign("alternate", done="AABBAB")) is None


def test_abba_with_a_kernel_done_takes_the_other():
    assert plans.next_kernel(_campaign("abba", boots=2, done="AA")) == "B"


def test_a_kernel_that_keeps_missing_is_stuck():
    c = _campaign("alternate", done="A")
    c.events += [{"event": "missed", "expected": "B", "booted": "A", "boot_id": str(i)} for i in range(3)]
    assert c.stuck() == ["B"]
    assert plans.next_kernel(c) == "A"
    c.events.append({"event": "done", "kernel": "B", "boot_id": "x"})
    assert c.stuck() == []


def test_a_bzimage_cut_short_is_refused(tmp_path):
    """A copy that stopped: the setup header says how long the image is (setup sectors, syssize)."""
    image = pathlib.Path(fakes.bzimage(tmp_path / "vmlinuz", fakes.A_BANNER))
    data = bytearray(image.read_bytes())
    data[0x1F1] = 7  # 8 sectors of setup + boot sector
    struct.pack_into("<I", data, 0x1F4, 0x10000)  # 1 MiB of kernel after them
    image.write_bytes(bytes(data))
    spec = {"name": "a", "image": str(image), "initrd": None, "append": None, "release": None}
    with pytest.raises(UsageError, match=f"is cut short \\({len(data)} of {8 * 512 + 0x100000} bytes\\)"):
        plans.resolve_image(spec)
    image.write_bytes(bytes(data) + b"\0" * (8 * 512 + 0x100000 - len(data)))
    assert plans.resolve_image(spec)["release"] == fakes.banner_parts(fakes.A_BANNER)[0]
    image.write_bytes(bytes(data) + b"\0" * (8 * 512 + 0x100000) + b"signature")  # a signed one is longer
    assert image_module.bzimage_short(str(image)) is None
