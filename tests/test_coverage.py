"""Question coverage (law 8), decided in code: each of the four states, unbacked claims, windows."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from pipeline.core.contracts import (
    ClaimCheck,
    ExecutorOutput,
    GatekeeperResult,
    QuestionScope,
    TimeWindow,
    ToolInvocation,
)
from pipeline.core.messages import msg, render, tr
from pipeline.verdict.coverage import compute_coverage


def logs(inv_id: int, service: str | None, *lines: tuple[str, str, str, str]) -> ToolInvocation:
    out = {"logs": [{"timestamp": ts, "service": svc, "level": level, "message": msg} for ts, svc, level, msg in lines]}
    return ToolInvocation(id=inv_id, session_id="s", tool_name="query_logs", model_tool_name="queryLogs",
                          arguments={"service": service} if service else {}, output=json.dumps(out))


def no_data(inv_id: int, service: str) -> ToolInvocation:
    return ToolInvocation(id=inv_id, session_id="s", tool_name="query_logs", model_tool_name="queryLogs",
                          arguments={"service": service}, status="no_data", output='{"no_data": "nothing"}')


def claim(cid: str, text: str, inv_id: int, excerpt: str) -> dict:
    return {"claim_id": cid, "claim_type": "symptom", "claim_text": text, "support_level": "direct",
            "evidence_bindings": [{"tool_name": "query_logs", "source_invocation_ids": [inv_id],
                                   "evidence_excerpt": excerpt}]}


T = "2026-11-28T10:10:00Z"
INVS = [
    logs(1, "payment-service", (T, "payment-service", "ERROR", "request timeout after 3000ms")),
    logs(2, "user-service", (T, "user-service", "INFO", "用户登录成功 uid=1"), (T, "user-service", "WARN", "slow request")),
    no_data(3, "billing-service"),
]
STRUCTURED = {"claims": [
    claim("c1", "payment-service 的日志记录：request timeout after 3000ms。", 1, "request timeout after 3000ms"),
    claim("c2", "user-service 的日志记录：用户登录成功 uid=1。", 2, "用户登录成功 uid=1"),
]}
CHECKS = [ClaimCheck(claim_id="c1", verification="direct_observation"),
          ClaimCheck(claim_id="c2", verification="direct_observation")]


def coverage(services, *, checks=CHECKS, gate=None, window=None):
    scope = QuestionScope(services=services, time_window=window)
    cov = compute_coverage(scope, ExecutorOutput.read(STRUCTURED), checks, INVS, gate or GatekeeperResult(), backends="bundled logs")
    return {c.service: c for c in cov}


def test_each_state():
    cov = coverage(["payment-service", "user-service", "billing-service", "search-service"])
    assert cov["payment-service"].status == "answered" and cov["payment-service"].claim_ids == ["c1"]
    assert cov["user-service"].status == "healthy" and cov["user-service"].invocation_ids == [2]
    healthy = cov["user-service"].msg
    assert healthy is not None and healthy.code.startswith("coverage.healthy") and healthy.params["service"] == "user-service"
    assert cov["user-service"].detail == render(healthy, "en")
    assert cov["billing-service"].status == "no_data" and cov["billing-service"].invocation_ids == [3]
    no_data = cov["billing-service"].msg
    assert no_data is not None and no_data.code == "coverage.no_records"
    assert (no_data.params["service"], no_data.params["backends"]) == ("billing-service", "bundled logs")
    assert cov["search-service"].status == "not_queried"


def test_a_fault_in_the_services_own_output_is_not_healthy():
    faulty = logs(2, "user-service", (T, "user-service", "INFO", "用户登录成功 uid=1"),
                  (T, "user-service", "ERROR", "login backend unreachable"))
    scope = QuestionScope(services=["user-service"])
    cov = compute_coverage(scope, ExecutorOutput.read(STRUCTURED), CHECKS, [faulty], GatekeeperResult())
    assert cov[0].status == "answered"


def test_unverified_or_unbacked_claims_do_not_answer():
    weak = [CHECKS[0], ClaimCheck(claim_id="c2", verification="unsupported")]
    assert coverage(["user-service"], checks=weak)["user-service"].status == "no_data"
    unbacked = GatekeeperResult(unbacked_claims=["c1"])
    assert coverage(["payment-service"], gate=unbacked)["payment-service"].status == "no_data"


def test_evidence_outside_the_asked_window_is_said_to_be_outside():
    window = TimeWindow(start=datetime(2026, 11, 28, 12, tzinfo=UTC),
                        end=datetime(2026, 11, 28, 13, tzinfo=UTC))
    cov = coverage(["payment-service"], window=window)["payment-service"]
    assert cov.status != "answered" and "outside the asked time window" in cov.detail


def test_no_scope_no_coverage():
    assert compute_coverage(None, ExecutorOutput.read(STRUCTURED), CHECKS, INVS, GatekeeperResult()) == []


def test_the_answer_says_evidence_lies_outside_the_asked_window():
    from pipeline.core.contracts import VerifierOutput
    from pipeline.stages.composer import assemble_input

    window = TimeWindow(start=datetime(2026, 11, 28, 12, tzinfo=UTC), end=datetime(2026, 11, 28, 13, tzinfo=UTC),
                        text="since 12:00")
    scope = QuestionScope(services=["payment-service"], time_window=window)
    cov = compute_coverage(scope, ExecutorOutput.read(STRUCTURED), CHECKS, INVS, GatekeeperResult())
    ci, _ = assemble_input(question="payment-service timeouts since 12:00?", verdict="LOW_CONFID", structured=ExecutorOutput.read(STRUCTURED),
                           verifier_output=VerifierOutput(verdict="LOW_CONFID", groundedness_score=1, claim_checks=CHECKS),
                           scope=scope, coverage=cov)
    assert tr("gap.outside", "en", service="payment-service", window="since 12:00") in ci.missing_info


def test_an_alert_firing_since_before_the_window_is_inside_it():
    alert = {"alerts": [{"service": "payment-service", "status": "firing", "severity": "critical",
                         "startsAt": "2026-11-28T09:00:00Z", "endsAt": None, "description": "CPU使用率过高: 92.0%"}]}
    inv = ToolInvocation(id=9, session_id="s", tool_name="query_metrics", model_tool_name="queryMetrics",
                         arguments={"status": "all"}, output=json.dumps(alert, ensure_ascii=False))
    structured = {"claims": [claim("a1", "payment-service 出现告警：CPU使用率过高: 92.0%。", 9, "CPU使用率过高: 92.0%")]}
    window = TimeWindow(start=datetime(2026, 11, 28, 10, tzinfo=UTC), end=datetime(2026, 11, 28, 11, tzinfo=UTC))
    cov = compute_coverage(QuestionScope(services=["payment-service"], time_window=window), ExecutorOutput.read(structured),
                           [ClaimCheck(claim_id="a1", verification="direct_observation")], [inv], GatekeeperResult())
    assert cov[0].status == "answered" and "outside" not in cov[0].detail


# --- per (service, symptom) -----------------------------------------------------------------------

def series(inv_id: int, name: str, service: str, value: str) -> ToolInvocation:
    labels = {"__name__": name, "service": service}
    out = {"alerts": [], "series": [{"metric": labels, "values": [[None, value]],
                                     "description": f'{name}{{service="{service}"}} = {value}'}]}
    return ToolInvocation(id=inv_id, session_id="s", tool_name="query_metrics", model_tool_name="queryMetrics",
                          arguments={"service": service, "promql": f'{{__name__=~".*heap.*", service="{service}"}}'},
                          output=json.dumps(out))


def symptom_coverage(symptoms, invs, structured=STRUCTURED, checks=CHECKS):
    scope = QuestionScope(services=list(symptoms), symptoms=symptoms)
    return {(c.service, c.symptom): c for c in compute_coverage(scope, ExecutorOutput.read(structured), checks, invs, GatekeeperResult())}


def test_the_asked_symptom_decides_not_the_service_alone():
    """A verified timeout claim answers payment-service's timeouts, not its memory; a heap series
    shows user-service's memory normal, with the figure; a returned record count is never "no data"."""
    invs = [*INVS, series(4, "jvm_heap_used_percent", "user-service", "54")]
    cov = symptom_coverage({"payment-service": ["timeout", "memory"], "user-service": ["memory"]}, invs)
    assert cov["payment-service", "timeout"].status == "answered"
    memory = cov["payment-service", "memory"]
    # payment-service's one line is an ERROR about a timeout, not memory: no claim about memory,
    # and a warning-level record about something else does not make memory healthy either.
    assert memory.status == "healthy" and memory.records == 1 and "none of its 1 record(s)" in memory.detail
    heap = cov["user-service", "memory"]
    assert heap.status == "healthy" and heap.figure == 'jvm_heap_used_percent{service="user-service"} = 54'
    assert "no sign of a memory problem in user-service" in heap.detail and "#4" in heap.detail


def test_records_without_a_verified_claim_are_counted_not_called_missing():
    weak = [ClaimCheck(claim_id="c1", verification="unsupported")]
    cov = symptom_coverage({"payment-service": ["timeout"]}, INVS, checks=weak)["payment-service", "timeout"]
    assert cov.status == "no_data" and cov.records == 1
    assert cov.msg == msg("coverage.unclaimed_symptom", count=1, calls="#1", service="payment-service", symptom="timeout")
    assert cov.detail == render(cov.msg, "en")
