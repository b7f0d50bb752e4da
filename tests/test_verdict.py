"""The verdict guard: seed 000 §17 enforced in code over whatever the verifier returned."""

from __future__ import annotations

import pytest

from pipeline.config import ROOT
from pipeline.contracts import ClaimCheck, GatekeeperError, GatekeeperResult, ParseStatus, VerifierOutput
from pipeline.gatekeeper import load_rules
from pipeline.stages.verdict import guard_verdict

RULES = load_rules(ROOT / "rules")
VALID = ParseStatus(status="valid")


def claims(*typed: tuple[str, str, str]) -> dict:
    return {"answer_version": "executor_evidence_v2", "claims": [
        {"claim_id": cid, "claim_type": ctype, "claim_text": text, "support_level": "direct", "evidence_bindings": []}
        for cid, ctype, text in typed]}


def said(verdict: str, *checks: tuple[str, str]) -> VerifierOutput:
    return VerifierOutput(verdict=verdict, groundedness_score=1.0,
                          claim_checks=[ClaimCheck(claim_id=c, verification=v) for c, v in checks])


def guard(out: VerifierOutput, data: dict | None, gate: GatekeeperResult | None = None, **kw):
    return guard_verdict(verifier_output=out, gatekeeper_result=gate or GatekeeperResult(), rules=RULES,
                         parse_status=kw.pop("parse_status", VALID), structured=data, **kw)


SYMPTOM = claims(("c1", "symptom", "payment-service 出现请求超时"))


def test_agreeing_pass_stays_pass():
    assert guard(said("PASS", ("c1", "direct_observation")), SYMPTOM) == ("PASS", [])


def test_gatekeeper_fail_never_passes():
    gate = GatekeeperResult(status="fail", failed_rules=["evidence.excerpt_similarity"], errors=[
        GatekeeperError(rule_id="evidence.excerpt_similarity", target="claims[0].evidence_bindings[0]", message="low")])
    verdict, reasons = guard(said("PASS", ("c1", "direct_observation")), SYMPTOM, gate)
    assert verdict == "LOW_CONFID"
    assert any("evidence.excerpt_similarity" in r for r in reasons)


def test_reject_on_fail_rule_rejects():
    gate = GatekeeperResult(status="fail", failed_rules=["evidence.invocation_ref"], errors=[
        GatekeeperError(rule_id="evidence.invocation_ref", target="claims[0].evidence_bindings[0]",
                        message="source_invocation_ids not found in current session")])
    verdict, reasons = guard(said("PASS", ("c1", "direct_observation")), SYMPTOM, gate)
    assert verdict == "REJECT"
    assert any("reject_on_fail" in r for r in reasons)


def test_gatekeeper_switched_off_is_ignored():
    gate = GatekeeperResult(status="fail", failed_rules=["evidence.invocation_ref"])
    assert guard(said("PASS", ("c1", "direct_observation")), SYMPTOM, gate, gatekeeper_enabled=False)[0] == "PASS"


@pytest.mark.parametrize("status", ["missing", "malformed"])
def test_unusable_parse_is_low_confid(status):
    verdict, reasons = guard(said("PASS"), None, parse_status=ParseStatus(status=status))
    assert verdict == "LOW_CONFID" and any(status in r for r in reasons)


def test_no_claims_is_low_confid():
    assert guard(said("PASS"), claims())[0] == "LOW_CONFID"


@pytest.mark.parametrize("verification", ["overstated", "unsupported"])
def test_weak_claims_are_low_confid(verification):
    data = claims(("c1", "symptom", "payment-service 超时"), ("c2", "impact", "支付成功率下降"))
    out = said("PASS", ("c1", "direct_observation"), ("c2", verification))
    assert guard(out, data)[0] == "LOW_CONFID"


def test_missing_check_counts_as_unsupported():
    data = claims(("c1", "symptom", "a"), ("c2", "impact", "b"))
    verdict, reasons = guard(said("PASS", ("c1", "direct_observation")), data)
    assert verdict == "LOW_CONFID" and any("no claim check" in r for r in reasons)


def test_only_inferences_among_core_claims_is_low_confid():
    data = claims(("c1", "symptom", "a"), ("c2", "observation", "b"))
    out = said("PASS", ("c1", "reasonable_inference"), ("c2", "direct_observation"))
    verdict, reasons = guard(out, data)
    assert verdict == "LOW_CONFID" and any("direct observation" in r for r in reasons)


def test_contradicted_rejects():
    data = claims(("c1", "symptom", "a"), ("c2", "risk", "b"))
    assert guard(said("PASS", ("c1", "direct_observation"), ("c2", "contradicted")), data)[0] == "REJECT"


def test_core_external_unknown_rejects_background_one_does_not():
    core = claims(("c1", "symptom", "payment-service 超时"), ("c2", "root_cause", "数据库故障"))
    assert guard(said("LOW_CONFID", ("c1", "direct_observation"), ("c2", "external_unknown")), core)[0] == "REJECT"
    named = claims(("c1", "symptom", "payment-service 超时"), ("c2", "risk", "inventory-service 也会受影响"))
    assert guard(said("PASS", ("c1", "direct_observation"), ("c2", "external_unknown")), named)[0] == "REJECT"
    background = claims(("c1", "symptom", "payment-service 超时"), ("c2", "risk", "夜间流量较低"))
    out = said("PASS", ("c1", "direct_observation"), ("c2", "external_unknown"))
    assert guard(out, background)[0] == "LOW_CONFID"


def test_a_stricter_verifier_wins_without_reasons():
    assert guard(said("REJECT", ("c1", "direct_observation")), SYMPTOM) == ("REJECT", [])
