"""Verifier V2: payload, offline claim/hypothesis/digest checks, stage fallbacks, facts_checked."""

from __future__ import annotations

import json

import pytest

from pipeline.core.config import load_settings
from pipeline.core.contracts import (
    ClaimCheck,
    EvidenceDigest,
    EvidenceRef,
    ExecutorClaim,
    ExecutorOutput,
    GatekeeperError,
    GatekeeperResult,
    ParseStatus,
    RetryContext,
    ToolInvocation,
    VerifierOutput,
)
from pipeline.core.errors import StageFailure
from pipeline.gatekeeper.features import compute_features
from pipeline.llm.offline.verifier import _ranged, verify
from pipeline.stages.verifier import TALLY_RECORDS, build_payload, facts_checked, run_verifier
from pipeline.verdict.policy import groundedness
from pipeline.verdict.provider import StageContext

LOGS = {
    "logs": [
        {"timestamp": "2024-05-01T10:00:03Z", "service": "payment-service", "level": "ERROR",
         "message": "request timeout after 5300ms order_id=8812"},
        {"timestamp": "2024-05-01T10:00:04Z", "service": "order-service", "level": "INFO",
         "message": "order created order_id=8813"},
        {"timestamp": "2024-05-01T10:01:00Z", "service": "payment-service", "level": "WARN",
         "message": "CPU使用率过高: 92.0%, 进程: java (PID: 1), 线程数: 245"},
    ]
}
ALERTS = {
    "alerts": [
        {"alertname": "HighLatency", "service": "payment-service", "status": "firing",
         "description": "payment-service p99 latency 5300ms above 2s threshold"},
    ]
}


def invocations() -> list[ToolInvocation]:
    return [
        ToolInvocation(id=394, session_id="s1", tool_name="query_logs", model_tool_name="queryLogs",
                       output=json.dumps(LOGS, ensure_ascii=False)),
        ToolInvocation(id=395, session_id="s1", tool_name="query_metrics", model_tool_name="queryMetrics",
                       output=json.dumps(ALERTS, ensure_ascii=False)),
    ]


def claim(cid: str, text: str, excerpt: str, ctype: str = "symptom", level: str = "direct",
          inv: int = 394, tool: str = "query_logs", digest_id: str | None = None) -> dict:
    binding = {"source_type": "tool_trace", "tool_name": tool, "source_invocation_ids": [inv],
               "evidence_excerpt": excerpt}
    if digest_id:
        binding["digest_id"] = digest_id
    return {"claim_id": cid, "claim_type": ctype, "claim_text": text, "support_level": level,
            "evidence_bindings": [binding]}


def structured(*claims: dict, hypotheses: list | None = None) -> ExecutorOutput:
    return ExecutorOutput.model_validate({
        "answer_version": "executor_evidence_v2", "claims": list(claims), "hypotheses": hypotheses or [],
        "recommended_actions": [], "missing_info": []})


def payload(data: ExecutorOutput | None, *, question: str = "支付接口最近出现超时", status: str = "valid",
            gate: GatekeeperResult | None = None, digests: list[EvidenceDigest] | None = None,
            retry: RetryContext | None = None) -> dict:
    return build_payload(
        question=question, raw_output=json.dumps(data.raw if data else {}, ensure_ascii=False),
        parse_status=ParseStatus(status=status), structured=data, invocations=invocations(), digests=digests,
        gatekeeper_result=gate or GatekeeperResult(), retry_context=retry,
    )


def check_of(*claims: dict, **kw) -> list[ClaimCheck]:
    return verify(payload(structured(*claims), **kw)).claim_checks


# --- payload ------------------------------------------------------------------------------------


