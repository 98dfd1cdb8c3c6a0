"""`atsdbench import`: the standalone `atsd` program's output (csrc/atsd_main.c) as a result file."""
from . import __version__
from .errors import UsageError
from .host import parse_bracketed, parse_cpulist
from .results import Result

INTS = {"size", "rounds", "reps", "warmup", "warmup_rounds", "bystanders", "cpu", "seed", "page_size",
        "hugepage_size", "round", "rep", "order", "stride_bytes", "ns", "calls", "ipis"}


def _fields(parts, where):
    out = {}
    for part in parts:
        key, sep, value = part.partition("=")
        if not sep:
            raise UsageError(f"{where}: '{part}' is not key=value")
        if key in INTS or key.startswith("lat_"):
            try:
                value = int(value)
            except ValueError:
                raise UsageError(f"{where}: {key}={value!r} is not a whole number") from None
        out[key] = value
    return out


def parse(text, name="<atsd output>"):
    lines = text.splitlines()
    if not lines or lines[0].strip() != "atsd-output 1":
        raise UsageError(f"{name} is not atsd output (its first line must be 'atsd-output 1')")
    host, config, samples, complete = None, None, [], False
    for number, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        kind, *parts = line.split("\t")
        where = f"{name} line {number}"
        f = _fields(parts, where)
        if kind == "host":
            host = f
        elif kind == "config":
            config = f
        elif kind == "sample":
            missing = {"round", "rep", "stride_bytes", "warmup", "ns", "calls"} - set(f)
            if missing:
                raise UsageError(f"{where}: sample without {', '.join(sorted(missing))}")
            samples.append(f)
        elif kind == "end":
            complete = f.get("complete") == "1"
        else:
            raise UsageError(f"{where}: unknown record '{kind}'")
    if host is None or config is None:
        raise UsageError(f"{name} has no host or config line")
    return host, config, samples, complete


def to_result(text, name="<atsd output>"):
    host, config, raw, complete = parse(text, name)
    host = {"hostname": host.get("hostname", "unknown"), "arch": host.get("arch", "unknown"),
            "kernel_release": host.get("kernel_release", "unknown"),
            "kernel_version": host.get("kernel_version", "unknown"), "cpu_model": host.get("cpu_model", "unknown"),
            "mmu": host.get("mmu", "unknown"), "online_cpus": parse_cpulist(host.get("online_cpus", "")),
            "affinity": "unknown", "page_size": host.get("page_size"),
            "hugepage_size": host.get("hugepage_size") if (host.get("hugepage_size") or 0) > 0 else None,
            "thp_enabled": parse_bracketed(host.get("thp_enabled")), "thp_defrag": "unknown",
            "python": "none (atsd)", "atsdbench": f"atsd, imported by {__version__}"}
    size = config["size"]
    cfg = {"size": size, "strides": [int(s) for s in str(config["strides"]).split(",")],
           "rounds": config["rounds"], "reps": config["reps"], "warmup": config["warmup"],
           "warmup_rounds": config["warmup_rounds"], "processes": False, "pages": config["pages"],
           "bystanders": config["bystanders"], "cpu": config["cpu"],
           "bystander_cpus": [int(c) for c in str(config.get("bystander_cpus", "")).split(",") if c],
           "latency": config.get("latency") == "1", "retouch": config.get("retouch") != "0", "trace": "off",
           "label": config.get("label"), "seed": config["seed"], "gpu": None, "source": "atsd"}
    samples = []
    for s in raw:
        ns = s["ns"]
        sample = {"round": s["round"], "rep": s["rep"], "order": s.get("order"), "stride_bytes": s["stride_bytes"],
                  "warmup": bool(int(s["warmup"])), "ns": ns, "seconds": ns / 1e9, "calls": s["calls"],
                  "gbps": size / ns if ns else float("nan"), "us_per_call": ns / 1e3 / s["calls"], "traced": False}
        if "ipis" in s:
            sample["ipis"] = s["ipis"]
        for q in ("p50", "p90", "p99", "max"):
            if f"lat_{q}_ns" in s:
                sample[f"lat_{q}_us"] = s[f"lat_{q}_ns"] / 1e3
        samples.append(sample)
    return Result(host, cfg, samples, complete)


def load(path):
    import sys

    try:
        if path == "-":
            return to_result(sys.stdin.read(), "<stdin>")
        with open(path, encoding="utf-8", errors="replace") as f:
            return to_result(f.read(), path)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except OSError as e:
        raise UsageError(f"{path}: {e.strerror}") from None
