"""What `atsdbench calibrate` prints of the noise profile it wrote: per (cell, stride) the two
components, and what a compare of two single runs with such profiles could detect."""
import math

from tabulate import tabulate

from ..analysis import noise
from ..data.cells import where
from . import numbers


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
    return (f"noise profile of {h['hostname']} ({h.get('cpu_model') or 'CPU unknown'}), kernel {h['kernel_release']}: "
            f"{profile.describe()}\n{table}\n"
            f"on log rates (SD% = 100 x SD, about the CV); within: round means inside a sub-run; between: the "
            "sub-run effect beyond that (a fresh process, the host's slower drift), 0 where none shows, its df by "
            "Satterthwaite\n"
            f"Detects: the smallest speedup a compare of two single runs of this plan ({rounds} rounds a side) "
            f"finds with 80% power at {numbers.level(confidence)} (Holm over the {len(entries)} strides), each "
            f"kernel with a profile like this one; boot-to-boot not measured (one boot)")