def test_payload_has_seed_fields_and_bounded_windows():
    big = {"logs": [{"timestamp": "t", "service": "payment-service", "level": "INFO", "message": f"noise line {i}"}
                    for i in range(20000)] + LOGS["logs"]}
    inv = ToolInvocation(id=394, session_id="s1", tool_name="query_logs", model_tool_name="queryLogs",
                         output=json.dumps(big, ensure_ascii=False))
    data = structured(claim("c1", "payment-service 出现请求超时。", "request timeout after 5300ms"))
    p = build_payload(question="q", raw_output="raw", parse_status=ParseStatus(status="valid"), structured=data,
                      invocations=[inv], digests=None, gatekeeper_result=GatekeeperResult(), retry_context=None)
    for key in ("original_query", "executor_raw_output", "executor_final_answer", "executor_structured_output",
                "executor_output_parse_status", "tool_trace_summary", "gatekeeper_result", "retry_context",
                "cited_evidence"):
        assert key in p
    assert p["executor_final_answer"] == p["executor_raw_output"] == "raw"
    assert "evidence_digests" not in p  # single shape
    window = p["cited_evidence"][0]["bindings"][0]["windows"][0]
    assert window["found"] and "request timeout after 5300ms" in window["anchor"][0]
    assert window["record_count"] == 20003
    assert len(json.dumps(p, ensure_ascii=False)) < 10_000  # a 1 MB output never rides along
    summary = p["tool_trace_summary"][0]
    assert summary["invocation_id"] == 394 and "request timeout" in summary["output_summary"]


@pytest.mark.parametrize(("records", "said", "kept"), [
    (40, 40, True), (40, 41, False), (TALLY_RECORDS + 10, TALLY_RECORDS + 10, False)])
def test_a_stated_count_is_held_to_a_bounded_tally(records: int, said: int, kept: bool) -> None:
    """The window counts the records holding the quote, but reads at most TALLY_RECORDS of them: past
    the bound the count is a lower bound, and a count stated beyond it is not borne out."""
    logs = {"logs": [{"timestamp": "2024-05-01T10:00:03Z", "service": "payment-service", "level": "ERROR",
                      "message": f"request timeout after 5300ms order_id={9000 + i}", "host": f"pay-7d9f-{i % 2}"}
                     for i in range(records)]
            # other errors: the output's own count of ERROR lines is not the quote's
            + [{"timestamp": "2024-05-01T10:00:04Z", "service": "api-gateway", "level": "ERROR",
                "message": "upstream payment-service returned 504", "host": "gw-1"}] * 5}
    inv = ToolInvocation(id=394, session_id="s1", tool_name="query_logs", model_tool_name="queryLogs",
                         output=json.dumps(logs))
    data = structured(claim("c1", f"payment-service logged {said} errors: request timeout after 5300ms.",
                            "request timeout after 5300ms"))
    p = build_payload(question="q", raw_output="raw", parse_status=ParseStatus(status="valid"), structured=data,
                      invocations=[inv], digests=None, gatekeeper_result=GatekeeperResult(), retry_context=None)
    tally = p["cited_evidence"][0]["bindings"][0]["windows"][0]["tally"]
    assert tally["records"] == min(records, TALLY_RECORDS) and tally["capped"] == (records >= TALLY_RECORDS)
    assert sum(tally["by_instance"].values()) == tally["records"]
    verified = verify(p).claim_checks[0].verification in ("direct_observation", "reasonable_inference")
    assert verified == kept


def test_payload_marks_missing_invocation_and_passes_gatekeeper_features():
    data = structured(claim("c1", "payment-service 超时", "request timeout", inv=999))
    feats = {"claims[0].evidence_bindings[0]": {"sources": {"output": {"score": 0.2, "spans": [[1, 2]]}},
                                                "entities": [], "other_match": None}}
    p = build_payload(question="q", raw_output="", parse_status=ParseStatus(status="valid"), structured=data,
                      invocations=invocations(), digests=None, gatekeeper_result=GatekeeperResult(),
                      retry_context=None, features=feats)
    binding = p["cited_evidence"][0]["bindings"][0]
    assert binding["windows"] == [{"invocation_id": 999, "available": False}]
    assert binding["gatekeeper_features"]["similarity"] == {"output": 0.2}


