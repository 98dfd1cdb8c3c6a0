"""lava/atsdbench.yaml as LAVA's dispatcher runs it (lava_dispatcher/actions/deploy/testdef.py): the
params as shell assignments (a job's parameters replacing the defaults), `set -e`, `set -x`, then every
step as written, one script.  Read with a reader of this file's own layout (two-level `params`, steps
as `- |` blocks): tests/lab/test_server.py's jobs check it against LAVA's own YAML reading."""
import pathlib
import re

DEFINITION = pathlib.Path(__file__).resolve().parents[2] / "lava" / "atsdbench.yaml"


def params(text=None):
    text = text or DEFINITION.read_text()
    block = text[text.index("\nparams:\n"):text.index("\nrun:\n")]
    return dict(re.findall(r'^    ([A-Z_]+): "([^"]*)"$', block, re.M))


def steps(text=None):
    text = text or DEFINITION.read_text()
    body = text[text.index("\nrun:\n"):]
    out = []
    for block in re.split(r"^        - \|\n", body, flags=re.M)[1:]:
        lines = [line[12:] if line.startswith(" " * 12) else line.strip() for line in block.splitlines()]
        out.append("\n".join(lines).rstrip() + "\n")
    return out


def script(**given):
    """The run.sh LAVA writes: params (given ones replacing the defaults), set -e, set -x, the steps."""
    values = {**params(), **given}
    head = "".join(f"{k}='{v}'\n" for k, v in values.items())
    return head + "set -e\nset -x\nexport TESTRUN_ID=0_atsdbench\n" + "".join(steps())
