"""The one number formatter of every renderer (tables, compare, model, info, plot labels).

One rule for what is missing: None, NaN or an infinity prints as "n/a" (no pass at a stride, no
pair, a division by zero, an estimate that could not be had), in every table and format.
Rates are GB/s (10^9 bytes/s) with 2 decimals unless a layout asks for another precision
(show's 3, the commit table's 1); percentages carry their sign where they are a change
("+12.3%"); a CI of a change is "[+1.2, +3.4]%", one of a value "[a, b]"."""
import math

NA = "n/a"


def missing(v):
    """True where there is no number to print: None, NaN, +-inf."""
    if v is None:
        return True
    try:
        return not math.isfinite(v)
    except TypeError:
        return False


def fixed(v, decimals=2):
    """v to `decimals` places: "5.85", "11.202"; n/a where missing."""
    return NA if missing(v) else f"{v:.{decimals}f}"


def rate(v, decimals=2):
    """A rate in GB/s, without the unit: "31.43"."""
    return fixed(v, decimals)


def unit_rate(v):
    """A rate in whatever unit its file names (analysis/scaling.rate_of): 2 decimals as rate() below
    10^4 (GB/s), whole numbers from there (a workload's loops/s: "527000")."""
    if missing(v):
        return NA
    return f"{v:.0f}" if abs(v) >= 1e4 else fixed(v, 2)


def general(v, digits=3, suffix="", sign=False):
    """%g to `digits` significant figures, then `suffix`: "0.0123", "1.5e+03", "0.8%" (p values,
    half-widths, plot labels, counts per call; sign=True: "+0.5", a change); n/a (no suffix) where missing."""
    if missing(v):
        return NA
    return f"{v:+.{digits}g}{suffix}" if sign else f"{v:.{digits}g}{suffix}"


def signed(v, decimals=2):
    """v with its sign: "+0.39", "-0.11"."""
    return NA if missing(v) else f"{v:+.{decimals}f}"


def pct(v, decimals=1, sign=True):
    """A percentage: "+12.3%" (a change, signed) or "45%" (a share, sign=False)."""
    if missing(v):
        return NA
    return f"{v:+.{decimals}f}%" if sign else f"{v:.{decimals}f}%"


def level(confidence):
    """A confidence level or a target as given: "95%", "99.5%"."""
    return f"{confidence:g}%"


def sig3(v, sign=False):
    """Three significant figures, never in e-notation: "1.51", "0.0123", "1234"; "0" for zero;
    sign=True puts "+" before a positive one (a residual)."""
    if missing(v):
        return NA
    if v == 0:
        return "0"
    text = f"{v:.{max(0, 2 - math.floor(math.log10(abs(v))))}f}"
    return "+" + text if sign and not text.startswith("-") else text


def beside(v, of):
    """v (a residual) to the decimal places sig3 gives `of` (the value it is a residual of), signed:
    what is below the shown value's last digit is rounding, not a residual ("0.00", not "+1.33e-15")."""
    if missing(v) or missing(of) or of == 0:
        return sig3(v, sign=True)
    places = max(0, 2 - math.floor(math.log10(abs(of))))
    text = f"{v:+.{places}f}"
    return text[1:] if float(text) == 0 else text


def interval(low, high, number=sig3):
    """A CI of a value: "[1.42, 1.60]"; n/a where a bound is missing."""
    return NA if missing(low) or missing(high) else f"[{number(low)}, {number(high)}]"


def pct_interval(low, high, decimals=1):
    """A CI of a change in percent: "[+1.2, +3.4]%"; n/a where a bound is missing."""
    return NA if missing(low) or missing(high) else f"[{low:+.{decimals}f}, {high:+.{decimals}f}]%"


# --- csv and json: the same rule, a missing number is no value (null, an empty field) -------------

def clean(v):
    """A record's value as csv and json carry it: a missing number (NaN, inf) as None."""
    return None if isinstance(v, float) and missing(v) else v


def records(rows):
    """rows (dicts) with every missing number as None: what --format json dumps."""
    return [{k: clean(v) for k, v in r.items()} for r in rows]


def csv_text(columns, rows):
    """rows under the header `columns`: true/false for booleans, an empty field for None or a missing
    number, no trailing newline."""
    import csv
    import io

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    w.writeheader()
    for row in rows:
        w.writerow({k: _field(clean(row.get(k))) for k in columns})
    return buf.getvalue().rstrip("\n")


def _field(v):
    return "true" if v is True else "false" if v is False else "" if v is None else v