@pytest.mark.parametrize("excerpt, lines", [
    # Cut with "...": its pieces are no substring of the output, yet both lie in one record.
    ("request timeout after ... order_id=8812", ["request timeout after 5300ms order_id=8812"]),
    # Over two adjacent records: the window shows both, as the gatekeeper found it.
    ("request timeout after 5300ms order_id=8812 2024-05-01T10:00:04Z order-service INFO order created",
     ["request timeout after 5300ms order_id=8812", "order created order_id=8813"]),
])
def test_the_window_shows_the_quote_where_the_gatekeeper_located_it(excerpt, lines):
    """One locator: the verifier reads a quote in the records the gatekeeper's matcher found it in,
    and calls it found exactly when the gatekeeper found it by structure."""
    data = structured(claim("c1", "payment-service 请求超时", excerpt))
    invs = invocations()
    feats = compute_features({inv.id: inv for inv in invs}, data, None)
    source = feats["claims[0].evidence_bindings[0]"]["sources"]["output"]
    assert source["covered"] == 1.0
    p = build_payload(question="q", raw_output="", parse_status=ParseStatus(status="valid"), structured=data,
                      invocations=invs, digests=None, gatekeeper_result=GatekeeperResult(), retry_context=None,
                      features=feats)
    window = p["cited_evidence"][0]["bindings"][0]["windows"][0]
    assert window["found"]
    assert [next(line for line in lines if line in anchor) for anchor in window["anchor"]] == lines
    assert verify(p).claim_checks[0].verification == "direct_observation"


def test_payload_keeps_written_positions_past_a_malformed_claim():
    data = ExecutorOutput.model_validate({"claims": [
        "not an object", claim("c1", "payment-service 超时", "request timeout")]})
    feats = {"claims[1].evidence_bindings[0]": {"sources": {"output": {"score": 0.9, "spans": []}},
                                                "entities": [], "other_match": None}}
    p = build_payload(question="q", raw_output="", parse_status=ParseStatus(status="valid"), structured=data,
                      invocations=invocations(), digests=None, gatekeeper_result=GatekeeperResult(),
                      retry_context=None, features=feats)
    [cited] = p["cited_evidence"]
    assert (cited["claim_id"], cited["claim_index"]) == ("c1", 1)
    assert cited["bindings"][0]["gatekeeper_features"]["similarity"] == {"output": 0.9}


# --- the six claim verifications ---------------------------------------------------------------


def test_direct_observation():
    [c] = check_of(claim("c1", "payment-service 出现请求超时，耗时 5.3 秒。", "request timeout after 5300ms"))
    assert c.verification == "direct_observation", c.detail
    assert c.evidence_refs and c.evidence_refs[0].source_invocation_ids == [394]


def test_reasonable_inference_for_indirect_support():
    [c] = check_of(claim("c1", "payment-service CPU 使用率 92%，线程数 245。", "CPU使用率过高: 92.0%", level="indirect"))
    assert c.verification == "reasonable_inference", c.detail


@pytest.mark.parametrize(
    "text",
    ["CPU 过高导致支付接口超时。", "payment-service CPU 使用率可能过高。", "CPU overload caused the payment timeouts."],
)
def test_overstated_causal_or_hedged(text):
    [c] = check_of(claim("c1", text, "CPU使用率过高: 92.0%"))
    assert c.verification == "overstated", c.detail


FRAMES = " ".join(f"at com.shop.cart.CartStage{i}.run(CartStage{i}.java:{100 + i})" for i in range(14))
PLAIN = "\n".join([
    "2024-05-01 10:00:01 WARN sshd[311]: address 10.9.8.7 maps to host.example, possible break-in attempt",
    f"2024-05-01 10:00:02 ERROR cart-service: checkout aborted {FRAMES}",
    "Caused by: java.net.SocketTimeoutException: read timed out after 5000ms",
])


@pytest.mark.parametrize("quote", [
    # the record's own hedge and causal words are not the claim's
    "2024-05-01 10:00:01 WARN sshd[311]: address 10.9.8.7 maps to host.example, possible break-in attempt",
    "Caused by: java.net.SocketTimeoutException: read timed out after 5000ms",
    # a quote of a line longer than a window's line, its last frame too
    f"checkout aborted {FRAMES}",
    # cut with an ellipsis; a few characters of a line
    "2024-05-01 10:00:02 ERROR cart-service: checkout aborted ... CartStage13.run(CartStage13.java:113)",
    "10:00:02 ERROR",
])
def test_a_claim_that_is_its_records_text_is_a_direct_observation(quote: str) -> None:
    inv = ToolInvocation(id=7, session_id="s1", tool_name="query_logs", model_tool_name="queryLogs", output=PLAIN)
    data = structured(claim("c1", quote, quote, inv=7))
    p = build_payload(question="what do the logs show?", raw_output="{}", parse_status=ParseStatus(status="valid"),
                      structured=data, invocations=[inv], digests=None, gatekeeper_result=GatekeeperResult(),
                      retry_context=None)
    [c] = verify(p).claim_checks
    assert c.verification == "direct_observation", c.detail


