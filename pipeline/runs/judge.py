"""parse -> gatekeeper -> verifier -> verdict policy -> composer input -> composer -> guard.

The one path shared by a live session and `workbench check` on a bundle: what a session stores
is exactly what checking its bundle recomputes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from pipeline.core.config import Settings
from pipeline.core.contracts import (
    ComposerGuardResult,
    ComposerInput,
    ComposerOutput,
    EvidenceDigest,
    ExecutorOutput,
    FilteredItem,
    GatekeeperResult,
    ParseStatus,
    RetryContext,
    RoundAudit,
    ToolInvocation,
    ToolTraceSummaryItem,
    Verdict,
    VerifierOutput,
)
from pipeline.core.feature_shapes import Features
from pipeline.gatekeeper import GateContext, RuleSet, run_gatekeeper
from pipeline.llm.prompts import load_prompt
from pipeline.stages.composer import assemble_input, run_composer
from pipeline.stages.parse import parse_executor_output
from pipeline.stages.verifier import build_payload, facts_checked, run_verifier
from pipeline.verdict.context import StageContext
from pipeline.verdict.coverage import backends_label, compute_coverage
from pipeline.verdict.form import form_coverage
from pipeline.verdict.policy import apply_gatekeeper, decide_verdict
from pipeline.verdict.provider import Provider


@dataclass
class Evaluation:
    parse_status: ParseStatus
    output: ExecutorOutput | None  # normalized (see normalize_structured)
    gatekeeper_result: GatekeeperResult
    features: Features
    verifier_output: VerifierOutput
    verdict: Verdict
    round_audit: RoundAudit
    composer_input: ComposerInput
    filtered: list[FilteredItem]
    composer_output: ComposerOutput
    composer_guard: ComposerGuardResult
    final_answer: str

    @property
    def structured(self) -> dict[str, JsonValue] | None:
        """The executor output as stored (executor_structured_output)."""
        return self.output.raw if self.output is not None else None


class _GivenComposer:
    """Stands in for the provider when a bundle already carries the composer's raw output."""

    name = "bundle"

    def __init__(self, raw: str):
        self.raw = raw

    def compose(self, ctx: StageContext, composer_input: ComposerInput) -> str:
        return self.raw


def _impacts(gate: GatekeeperResult, rules: RuleSet) -> dict[str, str | None]:
    """verdictImpact of every rule the gatekeeper result names, for the verdict policy."""
    named = set(gate.failed_rules) | set(gate.warnings) | {e.rule_id for e in gate.errors}
    return {rule_id: rules.impact(rule_id) for rule_id in named}


def _normalized_without_gatekeeper(output: ExecutorOutput | None) -> ExecutorOutput | None:
    if output is None:
        return None
    out = dict(output.raw)
    for key in ("hypotheses", "recommended_actions", "missing_info"):
        if not isinstance(out.get(key), list):
            out[key] = []
    return output.with_raw(out)


