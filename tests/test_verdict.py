"""The verdict policy: each input's effect on `decide_verdict`, whatever the verifier said."""

from __future__ import annotations

import pytest

from pipeline.core.contracts import (
    ClaimCheck,
    ExecutorOutput,
    GatekeeperError,
    GatekeeperResult,
    RetryContext,
    ServiceCoverage,
    ToolInvocation,
)
from pipeline.core.messages import msg, tr
from pipeline.core.resources import resource_dir
from pipeline.gatekeeper import load_rules
from pipeline.verdict.policy import decide_verdict

IMPACTS = {"evidence.excerpt_similarity": "low_confid_on_fail", "evidence.invocation_ref": "reject_on_fail",
           "evidence.excerpt_entities": "reject_on_fail", "style.length": "warn_only"}


# Which rules are entity rules is each kind's declaration, read through the shipped rules.
ENTITY_RULES = load_rules(resource_dir("rules")).entity_rules


def claims(*typed: tuple[str, str, str]) -> dict:
    return {"answer_version": "executor_evidence_v2", "claims": [
        {"claim_id": cid, "claim_type": ctype, "claim_text": text, "support_level": "direct", "evidence_bindings": []}
        for cid, ctype, text in typed]}


def checks(*pairs: tuple[str, str]) -> list[ClaimCheck]:
    return [ClaimCheck(claim_id=c, verification=v) for c, v in pairs]


def failed(rule_id: str, target: str = "claims[0].evidence_bindings[0]") -> GatekeeperResult:
    return GatekeeperResult(status="fail", failed_rules=[rule_id],
                            errors=[GatekeeperError(rule_id=rule_id, target=target, message="finding")])


SYMPTOM = claims(("c1", "symptom", "payment-service 出现请求超时"))
DIRECT = checks(("c1", "direct_observation"))


def decide(structured=SYMPTOM, claim_checks=DIRECT, gate=None, **kw):
    kw.setdefault("parse_status", "valid")
    kw.setdefault("verifier_verdict", "PASS")
    return decide_verdict(structured=ExecutorOutput.read(structured), claim_checks=claim_checks, gatekeeper=gate or GatekeeperResult(),
                          rule_impacts=kw.pop("rule_impacts", IMPACTS), entity_rules=ENTITY_RULES, **kw)


def test_supported_claims_pass_with_no_reasons_and_full_groundedness():
    d = decide()
    assert (d.verdict, d.reasons, d.groundedness_score, d.missing_info) == ("PASS", [], 1.0, [])


@pytest.mark.parametrize("status", ["missing", "malformed"])
def test_unusable_executor_output_is_low_confid_with_zero_groundedness(status):
    d = decide(parse_status=status)  # even with a verifier that said PASS over checks it was handed
    assert d.verdict == "LOW_CONFID" and d.groundedness_score == 0 and d.claim_checks == []
    assert any(status in r for r in d.reasons)


def test_failed_low_confid_rule_keeps_off_pass_and_demotes_the_claim_it_hit():
    d = decide(gate=failed("evidence.excerpt_similarity"))
    assert d.verdict == "LOW_CONFID"
    assert d.claim_checks[0].verification == "unsupported" and d.groundedness_score == 0
    assert any("evidence.excerpt_similarity" in r and "low_confid_on_fail" in r for r in d.reasons)


def test_reject_on_fail_rule_rejects_and_is_named_first():
    d = decide(gate=failed("evidence.invocation_ref"))
    assert d.verdict == "REJECT" and "reject_on_fail" in d.reasons[1]  # after "the verifier said PASS; ..."


def test_shipped_rules_reject_a_binding_to_a_missing_invocation():
    rules = load_rules(resource_dir("rules"))
    d = decide(gate=failed("evidence.invocation_ref"), rule_impacts={"evidence.invocation_ref":
                                                                     rules.impact("evidence.invocation_ref")})
    assert d.verdict == "REJECT"


def test_entity_mismatch_makes_the_claim_external_unknown():
    d = decide(gate=failed("evidence.excerpt_entities"))
    assert d.claim_checks[0].verification == "external_unknown" and d.verdict == "REJECT"


def test_warn_only_rule_that_failed_is_never_pass_but_leaves_the_claim_alone():
    d = decide(gate=failed("style.length"))
    assert d.verdict == "LOW_CONFID" and d.claim_checks[0].verification == "direct_observation"


def test_a_finding_hits_the_claim_at_its_written_position_past_a_malformed_one():
    # claims[0] is not an object; a finding on claims[2] is about c2, not the second object (c1).
    data = claims(("c1", "symptom", "payment-service 超时"), ("c2", "impact", "支付成功率下降"))
    data["claims"].insert(0, "payment-service is down")
    d = decide(data, checks(("c1", "direct_observation"), ("c2", "direct_observation")),
               failed("evidence.excerpt_similarity", "claims[2].evidence_bindings[0]"))
    assert {c.claim_id: c.verification for c in d.claim_checks} == {"c1": "direct_observation", "c2": "unsupported"}
    # The string is no claim: it is not weighed (c1 2 x 1.0, c2 2 x 0.0).
    assert d.groundedness_score == 0.5


