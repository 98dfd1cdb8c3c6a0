"""What `atsdbench calibrate` prints of the noise profile it wrote: per (cell, stride) the two
components, and what a compare of two single runs with such profiles could detect; and calibrate's
own lines around it."""
import math

from tabulate import tabulate

from ..analysis import noise
from ..data.cells import where
from . import numbers
from .notes import BOOTS, CALIBRATE, NOISE_PROFILE_TABLE, plural, see


def gap_under_floor(gap, floor):
    """calibrate --gap under the floor its design was measured at."""
    return see(f"--gap {numbers.general(gap, 6)}s under {numbers.general(floor, 6)}s: less of the host's drift in "
               "the profile", CALIBRATE)


def none_written(output):
    """calibrate interrupted: no noise profile, and the command that makes one of what finished."""
    return f"no noise profile written (interrupted): atsdbench calibrate --from {output} makes one of what finished"


def _sd_pct(variance):
    """100 x the SD of log rates: about the CV, in percent."""
    return numbers.fixed(100 * math.sqrt(variance), 1) if variance >= 0 else numbers.NA


def render(noise_profile, confidence=95.0):
    entries = list(noise_profile.entries.values())
    rounds = noise_profile.plan["rounds"]
    body = []
    for e in entries:
        body.append([where(e["stride_bytes"], e["cell"]), _sd_pct(e["within_var"]), str(e["within_df"]),
                     _sd_pct(e["between_var"]), numbers.fixed(e["between_df"], 1) if e["between_df"] else numbers.NA,
                     numbers.pct(noise.detects(e, rounds, confidence, len(entries)), 1, sign=False)])
    table = tabulate(body, headers=["Stride", "within SD%", "df", "between SD%", "df", "Detects (80%)"],
                     tablefmt="simple", disable_numparse=True)
    h = noise_profile.host
    return "\n".join([f"noise profile of {h['hostname']} ({h.get('cpu_model') or 'CPU unknown'}), kernel "
                      f"{h['kernel_release']}:", noise_profile.describe(), table,
                      see("SD%: 100 x SD of log rates, within sub-runs and between them", NOISE_PROFILE_TABLE),
                      see(f"Detects: two single runs' compare, 80% power at {numbers.level(confidence)}, "
                          f"Holm over {plural(len(entries), 'stride')}", NOISE_PROFILE_TABLE),
                      see(f"one profile per kernel ({plural(rounds, 'round')} a side); boot-to-boot not "
                          "measured", BOOTS)])
