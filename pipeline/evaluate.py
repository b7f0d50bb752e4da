"""parse -> gatekeeper -> verifier -> verdict guard -> composer input -> composer -> guard.

The one path shared by a live session and `workbench check` on a bundle: what a session stores
is exactly what checking its bundle recomputes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from pipeline.config import Settings
from pipeline.contracts import (
    VERDICT_ORDER,
    ClaimCheck,
    ComposerGuardResult,
    ComposerInput,
    ComposerOutput,
    EvidenceDigest,
    FilteredItem,
    GatekeeperResult,
    ParseStatus,
    RetryContext,
    ToolInvocation,
    ToolTraceSummaryItem,
    VerifierEvaluation,
    VerifierOutput,
)
from pipeline.gatekeeper import GateContext, RuleSet, run_gatekeeper
from pipeline.llm.provider import StageContext
from pipeline.stages.composer import assemble_input, run_composer
from pipeline.stages.parse import parse_executor_output
from pipeline.stages.verdict import guard_verdict
from pipeline.stages.verifier import build_payload, facts_checked, groundedness, run_verifier
from pipeline.tools.registry import model_name


@dataclass
class Evaluation:
    parse_status: ParseStatus
    structured: dict[str, Any] | None
    gatekeeper_result: GatekeeperResult
    features: dict[str, Any]
    verifier_output: VerifierOutput
    verdict: str
    verifier_evaluation: VerifierEvaluation
    composer_input: ComposerInput
    filtered: list[FilteredItem]
    composer_output: ComposerOutput
    composer_guard: ComposerGuardResult
    final_answer: str


class _GivenComposer:
    """Stands in for the provider when a bundle already carries the composer's raw output."""

    name = "bundle"

    def __init__(self, raw: str):
        self.raw = raw

    def compose(self, ctx: StageContext, composer_input: ComposerInput) -> str:
        return self.raw


_CLAIM_TARGET = re.compile(r"^claims\[(\d+)\]")
_WEAK = ("unsupported", "external_unknown", "contradicted")


def enforce_gatekeeper(verifier_output: VerifierOutput, gate: GatekeeperResult, rules: RuleSet,
                       structured: dict[str, Any] | None) -> tuple[VerifierOutput, list[str]]:
    """Seed 000 §15.3 in code: a claim hit by a failed rule is at least unsupported.

    An LLM verifier may ignore the gatekeeper (or obey text inside a tool output); the composer
    filter trusts claim_checks, so the checks are corrected here before anything reads them.
    An entity mismatch ("points at another value/service") becomes external_unknown.
    """
    claims = [c for c in (structured or {}).get("claims", []) if isinstance(c, dict)] \
        if isinstance((structured or {}).get("claims"), list) else []
    failing: dict[str, tuple[str, str]] = {}
    for err in gate.errors:
        m = _CLAIM_TARGET.match(err.target)
        if not m or err.rule_id not in gate.failed_rules or rules.impact(err.rule_id) == "warn_only":
            continue
        index = int(m.group(1))
        if index < len(claims):
            failing.setdefault(str(claims[index].get("claim_id")), (err.rule_id, err.message))
    if not failing:
        return verifier_output, []
    checks: dict[str, ClaimCheck] = {c.claim_id: c for c in verifier_output.claim_checks}
    for claim_id in failing:
        checks.setdefault(claim_id, ClaimCheck(claim_id=claim_id, verification="unsupported"))
    reasons = []
    for claim_id, (rule_id, message) in failing.items():
        check = checks[claim_id]
        if check.verification in _WEAK:
            continue
        verification = "external_unknown" if rule_id == "evidence.excerpt_entities" else "unsupported"
        reasons.append(f"{claim_id}: verifier said {check.verification}, but gatekeeper rule {rule_id} "
                       f"failed on it; treated as {verification}")
        checks[claim_id] = check.model_copy(update={"verification": verification,
                                                    "detail": f"gatekeeper {rule_id}: {message}"})
    ordered = list(checks.values())
    updated = verifier_output.model_copy(update={"claim_checks": ordered,
                                                 "groundedness_score": groundedness(ordered, claims)})
    return updated, reasons


def _normalized_without_gatekeeper(structured: dict[str, Any] | None) -> dict[str, Any] | None:
    if structured is None:
        return None
    out = dict(structured)
    for key in ("hypotheses", "recommended_actions", "missing_info"):
        if not isinstance(out.get(key), list):
            out[key] = []
    return out


