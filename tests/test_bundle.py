"""Import re-verifies, stores atomically, names uniquely; bundle reads are bounded."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from helpers import CPU_QUESTION

from pipeline.bundles.importer import import_bundle
from pipeline.bundles.session_bundle import export_bundle, load_bundle, parse_bundle
from pipeline.core.config import Settings
from pipeline.core.errors import BundleError, WorkbenchError
from pipeline.llm import make_provider
from pipeline.replay.inputs import replay_inputs
from pipeline.replay.per_session import replay
from pipeline.runs.rulebook import rules_in_force
from pipeline.runs.session import run_session
from pipeline.store import Store

MAX = 64 * 1024 * 1024


def _exported(settings: Settings, store: Store) -> dict[str, Any]:
    result = run_session(CPU_QUESTION, settings=settings, store=store)
    return export_bundle(store, result.session_id)


def _import(store: Store, settings: Settings, data: dict[str, Any]):
    return import_bundle(store, parse_bundle(data), settings=settings, rules=rules_in_force(settings, store)[0],
                         provider=make_provider(settings))


def claimed_id(row: dict[str, Any]) -> str:
    """The bundle's own session id, kept beside the workbench's."""
    return str(row["self_evaluation"]["claimed_by_source"]["session_id"])


def _forged(bundle: dict[str, Any]) -> dict[str, Any]:
    """Every citation moved to id 1, which the bundle does not hold, and a PASS claimed."""
    forged = json.loads(json.dumps(bundle))
    structured = json.loads(forged["executor_raw_output"])
    for claim in structured["claims"]:
        for binding in claim["evidence_bindings"]:
            binding["source_invocation_ids"] = [1]
    forged["executor_raw_output"] = json.dumps(structured, ensure_ascii=False)
    forged["tool_invocations"] = [inv for inv in forged["tool_invocations"] if inv["id"] != 1]
    forged["verifier_evaluation"] = {**(forged["verifier_evaluation"] or {}), "verdict": "PASS"}
    return forged


def test_import_reverifies_and_keeps_the_source_claims_apart(settings: Settings, store: Store) -> None:
    bundle = _exported(settings, store)
    original = store.get_session(bundle["session"]["id"])
    bundle["final_answer"] = "Root cause: the database. (claimed by the bundle)"
    result = _import(store, settings, bundle)
    row = store.get_session(result.session_id)
    assert result.session_id != bundle["session"]["id"] and claimed_id(row) == bundle["session"]["id"]
    # Our own pipeline's verdict and answer, equal to the session the bundle came from.
    assert row["verdict"] == original["verdict"] and row["status"] == "completed"
    assert row["final_answer"] and row["final_answer"] != bundle["final_answer"]
    claimed = row["self_evaluation"]["claimed_by_source"]
    assert claimed["final_answer"] == bundle["final_answer"] and claimed["verdict"] == original["verdict"]
    # Stored references point at the new rows of this session only.
    own = {inv.id for inv in store.invocations(result.session_id)}
    cited = {i for c in json.loads(row["executor_raw_output"])["claims"]
             for b in c["evidence_bindings"] for i in b["source_invocation_ids"]}
    assert cited and cited <= own and set(result.id_map.values()) == own
    assert store.llm_calls(result.session_id), "the verifier and composer runs of the import are recorded"


def test_a_bundle_written_under_the_round_audit_name_is_read(settings: Settings, store: Store) -> None:
    bundle = _exported(settings, store)
    assert "verifier_evaluation" in bundle and "round_audit" not in bundle  # the seed's name
    old = {("round_audit" if k == "verifier_evaluation" else k): v for k, v in bundle.items()}
    old["round_audit"] = {**old["round_audit"], "verdict": "PASS"}
    assert parse_bundle(old).verifier_evaluation == old["round_audit"]
    result = _import(store, settings, old)
    assert result.claimed_verdict == "PASS"
    assert store.get_session(result.session_id)["self_evaluation"]["claimed_by_source"]["verdict"] == "PASS"


def test_a_forged_bundle_is_rejected_and_never_lands_on_another_sessions_call(settings: Settings,
                                                                             any_store: Store) -> None:
    store = any_store
    bundle = _exported(settings, store)
    assert 1 in {inv["id"] for inv in bundle["tool_invocations"]}  # id 1 exists in this store...
    result = _import(store, settings, _forged(bundle))
    row = store.get_session(result.session_id)
    assert result.claimed_verdict == "PASS" and row["verdict"] == "REJECT"
    assert "evidence.invocation_ref" in row["failed_rules"]
    # ...so the unheld id must not be rewritten onto it (or onto a new row): it can never resolve.
    cited = {i for c in json.loads(row["executor_raw_output"])["claims"]
             for b in c["evidence_bindings"] for i in b["source_invocation_ids"]}
    assert cited == {-1}
    replayed = {r.session_id: r for r in replay(replay_inputs(store), rules_in_force(settings, store)[0])}
    assert replayed[result.session_id].projected_verdict == "REJECT"
    assert "evidence.invocation_ref" in replayed[result.session_id].result.failed_rules


def test_an_imported_sessions_findings_cite_the_stored_invocation_ids(settings: Settings, store: Store) -> None:
    bundle = _exported(settings, store)
    structured = json.loads(bundle["executor_raw_output"])
    binding = structured["claims"][0]["evidence_bindings"][0]
    cited = binding["source_invocation_ids"][0]
    ran = {inv["id"]: inv["model_tool_name"] for inv in bundle["tool_invocations"]}
    # Another tool of the session: a finding that names the cited invocation.
    binding["tool_name"] = next(tool for tool in ran.values() if tool != ran[cited])
    bundle["executor_raw_output"] = json.dumps(structured, ensure_ascii=False)
    result = _import(store, settings, bundle)
    stored = result.id_map[cited]
    assert stored != cited
    errors = store.get_session(result.session_id)["self_evaluation"]["verifier_evaluation"]["gatekeeper_result"]["errors"]
    mismatch = [e for e in errors if e["msg"] and "tool_mismatch" in json.dumps(e["msg"])]
    assert mismatch, errors
    text = json.dumps(mismatch)
    # The page shows #<stored id>: the message, its English text and the check's detail say the same.
    assert f"invocation {stored}," in text and f"invocation {cited}," not in text


def test_a_failure_inside_the_import_leaves_nothing(settings: Settings, any_store: Store,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    store = any_store
    bundle = _exported(settings, store)
    before = set(store.session_ids())
    import pipeline.bundles.importer as bi

    def broken(value: Any, id_map: dict[int, int]) -> Any:
        raise RuntimeError("disk full")

    monkeypatch.setattr(bi, "_remap", broken)
    with pytest.raises(RuntimeError):
        _import(store, settings, bundle)
    assert set(store.session_ids()) == before
    # A bad field is refused before anything is written, naming the field.
    bundle["tool_invocations"][0]["latency_ms"] = None
    with pytest.raises(BundleError, match=r"tool_invocations\[0\]\.latency_ms"):
        parse_bundle(bundle)


def test_parallel_imports_of_one_bundle_all_land(settings: Settings, any_store: Store) -> None:
    store = any_store
    bundle = _exported(settings, store)
    parsed = parse_bundle(bundle)
    rules = rules_in_force(settings, store)[0]
    results: list[str] = []
    failures: list[BaseException] = []

    def work() -> None:
        try:
            results.append(import_bundle(store, parsed, settings=settings, rules=rules,
                                         provider=make_provider(settings)).session_id)
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            failures.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures and len(set(results)) == 8
    again = _import(store, settings, bundle).session_id  # and once more after all of them
    assert len(set(store.session_ids())) == 10 and again not in results


def test_integer_session_ids_are_read(settings: Settings, store: Store) -> None:
    bundle = _exported(settings, store)
    bundle["session"]["id"] = 4711
    for inv in bundle["tool_invocations"]:
        inv["session_id"] = 4711
    result = _import(store, settings, bundle)
    row = store.get_session(result.session_id)
    assert claimed_id(row) == "4711" and row["verdict"]


def test_import_caps_outputs_at_the_storage_limit(settings: Settings, store: Store) -> None:
    bundle = _exported(settings, store)
    bundle["tool_invocations"][0]["output"] += " " + "x" * 300_000
    capped = settings.model_copy(update={"budget": settings.budget.model_copy(
        update={"max_stored_output_bytes": 100_000})})
    result = _import(store, capped, bundle)
    meta = store.invocation_meta(result.session_id)
    assert all(m["output_bytes"] <= 100_000 for m in meta)
    assert meta[0]["stored_cut_bytes"] > 200_000 and result.capped == [bundle["tool_invocations"][0]["id"]]


def test_an_output_repeated_in_a_bundle_is_stored_once(settings: Settings, any_store: Store) -> None:
    from sqlalchemy import text

    bundle = _exported(settings, any_store)
    first, second = bundle["tool_invocations"][:2]
    second["output"] = first["output"]
    result = _import(any_store, settings, bundle)
    stored = any_store.invocations(result.session_id)
    assert stored[0].output == stored[1].output == first["output"]
    assert any_store.invocation(stored[1].id).output == first["output"]
    with any_store.engine.connect() as conn:
        lengths = dict(conn.execute(text("SELECT id, LENGTH(output) FROM tool_invocation WHERE session_id = :s"),
                                    {"s": result.session_id}).all())
    assert lengths[stored[1].id] == 0 and lengths[stored[0].id] == len(first["output"])


def test_bundle_reads_are_bounded(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="directory"):
        load_bundle(tmp_path, max_bytes=MAX)
    with pytest.raises(BundleError, match="not a regular file"):
        load_bundle(Path("/dev/zero"), max_bytes=MAX)
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 5000)
    with pytest.raises(BundleError, match="max_bundle_bytes"):
        load_bundle(big, max_bytes=4096)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(BundleError, match="deep"):
        load_bundle(deep, max_bytes=MAX)
    shallow_but_deep = {"bundle_version": 1, "session": {"id": "s", "question": "q"}, "tool_invocations": [],
                        "executor_raw_output": "", "planner_plan": {}}
    node: dict[str, Any] = shallow_but_deep["planner_plan"]
    for _ in range(500):  # within json's own limit, beyond ours
        node["x"] = {}
        node = node["x"]
    with pytest.raises(BundleError, match="deeper than"):
        parse_bundle(shallow_but_deep)
    assert issubclass(BundleError, WorkbenchError)


def test_trace_shows_the_source_claim_beside_the_reverified_verdict(settings: Settings, store: Store) -> None:
    from streamlit.testing.v1 import AppTest

    from pipeline.core.config import ROOT

    bundle = _exported(settings, store)
    result = _import(store, settings, _forged(bundle))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page("pages/trace.py")
    at.query_params.update(session=result.session_id)
    at.run()
    assert not at.exception, at.exception
    [claim] = [e for e in at.expander if "the source claimed" in e.label]
    assert "claimed PASS" in claim.label and "re-verified here as REJECT" in claim.label
