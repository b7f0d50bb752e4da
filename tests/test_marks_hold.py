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

from pipeline.core.config import ROOT, load_settings
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
    from pipeline.bundles.queue_zip import export_zip
    from pipeline.runs.review_queue import QueueFilter, queue_rows

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


def _legacy(bundle: dict[str, Any]) -> dict[str, Any]:
    """`bundle` as an export from before provenance statements wrote it (no statement, the audit
    under its old name), signed with our own key as that export signed every stored session."""
    from pipeline.bundles.provenance import sign

    old = {k: v for k, v in bundle.items() if k not in ("signature", "provenance")}
    old["round_audit"] = old.pop("verifier_evaluation")
    return sign(old, _our_key())


def test_a_legacy_bundle_signed_by_our_key_is_verified_only_when_it_ran_here(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, backend: str) -> None:
    from pipeline.bundles.queue_zip import export_zip
    from pipeline.runs.review_queue import QueueFilter, queue_rows

    ran_here = json.loads(run(capsys, "ask", CPU_QUESTION, "--json")[1])["session_id"]
    ours = _exported(capsys, ran_here, tmp_path / "ours.json")
    edited = {k: v for k, v in ours.items() if k not in ("signature", "provenance")}
    edited["final_answer"] = "all clear, nothing to see"
    (tmp_path / "edited.json").write_text(json.dumps(edited, ensure_ascii=False), encoding="utf-8")
    first, _ = _imported(capsys, tmp_path / "edited.json")
    # The unverified import as an old export wrote it: our signature, no statement.
    (tmp_path / "old.json").write_text(json.dumps(_legacy(_exported(capsys, first, tmp_path / "x.json"))), encoding="utf-8")
    laundered, out = _imported(capsys, tmp_path / "old.json")
    assert "provenance: unverified (no provenance statement:" in out
    again = _exported(capsys, laundered, tmp_path / "again.json")
    assert again["provenance"]["provenance"] == "unverified"
    second, out = _imported(capsys, tmp_path / "again.json")
    assert "provenance: unverified (signed by a trusted key that imported it unverified (no provenance" in out
    store = Store(load_settings().db_url)
    with zipfile.ZipFile(BytesIO(export_zip(store, QueueFilter(), key=_our_key()))) as zf:
        zipped = [json.loads(zf.read(name)) for name in zf.namelist()]
    hops = [doc for doc in zipped if doc["session"]["id"] in {laundered, second}]
    assert len(hops) == 2
    for n, doc in enumerate(hops):
        (tmp_path / f"zip-{n}.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
        assert "provenance: unverified" in _imported(capsys, tmp_path / f"zip-{n}.json")[1]
        # Its statement stripped as an old export would have: still not ours to vouch for.
        (tmp_path / f"zip-old-{n}.json").write_text(json.dumps(_legacy(doc)), encoding="utf-8")
        assert "provenance: unverified (no provenance statement:" in _imported(capsys, tmp_path / f"zip-old-{n}.json")[1]
    # The session that ran here, exported the old way: its content shows it ran here.
    (tmp_path / "ours-old.json").write_text(json.dumps(_legacy(ours)), encoding="utf-8")
    verified, out = _imported(capsys, tmp_path / "ours-old.json")
    assert "provenance: verified (signed by this workbench's key before exports stated provenance" in out

    queue = {r.id for r in queue_rows(store, QueueFilter())}
    assert {laundered, second} <= queue and verified not in queue
    code, out, _ = run(capsys, "check", str(tmp_path / "ours-old.json"))
    assert code == 0 and "provenance: unverified (no provenance statement:" in out  # no store asked


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


def test_rules_that_cannot_fail_mark_their_verdicts_ungated(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                           backend: str) -> None:
    settings = load_settings()
    store = Store(settings.db_url)
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


# --- numbers no store keeps -----------------------------------------------------------------------

# An LLM reply's non-finite or out-of-range numbers, as Python's json module would read them.
NOT_FINITE = ["Infinity", "NaN", "-Infinity", "1e999"]


@pytest.mark.parametrize("number", NOT_FINITE)
def test_a_reply_with_a_number_json_lacks_is_malformed(number: str) -> None:
    from pipeline.stages.parse import parse_executor_output
    from pipeline.text.replies import read_object

    raw = diagnosis_json(cpu_claim()).replace('"claims"', f'"confidence": {number}, "claims"')
    status, output = parse_executor_output(raw)
    assert (status.status, output) == ("malformed", None) and "number" in status.detail
    data, why = read_object(raw)  # the invoker re-asks on this, then fails with it
    assert data is None and why is not None and why.startswith("not valid JSON: ")


def _poison(store: Store, sid: str) -> None:
    """A number no reader expects written straight into the session's audit record, as a row
    from before the store refused them (SQLite keeps NaN; PostgreSQL's json keeps 1e999)."""
    from sqlalchemy import text

    number = "NaN" if store.engine.dialect.name == "sqlite" else "1e999"
    with store.engine.begin() as conn:
        record = conn.execute(text("SELECT self_evaluation FROM diagnosis_session WHERE id = :id"), {"id": sid}).scalar_one()
        record = record if isinstance(record, str) else json.dumps(record)
        poisoned = record.replace('"verifier_evaluation": {', f'"verifier_evaluation": {{"poison": {number}, ', 1)
        assert poisoned != record
        conn.execute(text("UPDATE diagnosis_session SET self_evaluation = :a WHERE id = :id"), {"a": poisoned, "id": sid})


def test_one_poisoned_session_never_fails_the_store(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                   backend: str) -> None:
    from pipeline.bundles.queue_zip import export_zip
    from pipeline.frontends.views import trace as trace_view
    from pipeline.runs.review_queue import QueueFilter, export_csv, queue_rows
    from pipeline.store.record import read_session

    settings = load_settings()
    store = Store(settings.db_url)
    raw = diagnosis_json(cpu_claim()).replace('"claims"', '"confidence": Infinity, "claims"')
    refused = run_session(CPU_QUESTION, settings=scripted(settings, tmp_path, {"diagnosis": raw}, **SINGLE), store=store)
    assert refused.evaluation.parse_status.status == "malformed" and refused.verdict == "LOW_CONFID"
    healthy = json.loads(run(capsys, "ask", CPU_QUESTION, "--json")[1])["session_id"]
    poisoned = json.loads(run(capsys, "ask", CPU_QUESTION, "--json")[1])["session_id"]
    _poison(store, poisoned)

    rules = _neutered_rules(tmp_path / "rules")
    for argv in (["replay", "--rules", str(rules)], ["rules", "apply", str(rules), "--author", "tuner"],
                 ["rules", "rollback", "0", "--author", "tuner"], ["export", poisoned], ["export", healthy],
                 ["sessions"], ["show", poisoned]):
        code, out, err = run(capsys, *argv)
        assert code == 0 and "Traceback" not in err, (argv, err)
    row = store.get_session(poisoned)
    if backend == "sqlite":  # SQLite's JSON functions cannot read the row: quarantined, with the reason
        assert row is not None and row["status"] == "failed" and row["error"].startswith("quarantined: ")
        assert poisoned in {r.id for r in queue_rows(store, QueueFilter())}
    # PostgreSQL reads it, the out-of-range number as null.
    assert row is not None and row["self_evaluation"]["verifier_evaluation"]["poison"] is None
    # The pages' read models, every session.
    assert export_csv(store, QueueFilter(needs_person=False, reviewed=None)).count(b"\n") == 4
    with zipfile.ZipFile(BytesIO(export_zip(store, QueueFilter(needs_person=False, reviewed=None)))) as zf:
        assert len(zf.namelist()) == 3
    for sid in (healthy, poisoned, refused.session_id):
        record = read_session(store, sid)
        trace_view.claim_cards(record), trace_view.digest_rows(record), trace_view.hypothesis_rows(record)
        trace_view.verdict_change(settings, store, sid)


def test_tool_arguments_a_store_cannot_keep_are_refused_alike(backend: str) -> None:
    from pipeline.runs.session import _ToolRunner
    from pipeline.tools.registry import ToolBox

    settings = load_settings()
    store = Store(settings.db_url)
    sid = store.create_session(question=CPU_QUESTION, world=None, shape="single", provider="p", model="m")
    runner = _ToolRunner(store, sid, ToolBox({}), settings, lambda _event: None)
    inv = runner("query_logs", {"service": "payment-service", "limit": float("nan"), "since": [float("inf")]})
    assert inv.status == "error" and inv.error is not None and "not a number JSON allows" in inv.error
    (stored,) = store.invocations(sid)
    assert stored.arguments == {"service": "payment-service", "limit": "nan", "since": ["inf"]}
