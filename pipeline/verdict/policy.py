"""The verdict policy (docs/spec.md#verdict-policy): the one place that decides PASS / LOW_CONFID /
REJECT and says why.

Every caller (a live session, `workbench check`, gatekeeper replay, eval, import) hands in what it
knows and gets a `VerdictDecision` back; nothing else downgrades or lifts a verdict (law 2, law 3,
law 8). It reads only contracts and text: rule impacts arrive as a plain mapping and the entity rules as
a set of ids (each kind declares it: pipeline/gatekeeper/kinds.py), so this module sits below the
gatekeeper, the stages and the providers. Each judgement the columnar replay makes over arrays
(pipeline/replay/columns.py) sits beside the one for a session that it mirrors.

The order of judgement:
1. parse status: missing/malformed output -> LOW_CONFID, groundedness 0 (nothing to extract);
2. gatekeeper findings on a claim make its check at least `unsupported` (an entity mismatch:
   `external_unknown`); a claim none of whose bindings is evidence (`unbacked_claims`) too;
3. the claim matrix (docs/spec.md#verdict-matrix) over the corrected checks;
4. the gatekeeper floor from the failed rules' verdictImpact (a fail is never PASS);
5. question coverage, tool failures and an unclosed retry: each keeps the verdict off PASS;
6. the verifier's own verdict: the stricter one wins, it never lifts.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import reduce

import numpy as np
import numpy.typing as npt

from pipeline.core.contracts import (
    VERDICT_ORDER,
    ClaimCheck,
    ClaimVerification,
    ExecutorClaim,
    ExecutorOutput,
    FormCoverage,
    GatekeeperError,
    GatekeeperResult,
    RetryContext,
    ServiceCoverage,
    ToolInvocation,
    Verdict,
)
from pipeline.core.feature_shapes import parse_target
from pipeline.core.messages import Message, lang_of, msg, render, tr
from pipeline.text.primitives import extract_entities

# Matrix "core" claims; when a diagnosis has none of these types every claim counts as core, so
# the matrix never judges an empty set.
CORE_TYPES = frozenset({"root_cause", "symptom", "impact"})
# An external_unknown claim naming one of these kinds brings in a service, id, code or value
# (docs/spec.md#claim-verification): a core fabrication, whatever its claim type.
CORE_ENTITY_KINDS = frozenset(
    {"service", "instance", "identifier", "error_code", "http_status", "percentage", "quantity", "version"}
)
# Critical facts weigh double in groundedness (docs/spec.md#facts-checked).
CRITICAL_TYPES = frozenset({"root_cause", "symptom", "impact", "risk"})
SUPPORT_WEIGHT: dict[str, float] = {
    "direct_observation": 1.0, "reasonable_inference": 0.7, "overstated": 0.3,
    "unsupported": 0.0, "external_unknown": 0.0, "contradicted": 0.0,
}
_WEAK = frozenset({"unsupported", "external_unknown", "contradicted"})
VERDICTS: tuple[Verdict, ...] = ("PASS", "LOW_CONFID", "REJECT")  # by VERDICT_ORDER code
_IMPACT_FLOOR: dict[str, Verdict] = {"reject_on_fail": "REJECT", "low_confid_on_fail": "LOW_CONFID"}


@dataclass(frozen=True)
class VerdictDecision:
    verdict: Verdict
    # Every reason the verdict is not PASS, strictest first; empty for a PASS.
    messages: list[Message]
    # The claim checks the verdict was decided on (the verifier's, corrected by the gatekeeper).
    claim_checks: list[ClaimCheck]
    groundedness_score: float
    # Gaps the answer must state (an unanswered service, an unclosed retry), in the question's language.
    missing_info: list[str] = field(default_factory=list)

    @property
    def reasons(self) -> list[str]:
        """The reasons in English, as `verdict_guard_reasons` stores them."""
        return [render(m, "en") for m in self.messages]


def stricter(a: Verdict, b: Verdict) -> Verdict:
    return a if VERDICT_ORDER[a] >= VERDICT_ORDER[b] else b


def groundedness(claim_checks: Iterable[ClaimCheck], claims: Iterable[ExecutorClaim]) -> float:
    """Weighted mean support of the claims, in [0, 1].

    score = sum(w_c * s_c) / sum(w_c) over every claim c, where s_c is SUPPORT_WEIGHT of its
    check (0 for a claim without one) and w_c = 2 for a critical claim (CRITICAL_TYPES), else 1.
    No claims -> 0.0 (nothing is grounded). Computed in code so the score means the same
    whichever verifier produced the checks.
    """
    verdicts = {c.claim_id: c.verification for c in claim_checks}
    total = weight_sum = 0.0
    for claim in claims:
        weight = 2.0 if claim.claim_type in CRITICAL_TYPES else 1.0
        total += weight * SUPPORT_WEIGHT.get(verdicts.get(claim.key, "unsupported"), 0.0)
        weight_sum += weight
    return round(total / weight_sum, 4) if weight_sum else 0.0


def gatekeeper_floor(failed_rules: Iterable[str], rule_impacts: Mapping[str, str | None]) -> Verdict:
    """The verdict a set of failed rules allows at best. A rule without a known impact (dropped
    from the files, or warn_only) still failed: LOW_CONFID."""
    floor: Verdict = "PASS"
    for rule_id in failed_rules:
        floor = stricter(floor, _IMPACT_FLOOR.get(rule_impacts.get(rule_id) or "", "LOW_CONFID"))
    return floor


def gatekeeper_floor_codes(failed: Mapping[str, npt.NDArray[np.bool_]], rule_impacts: Mapping[str, str | None],
                           sessions: int) -> npt.NDArray[np.int8]:
    """gatekeeper_floor over arrays, as VERDICT_ORDER codes: `failed` holds per rule the sessions it failed."""
    floor = np.zeros(sessions, dtype=np.int8)
    for rule_id, fail in failed.items():
        impact = np.int8(VERDICT_ORDER[gatekeeper_floor([rule_id], rule_impacts)])
        np.maximum(floor, impact, out=floor, where=fail)
    return floor


def apply_gatekeeper(
    claim_checks: Sequence[ClaimCheck], claims: Sequence[ExecutorClaim], gate: GatekeeperResult,
    rule_impacts: Mapping[str, str | None], *, entity_rules: Collection[str],
) -> tuple[list[ClaimCheck], list[Message]]:
    """The gatekeeper over the verifier (docs/spec.md#gatekeeper-result): a claim hit by a failed
    (non-warn_only) rule, or left without any binding that is evidence, is at least unsupported,
    whatever the verifier said; hit by one of `entity_rules`, external_unknown. The composer filter
    trusts claim_checks, so they are corrected before anything reads them. `claims` are the
    output's claims in their written positions (a finding's target names a position)."""
    # claim id -> (the rule that failed on it, "" for unbacked, its message)
    failing: dict[str, tuple[str, GatekeeperError]] = {}
    for err in gate.errors:
        index = claim_index(err.target)
        if index is not None and err.rule_id in gate.failed_rules and rule_impacts.get(err.rule_id) != "warn_only":
            if index < len(claims) and claims[index].written_as_object:
                failing.setdefault(claims[index].key, (err.rule_id, err))
    for claim_id in gate.unbacked_claims:
        failing.setdefault(claim_id, ("", GatekeeperError(rule_id="", target="", message="")))
    checks = {c.claim_id: c for c in claim_checks}
    reasons: list[Message] = []
    for claim_id, (rule_id, err) in failing.items():
        check = checks.get(claim_id)
        verification = overridden(check.verification if check is not None else None, rule_id in entity_rules)
        if verification is None:
            continue
        said = check.verification if check is not None else "nothing"
        reasons.append(msg("policy.gk_override", claim=claim_id, said=said, rule=rule_id, verification=verification)
                       if rule_id else msg("policy.gk_override_unbacked", claim=claim_id, said=said, verification=verification))
        base = check or ClaimCheck(claim_id=claim_id, verification=verification)
        # The check's detail names what failed and the finding; a finding without a code (a rule
        # kind that has none) is kept as its English text.
        why = msg("policy.check_rule", rule=rule_id) if rule_id else msg("policy.check_unbacked")
        if err.msg:
            why.then.append(err.msg)
        detail = f"gatekeeper rule {rule_id}: {err.message}" if rule_id and not err.msg else render(why, "en")
        checks[claim_id] = base.model_copy(update={"verification": verification, "detail": detail,
                                                   "msg": None if rule_id and not err.msg else why})
    return list(checks.values()), reasons


def apply_gatekeeper_codes(hits: Iterable[tuple[bool, npt.NDArray[np.bool_], npt.NDArray[np.bool_]]],
                           backed: npt.NDArray[np.bool_], c_session: npt.NDArray[np.int32]) -> npt.NDArray[np.int8]:
    """apply_gatekeeper over arrays of claims: which of claim_standings' standings each claim takes
    (UNTOUCHED, HIT or ENTITY_HIT). `hits` holds per failed blocking rule, in rule order, whether it
    is an entity rule, the claims with a finding of it in them and the sessions it failed; the
    first that hits a claim decides, as the first finding does above; a claim none of whose
    bindings is evidence (`backed` False) is hit."""
    standing = np.zeros(len(c_session), dtype=np.int8)
    for entity, in_claim, failed in hits:
        # Only claims with a finding and no standing yet are looked up: a few of all claims.
        open_claims = np.flatnonzero(in_claim & (standing == UNTOUCHED))
        standing[open_claims[failed[c_session[open_claims]]]] = ENTITY_HIT if entity else HIT
    out: npt.NDArray[np.int8] = np.where((standing == UNTOUCHED) & ~backed, HIT, standing).astype(np.int8)
    return out


def claim_index(target: str) -> int | None:
    """The claim a finding's target lies in ("claims[2].evidence_bindings[0]" -> 2), if any."""
    at = parse_target(target)
    return at[0] if at else None


