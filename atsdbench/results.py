"""The result file: schema, save and load, and the samples as a pandas DataFrame.

Schema history (bump SCHEMA_VERSION when a reader of the old version would misread the new):
  1  first version: host, config, samples (one record per pass), complete flag, started/finished.
     Sample columns: round, rep, order, stride_bytes, warmup, traced, ns, seconds, calls, gbps,
     us_per_call; optional lat_p50_us/lat_p90_us/lat_p99_us/lat_max_us/lat_hist (--latency),
     ipis, tlb_* (vmstat), flushes, full_flushes, flushes_<reason> (counters), gpu_touch_ns (--gpu).
     An absent optional column means "not measured".
"""
import json
import math
import os
import socket
import time

from .errors import UsageError

SCHEMA_VERSION = 1
FORMAT = "atsdbench-result"
REQUIRED_COLUMNS = ("stride_bytes", "round", "rep", "warmup", "seconds", "calls", "gbps")


class Result:
    def __init__(self, host, config, samples, complete=True, started=None, finished=None, path=None):
        self.host = dict(host)
        self.config = dict(config)
        self._records = list(samples)
        self.complete = complete
        self.started = started
        self.finished = finished
        self.path = path
        self.error = None
        self._frame = None

    @property
    def samples(self):
        """All passes, warm-up ones included (column `warmup`), as a DataFrame."""
        if self._frame is None:
            import pandas as pd

            frame = pd.DataFrame.from_records(self._records)
            for col in REQUIRED_COLUMNS:
                if col not in frame:
                    frame[col] = pd.Series(dtype="float64")
            frame["warmup"] = frame["warmup"].astype(bool)
            if "traced" not in frame:
                frame["traced"] = False
            frame["traced"] = frame["traced"].fillna(False).astype(bool)
            self._frame = frame
        return self._frame

    @property
    def measured(self):
        """The passes statistics use: no warm-up (rounds or passes)."""
        frame = self.samples
        return frame[~frame["warmup"]]

    @property
    def label(self):
        return self.config.get("label") or self.host.get("kernel_release") or (os.path.basename(self.path or "") or "?")

    def to_dict(self):
        return {"format": FORMAT, "schema_version": SCHEMA_VERSION, "complete": self.complete,
                "started": self.started, "finished": self.finished, "host": self.host, "config": self.config,
                "samples": [_clean(s) for s in self._records]}


def _clean(record):
    # JSON has no NaN; an unmeasurable value is null.
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in record.items()}


def default_path(host, when=None):
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(when))
    name = host.get("hostname") or socket.gethostname()
    return f"atsdbench-{name}-{host.get('kernel_release', 'unknown')}-{stamp}.json"


def check_writable(path):
    """Fail before measuring, never after: an unwritable output path loses the whole run."""
    if os.path.isdir(path):
        raise UsageError(f"output {path} is a directory")
    existed = os.path.exists(path)
    try:
        with open(path, "a"):
            pass
    except OSError as e:
        raise UsageError(f"cannot write output {path}: {e.strerror}") from None
    if not existed:
        os.unlink(path)


def save(result, path):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(result.to_dict(), f, indent=1)
        f.write("\n")
    os.replace(tmp, path)
    result.path = path


def from_dict(data, path="<data>"):
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise UsageError(f"{path} is not an atsdbench result file")
    version = data.get("schema_version")
    if not isinstance(version, int):
        raise UsageError(f"{path} has no schema_version")
    if version > SCHEMA_VERSION:
        raise UsageError(f"{path} has schema_version {version}; this atsdbench reads up to {SCHEMA_VERSION} "
                         "(upgrade it)")
    samples = data.get("samples")
    if not (isinstance(samples, list) and isinstance(data.get("config"), dict) and isinstance(data.get("host"), dict)):
        raise UsageError(f"{path} is not an atsdbench result file (host, config or samples missing)")
    for s in samples:
        if not isinstance(s, dict) or any(c not in s for c in REQUIRED_COLUMNS):
            raise UsageError(f"{path} has a sample without the columns {', '.join(REQUIRED_COLUMNS)}")
    return Result(data["host"], data["config"], samples, bool(data.get("complete", True)),
                  data.get("started"), data.get("finished"), path)


def load(path):
    if isinstance(path, Result):
        return path
    try:
        with open(path) as f:
            data = json.load(f)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{path} is a directory") from None
    except OSError as e:
        raise UsageError(f"{path}: {e.strerror}") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise UsageError(f"{path} is not JSON ({e})") from None
    return from_dict(data, path)
