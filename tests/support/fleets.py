"""Fleet directories for the tests (data/fleet.py's contract): a manifest from fleet.new_manifest and
copies of tests/fixtures/*.json under results/BOARD/SIDE/, each copy's rates scaled by its board's
speed, its side's effect and a seeded per-file jitter (times recomputed from the rates)."""
import json
import math
import pathlib

import numpy as np

from atsdbench.data import fleet

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"


def scaled_copy(source, target, factor, label=None, host=None):
    """source's result file with every rate times `factor` (ns, seconds, us_per_call divided by it), its
    host updated by `host`."""
    data = json.loads(pathlib.Path(source).read_text())
    data["host"].update(host or {})
    size = data["config"]["size"]
    for s in data["samples"]:
        s["ns"] = max(1, int(round(s["ns"] / factor)))
        s["seconds"] = s["ns"] / 1e9
        s["gbps"] = size / s["ns"]
        s["us_per_call"] = s["ns"] / 1e3 / s["calls"]
    if label is not None:
        data["config"]["label"] = label
    pathlib.Path(target).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(target).write_text(json.dumps(data))


def make_fleet(directory, boards, sides=("A", "B"), files=2, effect=None, jitter=0.005, seed=0,
               source="before.json", host=None):
    """A fleet of boards: {board: speed factor}; effect: {side: factor} (default 1), per board too where
    it is a dict of dicts {board: {side: factor}}; a board whose speed is a dict {side: speed} runs only
    those sides; host: fields every file's host gets.  Returns the directory."""
    rng = np.random.default_rng(seed)
    directory = pathlib.Path(directory)
    data = fleet.new_manifest("http://lava.example:8000", list(sides))
    job = 100
    for board, speed in boards.items():
        speeds = speed if isinstance(speed, dict) else {side: speed for side in sides}
        for side, board_speed in speeds.items():
            side_effect = (effect or {}).get(board, (effect or {})) if effect else {}
            factor_side = side_effect.get(side, 1.0) if isinstance(side_effect, dict) else 1.0
            for _ in range(files):
                job += 1
                record = {"id": job, "side": side, "state": "Complete", "board": board}
                path = fleet.result_path(str(directory), record, "result")
                scaled_copy(FIXTURES / source, directory / path,
                            board_speed * factor_side * math.exp(rng.normal(0, jitter)), label=side, host=host)
                record["results"] = [path]
                data["jobs"].append(record)
    (directory / fleet.MANIFEST).write_text(json.dumps(data))
    return str(directory)