def overridden(said: ClaimVerification | None, entity: bool) -> ClaimVerification | None:
    """What a gatekeeper hit (by an entity rule, or another rule / no evidence) makes of a claim
    whose check said `said` (None: no check); None when the check stands (already weak)."""
    if said is not None and said in _WEAK:
        return None
    return "external_unknown" if entity else "unsupported"


def claim_level(claim: ExecutorClaim, verification: str, core: bool) -> Verdict:
    """What one claim with this verification allows at best in the matrix (docs/spec.md#verdict-matrix)."""
    if verification == "contradicted":
        return "REJECT"
    if verification == "external_unknown":
        names_core = any(e.kind in CORE_ENTITY_KINDS for e in extract_entities(claim.claim_text or ""))
        return "REJECT" if core or names_core else "LOW_CONFID"
    return "LOW_CONFID" if verification in ("unsupported", "overstated") else "PASS"


UNTOUCHED, HIT, ENTITY_HIT = 0, 1, 2  # a ClaimStanding's fields in order: the columns of the replay's standings


@dataclass(frozen=True)
class ClaimStanding:
    """One claim's place in the matrix under each gatekeeper outcome for it: untouched, hit by a
    rule other than the entity rule (or left without evidence), hit by the entity rule; and
    whether, untouched, it is a core claim observed directly."""

    untouched: Verdict
    hit: Verdict
    entity_hit: Verdict
    direct_core: bool


