"""Nothing a user named is replaced silently: every command that writes a file it is told to write
refuses an existing one in one line (exit 2, the old file kept) and replaces it with --force
(data/files.py check_writable, docs/result-file.md#nothing-replaced)."""
import pytest

from atsdbench.data import files
from atsdbench.errors import UsageError

REFUSED = "exists: --force replaces it"


def _refused(p, path, old):
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and REFUSED in p.stderr, p.stderr
    assert path.read_bytes() == old


def test_claim_refuses_an_existing_file_unless_asked(tmp_path):
    path = tmp_path / "r.json"
    files.claim(str(path))  # a new name: free
    files.release(str(path))
    path.write_text("old")
    with pytest.raises(UsageError, match=f"output {path} {REFUSED}"):
        files.claim(str(path))
    files.claim(str(path), replace=True)
    files.write_atomically(str(path), lambda f: f.write("new"))  # held: the claim's rule stands
    files.release(str(path))
    assert path.read_text() == "new"


def test_import_table_twice_to_one_name(cli, tmp_path, fixtures):
    out = tmp_path / "npu.json"
    words = ("import", "--table", fixtures / "npu_table.txt", "--page-size", "64K", "-o", out)
    assert cli(*words).returncode == 0
    old = out.read_bytes()
    _refused(cli(*words), out, old)
    p = cli(*words, "--force")
    assert p.returncode == 0, p.stderr


def test_plot_twice_to_one_name(cli, tmp_path, fixtures):
    pytest.importorskip("matplotlib")
    out = tmp_path / "p.svg"
    out.write_text("a picture of mine")
    _refused(cli("plot", fixtures / "before.json", "-o", out), out, b"a picture of mine")
    assert cli("plot", fixtures / "before.json", "-o", out, "--force").returncode == 0
    assert out.read_bytes() != b"a picture of mine"


def test_run_refuses_before_measuring(cli, tmp_path):
    out = tmp_path / "r.json"
    out.write_text("a result of mine")
    p = cli("run", "--size", "16M", "--strides", "64K", "--rounds", "1", "--reps", "1", "-o", out)
    _refused(p, out, b"a result of mine")
    assert p.stdout == ""  # nothing measured


@pytest.mark.live  # measures twice
def test_run_twice_to_one_name(cli, tmp_path):
    out = tmp_path / "r.json"
    words = ("run", "--size", "16M", "--strides", "64K", "--rounds", "1", "--reps", "1", "--warmup", "0", "-o", out)
    assert cli(*words).returncode == 0
    _refused(cli(*words), out, out.read_bytes())
    p = cli(*words, "--force")
    assert p.returncode == 0 and f"wrote {out}" in p.stdout, p.stderr
