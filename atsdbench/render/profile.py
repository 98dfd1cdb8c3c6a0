"""What `atsdbench calibrate` prints of the noise profile it wrote: per (cell, stride) the two
components, and what a compare of two single runs with such profiles could detect."""
import math

from tabulate import tabulate

from ..analysis import noise
from ..data.cells import where
from . import numbers, text


def _sd_pct(variance):
    """100 x the SD of log rates: about the CV, in percent."""
    return numbers.fixed(100 * math.sqrt(variance), 1) if variance >= 0 else numbers.NA


def render(profile, confidence=95.0):
    entries = list(profile.entries.values())
    rounds = profile.plan["rounds"]
    body = []
    for e in entries:
        body.append([where(e["stride_bytes"], e["cell"]), _sd_pct(e["within_var"]), str(e["within_df"]),
                     _sd_pct(e["between_var"]), numbers.fixed(e["between_df"], 1) if e["between_df"] else numbers.NA,
                     numbers.pct(noise.detects(e, rounds, confidence, len(entries)), 1, sign=False)])
    table = tabulate(body, headers=["Stride", "within SD%", "df", "between SD%", "df", "Detects (80%)"],
                     tablefmt="simple", disable_numparse=True)
    h = profile.host
    return "\n".join([f"noise profile of {h['hostname']} ({h.get('cpu_model') or 'CPU unknown'}), kernel "
                      f"{h['kernel_release']}:", profile.describe(), table,
                      text.see("SD%: 100 x SD of log rates, within sub-runs and between them", text.PROFILE_TABLE),
                      text.see(f"Detects: two single runs' compare, 80% power at {numbers.level(confidence)}, "
                               f"Holm over {text.plural(len(entries), 'stride')}", text.PROFILE_TABLE),
                      text.see(f"one profile per kernel ({text.plural(rounds, 'round')} a side); boot-to-boot not "
                               "measured", text.BOOTS)])