@pytest.mark.parametrize(("text", "verification"), [
    # a number stated less precisely than the record is its rounding, not a new number
    ("payment-service request timeout after 5 s.", "direct_observation"),
    ("payment-service request timeout after 6 s.", "contradicted"),
    ("payment-service request timeout after 5.31 s.", "contradicted"),
])
def test_a_rounded_number_is_the_records_and_a_changed_one_is_not(text: str, verification: str) -> None:
    [c] = check_of(claim("c1", text, "request timeout after 5300ms"))
    assert c.verification == verification, c.detail


def test_root_cause_without_stated_cause_is_overstated():
    [c] = check_of(claim("c1", "payment-service CPU 使用率过高。", "CPU使用率过高: 92.0%", ctype="root_cause"))
    assert c.verification == "overstated"


def test_unsupported_when_evidence_says_nothing_of_it():
    [c] = check_of(claim("c1", "数据库主从同步延迟严重", "order created"))
    assert c.verification == "unsupported"
    [c] = check_of(claim("c1", "payment-service 超时", "request timeout", inv=999))
    assert c.verification == "unsupported"


@pytest.mark.parametrize(
    "text",
    ["payment-service 出现 ERR_DB_LOCK 错误。", "订单 99123 的 CPU 使用率过高。", "payment-service 在 11:42 CPU 使用率过高。"],
)
def test_external_unknown_for_entities_not_in_evidence(text):
    [c] = check_of(claim("c1", text, "CPU使用率过高: 92.0%"))
    assert c.verification == "external_unknown", c.detail


@pytest.mark.parametrize(
    "text,excerpt",
    [
        ("payment-service CPU 使用率为 29%。", "CPU使用率过高: 92.0%"),  # swapped digits
        ("order-service 出现请求超时。", "request timeout after 5300ms"),  # swapped service
        ("订单 99123 请求超时。", "request timeout after 5300ms"),  # the record names order 8812
        ("payment-service 未出现错误。", "request timeout after 5300ms"),  # negation vs an ERROR record
        ("payment-service reported no timeouts.", "request timeout after 5300ms"),
    ],
)
def test_contradicted(text, excerpt):
    [c] = check_of(claim("c1", text, excerpt), question="why does payment time out")
    assert c.verification == "contradicted", c.detail


def test_negated_record_contradicts_an_affirmative_claim():
    quiet = {"logs": [{"timestamp": "t", "service": "payment-service", "level": "INFO",
                       "message": "health check ok, no errors in the last hour"}]}
    inv = ToolInvocation(id=1, session_id="s", tool_name="query_logs", model_tool_name="queryLogs",
                         output=json.dumps(quiet))
    data = structured(claim("c1", "payment-service logged errors in the last hour", "health check ok", inv=1))
    p = build_payload(question="q", raw_output="", parse_status=ParseStatus(status="valid"), structured=data,
                      invocations=[inv], digests=None, gatekeeper_result=GatekeeperResult(), retry_context=None)
    assert verify(p).claim_checks[0].verification == "contradicted"


@pytest.mark.parametrize(("text", "verification"), [
    ("promotion-service logged a redis command timeout after 500ms", "contradicted"),  # another service's record
    ("cart-service timed out on redis after 500ms", "direct_observation"),
])
def test_a_store_both_name_does_not_make_two_services_agree(text: str, verification: str) -> None:
    logs = {"logs": [{"timestamp": "t", "service": "cart-service", "level": "WARN",
                      "message": "redis command timeout after 500ms: GET cart:uid:6057017"}]}
    inv = ToolInvocation(id=1, session_id="s", tool_name="query_logs", model_tool_name="queryLogs",
                         output=json.dumps(logs))
    data = structured(claim("c1", text, "redis command timeout after 500ms", inv=1))
    p = build_payload(question="q", raw_output="", parse_status=ParseStatus(status="valid"), structured=data,
                      invocations=[inv], digests=None, gatekeeper_result=GatekeeperResult(), retry_context=None)
    assert verify(p).claim_checks[0].verification == verification