def claim_standings(claims: Sequence[ExecutorClaim], claim_checks: Iterable[ClaimCheck]) -> list[ClaimStanding]:
    """Per claim, what apply_gatekeeper and claims_verdict make of it under each outcome: the
    columnar replay (pipeline/replay/columns.py) combines these instead of re-running both."""
    checks = {c.claim_id: c.verification for c in claim_checks}
    core = _core_ids(claims)
    out = []
    for claim in claims:
        cid = claim.key
        said, is_core = checks.get(cid), cid in core
        untouched, hit, entity_hit = (claim_level(claim, (v if v is not None else said) or "unsupported", is_core)
                                      for v in (None, overridden(said, False), overridden(said, True)))
        out.append(ClaimStanding(untouched, hit, entity_hit, direct_core=is_core and said == "direct_observation"))
    return out


def _core_ids(claims: Sequence[ExecutorClaim]) -> set[str]:
    core = {c.key for c in claims if c.claim_type in CORE_TYPES}
    return core or {c.key for c in claims}


def verdict_code(strictest: npt.ArrayLike, direct_core: npt.ArrayLike, gate_floor: npt.ArrayLike = 0,
                 unbacked: npt.ArrayLike = False, evidence: npt.ArrayLike = 0) -> npt.NDArray[np.int8]:
    """The verdict matrix and the floors over it, as VERDICT_ORDER codes (docs/spec.md#verdict-matrix):
    the strictest claim level; LOW_CONFID when no core claim is observed directly; the failed
    rules' floor (gatekeeper_floor); LOW_CONFID when a claim is left without evidence; the
    evidence floor (evidence_floor). The strictest term wins. The terms are scalars for one
    session (decide_verdict) or numpy arrays with one element per session (the columnar replay,
    pipeline/replay/columns.py): both judge with this one function."""
    terms = [np.asarray(strictest, dtype=np.int8), np.logical_not(direct_core).astype(np.int8),
             np.asarray(gate_floor, dtype=np.int8), np.asarray(unbacked, dtype=bool).astype(np.int8),
             np.asarray(evidence, dtype=np.int8)]
    code: npt.NDArray[np.int8] = reduce(np.maximum, terms)
    return code


