"""Composer input filter (docs/spec.md#composer-input), composer stage, composer guard and the fixed templates."""

from __future__ import annotations

import json

import pytest

from pipeline.core.config import load_settings
from pipeline.core.contracts import (
    ClaimCheck,
    ComposerAction,
    ComposerClaim,
    ComposerHypothesis,
    ComposerInput,
    ComposerOutput,
    ExecutorOutput,
    HypothesisCheck,
    ParseStatus,
    VerifierOutput,
)
from pipeline.core.errors import StageFailure
from pipeline.core.messages import tr
from pipeline.llm.offline.composer import compose
from pipeline.stages.composer import assemble_input, run_composer
from pipeline.stages.composer_guard import check_output
from pipeline.stages.templates import render
from pipeline.verdict.provider import StageContext

EXECUTOR_TEXT = "EXECUTOR SAYS: the root cause is a bad deploy of order-service"


def claim(cid: str, ctype: str, text: str) -> dict:
    return {"claim_id": cid, "claim_type": ctype, "claim_text": text, "support_level": "direct",
            "evidence_bindings": [{"tool_name": "query_logs", "source_invocation_ids": [1], "evidence_excerpt": "x"}]}


STRUCTURED = {
    "answer_version": "executor_evidence_v2",
    "claims": [
        claim("c1", "symptom", "payment-service 出现请求超时，耗时 5.3 秒。"),
        claim("c2", "impact", "支付成功率下降。"),
        claim("c3", "risk", "CPU 过高导致支付超时，这是唯一根因。"),
        claim("c4", "symptom", "数据库主从同步延迟严重。"),
        claim("c5", "symptom", "inventory-service 出现 ERR_STOCK_LOCK 错误。"),
        claim("c6", "symptom", "payment-service CPU 使用率为 29%。"),
        claim("c7", "symptom", "网关返回 502。"),
    ],
    "hypotheses": [
        {"hypothesis_text": "连接池压力可能参与了超时问题。", "basis": "b", "needed_evidence": ["HikariCP 指标"]},
        {"hypothesis_text": "连接池耗尽导致了超时。", "basis": "b", "needed_evidence": ["x"]},
        {"hypothesis_text": "网关阈值可能偏低。", "basis": "b", "needed_evidence": ["网关配置"]},
    ],
    "recommended_actions": [
        {"action_text": "补充查询连接池 active/idle/pending 指标。", "reason": "确认连接池是否达到上限。"},
        {"action_text": "重启 payment-service。", "reason": "尽快恢复。"},
        {"action_text": "对比发布前后的错误率，必要时回滚。", "reason": "r"},
    ],
    "missing_info": ["缺少连接池指标。"],
}
CHECKS = [("c1", "direct_observation"), ("c2", "reasonable_inference"), ("c3", "overstated"), ("c4", "unsupported"),
          ("c5", "external_unknown"), ("c6", "contradicted")]  # c7 has no check


def verifier(verdict: str = "LOW_CONFID") -> VerifierOutput:
    return VerifierOutput(
        verdict=verdict, groundedness_score=0.5,
        claim_checks=[ClaimCheck(claim_id=c, verification=v) for c, v in CHECKS],
        hypothesis_checks=[HypothesisCheck(hypothesis_index=0, verification="reasonable_hypothesis"),
                           HypothesisCheck(hypothesis_index=1, verification="overstated_as_fact")],
        rationale="已有证据支持超时现象，但根因仍缺少直接证据。")


def assembled(verdict: str = "LOW_CONFID"):
    return assemble_input(question="支付接口最近出现超时", verdict=verdict, structured=ExecutorOutput.read(STRUCTURED),
                          verifier_output=verifier(verdict))


# --- the docs/spec.md#composer-input table ------------------------------------------------------------------------


