"""render/numbers: the one formatter of every renderer."""
import math

from atsdbench.render import numbers


def test_missing_is_none_nan_or_infinite_and_prints_na():
    for v in (None, math.nan, math.inf, -math.inf):
        assert numbers.missing(v)
        for text in (numbers.rate(v), numbers.fixed(v, 3), numbers.pct(v), numbers.general(v, suffix="%"),
                     numbers.signed(v), numbers.sig3(v), numbers.interval(v, 1.0), numbers.pct_interval(1.0, v)):
            assert text == "n/a"
    assert not numbers.missing(0) and not numbers.missing(True) and not numbers.missing("x")


def test_the_shapes_renderers_print():
    assert numbers.rate(31.4321) == "31.43" and numbers.rate(31.4321, 3) == "31.432" and numbers.rate(320.96, 1) == "321.0"
    assert numbers.pct(12.345) == "+12.3%" and numbers.pct(-0.04) == "-0.0%" and numbers.pct(45.6, 0, sign=False) == "46%"
    assert numbers.pct_interval(1.23, 3.45) == "[+1.2, +3.5]%"
    assert numbers.interval(1.4211, 1.6049) == "[1.42, 1.60]"
    assert numbers.sig3(1234.5) == "1234" and numbers.sig3(0.012345) == "0.0123" and numbers.sig3(0) == "0"
    assert numbers.sig3(0.5, sign=True) == "+0.500" and numbers.sig3(-0.5, sign=True) == "-0.500"
    assert numbers.general(0.000123) == "0.000123" and numbers.general(0.81234, suffix="%") == "0.812%"
    assert numbers.general(0.5, sign=True) == "+0.5" and numbers.signed(-0.391) == "-0.39"
    assert numbers.level(95.0) == "95%" and numbers.level(99.5) == "99.5%"


def test_csv_and_json_records():
    rows = [{"a": 1.5, "b": math.nan, "c": True, "d": None}, {"a": math.inf, "b": "x", "c": False}]
    assert numbers.csv_text(["a", "b", "c", "d"], rows) == "a,b,c,d\n1.5,,true,\n,x,false,"
    assert numbers.records(rows) == [{"a": 1.5, "b": None, "c": True, "d": None}, {"a": None, "b": "x", "c": False}]


def test_render_formats_numbers_only_through_numbers_py():
    """The one number formatter: no module of render/ but numbers.py formats a number itself (a float
    format spec in an f-string: `{v:.2f}`, `{x:g}`, `{share:.0%}`), so NaN, inf and rounding read the same
    in every table (render/breakdown's shares and changes, the scaling CIs once did)."""
    import ast

    import sources

    own = []
    for path in sources.paths():
        if path.parent != sources.PKG / "render" or path.name == "numbers.py":
            continue
        for node in sources.nodes(path):
            if isinstance(node, ast.FormattedValue) and node.format_spec is not None:
                spec = "".join(v.value for v in node.format_spec.values if isinstance(v, ast.Constant))
                if spec and spec[-1] in "eEfFgG%":
                    own.append(f"{path.name}:{node.lineno} {{:{spec}}}")
    assert not own, own


def test_a_residual_is_shown_to_its_value_s_places():
    from atsdbench.render.numbers import beside

    assert beside(1.33e-15, 30.2) == "0.0" and beside(-4e-16, 1.51) == "0.00"  # rounding, not a residual
    assert beside(0.1234, 30.2) == "+0.1" and beside(-0.0149, 1.51) == "-0.01"
    assert beside(0.5, 1234.0) == "0" and beside(2.5, 1234.0) == "+2" and beside(0.5, 0) == "+0.500"
