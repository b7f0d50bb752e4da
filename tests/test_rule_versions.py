"""Rule versions: one in force whatever the concurrency, applied from the shell as from the page."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest
from helpers import postgres_schema

from pipeline.store import StaleRuleVersion, Store

APPLIERS = 8


def _apply(url: str, based_on: int, start: multiprocessing.synchronize.Barrier, n: int) -> str:
    store = Store(url)
    start.wait()
    try:
        new = store.apply_rule_version(index_yaml=f"i{n}", metadata_yaml="m", author=f"a{n}", comment="",
                                       based_on=based_on)
        return f"ok {new}"
    except StaleRuleVersion as exc:
        return str(exc)


def _race(url: str, existing: bool) -> None:
    store = Store(url)
    base = store.apply_rule_version(index_yaml="i", metadata_yaml="m", author="ana", comment="",
                                    based_on=None) if existing else 0
    ctx = multiprocessing.get_context("fork")
    start = ctx.Manager().Barrier(APPLIERS)
    with ctx.Pool(APPLIERS) as pool:
        said = pool.starmap(_apply, [(url, base, start, n) for n in range(APPLIERS)])
    won = [int(s.split()[1]) for s in said if s.startswith("ok ")]
    assert len(won) == 1, said
    assert [s for s in said if not s.startswith("ok ")] == [f"version {won[0]} was applied meanwhile (you started from version {base}); "
                                 "reload, review the difference and apply again"] * (APPLIERS - 1)
    versions = store.rule_versions()
    assert [v["id"] for v in versions if v["active"]] == [won[0]] == [store.rules_version()]
    assert len(versions) == 1 + existing  # the refused applies left nothing behind
    assert store.active_rule_version()["parent_id"] == (base or None)


@pytest.mark.slow
@pytest.mark.parametrize("existing", [False, True], ids=["first-version", "over-a-version"])
def test_concurrent_applies_on_sqlite_leave_one_version_in_force(tmp_path: Path, existing: bool) -> None:
    _race(f"sqlite:///{tmp_path / 'wb.db'}", existing)


@pytest.mark.slow
@pytest.mark.parametrize("existing", [False, True], ids=["first-version", "over-a-version"])
def test_concurrent_applies_on_postgresql_leave_one_version_in_force(existing: bool) -> None:
    with postgres_schema("rv") as url:
        _race(url, existing)


def _rules_dir(tmp_path: Path, name: str, edits: dict[str, str]) -> Path:
    """A copy of the shipped rules with some text replaced."""
    root = Path(__file__).resolve().parent.parent / "rules"
    out = tmp_path / name
    out.mkdir()
    for file in ("index.yaml", "metadata.yaml"):
        text = (root / file).read_text(encoding="utf-8")
        for old, new in edits.items():
            text = text.replace(old, new)
        (out / file).write_text(text, encoding="utf-8")
    return out


def test_rules_from_a_shell_apply_list_diff_and_roll_back(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    from pipeline.cli import main

    def run(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    tuned = _rules_dir(tmp_path, "tuned", {"passThreshold: 0.5": "passThreshold: 0.55",
                                           "warnThreshold: 0.3": "warnThreshold: 0.35"})
    code, out, _ = run("rules", "diff", str(tuned))
    assert code == 0 and [line for line in out.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")] == [
        "-      passThreshold: 0.5", "-      warnThreshold: 0.3", "+      passThreshold: 0.55", "+      warnThreshold: 0.35"]
    assert run("rules", "apply", str(tuned), "--author", " ")[2] == "workbench: Enter the author's name.\n"
    code, out, _ = run("rules", "apply", str(tuned), "--author", "ana", "--comment", "noisy payment logs")
    assert (code, out) == (0, f"applied {tuned} as version 1 (based on version 0)\n")
    assert run("rules", "diff", str(tuned))[1] == "(no difference against version 1, the version in force)\n"
    assert run("rules", "apply", str(tuned), "--author", "ana")[1:] == (
        "", "workbench: No change against the version you started from.\n")
    broken = _rules_dir(tmp_path, "broken", {"passThreshold: 0.5": "passThreshold: 1.5"})
    code, _, err = run("rules", "apply", str(broken), "--author", "ana")
    assert code == 2 and err.startswith("workbench: the candidate rules are invalid (1 problem(s)); metadata.yaml: "
                                        "ruleMetadata.evidence.excerpt_similarity.params.passThreshold: 1.5 is outside")
    code, out, _ = run("rules", "rollback", "0", "--author", "bo")
    assert (code, out) == (0, "version 0 re-applied as version 2\n")
    assert run("rules", "rollback", "2", "--author", "bo")[2] == "workbench: Version 2 is already in force.\n"
    assert run("rules", "rollback", "9", "--author", "bo")[2].startswith("workbench: no rule version 9")
    code, out, _ = run("rules", "history")
    assert code == 0 and [line[:4] for line in out.splitlines()] == ["* v2", "  v1", "  v0"]
    assert "from v1" in out.splitlines()[0] and "roll back to version 0" in out and "noisy payment logs" in out
    config = tmp_path / "editors.yaml"
    config.write_text("ui:\n  editors: [ana]\n", encoding="utf-8")
    monkeypatch.setenv("WORKBENCH_CONFIG", str(config))
    assert run("rules", "apply", str(tuned), "--author", "eve")[2] == (
        "workbench: eve is not one of the editors who may apply rules: ana.\n")
