"""The store against SQLite and a real PostgreSQL: same behaviour on both."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from pipeline.contracts import LlmCallRecord
from pipeline.session import run_session
from pipeline.store import SessionFilter, StaleRuleVersion, Store


def _session(store: Store, question: str = "q", **values) -> str:
    sid = store.create_session(question=question, world=None, shape="split", provider="offline", model="m")
    if values:
        store.update_session(sid, **values)
    return sid


def test_invocation_ids_are_global_and_outputs_kept_whole(any_store: Store) -> None:
    a, b = _session(any_store), _session(any_store)
    big = "x" * 3_000_000
    ia = any_store.add_invocation(session_id=a, round=1, tool_name="query_logs", model_tool_name="queryLogs",
                                  arguments={"service": "s"}, status="ok", output=big, error=None, latency_ms=1.0)
    ib = any_store.add_invocation(session_id=b, round=1, tool_name="query_logs", model_tool_name="queryLogs",
                                  arguments={}, status="error", output="", error="down", latency_ms=2.0)
    assert ia.id != ib.id
    assert any_store.invocation(ia.id).output == big
    assert any_store.invocation(ib.id).session_id == b
    meta = any_store.invocation_meta(a)[0]
    assert meta["output_bytes"] == len(big) and len(meta["output_preview"]) < 10_000


def test_filters_paging_and_reviews(any_store: Store) -> None:
    now = datetime.now(timezone.utc)
    ids = []
    for i in range(30):
        verdict = ("PASS", "LOW_CONFID", "REJECT")[i % 3]
        sid = any_store.create_session(question=f"question {i} about payment", world=None, shape="split",
                                       provider="offline", model="m", created_at=now - timedelta(hours=i))
        any_store.update_session(sid, verdict=verdict, gatekeeper_status="fail" if verdict == "REJECT" else "pass",
                                 failed_rules=["evidence.invocation_ref"] if verdict == "REJECT" else [],
                                 services="payment-service" if i % 2 else "order-service", status="completed")
        ids.append(sid)
    rows, total = any_store.list_sessions(SessionFilter(verdicts=["REJECT"]), limit=5)
    assert total == 10 and len(rows) == 5 and all(r["verdict"] == "REJECT" for r in rows)
    assert rows[0]["created_at"] >= rows[-1]["created_at"]
    assert any_store.list_sessions(SessionFilter(rule_id="evidence.invocation_ref"))[1] == 10
    assert any_store.list_sessions(SessionFilter(service="order-service"))[1] == 15
    assert any_store.list_sessions(SessionFilter(text="question 7 "))[1] == 1
    assert any_store.list_sessions(SessionFilter(since=now - timedelta(hours=4, minutes=30)))[1] == 5
    page2, _ = any_store.list_sessions(limit=10, offset=10)
    assert len(page2) == 10

    any_store.add_review(session_id=ids[2], label="confirmed_reject", reviewer="ana", note="fabricated id")
    any_store.add_review(session_id=ids[2], label="claim_wrong", reviewer="ana", claim_id="claim-1")
    with pytest.raises(ValueError):
        any_store.add_review(session_id=ids[2], label="x", reviewer=" ")
    unreviewed = any_store.list_sessions(SessionFilter(verdicts=["REJECT", "LOW_CONFID"], reviewed=False))[1]
    assert unreviewed == 19
    reviewed_rows, n = any_store.list_sessions(SessionFilter(reviewed=True))
    assert n == 1 and reviewed_rows[0]["review_label"] == "confirmed_reject"
    assert len(any_store.reviews(ids[2])) == 2


def test_llm_calls_recorded(any_store: Store) -> None:
    sid = _session(any_store)
    any_store.add_llm_call(sid, LlmCallRecord(stage="diagnosis", provider="openai", model="m", attempt=2,
                                              parse_status="malformed", raw_response="{oops", error="bad json",
                                              messages=[{"role": "user", "content": "hi"}], prompt_tokens=10))
    call = any_store.llm_calls(sid)[0]
    assert call["attempt"] == 2 and call["parse_status"] == "malformed" and call["messages"][0]["content"] == "hi"


def test_rule_versions_refuse_a_stale_apply(any_store: Store) -> None:
    first = any_store.apply_rule_version(index_yaml="a", metadata_yaml="b", author="ana", comment="c", based_on=None)
    second = any_store.apply_rule_version(index_yaml="a2", metadata_yaml="b2", author="bo", comment="", based_on=first)
    with pytest.raises(StaleRuleVersion):
        any_store.apply_rule_version(index_yaml="a3", metadata_yaml="b3", author="ana", comment="", based_on=first)
    active = any_store.active_rule_version()
    assert active["id"] == second and active["parent_id"] == first
    assert [v["id"] for v in any_store.rule_versions()] == [second, first]


def test_whole_session_persists(any_store: Store, settings) -> None:
    result = run_session("支付接口最近出现超时，帮我排查", settings=settings, store=any_store)
    row = any_store.get_session(result.session_id)
    evaluation = row["self_evaluation"]["verifier_evaluation"]
    assert evaluation["gatekeeper_result"]["status"] == row["gatekeeper_status"]
    assert evaluation["traceability_version"] == "v2"
    assert row["gatekeeper_features"] and row["executor_raw_output"] and row["evidence_digests"]
    assert row["timings_ms"]