_INSTANCES = [  # (service, host the log line came from, its message): one record per shape of instance
    ("redis-cart", "cart-4d6e-1", "Redis内存使用率过高: 98.0%, 实例: redis-cart-0, 淘汰键数: 48213"),  # StatefulSet ordinal
    ("payment-service", "pay-7d9f-2", "jstack sampling: hot thread pay-worker-17 RUNNABLE 98% cpu"),  # a service's worker
    ("payment-service", "inv-84cd-2", "heap usage 97.0% on pod payment-7f9c8d-x2k4q"),  # Deployment pod hash
    ("notification-service", "notify-1a2b-1", "SMTP connection reset by smtp-relay.internal:587, retry 1/3 succeeded"),  # host:port
    ("kubelet", "gw-5c8b-3", "node ip-10-0-3-17.ec2.internal NotReady for 120s"),  # a cloud's node
]


@pytest.mark.parametrize(("text", "record", "verification"), [
    ("redis-cart-2 的内存使用率 98.0%，淘汰键数 48213。", 0, "contradicted"),
    ("Redis memory usage is 98.0% on redis-cart-0 with 48213 evicted keys.", 0, "direct_observation"),
    ("Redis memory usage is 98.0% with 48213 evicted keys.", 0, "direct_observation"),  # no instance named
    ("jstack sampling found hot thread pay-worker-71 RUNNABLE 98% cpu", 1, "contradicted"),
    ("heap usage 97.0% on pod payment-7f9c8d-abcde", 2, "contradicted"),  # another pod of the replica set
    ("heap usage 97.0% on pod payment-3c1e9a-x2k4q", 2, "contradicted"),  # another replica set
    ("heap usage 97.0% on pod payment-7f9c8d-x2k4q", 2, "direct_observation"),
    ("SMTP connection reset by smtp-relay.internal:465, retry 1/3 succeeded", 3, "contradicted"),
    ("SMTP connection reset by smtp-backup.internal:587, retry 1/3 succeeded", 3, "contradicted"),
    ("node ip-10-0-3-18.ec2.internal NotReady for 120s", 4, "contradicted"),
    ("node ip-10-0-3-17.ec2.internal NotReady for 120s", 4, "direct_observation"),
])
def test_an_instance_other_than_the_records_is_a_swap(text: str, record: int, verification: str) -> None:
    """Instances compare within their shape: the log line's host (a pod) is no other redis ordinal."""
    logs = {"logs": [{"timestamp": "t", "service": service, "level": "WARN", "message": message, "host": host}
                     for service, host, message in _INSTANCES]}
    inv = ToolInvocation(id=1, session_id="s", tool_name="query_logs", model_tool_name="queryLogs",
                         output=json.dumps(logs, ensure_ascii=False))
    data = structured(claim("c1", text, _INSTANCES[record][2], inv=1))
    p = build_payload(question="q", raw_output="", parse_status=ParseStatus(status="valid"), structured=data,
                      invocations=[inv], digests=None, gatekeeper_result=GatekeeperResult(), retry_context=None)
    check = verify(p).claim_checks[0]
    assert check.verification == verification, check.detail


def test_gatekeeper_target_makes_a_claim_at_least_unsupported():
    gate = GatekeeperResult(status="fail", failed_rules=["evidence.excerpt_similarity"], errors=[
        GatekeeperError(rule_id="evidence.excerpt_similarity", target="claims[0].evidence_bindings[0]",
                        message="low similarity")])
    out = verify(payload(structured(claim("c1", "payment-service 出现请求超时。", "request timeout after 5300ms")),
                         gate=gate))
    assert out.claim_checks[0].verification == "unsupported"
    assert out.verdict != "PASS"


# --- hypotheses, digests, retry, verdict -------------------------------------------------------


