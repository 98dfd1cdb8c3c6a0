

def test_show_prints_the_breakdown_and_profile_of_a_file(cli, tmp_path, fixtures):
    from atsdbench.data import results

    r = results.load(str(fixtures_dir() / "before.json"))
    section = _section(fixtures)
    stride = r.config["strides"][0]
    section["passes"] = [dict(p, stride_bytes=stride) for p in section["passes"][:1]]
    r.config["breakdown"] = section
    r.config["profile"] = {**PROFILE, "passes": [dict(PROFILE["passes"][0], stride_bytes=stride)]}
    results.save(r, str(tmp_path / "r.json"))
    p = cli("show", str(tmp_path / "r.json"))
    assert p.returncode == 0, p.stderr
    assert text.BREAKDOWN_TITLE in p.stdout and text.PROFILE_TITLE in p.stdout
    assert cli("show", str(tmp_path / "r.json"), "--format", "csv").stdout.count(text.BREAKDOWN_TITLE) == 0
