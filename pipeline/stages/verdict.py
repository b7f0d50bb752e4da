"""The verdict guard: seed 000 §17 enforced in code, whatever the verifier said (law 2).

"Core" claims: claim_type root_cause, symptom or impact. When a diagnosis has none of those
types (e.g. only `observation`/`risk` claims) every claim counts as core, so the matrix never
judges an empty set. An `external_unknown` check is core (-> REJECT) when its claim is core or
its claim_text names an entity of a core kind — service, order/request id, error code, HTTP
status, percentage or measured quantity — since those are exactly the fabrications §16.2 lists;
otherwise it is background (-> LOW_CONFID). Any `contradicted` claim rejects (§19.2.1: a
contradicted claim triggers the REJECT expression).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from pipeline.contracts import VERDICT_ORDER, ClaimCheck, GatekeeperResult, ParseStatus, Verdict, VerifierOutput
from pipeline.gatekeeper import gate_verdict
from pipeline.text import extract_entities

CORE_TYPES = frozenset({"root_cause", "symptom", "impact"})
CORE_ENTITY_KINDS = frozenset({"service", "identifier", "error_code", "http_status", "percentage", "quantity", "version"})


def stricter(a: Verdict, b: Verdict) -> Verdict:
    return a if VERDICT_ORDER[a] >= VERDICT_ORDER[b] else b


def _claims(structured: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    claims = (structured or {}).get("claims")
    return [c for c in claims if isinstance(c, dict)] if isinstance(claims, list) else []


def core_claim_ids(claims: list[dict[str, Any]]) -> set[str]:
    core = {str(c.get("claim_id")) for c in claims if c.get("claim_type") in CORE_TYPES}
    return core or {str(c.get("claim_id")) for c in claims}


def _names_core_entity(text: str) -> bool:
    return any(e.kind in CORE_ENTITY_KINDS for e in extract_entities(text))


def matrix_verdict(
    *, structured: Mapping[str, Any] | None, claim_checks: Iterable[ClaimCheck], parse_status: str,
    gatekeeper_status: str,
) -> tuple[Verdict, list[str]]:
    """The §17 matrix over claim checks alone (gatekeeper: only its overall status).

    Returns the verdict and every reason that keeps it from PASS. A claim without a check
    counts as unsupported.
    """
    if parse_status != "valid":
        return "LOW_CONFID", [f"executor output parse status is {parse_status}: nothing structured to verify"]
    claims = _claims(structured)
    if not claims:
        return "LOW_CONFID", ["the diagnosis has no claims"]
    checks = {c.claim_id: c.verification for c in claim_checks}
    core = core_claim_ids(claims)
    reject: list[str] = []
    low: list[str] = []
    if gatekeeper_status == "fail":
        low.append("gatekeeper status is fail")
    for claim in claims:
        cid = str(claim.get("claim_id"))
        verification = checks.get(cid, "unsupported")
        label = f"{cid} ({claim.get('claim_type', '?')})"
        if verification == "contradicted":
            reject.append(f"{label} is contradicted by its evidence")
        elif verification == "external_unknown":
            if cid in core or _names_core_entity(str(claim.get("claim_text", ""))):
                reject.append(f"{label} introduces a service, id, error code, value or cause not in the evidence")
            else:
                low.append(f"{label} introduces background not in the evidence")
        elif verification in ("unsupported", "overstated"):
            suffix = "" if cid in checks else " (no claim check)"
            low.append(f"{label} is {verification}{suffix}")
    if not any(checks.get(cid) == "direct_observation" for cid in core):
        low.append("no core claim is a direct observation")
    if reject:
        return "REJECT", reject + low
    if low:
        return "LOW_CONFID", low
    return "PASS", []


def guard_verdict(
    *,
    verifier_output: VerifierOutput,
    gatekeeper_result: GatekeeperResult,
    rules: Any,
    parse_status: ParseStatus,
    structured: dict | None,
    gatekeeper_enabled: bool = True,
) -> tuple[Verdict, list[str]]:
    """Final verdict = the stricter of the code-side matrix and the verifier's own verdict.

    The reasons list explains why the final verdict is stricter than the verifier said; it is
    empty when the code agrees (or the verifier was already stricter). With the gatekeeper
    switched off (seed 000 §22.2) its result is ignored.
    """
    gate_status = gatekeeper_result.status if gatekeeper_enabled else "pass"
    verdict, reasons = matrix_verdict(
        structured=structured,
        claim_checks=verifier_output.claim_checks,
        parse_status=parse_status.status,
        gatekeeper_status=gate_status,
    )
    if gatekeeper_enabled and gatekeeper_result.status == "fail":
        # The matrix already keeps a gatekeeper fail off PASS; the rule metadata decides REJECT.
        gate = stricter(gate_verdict(gatekeeper_result, rules), "LOW_CONFID")
        if VERDICT_ORDER[gate] > VERDICT_ORDER[verdict]:
            verdict = gate
        for rule_id in gatekeeper_result.failed_rules:
            impact = rules.impact(rule_id)
            if impact == "reject_on_fail":
                reasons.insert(0, f"gatekeeper rule {rule_id} failed (verdictImpact reject_on_fail)")
            elif impact == "low_confid_on_fail":
                reasons.append(f"gatekeeper rule {rule_id} failed (verdictImpact low_confid_on_fail)")
    final = stricter(verdict, verifier_output.verdict)
    if VERDICT_ORDER[final] <= VERDICT_ORDER[verifier_output.verdict]:
        return final, []
    return final, [f"verifier said {verifier_output.verdict}; code requires {final}"] + reasons