def test_hypothesis_checks():
    hyps = [
        {"hypothesis_text": "连接池压力可能参与了超时问题。", "basis": "已有 payment-service 超时现象，但缺少连接池指标。",
         "needed_evidence": ["HikariCP active/idle/pending 指标"]},
        {"hypothesis_text": "连接池耗尽导致了超时。", "basis": "超时现象", "needed_evidence": ["连接池指标"]},
        {"hypothesis_text": "可能是 Kafka 积压。", "basis": "kafka-consumer lag 持续增长", "needed_evidence": ["lag"]},
        {"hypothesis_text": "可能与发布有关。", "basis": "", "needed_evidence": []},
    ]
    data = structured(claim("c1", "payment-service 出现请求超时。", "request timeout"), hypotheses=hyps)
    checks = [h.verification for h in verify(payload(data)).hypothesis_checks]
    assert checks == ["reasonable_hypothesis", "overstated_as_fact", "unsupported_hypothesis",
                      "unsupported_hypothesis"]


def test_digest_checks_faithful_and_unfaithful():
    digests = [
        EvidenceDigest(digest_id="d1", source_invocation_ids=[394], tool="query_logs",
                       summary="payment-service 的日志显示 CPU 使用率为 92.0%，线程数为 245。",
                       source_quote="CPU使用率过高: 92.0%, 进程: java (PID: 1), 线程数: 245"),
        EvidenceDigest(digest_id="d2", source_invocation_ids=[394], tool="query_logs",
                       summary="payment-service CPU 使用率为 97%。", source_quote="CPU使用率过高: 92.0%"),
        EvidenceDigest(digest_id="d3", source_invocation_ids=[394], tool="query_logs",
                       summary="payment-service 出现超时。", source_quote="upstream connect error 503"),
        EvidenceDigest(digest_id="d4", source_invocation_ids=[394], tool="query_logs",
                       summary="CPU 过高导致请求超时。", source_quote="CPU使用率过高: 92.0%"),
        EvidenceDigest(digest_id="d5", source_invocation_ids=[777], tool="query_logs",
                       summary="x", source_quote="y"),
    ]
    data = structured(claim("c1", "payment-service CPU 使用率 92%。", "CPU使用率过高: 92.0%", digest_id="d1"))
    p = payload(data, digests=digests)
    assert "evidence_digests" in p and p["cited_evidence"][0]["bindings"][0]["digest"]["summary"]
    checks = {d.digest_id: d for d in verify(p).digest_checks}
    assert checks["d1"].verification == "faithful", checks["d1"].detail
    for bad in ("d2", "d3", "d4", "d5"):
        assert checks[bad].verification == "unfaithful", bad
    assert "97" in checks["d2"].detail


def test_retry_gaps_closed():
    data = structured(claim("c1", "payment-service 出现请求超时，耗时 5.3 秒。", "request timeout after 5300ms"))
    closed = verify(payload(data, retry=RetryContext(round=2, missing_info=["payment-service 请求超时"])))
    assert closed.retry_gaps_closed is True
    open_ = verify(payload(data, retry=RetryContext(round=2, missing_info=["缺少连接池 active/idle 指标"])))
    assert open_.retry_gaps_closed is False
    assert verify(payload(data)).retry_gaps_closed is None


def test_offline_verdicts_and_language():
    good = verify(payload(structured(claim("c1", "payment-service 出现请求超时，耗时 5.3 秒。",
                                           "request timeout after 5300ms"))))
    assert good.verdict == "PASS" and good.groundedness_score == 1.0
    assert "判定 PASS" in good.rationale
    swapped = verify(payload(structured(claim("c1", "order-service timed out.", "request timeout after 5300ms")),
                             question="why does payment time out"))
    assert swapped.verdict == "REJECT" and swapped.rationale.startswith("Checked 1 claim")
    gate = GatekeeperResult(status="fail", failed_rules=["schema.executor_v2"])
    assert verify(payload(structured(claim("c1", "payment-service 出现请求超时，耗时 5.3 秒。",
                                           "request timeout after 5300ms")), gate=gate)).verdict != "PASS"


# --- the stage ------------------------------------------------------------------------------------


class RecordingProvider:
    def __init__(self, answer=None, error: Exception | None = None):
        self.calls = 0
        self.answer, self.error = answer, error

    def verify(self, ctx, payload):
        self.calls += 1
        if self.error:
            raise self.error
        return self.answer if self.answer is not None else verify(payload)