def claims_verdict(
    claims: Sequence[ExecutorClaim], claim_checks: Iterable[ClaimCheck]
) -> tuple[Verdict, list[Message]]:
    """The matrix (docs/spec.md#verdict-matrix) over claim checks alone. A claim without a check
    counts as unsupported; any contradicted claim rejects; an external_unknown core claim, or one
    naming a core entity (service, id, error code, value), rejects; other weak claims keep it
    LOW_CONFID."""
    if not claims:
        return "LOW_CONFID", [msg("policy.no_claims")]
    checks = {c.claim_id: c.verification for c in claim_checks}
    core = _core_ids(claims)
    reject: list[Message] = []
    low: list[Message] = []
    strictest = 0
    for claim in claims:
        cid = claim.key
        verification = checks.get(cid, "unsupported")
        label: dict[str, str] = {"claim": cid, "type": claim.claim_type or "?"}
        level = claim_level(claim, verification, cid in core)
        strictest = max(strictest, VERDICT_ORDER[level])
        if verification == "contradicted":
            reject.append(msg("policy.contradicted", **label))
        elif verification == "external_unknown":
            if level == "REJECT":
                reject.append(msg("policy.external_core", **label))
            else:
                low.append(msg("policy.external_background", **label))
        elif level == "LOW_CONFID":
            low.append(msg("policy.weak", verification=verification, **label) if cid in checks
                       else msg("policy.weak_unchecked", verification=verification, **label))
    direct = any(checks.get(cid) == "direct_observation" for cid in core)
    if not direct:
        low.append(msg("policy.no_direct_core"))
    return VERDICTS[int(verdict_code(strictest, direct))], reject + low


def evidence_gaps(coverage: Sequence[ServiceCoverage],
                  invocations: Sequence[ToolInvocation]) -> tuple[list[ServiceCoverage], list[ToolInvocation]]:
    """The question's pairs left unanswered and the tool calls that failed: each leaves the
    evidence incomplete, whatever the claims say."""
    return ([cov for cov in coverage if cov.status not in ("answered", "healthy")],
            [inv for inv in invocations if inv.status == "error"])


