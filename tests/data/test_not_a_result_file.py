"""A file given where a result file goes that is of another kind says what to do with it."""
import sys

import pytest

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
from test_atsd_output import text as atsd_text  # noqa: E402


@pytest.mark.parametrize("content,message", [
    ("", "{f} is empty, not a result file (`atsdbench import` reads atsd's output)"),
    ("\n\n", "{f} is empty, not a result file (`atsdbench import` reads atsd's output)"),
    (atsd_text(), "{f} is atsd's text output, not a result file: `atsdbench import {f}`"),
    ("stride,n,min,max,median\n64K,5,5.5,6.1,5.8\n",
     "{f} is a CSV table, not a result file (a rate table: `atsdbench import --table`)"),
    ("Stride  GB/s\n64K  5.8\n", "{f} is not JSON, not a result file (atsd's output: `atsdbench import`)"),
    ('{"format": "atsdbench-result", ', "{f} is not JSON (Expecting property name enclosed in double quotes"),
])
@pytest.mark.parametrize("command", ["show", "compare"])
def test_not_a_result_file_says_the_way_out(cli, tmp_path, fixtures, content, message, command):
    f = tmp_path / "x.json"
    f.write_text(content)
    words = ["show", f] if command == "show" else ["compare", fixtures / "before.json", f]
    p = cli(*words)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert p.stderr.startswith("atsdbench: " + message.format(f=f)), p.stderr


def test_show_s_csv_fed_back_names_it(cli, tmp_path, fixtures):
    f = tmp_path / "before.csv"
    f.write_text(cli("show", fixtures / "before.json", "--format", "csv").stdout)
    p = cli("show", f)
    assert p.returncode == 2 and f"{f} is a CSV table, not a result file" in p.stderr


def test_a_noise_profile_that_is_empty_says_so(tmp_path):
    from atsdbench.data import inputs
    from atsdbench.errors import UsageError

    f = tmp_path / "p.json"
    f.write_text("")
    with pytest.raises(UsageError, match=f"^{f} is empty, not a noise profile$"):
        inputs.read_json(str(f), "a noise profile")
