"""Gatekeeper behaviour: the gatekeeper's acceptance lines (docs/spec.md#rule-set) plus the forgeries docs/spec.md#verdict-matrix names."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from pipeline.core.contracts import EvidenceDigest, ExecutorOutput, ToolInvocation
from pipeline.gatekeeper import GateContext, gate_verdict, load_rules, matcher, run_gatekeeper
from pipeline.gatekeeper import prepared as prepared_output
from pipeline.gatekeeper.prepared import PreparedOutput, record_text
from pipeline.replay.per_session import (
    ReplayInput,
    cited_invocation_ids,
    project_verdict,
    replay,
    similarity_scores,
    summarize,
)

RULES_DIR = Path(__file__).resolve().parent.parent / "rules"
SESSION = "sess-a"

LOG_LINES = [
    {"timestamp": "2024-05-01T10:00:01Z", "service": "payment-service", "level": "ERROR",
     "message": "Request timeout after 5300ms calling bank-gateway, order_id=ord-7731"},
    {"timestamp": "2024-05-01T10:00:02Z", "service": "payment-service", "level": "ERROR",
     "message": "HTTP 504 upstream timeout; error code E_PAY_TIMEOUT, retry 3 of 3"},
    {"timestamp": "2024-05-01T10:00:05Z", "service": "payment-service", "level": "WARN",
     "message": "HikariPool-1 connection pool usage 92.0% (active 46 / max 50)"},
    {"timestamp": "2024-05-01T10:00:09Z", "service": "payment-service", "level": "ERROR",
     "message": "支付接口调用超时，订单号: 88120 处理失败，耗时 5.3 秒"},
]
ALERTS = {"alerts": [{"alertname": "HighCPU", "service": "order-service", "status": "firing",
                      "description": "CPU使用率过高: 87.5%, 进程: java (PID: 1), 线程数: 245"}]}


@pytest.fixture(scope="module")
def rules():
    return load_rules(RULES_DIR)


def _logs_output(ascii_only: bool) -> str:
    return json.dumps({"logs": LOG_LINES}, ensure_ascii=ascii_only)


def _invocations(ascii_only: bool = False) -> dict[int, ToolInvocation]:
    return {
        394: ToolInvocation(id=394, session_id=SESSION, tool_name="query_logs", model_tool_name="queryLogs",
                            output=_logs_output(ascii_only)),
        395: ToolInvocation(id=395, session_id=SESSION, tool_name="query_metrics",
                            model_tool_name="queryMetrics", output=json.dumps(ALERTS, ensure_ascii=ascii_only)),
    }


FOREIGN = ToolInvocation(id=500, session_id="sess-b", tool_name="query_logs", model_tool_name="queryLogs",
                         output=_logs_output(False))


def _context(structured, ascii_only: bool = False, digests=None) -> GateContext:
    invocations = _invocations(ascii_only)
    everyone = {**invocations, FOREIGN.id: FOREIGN}
    return GateContext(SESSION, ExecutorOutput.read(structured), invocations, everyone.get, digests)


def _binding(excerpt: str, ids=(394,), tool: str = "query_logs", **extra) -> dict:
    return {"source_type": "tool_trace", "tool_name": tool, "source_invocation_ids": list(ids),
            "evidence_excerpt": excerpt, **extra}


def _output(*bindings: dict, claim_text: str = "payment-service 出现请求超时日志。", **extra) -> dict:
    return {
        "answer_version": "executor_evidence_v2",
        "claims": [{"claim_id": "claim-1", "claim_type": "symptom", "claim_text": claim_text,
                    "support_level": "direct", "evidence_bindings": list(bindings)}],
        **extra,
    }


def _run(rules, structured, **kw):
    return run_gatekeeper(_context(structured, **kw), rules)


def _rule_errors(outcome, rule_id: str) -> list[str]:
    return [e.message for e in outcome.result.errors if e.rule_id == rule_id]


# --- gatekeeper acceptance (docs/spec.md#rule-set) ----------------------------------------------------------


def test_faithful_output_passes(rules):
    outcome = _run(rules, _output(_binding("Request timeout after 5300ms calling bank-gateway")))
    assert outcome.result.status == "pass", outcome.result
    assert gate_verdict(outcome.result, rules) == "PASS"


def test_json_valid_but_schema_invalid_fails_schema_rule(rules):
    structured = {"answer_version": "executor_evidence_v2", "claims": "payment-service timed out"}
    outcome = _run(rules, structured)
    assert outcome.result.status == "fail"
    assert "schema.executor_v2" in outcome.result.failed_rules
    assert gate_verdict(outcome.result, rules) == "LOW_CONFID"


@pytest.mark.parametrize(
    "mutate, target",
    [
        (lambda d: d.pop("answer_version"), "answer_version"),
        (lambda d: d.update(answer_version="executor_evidence_v1"), "answer_version"),
        (lambda d: d["claims"][0].pop("claim_text"), "claims[0].claim_text"),
        (lambda d: d["claims"][0].update(support_level="maybe"), "claims[0].support_level"),
        (lambda d: d["claims"][0].update(evidence_bindings=[]), "claims[0].evidence_bindings"),
        (lambda d: d["claims"][0]["evidence_bindings"][0].pop("evidence_excerpt"),
         "claims[0].evidence_bindings[0].evidence_excerpt"),
        (lambda d: d.update(diagnosis_summary="root cause is the bank"), "diagnosis_summary"),
        (lambda d: d.update(user_facing_answer="all good"), "user_facing_answer"),
        (lambda d: d.update(hypotheses="pool"), "hypotheses"),
    ],
)
def test_schema_violations_name_their_field(rules, mutate, target):
    structured = _output(_binding("Request timeout after 5300ms"))
    mutate(structured)
    outcome = _run(rules, structured)
    assert "schema.executor_v2" in outcome.result.failed_rules
    assert target in [e.target for e in outcome.result.errors if e.rule_id == "schema.executor_v2"]


def test_unparsed_output_fails_schema(rules):
    outcome = _run(rules, None)
    assert outcome.result.failed_rules == ["schema.executor_v2"]
    assert outcome.normalized is None


def test_missing_optional_arrays_are_normalised_and_deprecated_fields_kept_out(rules):
    structured = _output(_binding("Request timeout after 5300ms"), user_facing_answer="x")
    outcome = _run(rules, structured)
    assert outcome.normalized.raw["hypotheses"] == []
    assert outcome.normalized.raw["recommended_actions"] == []
    assert outcome.normalized.raw["missing_info"] == []
    assert "user_facing_answer" not in outcome.normalized.raw
    assert "user_facing_answer" in structured  # the caller's dict is not changed


def test_fabricated_id_fails_invocation_ref(rules):
    outcome = _run(rules, _output(_binding("Request timeout after 5300ms", ids=(999,))))
    assert "evidence.invocation_ref" in outcome.result.failed_rules
    assert "does not exist" in _rule_errors(outcome, "evidence.invocation_ref")[0]
    assert gate_verdict(outcome.result, rules) == "REJECT"


def test_another_sessions_id_gets_its_own_message(rules):
    outcome = _run(rules, _output(_binding("Request timeout after 5300ms", ids=(500,))))
    (message,) = _rule_errors(outcome, "evidence.invocation_ref")
    assert "another session" in message and "sess-b" in message
    assert gate_verdict(outcome.result, rules) == "REJECT"


# queryPrometheusAlerts: the model-facing name before queryMetrics, in sessions stored then.
@pytest.mark.parametrize("tool", ["query_metrics", "queryMetrics", "queryPrometheusAlerts"])
def test_real_id_wrong_tool_fails_and_reports_persisted_name(rules, tool):
    outcome = _run(rules, _output(_binding("Request timeout after 5300ms", tool=tool)))
    (message,) = _rule_errors(outcome, "evidence.invocation_ref")
    assert "query_metrics" in message and "query_logs" in message
    assert gate_verdict(outcome.result, rules) == "REJECT"


def test_model_spelling_of_the_right_tool_passes(rules):
    outcome = _run(rules, _output(_binding("Request timeout after 5300ms", tool="queryLogs")))
    assert outcome.result.status == "pass"


def test_empty_source_ids_fail_but_recommended_actions_may_have_no_bindings(rules):
    structured = _output(_binding("Request timeout after 5300ms", ids=()))
    structured["recommended_actions"] = [{"action_text": "check the pool", "reason": "r", "evidence_bindings": []}]
    outcome = _run(rules, structured)
    assert [e.target for e in outcome.result.errors if e.rule_id == "evidence.invocation_ref"] == [
        "claims[0].evidence_bindings[0]"
    ]


def test_excerpt_from_another_invocation_is_caught(rules):
    excerpt = "CPU使用率过高: 87.5%, 进程: java (PID: 1), 线程数: 245"
    outcome = _run(rules, _output(_binding(excerpt, ids=(394,))))
    assert "evidence.excerpt_similarity" in outcome.result.failed_rules
    (message,) = _rule_errors(outcome, "evidence.excerpt_similarity")
    assert "invocation 395" in message and "query_metrics" in message
    assert gate_verdict(outcome.result, rules) == "REJECT"  # its metric value is not in the cited output


# --- swapped facts: evidence.excerpt_entities -----------------------------------------------


@pytest.mark.parametrize("ascii_only", [False, True])
@pytest.mark.parametrize(
    "excerpt, said, held",
    [
        ("HikariPool-1 connection pool usage 29.0% (active 46 / max 50)", "29.0%", "92.0%"),
        ("order-service ERROR Request timeout after 5300ms calling bank-gateway", "order-service", "payment-service"),
        ("HTTP 504 upstream timeout; error code E_PAY_DECLINED, retry 3 of 3", "e_pay_declined", "e_pay_timeout"),
        ("Request timeout after 7300ms calling bank-gateway", "7300ms", "5300ms"),
        ("HTTP 502 upstream timeout; error code E_PAY_TIMEOUT", "http 502", "http 504"),
        ("支付接口调用超时，订单号: 88121 处理失败", "订单号: 88121", "订单号: 88120"),
        ("HikariPool-2 connection pool usage 92.0% (active 46 / max 50)", "hikaripool-2", "hikaripool-1"),  # instance
    ],
)
def test_swapped_entity_rejects_and_names_both_values(rules, ascii_only, excerpt, said, held):
    outcome = _run(rules, _output(_binding(excerpt)), ascii_only=ascii_only)
    assert "evidence.excerpt_entities" in outcome.result.failed_rules, outcome.result
    messages = " | ".join(_rule_errors(outcome, "evidence.excerpt_entities"))
    assert f'"{said}"' in messages and f'"{held}"' in messages
    assert gate_verdict(outcome.result, rules) == "REJECT"


@pytest.mark.parametrize(
    "excerpt",
    ["Request did not timeout after 5300ms calling bank-gateway", "支付接口调用未超时，订单号: 88120 处理失败"],
)
def test_added_negation_fails(rules, excerpt):
    # An inserted negation inverts the quoted fact while keeping similarity high; the shipped
    # metadata treats it as a swapped fact (negationOutcome: fail, reject_on_fail).
    outcome = _run(rules, _output(_binding(excerpt)))
    assert "evidence.excerpt_entities" in outcome.result.failed_rules, outcome.result
    assert "negation" in _rule_errors(outcome, "evidence.excerpt_entities")[0]


def test_negation_outcome_warn_only_warns(rules):
    softer = rules.with_params("evidence.excerpt_entities", negationOutcome="warn")
    outcome = _run(softer, _output(_binding("Request did not timeout after 5300ms calling bank-gateway")))
    # The added words are not the tool's own (similarity fails); the negation itself only warns.
    assert outcome.result.warnings == ["evidence.excerpt_entities"]
    assert outcome.result.failed_rules == ["evidence.excerpt_similarity"]


def test_duration_in_other_unit_is_the_same_entity(rules):
    outcome = _run(rules, _output(_binding("支付接口调用超时，订单号: 88120 处理失败，耗时 5300ms")))
    assert "evidence.excerpt_entities" not in outcome.result.failed_rules, outcome.result


def test_fabricated_excerpt_fails_similarity(rules):
    outcome = _run(rules, _output(_binding("Database connection refused by primary replica during failover")))
    assert "evidence.excerpt_similarity" in outcome.result.failed_rules
    assert outcome.features["claims[0].evidence_bindings[0]"]["sources"]["output"]["score"] < 0.3


# --- faithful excerpts must pass -------------------------------------------------------------


@pytest.mark.parametrize("ascii_only", [False, True])
@pytest.mark.parametrize(
    "excerpt",
    [
        "Request   timeout after\n5300ms   calling bank-gateway",  # collapsed/extra whitespace
        "REQUEST TIMEOUT AFTER 5300MS CALLING BANK-GATEWAY",  # case
        "支付接口调用超时,订单号:88120 处理失败",  # half-width punctuation for full-width
        "支付接口调用超时，订单号： 88120 处理失败",  # full-width colon for half-width
        "ｕｐｓｔｒｅａｍ timeout; error code E_PAY_TIMEOUT",  # full-width letters
        "quest timeout after 5300ms calling bank-gatew",  # cut at both ends
        "...pool usage 92.0% (active 46 / ma...",  # cut with ellipses
        "Request timeout after 5300ms ... error code E_PAY_TIMEOUT, retry 3 of 3",  # two quotes joined
        '"level": "ERROR", "message": "HTTP 504 upstream timeout',  # quoted as raw JSON
        "timeout after 5300ms calling bank-gateway, order_id=ord-7731",
    ],
)
def test_faithful_excerpt_variants_pass(rules, ascii_only, excerpt):
    outcome = _run(rules, _output(_binding(excerpt)), ascii_only=ascii_only)
    assert outcome.result.status == "pass", outcome.result.errors
    feats = outcome.features["claims[0].evidence_bindings[0]"]["sources"]["output"]
    assert feats["score"] >= 0.9


def test_match_offsets_point_at_the_excerpt(rules):
    excerpt = "HTTP 504 upstream timeout"
    for ascii_only in (False, True):
        structured = _output(_binding(excerpt))
        outcome = _run(rules, structured, ascii_only=ascii_only)
        out = outcome.features["claims[0].evidence_bindings[0]"]["sources"]["output"]
        # Offsets index the records' lines (values without keys), the text Trace shows.
        text = record_text(_logs_output(ascii_only))[0]
        assert text[out["start"] : out["end"]] == excerpt
        assert text.split("\n")[1] == " ".join(LOG_LINES[1].values())
        assert out["raw_offsets"] is False


def test_chinese_escaped_output_is_decoded():
    raw = json.dumps({"logs": [{"message": '支付 "超时" \\ 5.3 秒'}]}, ensure_ascii=True)
    prepared = PreparedOutput.build(raw)
    assert '支付 "超时" \\ 5.3 秒' in prepared.decoded



def test_indexed_search_finds_what_a_full_scan_finds(monkeypatch):
    # Records long enough to span many index blocks, with needles straddling block boundaries.
    lines = [{"id": f"ord-{i:05d}", "msg": f"Request timeout after {100 + i % 900}ms, ＨＴＴＰ {500 + i % 5}"}
             for i in range(3000)]
    raw = json.dumps(lines, ensure_ascii=False)
    hay = PreparedOutput.build(raw).folded
    width = prepared_output._GramIndex.BLOCK
    needles = ["ord 02999", "http 503", "timeout after 999ms", "ms http 50", "absent token", "ord 1"]
    needles += [hay[k - 5 : k + 7] for k in range(width, len(hay), width)]
    excerpts = ["REQUEST TIMEOUT AFTER 517MS", "request timeout after 9999ms, http 503", "ord-02999 ... http 501"]

    def results(prepared: PreparedOutput) -> list:
        found = [(list(prepared.finds(n)), prepared.contains(n)) for n in needles]
        located = [matcher.locate(e, prepared) for e in excerpts]
        return found + [(m.score, m.start, m.end, m.covered, m.hunks) for m in located]

    monkeypatch.setattr(prepared_output, "_INDEX_MIN_CHARS", len(hay) + 1)
    plain = PreparedOutput.build(raw)
    expected = results(plain)
    assert not plain.indexed
    assert expected[0][0] == [hay.find("ord 02999")]
    monkeypatch.setattr(prepared_output, "_INDEX_AFTER_SCANS", 0)
    monkeypatch.setattr(prepared_output, "_INDEX_MIN_CHARS", 0)
    indexed = PreparedOutput.build(raw)
    assert results(indexed) == expected
    assert indexed.indexed

# --- hallucination phrases -------------------------------------------------------------------


@pytest.mark.parametrize(
    "claim_text",
    ["根据经验，payment-service 超时是连接池导致的。", "通常情况下这是网络抖动", "The pool is PROBABLY exhausted.",
     "I think the bank gateway is slow", "It seems the retries failed"],
)
def test_blacklisted_phrase_in_claim_fails(rules, claim_text):
    outcome = _run(rules, _output(_binding("Request timeout after 5300ms"), claim_text=claim_text))
    assert "claim.hallucination_phrases" in outcome.result.failed_rules
    assert outcome.result.errors[0].target == "claims[0].claim_text"
    assert gate_verdict(outcome.result, rules) == "LOW_CONFID"


def test_blacklisted_phrases_allowed_in_hypotheses(rules):
    structured = _output(_binding("Request timeout after 5300ms"))
    structured["hypotheses"] = [{"hypothesis_text": "可能是连接池耗尽", "basis": "I think the pool is likely full",
                                 "needed_evidence": ["pool metrics"]}]
    assert _run(rules, structured).result.status == "pass"


def test_english_phrases_respect_word_boundaries(rules):
    outcome = _run(rules, _output(_binding("Request timeout after 5300ms"), claim_text="An unlikely but observed timeout"))
    assert "claim.hallucination_phrases" not in outcome.result.failed_rules


# --- rule switches and verdicts ------------------------------------------------------------


def test_disabled_rule_does_not_run(rules):
    structured = _output(_binding("Request timeout after 5300ms", ids=(999,)))
    off = rules.with_rule("evidence.invocation_ref", enabled=False)
    assert "evidence.invocation_ref" not in _run(off, structured).result.failed_rules


def test_warn_only_rule_never_fails_the_gatekeeper(rules):
    on = rules.with_rule("claim.evidence_utilization", enabled=True)
    structured = _output(_binding("Request timeout after 5300ms"), claim_text="数据库主从切换导致支付失败")
    outcome = _run(on, structured)
    assert outcome.result.warnings == ["claim.evidence_utilization"]
    assert outcome.result.status == "warn"
    assert gate_verdict(outcome.result, on) == "PASS"


def test_threshold_change_moves_similarity_verdict(rules):
    structured = _output(_binding("Request timeout 5300ms after calling bank-gateway"))
    score = _run(rules, structured).features["claims[0].evidence_bindings[0]"]["sources"]["output"]["score"]
    assert 0.5 < score < 1.0
    strict = rules.with_params("evidence.excerpt_similarity", passThreshold=0.99, warnThreshold=0.98)
    assert "evidence.excerpt_similarity" in _run(strict, structured).result.failed_rules


# --- split shape: evidence.digest_ref -----------------------------------------------------


def _digest(quote: str, ids=(394,), digest_id: str = "dg-1", tool: str = "query_logs") -> EvidenceDigest:
    return EvidenceDigest(digest_id=digest_id, source_invocation_ids=list(ids), tool=tool,
                          summary="payment-service 请求超时", source_quote=quote)


def test_digest_ref_passes_for_a_faithful_digest(rules):
    digests = [_digest("HTTP 504 upstream timeout; error code E_PAY_TIMEOUT")]
    structured = _output(_binding("HTTP 504 upstream timeout", digest_id="dg-1"))
    assert _run(rules, structured, digests=digests).result.status == "pass"


@pytest.mark.parametrize(
    "digests, binding, fragment",
    [
        ([_digest("HTTP 504 upstream timeout")], _binding("HTTP 504 upstream timeout", digest_id="dg-9"), "does not exist"),
        ([_digest("HTTP 504 upstream timeout", ids=(500,))], _binding("HTTP 504 upstream timeout", digest_id="dg-1"),
         "another session"),
        ([_digest("HTTP 504 upstream timeout", ids=(777,))], _binding("HTTP 504 upstream timeout", digest_id="dg-1"),
         "does not exist"),
        ([_digest("Kafka consumer lag reached two million messages")],
         _binding("HTTP 504 upstream timeout", digest_id="dg-1"), "source_quote"),
        ([_digest("HTTP 504 upstream timeout")], _binding("HTTP 504 upstream timeout"), "no digest_id"),
    ],
)
def test_digest_ref_failures(rules, digests, binding, fragment):
    outcome = _run(rules, _output(binding), digests=digests)
    assert "evidence.digest_ref" in outcome.result.failed_rules, outcome.result
    assert any(fragment in m for m in _rule_errors(outcome, "evidence.digest_ref"))
    assert gate_verdict(outcome.result, rules) == "REJECT"


def test_digest_ref_skipped_without_digests(rules):
    outcome = _run(rules, _output(_binding("HTTP 504 upstream timeout")))
    assert "evidence.digest_ref" not in outcome.result.failed_rules


# --- features cache and replay ---------------------------------------------------------------


def _corpus() -> list[tuple[dict, list | None]]:
    ok = _binding("Request timeout after 5300ms calling bank-gateway")
    # Over two adjacent records, the first piece as light as the rule allows.
    near = _binding("retry 3 of 3 2024-05-01T10:00:05Z payment-service WARN HikariPool-1")
    swapped = _binding("HikariPool-1 connection pool usage 29.0% (active 46 / max 50)")
    fake = _binding("Database connection refused by primary replica during failover")
    return [
        (_output(ok), None),
        (_output(near), None),
        (_output(swapped), None),
        (_output(fake, claim_text="可能是数据库问题"), None),
        (_output(_binding("HTTP 504 upstream timeout", ids=(500,))), None),
        (_output(_binding("HTTP 504 upstream timeout", digest_id="dg-1")), [_digest("HTTP 504 upstream timeout")]),
        ({"answer_version": "executor_evidence_v2", "claims": [], "user_facing_answer": "x"}, None),
    ]


def _stored(rules):
    """What the store keeps per session: normalized output, features, old status, cited tools."""
    sessions = []
    everyone = {**_invocations(), FOREIGN.id: FOREIGN}
    for n, (structured, digests) in enumerate(_corpus()):
        outcome = _run(rules, structured, digests=digests)
        as_stored = ReplayInput(SESSION, outcome.normalized.raw, "valid", {}, outcome.features, digests,
                                outcome.result.status, "PASS", "PASS")
        verdict = project_verdict(outcome.result, rules, as_stored)
        cited = cited_invocation_ids(structured, digests)
        tools = {i: (everyone[i].session_id, everyone[i].tool_name) for i in cited if i in everyone}
        sessions.append((n, structured, digests, outcome, verdict, tools))
    return sessions


@pytest.mark.parametrize(
    "change",
    [
        lambda r: r,
        lambda r: r.with_params("evidence.excerpt_similarity", passThreshold=0.95, warnThreshold=0.9),
        lambda r: r.with_params("evidence.excerpt_entities", minLocatedScore=0.99),
        lambda r: r.with_rule("evidence.excerpt_entities", verdict_impact="low_confid_on_fail"),
        lambda r: r.with_params("claim.hallucination_phrases", blacklist=["timeout"]),
        lambda r: r.with_params("claim.hallucination_phrases", blacklist=["数据库", "可能", "database"]),
        lambda r: r.with_params("claim.hallucination_phrases", blacklist=[]),
        lambda r: r.with_params("claim.hallucination_phrases", targetFields=["claims[].claim_text", "claims[].claim_id"],
                                blacklist=["claim", "可能是"]),
        lambda r: r.with_rule("claim.evidence_utilization", enabled=True),
        lambda r: r.with_rule("claim.evidence_utilization", enabled=True, params={"minKeywordCoverage": 0.9}),
        lambda r: r.with_rule("schema.executor_v2", enabled=False),
        lambda r: r.with_params("schema.executor_v2", requiredFields=["answer_version"],
                                supportLevels=["indirect"], allowEmptyClaims=True),
        lambda r: r.with_params("schema.executor_v2", bindingRequiredFields=["tool_name", "digest_id"],
                                claimRequiredFields=["claim_id", "confidence"]),
        lambda r: r.with_params("evidence.excerpt_similarity", compareAgainst=["digest.source_quote", "output"]),
        lambda r: r.with_params("evidence.excerpt_similarity", passThreshold=0.2, warnThreshold=0.1),
        lambda r: r.with_params("evidence.excerpt_entities", kinds=["service"], negationOutcome="off"),
        lambda r: r.with_params("evidence.excerpt_entities", negationOutcome="warn", negationTerms=["timeout"]),
        lambda r: r.with_rule("evidence.excerpt_entities", severity="warning", verdict_impact="warn_only"),
        lambda r: r.with_params("evidence.digest_ref", quotePassThreshold=1.0, quoteWarnThreshold=1.0,
                                requireIdsWithinDigest=False),
        lambda r: r.with_rule("evidence.invocation_ref", enabled=False).with_rule("evidence.digest_ref", enabled=False),
    ],
)
def test_replay_equals_rerun_with_cache(rules, change):
    new_rules = change(rules)
    stored = _stored(rules)
    inputs = [
        ReplayInput(SESSION, outcome.normalized.raw, "valid", tools, outcome.features, digests, outcome.result.status,
                    verdict, "PASS", list(outcome.result.failed_rules), list(outcome.result.warnings))
        for n, _, digests, outcome, verdict, tools in stored
    ]
    # The same inputs replayed under the rules in force first: what a replay remembers per session
    # (facts, findings per parameter set) must not leak into the next one.
    replay(inputs, rules)
    rows = replay(inputs, new_rules)
    for row, item, (_, structured, digests, outcome, _, _) in zip(rows, inputs, stored, strict=True):
        cached = json.loads(json.dumps(outcome.features))  # as stored: JSON round trip
        rerun = run_gatekeeper(_context(copy.deepcopy(structured), digests=digests), new_rules, features_cache=cached)
        assert row.result == rerun.result
        assert row.new_status == rerun.result.status
        assert row.projected_verdict == project_verdict(rerun.result, new_rules, item)
    assert summarize(rows).startswith(f"{len(rows)} sessions replayed")


def test_repeated_replays_under_alternating_rules_agree(rules):
    """Remembered findings are per parameter set: going back to earlier rules gives the earlier rows."""
    stored = _stored(rules)
    inputs = [
        ReplayInput(SESSION, o.normalized.raw, "valid", tools, o.features, digests, o.result.status, verdict, "PASS",
                    list(o.result.failed_rules), list(o.result.warnings))
        for n, _, digests, o, verdict, tools in stored
    ]
    variants = [rules] + [rules.with_params("evidence.excerpt_similarity", passThreshold=t, warnThreshold=t / 2)
                          for t in (0.95, 0.9, 0.8, 0.7, 0.6, 0.99)]
    first = [[r.result for r in replay(inputs, v)] for v in variants]
    again = [[r.result for r in replay(inputs, v)] for v in reversed(variants)]
    assert first == list(reversed(again))
    fresh = [ReplayInput(i.session_id, i.structured, i.parse_status, i.invocations, i.features, i.digests,
                         i.old_status, i.old_verdict, i.verifier_verdict, i.old_failed_rules, i.old_warnings)
             for i in inputs]
    assert [r.result for r in replay(fresh, variants[2])] == first[2]


def test_replay_reports_changes_and_responsible_rules(rules):
    stored = _stored(rules)
    inputs = [
        ReplayInput(SESSION, o.normalized.raw, "valid", tools, o.features, digests, o.result.status, verdict, "PASS",
                    list(o.result.failed_rules), list(o.result.warnings))
        for n, _, digests, o, verdict, tools in stored
    ]
    strict = rules.with_params("evidence.excerpt_similarity", minPieceWeight=40)
    rows = replay(inputs, strict)
    near = rows[1]
    assert near.changed and near.old_status == "pass" and near.new_status == "fail"
    assert near.projected_verdict == "LOW_CONFID" and near.rules_responsible == ["evidence.excerpt_similarity"]
    assert not rows[0].changed
    assert "pass->fail" in summarize(rows)


def test_unparsed_session_projects_low_confid(rules):
    row = replay([ReplayInput("s", None, "malformed", {}, {}, None, "fail", "LOW_CONFID", None)], rules)[0]
    assert row.projected_verdict == "LOW_CONFID" and not row.changed


def test_a_replay_leaves_the_garbage_collector_as_it_found_it(rules):
    """The replay pauses the collector while it builds its rows: on, off, or after a failing
    input, the collector is afterwards as the caller had it, and the rows are the same."""
    import gc

    item = ReplayInput("s", None, "malformed", {}, {}, None, "fail", "LOW_CONFID", None)

    def failing():
        yield item
        raise RuntimeError("store went away")

    assert gc.isenabled()
    try:
        row = replay([item], rules)[0]
        assert row.projected_verdict == "LOW_CONFID" and gc.isenabled()
        with pytest.raises(RuntimeError, match="store went away"):
            replay(failing(), rules)
        assert gc.isenabled()
        gc.disable()
        assert replay([item], rules) == [row] and not gc.isenabled()
    finally:
        gc.enable()


def test_cache_is_used_and_stale_entries_are_recomputed(rules):
    structured = _output(_binding("Request timeout after 5300ms calling bank-gateway"))
    first = _run(rules, structured)
    target = "claims[0].evidence_bindings[0]"
    planted = copy.deepcopy(first.features)
    planted[target]["sources"]["output"].update(score=0.1, covered=0.5)  # a cached fact is trusted, not recomputed
    again = run_gatekeeper(_context(structured), rules, features_cache=planted)
    assert "evidence.excerpt_similarity" in again.result.failed_rules
    changed = _output(_binding("HTTP 504 upstream timeout"))
    fresh = run_gatekeeper(_context(changed), rules, features_cache=planted)  # excerpt differs: recomputed
    assert fresh.result.status == "pass"
    assert fresh.features[target]["sources"]["output"]["score"] == 1.0


def test_features_are_json_serialisable_and_scores_collectable(rules):
    outcome = _run(rules, _output(_binding("Request timeout after 5300ms"), _binding("HTTP 504 upstream timeout")))
    assert json.loads(json.dumps(outcome.features)) == outcome.features
    assert similarity_scores([outcome.features]) == [1.0, 1.0]


def test_replay_history_loads_new_sessions_only(settings, store) -> None:
    from pipeline.replay.inputs import SessionInputCache, replay_inputs
    from pipeline.runs.session import run_session

    run_session("payment API times out, what's going on?", settings=settings, store=store)
    history = SessionInputCache(store)
    first = history.refresh()
    assert len(first) == 1 and history.last_added == 1
    assert history.refresh()[0] is first[0] and history.last_added == 0
    run_session("支付接口最近出现超时，帮我排查", settings=settings, store=store)
    second = history.refresh()
    assert len(second) == 2 and history.last_added == 1 and second[0] is first[0]
    assert [i.session_id for i in second] == [i.session_id for i in replay_inputs(store)]