def test_each_row_of_the_assembly_table():
    ci, filtered = assembled("LOW_CONFID")
    assert [c.claim_id for c in ci.allowed_claims] == ["c1", "c2"]  # direct + inference
    hyps = [h.hypothesis_text for h in ci.allowed_hypotheses]
    assert "CPU 过高导致支付超时。" in hyps  # overstated -> hypothesis, its certainty clause cut
    assert "唯一根因" not in json.dumps(ci.model_dump(), ensure_ascii=False)
    assert "连接池压力可能参与了超时问题。" in hyps  # reasonable_hypothesis
    assert "网关阈值可能偏低。" in hyps  # no hypothesis check: kept
    assert "连接池耗尽导致了超时。" not in hyps  # overstated_as_fact
    assert any("数据库主从同步延迟严重" in m for m in ci.missing_info)  # unsupported -> gap
    assert any("网关返回 502" in m for m in ci.missing_info)  # no claim check -> unsupported
    text = json.dumps(ci.model_dump(), ensure_ascii=False)
    assert "inventory-service" not in text and "ERR_STOCK_LOCK" not in text  # external entity never copied
    assert "29%" not in text  # contradicted dropped
    assert "缺少连接池指标。" in ci.missing_info
    reasons = {f.source: f for f in filtered}
    assert reasons["claims[5]"].moved_to == "dropped" and "contradicted" in reasons["claims[5]"].reason
    assert reasons["claims[4]"].moved_to == "missing_info"
    assert reasons["claims[2]"].moved_to == "allowed_hypotheses"
    assert "hypotheses[1]" in reasons


def test_a_demoted_claim_that_is_only_certainty_becomes_a_gap():
    data = {"claims": [claim("c1", "root_cause", "CPU 过高是支付超时的唯一根因。")]}
    out = VerifierOutput(verdict="LOW_CONFID", groundedness_score=0.3,
                         claim_checks=[ClaimCheck(claim_id="c1", verification="overstated")])
    ci, filtered = assemble_input(question="超时", verdict="LOW_CONFID", structured=ExecutorOutput.read(data), verifier_output=out)
    assert ci.allowed_hypotheses == [] and ci.missing_info and "根因" not in "".join(ci.missing_info)
    assert filtered[0].moved_to == "missing_info"


def test_composer_input_never_holds_raw_tool_output_or_executor_fields():
    ci, _ = assembled("PASS")
    assert set(ci.model_dump()) == {"original_query", "verdict", "allowed_claims", "allowed_hypotheses",
                                    "missing_info", "recommended_actions", "rationale", "answer_lead",
                                    "key_claim_ids", "question_scope", "elsewhere"}
    assert "evidence_bindings" not in json.dumps(ci.model_dump())


def test_reject_has_no_hypotheses_and_only_evidence_gathering_actions():
    ci, filtered = assembled("REJECT")
    assert ci.allowed_hypotheses == []
    assert [c.claim_id for c in ci.allowed_claims] == ["c1"]  # inference not stated under REJECT
    assert [a.action_text for a in ci.recommended_actions] == ["补充查询连接池 active/idle/pending 指标。"]
    dropped = [f.text for f in filtered]
    assert "重启 payment-service。" in dropped and "对比发布前后的错误率，必要时回滚。" in dropped
    out = render(ci, "zh")
    assert out.user_facing_answer.startswith("无法基于已获取证据生成可靠结论")
    assert "根因" not in out.user_facing_answer and "根因" not in out.answer_summary


def test_reject_without_gathering_actions_gets_fixed_ones():
    data = dict(STRUCTURED, recommended_actions=[{"action_text": "Restart the pods.", "reason": "r"}])
    ci, _ = assemble_input(question="why is checkout slow", verdict="REJECT", structured=ExecutorOutput.read(data),
                           verifier_output=verifier("REJECT"))
    assert ci.recommended_actions and all("Restart" not in a.action_text for a in ci.recommended_actions)


def test_root_cause_claim_confirmed_only_under_pass():
    data = {"claims": [claim("r1", "root_cause", "连接池耗尽导致超时。")]}
    out = VerifierOutput(verdict="PASS", groundedness_score=1,
                         claim_checks=[ClaimCheck(claim_id="r1", verification="direct_observation")])
    ci, _ = assemble_input(question="超时", verdict="PASS", structured=ExecutorOutput.read(data), verifier_output=out)
    assert [c.claim_id for c in ci.allowed_claims] == ["r1"]
    assert render(ci, "zh").user_facing_answer.startswith(tr("answer.cause_confirmed", "zh", text="连接池耗尽导致超时"))
    ci, _ = assemble_input(question="超时", verdict="LOW_CONFID", structured=ExecutorOutput.read(data), verifier_output=out)
    assert ci.allowed_claims == [] and ci.allowed_hypotheses[0].hypothesis_text == "连接池耗尽导致超时。"
    text = render(ci, "zh").user_facing_answer
    assert "（已确认）" not in text and text.startswith("最可能的原因（可能，但未证实）")


# --- templates --------------------------------------------------------------------------------