def evidence_floor(coverage: Sequence[ServiceCoverage], invocations: Sequence[ToolInvocation],
                   form: FormCoverage | None = None) -> Verdict:
    """The verdict the session's evidence allows at best: LOW_CONFID with any gap of evidence_gaps,
    or when the question's form is not answered (pipeline.verdict.form)."""
    gaps, failed = evidence_gaps(coverage, invocations)
    return "LOW_CONFID" if gaps or failed or (form is not None and form.status == "not_answered") else "PASS"


def decide_verdict(
    *,
    parse_status: str,
    structured: ExecutorOutput | None,
    claim_checks: Sequence[ClaimCheck],
    gatekeeper: GatekeeperResult,
    rule_impacts: Mapping[str, str | None],
    entity_rules: Collection[str],
    gatekeeper_enabled: bool = True,
    verifier_verdict: Verdict | None = None,
    coverage: Sequence[ServiceCoverage] = (),
    form: FormCoverage | None = None,
    invocations: Sequence[ToolInvocation] = (),
    retry_context: RetryContext | None = None,
    retry_gaps_closed: bool | None = None,
    language: str = "en",
) -> VerdictDecision:
    """The verdict and every reason it is not PASS (see the module docstring for the order).

    `invocations` are the session's tool calls: a failed one leaves the evidence incomplete.
    `retry_gaps_closed` is the verifier's judgement of a retry round (None: not judged).
    With the gatekeeper switched off (docs/spec.md#switches) its result is ignored.
    """
    lang = lang_of(language)
    gate = gatekeeper if gatekeeper_enabled else GatekeeperResult()
    if parse_status != "valid":
        reasons = [msg("policy.parse_status", status=parse_status)]
        return _finish("LOW_CONFID", reasons, [], 0.0, [], verifier_verdict)
    checks, reasons = apply_gatekeeper(claim_checks, structured.claims if structured else [], gate, rule_impacts,
                                       entity_rules=entity_rules)
    claims = structured.claim_objects() if structured else []
    matrix, matrix_reasons = claims_verdict(claims, checks)
    reasons += matrix_reasons
    floor = gatekeeper_floor(gate.failed_rules, rule_impacts)
    open_pairs, failed = evidence_gaps(coverage, invocations)
    verdict = VERDICTS[int(verdict_code(VERDICT_ORDER[matrix], True, VERDICT_ORDER[floor], bool(gate.unbacked_claims),
                                        VERDICT_ORDER[evidence_floor(coverage, invocations, form)]))]
    for rule_id in gate.failed_rules:
        impact = rule_impacts.get(rule_id) or "unknown impact"
        reason = msg("policy.rule_failed", rule=rule_id, impact=impact)
        if impact == "reject_on_fail":
            reasons.insert(0, reason)
        else:
            reasons.append(reason)
    for claim_id in gate.unbacked_claims:
        reasons.append(msg("policy.unbacked", claim=claim_id))

    missing_info: list[str] = []
    # A service nothing was found for is the plainest reason there is: it leads, and says so in
    # those words (an empty diagnosis and a failed schema rule follow from it).
    reasons[:0] = [msg("policy.no_evidence", service=cov.service, symptom=cov.symptom or "any",
                       calls=", ".join(f"#{i}" for i in cov.invocation_ids))
                   for cov in open_pairs if _found_nothing(cov)]
    for cov in open_pairs:
        if not _found_nothing(cov):
            reasons.append(msg("policy.coverage_symptom", service=cov.service, symptom=cov.symptom or "any",
                               status=cov.status))
        # The row's own finding ("176 records ... returned, but no verified claim is about them"),
        # never a stock sentence that could contradict what the trace shows beside it.
        missing_info.append(_sentence(render(gap_message(cov), lang), lang))
    if form is not None and form.status == "not_answered":
        reason = msg("policy.form_open", form=form.form)
        if isinstance(form.msg, Message):
            reason.then.append(form.msg)
        reasons.append(reason)
    if failed:
        reasons.append(msg("policy.tools_failed", calls=", ".join(f"{inv.model_tool_name} #{inv.id}" for inv in failed)))
    if retry_context is not None and retry_gaps_closed is False:
        verdict = stricter(verdict, "LOW_CONFID")
        reasons.append(msg("policy.retry_open", round=retry_context.round))
        # Generic on purpose: the unclosed items are unsupported text and must not reach the composer.
        gaps = len(retry_context.unsupported_claims) + len(retry_context.missing_info)
        missing_info.append(tr("policy.retry_gap", lang, gaps=gaps))
    return _finish(verdict, reasons, checks, groundedness(checks, claims), missing_info, verifier_verdict)


