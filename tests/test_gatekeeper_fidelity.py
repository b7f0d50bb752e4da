"""Quote fidelity: every class both ways, in English and Chinese.

A faithful excerpt (spanning adjacent records, elided, a record's fields without their keys, numbers reformatted)
passes with its claim backed; the same excerpt mutated (invented words, another number, a
negation added or dropped, an antonym, another log level) fails and leaves its claim unbacked.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.core.contracts import ExecutorOutput, ToolInvocation
from pipeline.gatekeeper import GateContext, gate_verdict, load_rules, run_gatekeeper
from pipeline.gatekeeper.folding import fold
from pipeline.gatekeeper.prepared import PreparedOutput
from pipeline.gatekeeper.vocabulary import Vocabulary, absent_pieces
from pipeline.replay.per_session import ReplayInput, replay

RULES_DIR = Path(__file__).resolve().parent.parent / "rules"
SIMILARITY, ENTITIES = "evidence.excerpt_similarity", "evidence.excerpt_entities"

RECORDS = [
    ("payment-service", "ERROR", "Request timeout after 5300ms calling bank-gateway, order_id=ord-7731"),
    ("payment-service", "ERROR", "HTTP 504 upstream timeout; error code E_PAY_TIMEOUT, retry 3 of 3"),
    ("payment-service", "WARN", "HikariPool-1 connection pool usage 92.0% (active 46 / max 50)"),
    ("jvm-agent", "INFO", "no OutOfMemoryError detected, heap usage 61%"),
    ("order-service", "INFO", "health check succeeded, CPU usage down 12% after scale-out, processed 5,312 rows"),
    ("payment-service", "ERROR", "支付接口调用超时，订单号: 88120 处理失败，耗时 5.3 秒"),
    ("inventory-service", "INFO", "未发现内存溢出，服务状态正常，错误率下降到 0.5%"),
    ("order-service", "WARN", "队列中有 120 条积压消息，库存同步成功"),
]
OUTPUT = json.dumps({"logs": [{"timestamp": f"2026-11-12T13:00:{i:02d}Z", "service": s, "level": lv, "message": m,
                               "host": f"pod-{i}"} for i, (s, lv, m) in enumerate(RECORDS)]}, ensure_ascii=False)
INVOCATION = ToolInvocation(id=7, session_id="s", tool_name="query_logs", model_tool_name="queryLogs", output=OUTPUT)


@pytest.fixture(scope="module")
def rules():
    return load_rules(RULES_DIR)


def _structured(*excerpts: str) -> dict:
    bindings = [{"source_type": "tool_trace", "tool_name": "query_logs", "source_invocation_ids": [7],
                 "evidence_excerpt": e} for e in excerpts]
    return {"answer_version": "executor_evidence_v2", "claims": [
        {"claim_id": "c1", "claim_type": "symptom", "claim_text": "payment-service 请求超时", "support_level": "direct",
         "evidence_bindings": bindings}]}


def _check(rules, *excerpts: str):
    return run_gatekeeper(GateContext("s", ExecutorOutput.read(_structured(*excerpts)), {7: INVOCATION}, {7: INVOCATION}.get), rules)


def _messages(outcome, rule_id: str) -> list[str]:
    return [e.message for e in outcome.result.errors if e.rule_id == rule_id]


# (class, faithful excerpt, mutated excerpt, rule the mutation fails, words of its message)
CASES = [
    ("invented en", "Request timeout after 5300ms calling bank-gateway",
     "Request timeout after 5300ms calling bank-gateway because the primary database failed over",
     SIMILARITY, "invented content"),
    ("invented zh", "支付接口调用超时，订单号: 88120 处理失败",
     "支付接口调用超时，因为主库发生切换，订单号: 88120 处理失败", SIMILARITY, "invented content"),
    ("adjacent records en", "HTTP 504 upstream timeout; error code E_PAY_TIMEOUT, retry 3 of 3 HikariPool-1 connection pool usage 92.0%",
     "HTTP 504 upstream timeout; error code E_PAY_TIMEOUT, retry 3 of 3 HikariPool-1 connection pool usage 95.0%",
     ENTITIES, '"95.0%"'),
    ("adjacent records zh", "未发现内存溢出，服务状态正常，错误率下降到 0.5% 队列中有 120 条积压消息",
     "未发现内存溢出，服务状态正常，错误率下降到 0.5% 队列中有 150 条积压消息", ENTITIES, "150"),
    ("elided en", "Request timeout after 5300ms … order_id=ord-7731", "Request timeout after 5300ms … order_id=ord-7732",
     ENTITIES, "ord-7732"),
    ("elided zh", "支付接口调用超时...处理失败，耗时 5.3 秒", "支付接口调用超时...处理成功，耗时 5.3 秒", ENTITIES, "opposite"),
    ("skipped fields en", "payment-service ERROR Request timeout after 5300ms",
     "payment-service INFO Request timeout after 5300ms", ENTITIES, "log level"),
    ("skipped fields zh", "payment-service ERROR 支付接口调用超时", "payment-service WARN 支付接口调用超时", ENTITIES, "log level"),
    ("number format en", "connection pool usage 92% (active 46 / max 50)", "connection pool usage 93% (active 46 / max 50)",
     ENTITIES, '"93%"'),
    ("number format en 2", "CPU usage down 12% after scale-out, processed 5312 rows",
     "CPU usage down 12% after scale-out, processed 5412 rows", ENTITIES, "5412"),
    ("number format zh", "服务状态正常，错误率下降到 0.50%", "服务状态正常，错误率下降到 0.6%", ENTITIES, "0.6%"),
    ("negation dropped en", "no OutOfMemoryError detected, heap usage 61%", "OutOfMemoryError detected, heap usage 61%",
     ENTITIES, 'drops the negation "no"'),
    ("negation dropped zh", "未发现内存溢出，服务状态正常", "发现内存溢出，服务状态正常", ENTITIES, "drops the negation"),
    ("negation added en", "Request timeout after 5300ms calling bank-gateway",
     "Request timeout after 5300ms not calling bank-gateway", ENTITIES, 'adds the negation "not"'),
    ("negation added zh", "队列中有 120 条积压消息，库存同步成功", "队列中有 120 条积压消息，库存未同步成功", ENTITIES, "adds the negation"),
    ("antonym en", "health check succeeded, CPU usage down 12%", "health check succeeded, CPU usage up 12%", ENTITIES, '"up"'),
    ("antonym en 2", "health check succeeded, CPU usage down 12%", "health check failed, CPU usage down 12%", ENTITIES, "opposite"),
    ("antonym zh", "未发现内存溢出，服务状态正常", "未发现内存溢出，服务状态异常", ENTITIES, '"异常"'),
    ("antonym zh 2", "队列中有 120 条积压消息，库存同步成功", "队列中有 120 条积压消息，库存同步失败", ENTITIES, "opposite"),
]


@pytest.mark.parametrize("name, faithful, mutated, rule_id, fragment", CASES, ids=[c[0] for c in CASES])
def test_faithful_passes_and_mutated_fails(rules, name, faithful, mutated, rule_id, fragment):
    good = _check(rules, faithful)
    assert good.result.status == "pass" and not good.result.unbacked_claims, good.result.errors
    assert gate_verdict(good.result, rules) == "PASS"
    bad = _check(rules, mutated)
    assert rule_id in bad.result.failed_rules, bad.result.errors
    assert any(fragment in m for m in _messages(bad, rule_id)), _messages(bad, rule_id)
    assert bad.result.unbacked_claims == ["c1"]
    assert gate_verdict(bad.result, rules) != "PASS"


def test_a_different_number_still_fails_after_folding(rules):
    # 92 = 92.0 = 92.00 and 5,312 = 5312 ...
    assert fold("usage 92.00% of 5,312") == fold("usage 92% of 5312") == "usage 92 of 5312"
    assert PreparedOutput("usage 92.0% of 5,312 rows").folded == "usage 92 of 5312 rows"
    # ... but 92.5 is not 92, and a dotted address keeps its zeros.
    assert fold("92.5%") != fold("92%") and fold("10.0.3.7") == "10 0 3 7"
    assert ENTITIES in _check(rules, "connection pool usage 92.5% (active 46 / max 50)").result.failed_rules


def _invented(outcome) -> bool:
    return any("invented content" in m for m in _messages(outcome, SIMILARITY))


def test_inverted_content_params_are_the_rules(rules):
    # An added word is never the tool's own (the quote is not one span); the parameters decide
    # whether it is also reported as invented content.
    mutated = "Request timeout after 5300ms calling bank-gateway failover"
    assert _invented(_check(rules, mutated))
    assert not _invented(_check(rules.with_params(SIMILARITY, inventedTolerated=1), mutated))
    long_words_only = rules.with_params(SIMILARITY, inventedMinLetters=9)  # "failover" has 8 letters
    assert not _invented(_check(long_words_only, mutated))
    assert SIMILARITY in _check(long_words_only, mutated).result.failed_rules
    zh = "支付接口调用超时，主库切换，订单号: 88120"
    assert _invented(_check(rules, zh))
    assert not _invented(_check(rules.with_params(SIMILARITY, inventedMinCjkRun=5), zh))


def test_piece_weight_is_a_rule_parameter(rules):
    adjacent = "HTTP 504 upstream timeout; error code E_PAY_TIMEOUT, retry 3 of 3 HikariPool-1 connection pool usage 92.0%"
    strict = rules.with_params(SIMILARITY, passThreshold=0.95, warnThreshold=0.9)
    assert _check(strict, adjacent).result.status == "pass"  # split between adjacent records: found
    assert SIMILARITY in _check(strict.with_params(SIMILARITY, minPieceWeight=500), adjacent).result.failed_rules


def test_meaning_lists_are_rule_parameters(rules):
    flipped = "health check succeeded, CPU usage up 12%"
    assert ENTITIES in _check(rules, flipped).result.failed_rules
    assert ENTITIES not in _check(rules.with_params(ENTITIES, antonyms=[]), flipped).result.failed_rules
    relabelled = "payment-service INFO Request timeout after 5300ms"
    assert ENTITIES in _check(rules, relabelled).result.failed_rules
    assert ENTITIES not in _check(rules.with_params(ENTITIES, logLevels=[]), relabelled).result.failed_rules
    dropped = "OutOfMemoryError detected, heap usage 61%"
    warned = _check(rules.with_params(ENTITIES, negationOutcome="warn"), dropped).result
    assert warned.status == "warn" and warned.unbacked_claims == ["c1"]
    assert _check(rules.with_params(ENTITIES, negationOutcome="off"), dropped).result.status == "pass"


def test_a_quote_not_found_by_structure_is_not_evidence_unless_another_binding_passes(rules):
    scattered = "calling bank-gateway upstream timeout heap usage detected"  # every word is there, scattered
    alone = _check(rules, scattered).result
    assert alone.status == "fail" and alone.unbacked_claims == ["c1"]
    with_good = _check(rules, scattered, "Request timeout after 5300ms calling bank-gateway").result
    assert with_good.unbacked_claims == []
    assert [e.target for e in with_good.errors if e.rule_id == SIMILARITY] == ["claims[0].evidence_bindings[0]"]


def test_replay_reproduces_unbacked_claims_from_stored_features(rules):
    outcome = run_gatekeeper(GateContext("s", ExecutorOutput.read(_structured("发现内存溢出")), {7: INVOCATION}, {7: INVOCATION}.get), rules)
    stored = json.loads(json.dumps(outcome.features))
    item = ReplayInput("s", outcome.normalized.raw, "valid", {7: ("s", "query_logs")}, stored, None,
                       outcome.result.status, "REJECT")
    (row,) = replay([item], rules)
    assert row.result == outcome.result and row.result.unbacked_claims == ["c1"]
    (off,) = replay([item], rules.with_params(ENTITIES, negationOutcome="off"))
    assert off.result.unbacked_claims == []


def test_absent_words_are_found_without_a_scan():
    vocab = [Vocabulary(fold(OUTPUT))]
    assert absent_pieces(fold("payment-service timeouts quota exceeded"), vocab) == ["timeouts", "quota", "exceeded"]
    assert absent_pieces(fold("Request time"), vocab) == []  # a word's start counts: "time" of "timeout"
    # Chinese: a run none of whose character pairs occur; joining two copied phrases invents nothing.
    assert absent_pieces(fold("支付接口调用超时发卡行拒绝"), vocab) == ["发卡行拒绝"]
    assert absent_pieces(fold("处理失败队列中有"), vocab) == []