def evaluate(
    *,
    ctx: StageContext,
    provider: Any,
    settings: Settings,
    rules: RuleSet,
    question: str,
    raw_output: str,
    invocations: list[ToolInvocation],
    lookup_invocation: Callable[[int], ToolInvocation | None],
    digests: list[EvidenceDigest] | None,
    retry_context: RetryContext | None = None,
    given_verifier_output: dict[str, Any] | None = None,
    given_composer_raw: str | None = None,
    features_cache: dict[str, Any] | None = None,
) -> Evaluation:
    parse_status, structured = parse_executor_output(raw_output)

    if settings.gatekeeper.enabled:
        outcome = run_gatekeeper(
            GateContext(session_id=ctx.session_id, structured=structured,
                        invocations={inv.id: inv for inv in invocations},
                        lookup_invocation=lookup_invocation, digests=digests),
            rules, features_cache=features_cache,
        )
        gate_result, normalized, features = outcome.result, outcome.normalized, outcome.features
    else:
        gate_result, normalized, features = GatekeeperResult(), _normalized_without_gatekeeper(structured), {}

    payload = build_payload(question=question, raw_output=raw_output, parse_status=parse_status,
                            structured=normalized, invocations=invocations, digests=digests,
                            gatekeeper_result=gate_result, retry_context=retry_context, features=features)
    if given_verifier_output is not None:
        verifier_output = VerifierOutput.model_validate(given_verifier_output)
    else:
        verifier_output = run_verifier(ctx, provider, payload)

    enforced: list[str] = []
    if settings.gatekeeper.enabled:
        verifier_output, enforced = enforce_gatekeeper(verifier_output, gate_result, rules, normalized)
    verdict, reasons = guard_verdict(verifier_output=verifier_output, gatekeeper_result=gate_result, rules=rules,
                                     parse_status=parse_status, structured=normalized,
                                     gatekeeper_enabled=settings.gatekeeper.enabled)
    reasons = enforced + reasons
    failed_tools = [inv for inv in invocations if inv.status == "error"]
    if failed_tools and VERDICT_ORDER[verdict] < VERDICT_ORDER["LOW_CONFID"]:
        verdict = "LOW_CONFID"
        reasons.append("evidence is incomplete: " + ", ".join(
            f"{model_name(inv.tool_name)} #{inv.id} failed" for inv in failed_tools))

    if retry_context is not None and verifier_output.retry_gaps_closed is False:
        if VERDICT_ORDER[verdict] < VERDICT_ORDER["LOW_CONFID"]:
            verdict = "LOW_CONFID"
        reasons.append(f"round {retry_context.round} did not close the gaps of the previous round")

    composer_input, filtered = assemble_input(question=question, verdict=verdict,  # type: ignore[arg-type]
                                              structured=normalized, verifier_output=verifier_output)
    if retry_context is not None and verifier_output.retry_gaps_closed is False:
        # Generic on purpose: the unclosed items are unsupported text and must not reach the composer.
        gaps = len(retry_context.unsupported_claims) + len(retry_context.missing_info)
        composer_input.missing_info.append(
            f"再次取证后，上一轮仍有 {gaps} 项内容未被证据证实。" if ctx.language == "zh"
            else f"After another round of evidence gathering, {gaps} earlier item(s) remain unconfirmed.")
    composer = _GivenComposer(given_composer_raw) if given_composer_raw is not None else provider
    composer_output, guard, final_answer = run_composer(ctx, composer, composer_input,
                                                        enabled=settings.composer.enabled,
                                                        parse_status=parse_status)
    facts = facts_checked(verifier_output.claim_checks, normalized)
    evaluation = VerifierEvaluation(
        verdict=verdict,  # type: ignore[arg-type]
        groundedness_score=verifier_output.groundedness_score,
        critical_fact_count=sum(1 for f in facts if f.is_critical),
        claim_checks=verifier_output.claim_checks,
        facts_checked=facts,
        hypothesis_checks=verifier_output.hypothesis_checks,
        digest_checks=verifier_output.digest_checks,
        rationale=verifier_output.rationale,
        round=ctx.round,
        executor_output_parse_status=parse_status,
        executor_structured_output=normalized,
        tool_trace_summary=[ToolTraceSummaryItem.model_validate(t) for t in payload.get("tool_trace_summary", [])],
        gatekeeper_result=gate_result,
        verifier_verdict=verifier_output.verdict,
        verdict_guard_reasons=reasons,
        composer_input=composer_input,
        composer_filtered=filtered,
        composer_output=composer_output,
        composer_guard=guard,
        retry_context=retry_context,
    )
    return Evaluation(parse_status=parse_status, structured=normalized, gatekeeper_result=gate_result,
                      features=features, verifier_output=verifier_output, verdict=verdict,
                      verifier_evaluation=evaluation, composer_input=composer_input, filtered=filtered,
                      composer_output=composer_output, composer_guard=guard, final_answer=final_answer)
