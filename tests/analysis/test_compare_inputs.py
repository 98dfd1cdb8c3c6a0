"""compare's ways out of a wrong start: a missing name, a shell glob of replicates, counts alone."""
import os


def test_a_missing_folder_is_no_such_folder(cli, tmp_path):
    for name, kind in (("results/", "folder"), ("results", "file or folder"), ("r.json", "file")):
        p = cli("compare", name, cwd=tmp_path)
        assert p.returncode == 2 and p.stderr == f"atsdbench: {name}: no such {kind}\n", p.stderr


def test_a_glob_of_replicates_gets_the_replicate_syntax(cli, tmp_path, fixtures):
    """compare a?.json b?.json: each file a side against a1.json; the warning shows a1.json,a2.json."""
    import shutil

    for name, src in (("a1", "before"), ("a2", "again"), ("b1", "after"), ("b2", "after")):
        shutil.copy(fixtures / f"{src}.json", tmp_path / f"{name}.json")
    p = cli("compare", "a1.json", "a2.json", "b1.json", "b2.json", cwd=tmp_path,
            env=dict(os.environ, XDG_DATA_HOME=str(tmp_path)))
    hint = " ".join(line.strip() for line in p.stderr.splitlines() if not line.startswith("atsdbench: warning: ")
                    or "4 files make 4 sides" in line)
    assert "4 files make 4 sides, each against a1.json" in hint and "compare a1.json,a2.json b1.json,b2.json" in hint
    env = dict(os.environ, XDG_DATA_HOME=str(tmp_path))
    p = cli("compare", "a1.json,a2.json", "b1.json,b2.json", cwd=tmp_path, env=env)
    assert "sides, each against" not in p.stderr
    p = cli("compare", "a1.json", "b1.json", "b2.json", cwd=tmp_path, env=env)
    assert "sides, each against" not in p.stderr  # two new files against a baseline of another name: as meant


def test_counts_alone_never_speak_of_noise_profiles(cli, fixtures, monkeypatch):
    """compare --counts compares the kernel's counts, which no noise profile is for: the store is not
    consulted, so a missing profile is never warned about."""
    from atsdbench.data import noise_profile

    def assign(sides, explicit, store, warnings=None):
        if store is not None and warnings is not None:
            warnings.append("no noise profile for the baseline (the store was asked)")
        return {}
    monkeypatch.setattr(noise_profile, "assign", assign)
    p = cli("compare", fixtures / "before.json", fixtures / "after.json")
    assert "no noise profile" in p.stderr  # rates: the store is asked
    p = cli("compare", "--counts", fixtures / "before.json", fixtures / "after.json")
    assert p.returncode == 0 and "noise profile" not in p.stderr, p.stderr
