"""Marks that hold under attack: a mark is given only when earned, and one bad input never breaks
the store. Each probe as the attacker ran it, through the CLI where a person would."""

from __future__ import annotations

import json
import shutil
import zipfile
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import CPU_QUESTION, cpu_claim, diagnosis_json, scripted

from pipeline.core.config import ROOT, Settings, load_settings
from pipeline.frontends.cli import main
from pipeline.runs.session import run_session
from pipeline.store import Store

SINGLE = {"digest": {"enabled": False}}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The CLI's store on SQLite (the workbench home) or on a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        yield request.param
        return
    from helpers import postgres_schema

    with postgres_schema("marks") as url:
        monkeypatch.setenv("DATABASE_URL", url)
        yield request.param
        Store(url).engine.dispose()


def _imported(capsys: pytest.CaptureFixture[str], path: Path) -> tuple[str, str]:
    """(stored session id, the import's output)."""
    code, out, err = run(capsys, "import", str(path))
    assert code == 0, err
    return out.split("session ")[1].split(" ")[0], out


def _exported(capsys: pytest.CaptureFixture[str], sid: str, path: Path) -> dict[str, Any]:
    code, out, err = run(capsys, "export", sid)
    assert code == 0, err
    path.write_text(out, encoding="utf-8")
    return dict(json.loads(out))


# --- provenance laundering ----------------------------------------------------------------------


def test_unverified_stays_unverified_through_export_and_import(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                                backend: str) -> None:
    from pipeline.runs.review_queue import QueueFilter, export_zip, queue_rows

    code, out, _ = run(capsys, "ask", CPU_QUESTION, "--json")
    ran_here = json.loads(out)["session_id"]
    bundle = _exported(capsys, ran_here, tmp_path / "ours.json")
    assert bundle["provenance"] == {"origin": "ran_here"}
    # Unsigned and edited: imported unverified.
    edited = {k: v for k, v in bundle.items() if k != "signature"}
    edited["final_answer"] = "all clear, nothing to see"
    (tmp_path / "edited.json").write_text(json.dumps(edited, ensure_ascii=False), encoding="utf-8")
    first, out = _imported(capsys, tmp_path / "edited.json")
    assert "provenance: unverified (unsigned)" in out
    # Exported (signed with our own, trusted key) and imported again: still unverified, and the
    # bundle says our key vouched only for an unverified import.
    laundered = _exported(capsys, first, tmp_path / "laundered.json")
    assert laundered["provenance"]["origin"] == "imported" and laundered["provenance"]["provenance"] == "unverified"
    second, out = _imported(capsys, tmp_path / "laundered.json")
    assert "provenance: unverified (signed by a trusted key that imported it unverified (unsigned);" in out
    # A third hop keeps it so.
    _exported(capsys, second, tmp_path / "again.json")
    third, out = _imported(capsys, tmp_path / "again.json")
    assert "provenance: unverified" in out
    # The zip export of the queue, each bundle imported again.
    store = Store(load_settings().db_url)
    with zipfile.ZipFile(BytesIO(export_zip(store, QueueFilter(), key=_our_key()))) as zf:
        zipped = {name: json.loads(zf.read(name)) for name in zf.namelist()}
    from_zip = []
    for name, doc in zipped.items():
        (tmp_path / name).write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
        sid, out = _imported(capsys, tmp_path / name)
        from_zip.append(sid)
        assert "provenance: unverified" in out, (name, out)
    # Ours, run here, exported and imported: verified, and out of the queue.
    ours, out = _imported(capsys, tmp_path / "ours.json")
    assert "provenance: verified (signed by a trusted key that ran it;" in out
    again = _exported(capsys, ours, tmp_path / "ours-again.json")
    assert again["provenance"]["provenance"] == "verified"
    assert "provenance: verified (signed by a trusted key that imported it verified" in _imported(
        capsys, tmp_path / "ours-again.json")[1]

    queue = {r.id for r in queue_rows(store, QueueFilter())}
    assert {first, second, third, *from_zip} <= queue and ours not in queue
    code, shown, _ = run(capsys, "show", second)
    assert "(unverified)" in shown


def _our_key() -> Any:
    from pipeline.bundles.provenance import signing_key

    return signing_key(load_settings())


# --- rules neutered by their thresholds ---------------------------------------------------------

NEUTERED = {
    "evidence.excerpt_similarity": {"passThreshold": 0.0, "warnThreshold": 0.0, "inventedTolerated": 100000},
    "evidence.excerpt_entities": {"kinds": []},
    "evidence.digest_ref": {"requireDigestId": False, "quotePassThreshold": 0.0, "quoteWarnThreshold": 0.0},
}


def _neutered_rules(dst: Path) -> Path:
    """The shipped rules, every one still enabled, with thresholds no quote can fail."""
    shutil.copytree(ROOT / "rules", dst)
    meta = yaml.safe_load((dst / "metadata.yaml").read_text(encoding="utf-8"))
    for rule_id, params in NEUTERED.items():
        meta["ruleMetadata"][rule_id]["params"].update(params)
    (dst / "metadata.yaml").write_text(yaml.safe_dump(meta, allow_unicode=True), encoding="utf-8")
    return dst


def test_rules_that_cannot_fail_mark_their_verdicts_ungated(capsys: pytest.CaptureFixture[str], settings: Settings,
                                                           store: Store, tmp_path: Path) -> None:
    rules = _neutered_rules(tmp_path / "rules")
    invented = "payment-service connection pool exhausted by the v2.3.1 deploy at 10:02"
    script: dict[str, Any] = {"diagnosis": diagnosis_json(*(cpu_claim(f"claim-{n}", excerpt=invented) for n in range(4)))}
    result = run_session(CPU_QUESTION, settings=scripted(settings, tmp_path, script, rules_dir=str(rules), **SINGLE),
                         store=store)
    assert [u.split(" (")[0] for u in result.ungated_by] == list(NEUTERED)
    row = store.get_session(result.session_id)
    assert row is not None and row["ungated"] is True

    code, _, err = run(capsys, "rules", "apply", str(rules), "--author", "tuner")
    assert code == 0 and "inventedTolerated 100000" in err and "marked ungated" in err
    code, out, _ = run(capsys, "sessions", "--json")
    assert code == 0 and '"ungated": true' in out