@pytest.mark.parametrize("language", ["zh", "en"])
def test_templates_per_verdict(language):
    low, _ = assembled("LOW_CONFID")
    text = render(low, language).user_facing_answer
    assert ("已确认" in text and "可能的原因" in text) if language == "zh" else ("confirmed" in text and "Possible" in text)
    assert ("证据缺口" in text or "下一步" in text) if language == "zh" else ("gaps" in text or "Next steps" in text)
    passed = ComposerInput(original_query="q", verdict="PASS",
                           allowed_claims=[ComposerClaim(claim_id="c1", claim_type="symptom", claim_text="A 超时")])
    out = render(passed, language)
    assert "A 超时" in out.user_facing_answer and "根因" not in out.user_facing_answer
    assert "Root cause" not in out.user_facing_answer
    reject = render(ComposerInput(original_query="q", verdict="REJECT"), language)
    assert ("无法基于已获取证据生成可靠结论" if language == "zh" else "No reliable conclusion") in reject.user_facing_answer
    assert reject.recommended_actions  # evidence-gathering next steps even with none given


# --- the stage and its guard -------------------------------------------------------------------


class FakeComposer:
    def __init__(self, raw: str | None = None, error: Exception | None = None):
        self.raw, self.error, self.calls = raw, error, 0

    def compose(self, ctx, composer_input):
        self.calls += 1
        if self.error:
            raise self.error
        return self.raw if self.raw is not None else compose(composer_input, ctx.language).model_dump_json()


def ctx(language: str = "zh", services: list[str] | None = None) -> StageContext:
    return StageContext(settings=load_settings(), session_id="s", language=language, record=lambda r: None,
                        run_tool=lambda n, a: None, services=services or [])  # type: ignore[arg-type,return-value]


def answer(text: str, summary: str = "摘要") -> str:
    return json.dumps({"answer_summary": summary, "recommended_actions": [], "user_facing_answer": text},
                      ensure_ascii=False)


ZH_INPUT = ComposerInput(
    original_query="支付接口最近出现超时", verdict="LOW_CONFID",
    allowed_claims=[ComposerClaim(claim_id="c1", claim_type="symptom",
                                  claim_text="payment-service 出现请求超时，耗时 5.3 秒。")],
    allowed_hypotheses=[ComposerHypothesis(hypothesis_text="连接池压力可能参与了超时问题。",
                                           needed_evidence=["HikariCP 指标"])],
    missing_info=["缺少连接池指标。"],
    recommended_actions=[ComposerAction(action_text="补充查询连接池指标。", reason="确认是否达到上限。")],
    rationale="根因仍缺少直接证据。",
)
EN_INPUT = ComposerInput(
    original_query="why does the payment API time out", verdict="LOW_CONFID",
    allowed_claims=[ComposerClaim(claim_id="c1", claim_type="symptom",
                                  claim_text="payment-service logged request timeouts of 5.3 s.")],
    missing_info=["Pool metrics are missing."],
    recommended_actions=[ComposerAction(action_text="Query the pool metrics.", reason="Check saturation.")],
)


@pytest.mark.parametrize("ci,language", [(ZH_INPUT, "zh"), (EN_INPUT, "en"), (assembled("REJECT")[0], "zh"),
                                         (assembled("PASS")[0], "zh"), (assembled("LOW_CONFID")[0], "en")])
def test_offline_composer_passes_the_guard(ci, language):
    out, guard, final = run_composer(ctx(language), FakeComposer(), ci, enabled=True, parse_status=ParseStatus(status="valid"))
    assert guard.status == "pass" and not guard.used_template, guard.violations
    assert final == out.user_facing_answer


@pytest.mark.parametrize(
    "ci,language,text,kind,token",
    [
        (ZH_INPUT, "zh", "payment-service 出现请求超时，耗时 5.3 秒，错误率 37%。", "percentage", "37"),
        (ZH_INPUT, "zh", "payment-service 超时，order-service 也受影响。", "service", "order-service"),
        (ZH_INPUT, "zh", "payment-service 出现 ERR_DB_LOCK。", "error_code", "err_db_lock"),
        (ZH_INPUT, "zh", "payment-service 出现请求超时，耗时 8 秒。", "duration", "8s"),
        (ZH_INPUT, "zh", "订单 8812 支付失败。", "identifier", "8812"),
        (ZH_INPUT, "zh", "根因是连接池耗尽。", "root_cause", "根因是连接池耗尽"),
        (EN_INPUT, "en", "payment-service timed out for 5.3 s across 1200 requests.", "number", "1200"),
        (EN_INPUT, "en", "Timeouts hit checkout-api as well.", "service", "checkout-api"),
        (EN_INPUT, "en", "payment-service threw PaymentDeclinedException.", "error_code", "paymentdeclinedexception"),
        (EN_INPUT, "en", "The root cause is an exhausted connection pool.", "root_cause",
         "The root cause is an exhausted connection pool"),
    ],
)
def test_guard_catches_additions(ci, language, text, kind, token):
    out, guard, final = run_composer(ctx(language), FakeComposer(answer(text)), ci, enabled=True,
                                     parse_status=ParseStatus(status="valid"))
    assert guard.status == "fail" and guard.used_template
    assert (kind, token) in {(v.kind, v.token) for v in guard.violations}
    assert final == render(ci, language).user_facing_answer
    assert text not in final