def ctx(language: str = "zh") -> StageContext:
    return StageContext(settings=load_settings(), session_id="s1", language=language, record=lambda r: None,
                        run_tool=lambda n, a: None)  # type: ignore[arg-type,return-value]


@pytest.mark.parametrize("status", ["missing", "malformed"])
def test_unusable_executor_output_never_reaches_the_provider(status):
    provider = RecordingProvider()
    out = run_verifier(ctx(), provider, payload(None, status=status), None)
    assert provider.calls == 0
    assert out.verdict == "LOW_CONFID" and out.groundedness_score == 0 and out.claim_checks == []
    assert status in out.rationale


@pytest.mark.parametrize(
    "provider",
    [RecordingProvider(error=StageFailure("verifier", "endpoint refused")), RecordingProvider(answer="not json"),
     RecordingProvider(answer={"verdict": "MAYBE"})],
)
def test_provider_failure_or_garbage_is_low_confid(provider):
    data = structured(claim("c1", "payment-service 出现请求超时。", "request timeout"))
    out = run_verifier(ctx("en"), provider, payload(data), data)
    assert out.verdict == "LOW_CONFID" and out.groundedness_score == 0
    assert "verifier" in out.rationale.lower()


def test_stage_fills_skipped_claims_and_recomputes_groundedness():
    data = structured(claim("c1", "payment-service 出现请求超时。", "request timeout"),
                      claim("c2", "订单 99123 失败", "order created", ctype="impact"))
    answer = VerifierOutput(verdict="PASS", groundedness_score=0.99, claim_checks=[
        ClaimCheck(claim_id="c1", verification="direct_observation"),
        ClaimCheck(claim_id="ghost", verification="direct_observation")])
    out = run_verifier(ctx(), RecordingProvider(answer=answer), payload(data), data)
    assert [(c.claim_id, c.verification) for c in out.claim_checks] == [("c1", "direct_observation"),
                                                                         ("c2", "unsupported")]
    assert out.groundedness_score == 0.5


def test_groundedness_formula():
    claims = [ExecutorClaim(claim_id="a", claim_type="symptom"), ExecutorClaim(claim_id="b", claim_type="observation")]
    checks = [ClaimCheck(claim_id="a", verification="reasonable_inference"),
              ClaimCheck(claim_id="b", verification="overstated")]
    assert groundedness(checks, claims) == round((2 * 0.7 + 0.3) / 3, 4)
    assert groundedness([], []) == 0.0


def test_facts_checked_mapping():
    data = structured(*[claim(f"c{i}", f"text {i}", "x", ctype=t) for i, t in enumerate(
        ["root_cause", "symptom", "impact", "risk", "observation", "symptom"])])
    verifs = ["direct_observation", "reasonable_inference", "overstated", "unsupported", "external_unknown",
              "contradicted"]
    ref = EvidenceRef(tool_name="query_logs", source_invocation_ids=[394])
    checks = [ClaimCheck(claim_id=f"c{i}", verification=v, evidence_refs=[ref]) for i, v in enumerate(verifs)]
    facts = facts_checked(checks, data)
    assert [f.verification for f in facts] == ["direct_evidence", "indirect_support", "indirect_support",
                                               "no_evidence", "no_evidence", "contradicted"]
    assert [f.is_critical for f in facts] == [True, True, True, True, False, True]
    assert facts[0].fact == "c0: text 0" and facts[0].evidence_refs == [ref]


def test_a_range_reads_as_the_cited_records_value_before_a_neighbours() -> None:
    """"1-2.5 s" over a window holding 1502ms (the cited line) and 2.4s (a neighbour) states the cited
    line's value, whatever order the window's values come in: set against it with the neighbour's,
    a faithful range would read as a conflict under some hash seeds and not others."""
    anchor = "api-gateway ERROR upstream ledger-service returned 503 after 1502ms"
    window = "ledger-service WARN G1 Old gc pause 2.4s\n" + anchor
    assert _ranged("503 after roughly 1-2.5 s", anchor, window) == "503 after roughly 1.502s"
    assert _ranged("gc pauses of 2-3 s", anchor, window) == "gc pauses of 2.4s"
    assert _ranged("pauses of 5-8 s", anchor, window) == "pauses of 5-8 s"