def test_gatekeeper_switched_off_is_ignored():
    assert decide(gate=failed("evidence.invocation_ref"), gatekeeper_enabled=False).verdict == "PASS"


def test_unbacked_claim_is_never_pass_and_never_confirmed():
    data = claims(("c1", "symptom", "payment-service 超时"), ("c2", "impact", "支付成功率下降"))
    gate = GatekeeperResult(status="warn", warnings=["evidence.excerpt_similarity"], unbacked_claims=["c2"])
    d = decide(data, checks(("c1", "direct_observation"), ("c2", "direct_observation")), gate)
    assert d.verdict == "LOW_CONFID"
    assert {c.claim_id: c.verification for c in d.claim_checks}["c2"] == "unsupported"
    assert any("c2" in r for r in d.reasons)


@pytest.mark.parametrize(("language", "status", "said"), [
    ("zh", "no_data", "返回了 billing-service 的 176 条记录（#88），但没有关于内存问题的已核验结论；关于 billing-service 的内存问题的问题尚未得到回答。"),
    ("en", "not_queried", "No tool call asked about billing-service; the question about a memory problem in "
                          "billing-service is not answered."),
])
def test_an_unanswered_pair_caps_at_low_confid_and_its_gap_is_the_rows_own_finding(language, status, said):
    row = (msg("coverage.unclaimed_records", count=176, calls="#88", service="billing-service", symptom="memory")
           if status == "no_data" else msg("coverage.not_queried", service="billing-service"))
    coverage = [ServiceCoverage(service="payment-service", status="answered"),
                ServiceCoverage(service="billing-service", symptom="memory", status=status, msg=row)]
    d = decide(coverage=coverage, language=language)
    assert d.verdict == "LOW_CONFID"
    assert any("billing-service" in r and status in r for r in d.reasons)
    assert d.missing_info == [said]


def test_answered_and_healthy_services_allow_pass():
    coverage = [ServiceCoverage(service="payment-service", status="answered"),
                ServiceCoverage(service="order-service", status="healthy")]
    assert decide(coverage=coverage).verdict == "PASS"


def test_a_failed_tool_call_leaves_the_evidence_incomplete():
    calls = [ToolInvocation(id=7, session_id="s", tool_name="query_logs", model_tool_name="queryLogs"),
             ToolInvocation(id=8, session_id="s", tool_name="query_metrics", model_tool_name="queryMetrics",
                            status="error", error="connection refused")]
    d = decide(invocations=calls)
    assert d.verdict == "LOW_CONFID" and any("queryMetrics #8" in r for r in d.reasons)


def test_a_retry_that_did_not_close_its_gaps_is_low_confid_and_says_so_generically():
    retry = RetryContext(round=2, unsupported_claims=["secret unsupported text"], missing_info=["jstack"])
    d = decide(retry_context=retry, retry_gaps_closed=False, language="en")
    assert d.verdict == "LOW_CONFID" and any("round 2" in r for r in d.reasons)
    assert d.missing_info == [tr("policy.retry_gap", "en", gaps=2)]
    assert decide(retry_context=retry, retry_gaps_closed=True).verdict == "PASS"


def test_a_stricter_verifier_wins_and_says_so():
    d = decide(verifier_verdict="REJECT")
    assert d.verdict == "REJECT" and d.messages == [msg("policy.verifier_stricter", verdict="REJECT")]


def test_a_lenient_verifier_never_lifts():
    data = claims(("c1", "symptom", "a"), ("c2", "risk", "b"))
    d = decide(data, checks(("c1", "direct_observation"), ("c2", "contradicted")), verifier_verdict="PASS")
    assert d.verdict == "REJECT" and d.messages[0] == msg("policy.verifier_differs", said="PASS", verdict="REJECT")


def test_no_claims_is_low_confid():
    assert decide(claims(), []).verdict == "LOW_CONFID"


def test_missing_check_counts_as_unsupported():
    data = claims(("c1", "symptom", "a"), ("c2", "impact", "b"))
    d = decide(data, DIRECT)
    assert d.verdict == "LOW_CONFID" and [m.params["claim"] for m in d.messages if m.code == "policy.weak_unchecked"] == ["c2"]


def test_only_inferences_among_core_claims_is_low_confid():
    data = claims(("c1", "symptom", "a"), ("c2", "observation", "b"))
    d = decide(data, checks(("c1", "reasonable_inference"), ("c2", "direct_observation")))
    assert d.verdict == "LOW_CONFID" and msg("policy.no_direct_core") in d.messages


@pytest.mark.parametrize(("claim_type", "text", "verdict"), [
    ("root_cause", "数据库故障", "REJECT"),                 # a core claim
    ("risk", "inventory-service 也会受影响", "REJECT"),      # names a service
    ("risk", "夜间流量较低", "LOW_CONFID"),                  # background
])
def test_external_unknown_rejects_when_core_or_naming_an_entity(claim_type, text, verdict):
    data = claims(("c1", "symptom", "payment-service 超时"), ("c2", claim_type, text))
    d = decide(data, checks(("c1", "direct_observation"), ("c2", "external_unknown")), verifier_verdict=None)
    assert d.verdict == verdict