def evaluate(
    *,
    ctx: StageContext,
    provider: Provider,
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
    features_cache: Features | None = None,
) -> Evaluation:
    # The diagnosis prompt's example, read from the prompt file this workbench runs with.
    parse_status, output = parse_executor_output(raw_output, load_prompt("diagnosis", settings.prompts_dir).example)

    if settings.gatekeeper.enabled:
        outcome = run_gatekeeper(
            GateContext(session_id=ctx.session_id, output=output,
                        invocations={inv.id: inv for inv in invocations},
                        lookup_invocation=lookup_invocation, digests=digests),
            rules, features_cache=features_cache,
        )
        gate_result, normalized_output, features = outcome.result, outcome.normalized, outcome.features
    else:
        gate_result, normalized_output, features = GatekeeperResult(), _normalized_without_gatekeeper(output), {}

    payload = build_payload(question=question, raw_output=raw_output, parse_status=parse_status,
                            structured=normalized_output, invocations=invocations, digests=digests,
                            gatekeeper_result=gate_result, retry_context=retry_context, features=features)
    if given_verifier_output is not None:
        verifier_output = VerifierOutput.model_validate(given_verifier_output)
    else:
        verifier_output = run_verifier(ctx, provider, payload, normalized_output)

    # Law 8: coverage of every asked service, from the gatekeeper-corrected checks.
    gate_for_claims = gate_result if settings.gatekeeper.enabled else GatekeeperResult()
    claims = normalized_output.claims if normalized_output is not None else []
    corrected, _ = apply_gatekeeper(verifier_output.claim_checks, claims, gate_for_claims,
                                    _impacts(gate_for_claims, rules), entity_rules=rules.entity_rules)
    coverage = compute_coverage(ctx.scope, normalized_output, corrected, invocations, gate_for_claims,
                                backends=backends_label({"logs": settings.backends.query_logs.kind,
                                                         "alerts": settings.backends.query_metrics.kind}))
    form = form_coverage(ctx.scope, normalized_output, corrected, verifier_output.hypothesis_checks, coverage,
                         gate_for_claims.unbacked_claims, invocations)
    decision = decide_verdict(
        parse_status=parse_status.status, structured=normalized_output, claim_checks=verifier_output.claim_checks,
        gatekeeper=gate_result, rule_impacts=_impacts(gate_result, rules), entity_rules=rules.entity_rules,
        coverage=coverage, form=form,
        gatekeeper_enabled=settings.gatekeeper.enabled, verifier_verdict=verifier_output.verdict,
        invocations=invocations, retry_context=retry_context, retry_gaps_closed=verifier_output.retry_gaps_closed,
        language=ctx.language,
    )
    # The verdict policy decides; the verifier's output then carries the checks it decided on, so
    # the composer filter and the stored audit read the same corrected checks.
    verdict, reasons = decision.verdict, decision.reasons
    verifier_output = verifier_output.model_copy(update={"claim_checks": decision.claim_checks,
                                                         "groundedness_score": decision.groundedness_score})
    composer_input, filtered = assemble_input(question=question, verdict=verdict,
                                              structured=normalized_output, verifier_output=verifier_output,
                                              unbacked=gate_for_claims.unbacked_claims, scope=ctx.scope,
                                              coverage=coverage, form=form, max_key_facts=settings.composer.max_key_facts)
    composer_input.missing_info.extend(decision.missing_info)
    composer = _GivenComposer(given_composer_raw) if given_composer_raw is not None else provider
    composer_output, guard, final_answer = run_composer(ctx, composer, composer_input,
                                                        enabled=settings.composer.enabled,
                                                        parse_status=parse_status, filtered=filtered,
                                                        min_overlap=settings.composer.min_sentence_overlap)
    facts = facts_checked(verifier_output.claim_checks, normalized_output)
    evaluation = RoundAudit(
        verdict=verdict,
        groundedness_score=verifier_output.groundedness_score,
        critical_fact_count=sum(1 for f in facts if f.is_critical),
        claim_checks=verifier_output.claim_checks,
        facts_checked=facts,
        hypothesis_checks=verifier_output.hypothesis_checks,
        digest_checks=verifier_output.digest_checks,
        rationale=verifier_output.rationale,
        round=ctx.round,
        executor_output_parse_status=parse_status,
        executor_structured_output=normalized_output,
        tool_trace_summary=[ToolTraceSummaryItem.model_validate(t) for t in payload.get("tool_trace_summary", [])],
        gatekeeper_result=gate_result,
        verifier_verdict=verifier_output.verdict,
        verdict_guard_reasons=reasons,
        verdict_reasons=decision.messages,
        composer_input=composer_input,
        composer_filtered=filtered,
        composer_output=composer_output,
        composer_guard=guard,
        retry_context=retry_context,
        question_coverage=coverage,
        question_form_coverage=form,
    )
    return Evaluation(parse_status=parse_status, output=normalized_output, gatekeeper_result=gate_result,
                      features=features, verifier_output=verifier_output, verdict=verdict,
                      round_audit=evaluation, composer_input=composer_input, filtered=filtered,
                      composer_output=composer_output, composer_guard=guard, final_answer=final_answer)