def test_guard_catches_known_service_names_outside_the_extractor():
    out = ComposerOutput(answer_summary="s", user_facing_answer="inventory 也超时了。")
    assert [v.kind for v in check_output(out, ZH_INPUT, services=["inventory"])] == ["service"]


def test_hedged_cause_needs_an_allowed_hypothesis_and_never_under_reject():
    ok = ComposerOutput(answer_summary="s", user_facing_answer="连接池压力可能导致了超时问题。")
    assert check_output(ok, ZH_INPUT) == []
    reject = ZH_INPUT.model_copy(update={"verdict": "REJECT", "allowed_hypotheses": []})
    assert {v.kind for v in check_output(ok, reject)} == {"root_cause", "unattributed"}
    invented = ComposerOutput(answer_summary="s", user_facing_answer="磁盘写满可能导致了超时。")
    assert "root_cause" in {v.kind for v in check_output(invented, ZH_INPUT)}


@pytest.mark.parametrize("status", ["missing", "malformed"])
def test_unusable_executor_output_uses_the_template(status):
    provider = FakeComposer(answer(EXECUTOR_TEXT))
    out, guard, final = run_composer(ctx(), provider, ZH_INPUT, enabled=True, parse_status=ParseStatus(status=status))
    assert provider.calls == 0 and guard.status == "skipped" and guard.used_template
    assert EXECUTOR_TEXT not in final


def test_disabled_composer_uses_the_template_never_executor_text():
    provider = FakeComposer(answer(EXECUTOR_TEXT))
    out, guard, final = run_composer(ctx(), provider, ZH_INPUT, enabled=False, parse_status=ParseStatus(status="valid"))
    assert provider.calls == 0 and guard.status == "skipped" and guard.used_template
    assert final == render(ZH_INPUT, "zh").user_facing_answer


@pytest.mark.parametrize("raw", ['{"answer_summary": "x"', "Sure! Here is the answer.", "[1, 2]",
                                 '{"answer_summary": 1}'])
def test_malformed_composer_json_uses_the_template(raw):
    out, guard, final = run_composer(ctx(), FakeComposer(raw), ZH_INPUT, enabled=True,
                                     parse_status=ParseStatus(status="valid"))
    assert guard.used_template and [v.kind for v in guard.violations] == ["malformed"]
    assert raw not in final and "{" not in final


def test_fenced_json_is_accepted_and_provider_failure_falls_back():
    text = "payment-service 出现请求超时，耗时 5.3 秒。当前证据仍有缺口。"
    fenced = "```json\n" + answer(text, "payment-service 出现请求超时。") + "\n```"
    out, guard, final = run_composer(ctx(), FakeComposer(fenced), ZH_INPUT, enabled=True,
                                     parse_status=ParseStatus(status="valid"))
    assert guard.status == "pass" and final == text
    out, guard, final = run_composer(ctx(), FakeComposer(error=StageFailure("composer", "timeout")), ZH_INPUT,
                                     enabled=True, parse_status=ParseStatus(status="valid"))
    assert guard.used_template and guard.status == "fail"


@pytest.mark.parametrize("verdict", ["PASS", "LOW_CONFID", "REJECT"])
def test_unbacked_claims_never_reach_allowed_claims(verdict):
    ci, filtered = assemble_input(question="超时", verdict=verdict, structured=ExecutorOutput.read(STRUCTURED),
                                  verifier_output=verifier(verdict), unbacked=["c1"])
    assert "c1" not in [c.claim_id for c in ci.allowed_claims]
    assert any(f.source == "claims[0]" and "unbacked" in f.reason for f in filtered)