def decide_verdict_codes(*, chosen: npt.NDArray[np.intp], c_session: npt.NDArray[np.int32], levels: npt.NDArray[np.int8],
                         direct_core: npt.NDArray[np.bool_], standing: npt.NDArray[np.int8], backed: npt.NDArray[np.bool_],
                         gate_floor: npt.NDArray[np.int8], evidence: npt.NDArray[np.int8]) -> npt.NDArray[np.int8]:
    """decide_verdict over arrays, as VERDICT_ORDER codes per session, from the `chosen` claims
    (per claim: its session index, its claim_standings levels as (claims, 3) codes, whether
    untouched it is a core claim observed directly, the standing apply_gatekeeper_codes gave it,
    whether any of its bindings is evidence), the failed rules' floor and the evidence floor."""
    sessions = len(gate_floor)
    session, taken = c_session[chosen], standing[chosen]
    strictest = np.zeros(sessions, dtype=np.int8)
    np.maximum.at(strictest, session, levels[chosen, taken])
    direct = np.bincount(session[direct_core[chosen] & (taken == UNTOUCHED)], minlength=sessions) > 0
    unbacked = np.bincount(session[~backed[chosen]], minlength=sessions) > 0
    return verdict_code(strictest, direct, gate_floor, unbacked, evidence)


def _finding(cov: ServiceCoverage) -> Message | None:
    """A coverage row's finding as a Message (a row built in code may still hold it as a dict)."""
    return cov.msg if isinstance(cov.msg, Message) else (
        Message.model_validate(cov.msg) if isinstance(cov.msg, Mapping) else None)


def _found_nothing(cov: ServiceCoverage) -> bool:
    """Whether the service's queries returned no record at all (not: records no claim speaks of)."""
    finding = _finding(cov)
    return cov.status == "no_data" and finding is not None and finding.code == "coverage.no_records"


def gap_message(cov: ServiceCoverage) -> Message:
    """What the answer says about a pair left unanswered: the row's own finding, then that the
    question about it is open. Built from the row, so the gap never contradicts the trace."""
    base = _finding(cov)
    gap = msg("coverage.unanswered", service=cov.service, symptom=cov.symptom)
    if base is None:
        return gap
    return base.model_copy(update={"then": [*base.then, gap]})


def _sentence(text: str, lang: str) -> str:
    text = text[:1].upper() + text[1:] if lang == "en" else text
    return text + tr("common.stop", lang)


def _finish(verdict: Verdict, reasons: list[Message], checks: list[ClaimCheck], score: float, missing_info: list[str],
            verifier_verdict: Verdict | None) -> VerdictDecision:
    if verifier_verdict is not None and VERDICT_ORDER[verifier_verdict] > VERDICT_ORDER[verdict]:
        reasons.insert(0, msg("policy.verifier_stricter", verdict=verifier_verdict))
        verdict = verifier_verdict
    elif verifier_verdict is not None and verifier_verdict != verdict:
        reasons.insert(0, msg("policy.verifier_differs", said=verifier_verdict, verdict=verdict))
    return VerdictDecision(verdict=verdict, messages=reasons if verdict != "PASS" else [], claim_checks=checks,
                           groundedness_score=score, missing_info=missing_info)
