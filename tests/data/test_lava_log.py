"""data/lava_log.py: result files read back out of a LAVA job's log, as lava-run's output.yaml keeps it
(one `- {"dt", "lvl", "msg"}` a line) and as a plain console; damage on the serial line is caught."""
import base64
import gzip
import hashlib
import json

import pytest

from atsdbench.data import lava_log
from atsdbench.errors import UsageError


def _block(name, raw, chunk=76):
    body = base64.b64encode(gzip.compress(raw)).decode()
    lines = [body[i:i + chunk] for i in range(0, len(body), chunk)]
    return [f"+ echo ATSDBENCH-RESULT-BEGIN {name} {len(raw)}", f"ATSDBENCH-RESULT-BEGIN {name} {len(raw)}",
            *lines, f"ATSDBENCH-RESULT-END {name} {hashlib.sha256(raw).hexdigest()}"]


def _yaml(lines):
    return "\n".join('- {"dt": "2026-12-04T20:00:00.000000", "lvl": "target", "msg": %s}' % json.dumps(line)
                     for line in lines)


def test_a_result_is_read_from_lava_s_log_and_from_a_console(fixtures):
    raw = (fixtures / "before.json").read_bytes()
    lines = ["<LAVA_SIGNAL_STARTRUN 0_atsdbench uuid>", *_block("a", raw), "done"]
    for text in (_yaml(lines), "\r\n".join(lines)):
        found, problems = lava_log.extract(text)
        assert found == [("a", raw)] and problems == []


def test_damage_on_the_line_leaves_that_result_out_and_says_so(fixtures, tmp_path):
    raw = (fixtures / "before.json").read_bytes()
    good, bad, cut = _block("good", raw), _block("bad", raw), _block("cut", raw)
    bad[3] = bad[3][:10] + ("A" if bad[3][10] != "A" else "B") + bad[3][11:]  # one character changed
    text = "\n".join(good + bad + cut[:-1])
    found, problems = lava_log.extract(text)
    assert [n for n, _ in found] == ["good"]
    assert any("bad in the log is damaged" in p for p in problems) and any("cut: its end marker" in p for p in problems)
    log = tmp_path / "output.yaml"
    log.write_text(_yaml(good + bad))
    results, warnings = lava_log.read(str(log))
    assert [n for n, _ in results] == ["good"] and results[0][1].config["label"] == "Before" and warnings


def test_a_log_without_a_whole_result_is_one_line(tmp_path, cli):
    log = tmp_path / "log.txt"
    log.write_text("no markers here\n")
    with pytest.raises(UsageError, match="no whole atsdbench result between markers"):
        lava_log.read(str(log))
    p = cli("import", "--lava-log", log)
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1
    p = cli("import", "--lava-log", tmp_path / "gone.yaml")
    assert p.returncode == 2 and "No such file" in p.stderr


def test_import_lava_log_writes_each_result_and_never_replaces_one(fixtures, tmp_path, cli):
    raw = (fixtures / "before.json").read_bytes()
    log = tmp_path / "output.yaml"
    log.write_text(_yaml(_block("atsdbench-h-6.1-x", raw) + _block("atsdbench-h-6.1-x", raw)))
    p = cli("import", "--lava-log", log, "-o", tmp_path / "out")
    assert p.returncode == 0, p.stderr
    assert sorted(x.name for x in (tmp_path / "out").iterdir()) == ["atsdbench-h-6.1-x-2.json", "atsdbench-h-6.1-x.json"]
