"""Composer input filter and composer call (docs/spec.md#composer).

The filter decides, in code, what the composer may say (docs/spec.md#composer-input); the guard
(pipeline.stages.composer_guard) checks, in code, that it said nothing else. Any doubt ends in
the fixed template for the verdict (law 1: never Executor text).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from pydantic import ValidationError

from pipeline.core.contracts import (
    ClaimCheck,
    ComposerAction,
    ComposerClaim,
    ComposerGuardResult,
    ComposerGuardViolation,
    ComposerHypothesis,
    ComposerInput,
    ComposerOutput,
    ExecutorOutput,
    FilteredItem,
    FormCoverage,
    ParseStatus,
    QuestionScope,
    ServiceCoverage,
    Verdict,
    VerifierOutput,
)
from pipeline.core.errors import StageFailure
from pipeline.core.feature_shapes import claim_target
from pipeline.core.messages import Message, msg, render, tr
from pipeline.stages import templates
from pipeline.stages.answer_lead import decide_lead, drop_closed, key_claims, on_topic, rank_claims
from pipeline.stages.composer_guard import judge_answer
from pipeline.text.lexicon import CERTAINTY
from pipeline.text.primitives import detect_language, extract_entities, normalize
from pipeline.text.replies import read_object, strip_wrappers
from pipeline.verdict.context import StageContext
from pipeline.verdict.provider import Composes
from pipeline.verdict.safe_actions import fixed_actions

# --- the input filter (docs/spec.md#composer-input) ---------------------------------------------------------------

# REJECT keeps only evidence-gathering / manual-review actions (docs/spec.md#composer-input).
_GATHER_WORDS = (
    "补充", "查询", "检查", "核查", "核实", "核对", "确认", "复核", "收集", "排查", "查看", "获取", "抓取", "对比",
    "比对", "人工", "分析", "定位", "采集", "query", "check", "collect", "gather", "verify", "review", "inspect",
    "look", "investigate", "confirm", "compare", "capture", "take a", "examine", "analy", "search", "fetch",
)
_REMEDY_WORDS = (
    "重启", "扩容", "缩容", "回滚", "修改", "调大", "调小", "调整", "关闭", "删除", "升级", "降级", "修复", "清理",
    "下线", "切换", "禁用", "变更", "限流", "熔断", "部署", "restart", "scale", "roll back", "rollback", "increase",
    "decrease", "raise", "lower", "change", "modify", "disable", "delete", "upgrade", "downgrade", "fix", "kill",
    "deploy", "flush", "purge", "switch", "tune",
)


# Clauses that claim certainty ("这是唯一根因", "the only root cause") are cut when a claim is
# demoted: a hypothesis may name a cause, never its certainty.
_CLAUSE = re.compile(r"([，,。；;！!]\s*)")


def soften(text: str) -> str | None:
    """The text without its certainty clauses; None when nothing else is left."""
    parts = _CLAUSE.split(text)
    clauses = [(parts[i], parts[i + 1] if i + 1 < len(parts) else "") for i in range(0, len(parts), 2)]
    kept = [(c, sep) for c, sep in clauses if c.strip() and not CERTAINTY.search(normalize(c))]
    if not kept:
        return None
    if len(kept) == len([c for c, _ in clauses if c.strip()]):
        return text
    body = "".join(c + sep for c, sep in kept[:-1]) + kept[-1][0]
    return body.rstrip() + tr("common.stop", detect_language(text))


def is_evidence_gathering(action_text: str) -> bool:
    norm = normalize(action_text)
    return any(w in norm for w in _GATHER_WORDS) and not any(w in norm for w in _REMEDY_WORDS)


def assemble_input(
    *, question: str, verdict: Verdict, structured: ExecutorOutput | None, verifier_output: VerifierOutput,
    unbacked: Sequence[str] = (), scope: QuestionScope | None = None, coverage: Sequence[ServiceCoverage] = (),
    form: FormCoverage | None = None, max_key_facts: int = 4,
) -> tuple[ComposerInput, list[FilteredItem]]:
    """Filter the diagnosis into what the composer may use; record everything kept away.

    Beyond the docs/spec.md#composer-input table: a root_cause claim is stated as confirmed only when it is a
    direct observation under PASS; an inferred one becomes a hypothesis, and under REJECT only
    directly observed, non-root-cause facts remain. A claim in `unbacked` (no binding of it is
    evidence) is never confirmed, whatever its check and the verdict: it is a gap.
    The claims are ranked by relevance to `scope` and the answer's lead is decided here.
    """
    lang = detect_language(question)
    output = structured or ExecutorOutput()
    checks = {c.claim_id: c for c in verifier_output.claim_checks}
    allowed_claims: list[ComposerClaim] = []
    hypotheses: list[ComposerHypothesis] = []
    missing: list[str] = []
    filtered: list[FilteredItem] = []

    def keep_away(source: str, text: str, reason: Message, moved_to: str = "dropped") -> None:
        filtered.append(FilteredItem(source=source, text=text, reason=render(reason, "en"), msg=reason,
                                     moved_to=moved_to))  # type: ignore[arg-type]

    def demote(source: str, text: str, reason: Message) -> None:
        softened = soften(text)
        if softened:
            hypotheses.append(ComposerHypothesis(hypothesis_text=softened))
            if softened != text:
                reason.then.append(msg("filter.certainty_removed"))
            keep_away(source, text, reason, "allowed_hypotheses")
        else:
            missing.append(tr("gap.overstated", lang))
            reason.then.append(msg("filter.certainty_only"))
            keep_away(source, text, reason, "missing_info")

    for i, claim in enumerate(output.claims):
        if not claim.written_as_object:
            continue
        cid, ctype, text = claim.key, claim.claim_type or "", claim.claim_text or ""
        source = claim_target(i)  # the written position, as the gatekeeper's targets name it
        check = checks.get(cid)
        verification = check.verification if check else "unsupported"
        why = verification
        if cid in unbacked:
            missing.append(tr("gap.external_unknown", lang))
            keep_away(source, text, _because(msg("filter.unbacked", why=why), check), "missing_info")
        elif verification in ("direct_observation", "reasonable_inference"):
            if verdict == "REJECT" and (verification != "direct_observation" or ctype == "root_cause"):
                keep_away(source, text, _because(msg("filter.reject_not_direct", why=why), check))
            elif ctype == "root_cause" and (verdict != "PASS" or verification != "direct_observation"):
                demote(source, text, _because(msg("filter.root_cause", why=why), check))
            else:
                allowed_claims.append(ComposerClaim(claim_id=cid, claim_type=ctype, claim_text=text))
        elif verification == "overstated":
            if verdict == "REJECT":
                missing.append(tr("gap.overstated", lang))
                keep_away(source, text, _because(msg("filter.overstated_reject", why=why), check), "missing_info")
            else:
                demote(source, text, _because(msg("filter.downgraded", why=why), check))
        elif verification == "unsupported":
            softened = soften(text)
            missing.append(tr("gap.unsupported", lang, text=softened) if softened else tr("gap.overstated", lang))
            keep_away(source, text, _because(msg("filter.unsupported", why=why), check), "missing_info")
        elif verification == "external_unknown":
            missing.append(tr("gap.external_unknown", lang))
            keep_away(source, text, _because(msg("filter.external", why=why), check), "missing_info")
        else:
            keep_away(source, text, _because(msg("filter.contradicted", why=why), check))

    hyp_checks = {h.hypothesis_index: h for h in verifier_output.hypothesis_checks}
    for i, hyp in enumerate(output.hypotheses):
        if not hyp.written_as_object:
            continue
        text, needed = hyp.hypothesis_text or "", list(hyp.needed_evidence)
        hcheck = hyp_checks.get(i)
        if hcheck is not None and hcheck.verification != "reasonable_hypothesis":
            keep_away(f"hypotheses[{i}]", text, msg("filter.hypothesis_check", verification=hcheck.verification))
        else:
            hypotheses.append(ComposerHypothesis(hypothesis_text=text, needed_evidence=needed))
    if verdict == "REJECT":
        for h in hypotheses:
            keep_away("hypotheses", h.hypothesis_text, msg("filter.reject_hypotheses"))
        hypotheses = []

    missing += [item for item in output.missing_info if item.strip()]

    actions: list[ComposerAction] = []
    for i, action in enumerate(output.recommended_actions):
        if not action.written_as_object:
            continue
        text, reason = action.action_text or "", action.reason or ""
        if verdict == "REJECT" and not is_evidence_gathering(text):
            keep_away(f"recommended_actions[{i}]", text, msg("filter.reject_action"))
            continue
        actions.append(ComposerAction(action_text=text, reason=reason))
    if verdict == "REJECT" and not actions:
        actions = fixed_actions(lang)

    window = scope.time_window if scope else None
    for cov in coverage:
        if window is not None and isinstance(cov.msg, Message) and cov.msg.says("coverage.outside_window"):
            shown = window.text or f"{window.start} - {window.end}"
            missing.append(tr("gap.partly_outside", lang, service=cov.service, window=shown)
                           if cov.status in ("answered", "healthy") else
                           tr("gap.outside", lang, service=cov.service, window=shown))
    ranked = rank_claims(allowed_claims, scope)
    services = list(scope.services) if scope else []
    services += [e.value for c in ranked for e in extract_entities(c.claim_text) if e.kind == "service"]
    missing, hypotheses, closed = drop_closed(list(dict.fromkeys(missing)), hypotheses, ranked, services)
    for text in closed:
        keep_away("missing_info", text, msg("filter.gap_closed"))
    ranked, hypotheses, actions, elsewhere = _scoped(ranked, hypotheses, actions, scope)
    composer_input = ComposerInput(
        original_query=question,
        verdict=verdict,
        allowed_claims=ranked,
        allowed_hypotheses=hypotheses,
        missing_info=missing,
        recommended_actions=actions,
        rationale=verifier_output.rationale,
        answer_lead=decide_lead(verdict, ranked, hypotheses, scope, coverage, form),
        key_claim_ids=key_claims(ranked, scope, max_key_facts),
        question_scope=scope,
        elsewhere=elsewhere,
    )
    return composer_input, filtered


def _scoped(claims: list[ComposerClaim], hypotheses: list[ComposerHypothesis], actions: list[ComposerAction],
            scope: QuestionScope | None) -> tuple[list[ComposerClaim], list[ComposerHypothesis], list[ComposerAction], list[str]]:
    """Law 8, scope: what is about components outside the question, and not linked by the evidence
    to an asked service, leaves the answer's sections for "elsewhere in the evidence"; a linked
    cause keeps the fact that links it."""
    kept_claims = [c for c in claims if on_topic(c.claim_text, claims, scope)[0]]
    elsewhere = [c.claim_text for c in claims if c not in kept_claims]
    kept_hyps = []
    for h in hypotheses:
        inside, link = on_topic(h.hypothesis_text, kept_claims, scope)
        if inside:
            kept_hyps.append(h.model_copy(update={"link": link}) if link else h)
        else:
            elsewhere.append(h.hypothesis_text)
    kept_actions = [a for a in actions if on_topic(a.action_text, kept_claims, scope)[0]]
    elsewhere += [a.action_text for a in actions if a not in kept_actions]
    return kept_claims, kept_hyps, kept_actions, elsewhere


# --- the stage ---------------------------------------------------------------------------------

def parse_composer_output(raw: str) -> ComposerOutput:
    """Strict JSON (one object, optionally inside a code fence) -> ComposerOutput; raises ValueError."""
    data, why = read_object(strip_wrappers(raw))
    if data is None:
        raise ValueError(f"composer output: {why}")
    return ComposerOutput.model_validate(data)


def run_composer(
    ctx: StageContext,
    provider: Composes,
    composer_input: ComposerInput,
    *,
    enabled: bool,
    parse_status: ParseStatus,
    filtered: Sequence[FilteredItem] = (),
    min_overlap: float = 0.5,
) -> tuple[ComposerOutput, ComposerGuardResult, str]:
    """(composer output actually used, guard result, final answer text)."""
    language = ctx.language if ctx.language in ("zh", "en") else detect_language(composer_input.original_query)

    def template(guard: ComposerGuardResult) -> tuple[ComposerOutput, ComposerGuardResult, str]:
        out = templates.render(composer_input, language)
        return out, guard.model_copy(update={"used_template": True}), out.user_facing_answer

    if not enabled or parse_status.status != "valid":
        why = msg("guard.disabled") if not enabled else msg("guard.parse_status", status=parse_status.status)
        return template(_guard("skipped", why))
    try:
        raw = provider.compose(ctx, composer_input)
        output = parse_composer_output(raw if isinstance(raw, str) else json.dumps(raw))
    except StageFailure as exc:
        return template(_guard("fail", msg("guard.provider_failed", error=str(exc)[:300]),
                               [ComposerGuardViolation(kind="malformed", token="provider failure")]))
    except (ValueError, ValidationError, TypeError) as exc:
        return template(_guard("fail", msg("guard.not_contract", error=str(exc)[:300]),
                               [ComposerGuardViolation(kind="malformed", token=type(exc).__name__)]))
    guard = judge_answer(output, composer_input, services=ctx.services, filtered=filtered, min_overlap=min_overlap)
    if guard.status != "pass":
        return template(guard)
    return output, guard, output.user_facing_answer


def _because(reason: Message, check: ClaimCheck | None) -> Message:
    """A filter reason for a claim; one the verifier left unchecked says so (it counts as unsupported)."""
    if check is None:
        reason.then.append(msg("filter.no_check"))
    return reason


def _guard(status: str, why: Message, violations: Sequence[ComposerGuardViolation] = ()) -> ComposerGuardResult:
    return ComposerGuardResult(status=status, violations=list(violations), detail=render(why, "en"),  # type: ignore[arg-type]
                               msg=why)
