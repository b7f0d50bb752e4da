"""Trace page read model: one session's claims, bindings, digests and hypotheses with what the
gatekeeper, verifier and composer filter said about each, and its verdict in force beside its verdict
at ask."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import func, select

from pipeline.core.config import Settings
from pipeline.core.contracts import (
    ClaimCheck,
    DigestCheck,
    EvidenceDigest,
    ExecutorBinding,
    ExecutorClaim,
    FormCoverage,
    GatekeeperError,
    HypothesisCheck,
    Proposition,
    QuestionScope,
    RoundAudit,
    ServiceCoverage,
)
from pipeline.core.feature_shapes import (
    EntityMiss,
    OtherMatch,
    SourceEntry,
    TargetFeatures,
    binding_target,
    claim_target,
    digest_target,
)
from pipeline.core.messages import Message, render, tr, value_name
from pipeline.store import Store
from pipeline.store.record import ReviewRecord, SessionRecord, read_session
from pipeline.store.schema import DiagnosisSession, RulesInForce, VerdictInForce

GOOD_CHECKS = ("direct_observation", "reasonable_inference")


def under(target: str, prefix: str) -> bool:
    """Whether a gatekeeper target path lies at or below `prefix` ("claims[1]" is not under "claims[10]")."""
    return target == prefix or target.startswith((prefix + ".", prefix + "["))


def _gate_errors(record: SessionRecord) -> list[GatekeeperError]:
    return list(record.evaluation.gatekeeper_result.errors) if record.evaluation else []


@dataclass
class BindingView:
    target: str
    binding: ExecutorBinding
    # Where the excerpt was found: invocation, similarity and decoded-text spans (None when not located).
    invocation_id: int | None
    score: float | None
    spans: list[tuple[int, int]]
    cited_spans: list[tuple[int, int]]  # the records the binding cites, marked in its window
    source_scores: dict[str, float | None]
    entity_misses: list[EntityMiss]
    added_words: list[str]
    other_match: OtherMatch | None
    errors: list[GatekeeperError]


@dataclass
class ClaimCard:
    index: int
    target: str
    claim: ExecutorClaim
    claim_check: ClaimCheck | None
    errors: list[GatekeeperError]  # every gatekeeper error at or below claims[i]
    bindings: list[BindingView]
    composer: str  # "allowed" or where the composer-input filter moved it ("missing_info", ...)
    filter_reason: str = ""
    filter_msg: Message | None = None  # filter_reason as code + parameters, for the reader's language
    reviews: list[ReviewRecord] = field(default_factory=list)

    @property
    def has_findings(self) -> bool:
        """What a reviewer should look at: a gatekeeper error, a weak check, or kept from the answer."""
        check = self.claim_check.verification if self.claim_check else None
        return bool(self.errors) or check not in GOOD_CHECKS or self.composer != "allowed"


def claims_labelled_session_not(record: SessionRecord, cards: list[ClaimCard]) -> bool:
    """Every flagged claim among `cards` has a review but the session has none: the moment to offer
    the session's own label, which is what takes it out of the review queue."""
    flagged = [c for c in cards if c.has_findings]
    return bool(flagged) and not record.session_reviews and all(c.reviews for c in flagged)


def _binding_view(target: str, binding: ExecutorBinding, feats: TargetFeatures | None,
                  errors: list[GatekeeperError]) -> BindingView:
    feats = feats or {}
    sources = feats.get("sources", {})
    out: SourceEntry = sources.get("output") or {"score": None}
    return BindingView(
        target=target,
        binding=binding,
        invocation_id=out.get("invocation_id"),
        score=out["score"],
        spans=[(s, e) for s, e in out.get("spans", ())],
        cited_spans=[(s, e) for s, e in out.get("record_spans", ())],
        source_scores={name: s["score"] for name, s in sources.items()},
        entity_misses=list(feats.get("entities", ())),
        added_words=[a["text"] for a in feats.get("added", ())],
        other_match=feats.get("other_match"),
        errors=[e for e in errors if under(e.target, target)],
    )


def claim_cards(record: SessionRecord) -> list[ClaimCard]:
    """One card per executor claim, with everything the gatekeeper, verifier and filter said about it."""
    ev = record.evaluation
    errors = _gate_errors(record)
    checks = {c.claim_id: c for c in ev.claim_checks} if ev else {}
    allowed = {c.claim_id for c in ev.composer_input.allowed_claims} if ev and ev.composer_input else set()
    filtered = {f.source: f for f in ev.composer_filtered} if ev else {}
    cards = []
    for ci, claim in enumerate(record.claims):
        target = claim_target(ci)
        own = [e for e in errors if under(e.target, target)]
        moved = filtered.get(target)
        cards.append(ClaimCard(
            index=ci,
            target=target,
            claim=claim,
            claim_check=checks.get(claim.key),
            errors=own,
            bindings=[_binding_view(binding_target(ci, bi), b, record.features.get(binding_target(ci, bi)), own)
                      for bi, b in enumerate(claim.evidence_bindings or ())],
            composer="allowed" if claim.key in allowed else (moved.moved_to if moved else "dropped"),
            filter_reason=moved.reason if moved else "",
            filter_msg=moved.msg if moved else None,
            reviews=record.claim_reviews(claim.key),
        ))
    return cards


def verdict_reasons(ev: RoundAudit, lang: str) -> list[str]:
    """Why the verdict is not PASS, in `lang`; a session stored before reasons had codes keeps its English."""
    return [render(m, lang) for m in ev.verdict_reasons] if ev.verdict_reasons else list(ev.verdict_guard_reasons)


def session_level_errors(record: SessionRecord) -> list[GatekeeperError]:
    """Gatekeeper errors that belong to no claim (root, hypotheses, digests ...)."""
    return [e for e in _gate_errors(record) if not e.target.startswith("claims[")]


@dataclass
class HypothesisRow:
    index: int
    text: str  # as the executor wrote it ("" when the check names an index it did not write)
    check: HypothesisCheck


def hypothesis_rows(record: SessionRecord) -> list[HypothesisRow]:
    checks = record.evaluation.hypothesis_checks if record.evaluation else []
    hyps = record.hypotheses
    return [HypothesisRow(h.hypothesis_index,
                          (hyps[h.hypothesis_index].hypothesis_text or "") if 0 <= h.hypothesis_index < len(hyps) else "",
                          h)
            for h in checks]


@dataclass
class DigestRow:
    digest: EvidenceDigest
    target: str
    check: DigestCheck | None
    quote_score: float | None
    quote_invocation_id: int | None
    errors: list[GatekeeperError]


def digest_rows(record: SessionRecord) -> list[DigestRow]:
    """Each digest with its digest_check and quote-location features."""
    checks = {d.digest_id: d for d in record.evaluation.digest_checks} if record.evaluation else {}
    errors = _gate_errors(record)
    rows = []
    for di, d in enumerate(record.evidence_digests):
        target = digest_target(di)
        quote: SourceEntry = record.features.get(target, {}).get("quote") or {"score": None}
        rows.append(DigestRow(d, target, checks.get(d.digest_id), quote["score"], quote.get("invocation_id"),
                              [e for e in errors if under(e.target, target)]))
    return rows


@dataclass
class VerdictChange:
    """A session whose outcome under the rule version in force differs from its outcome at ask,
    with the gatekeeper findings that came and went between the two."""

    at_ask: str | None
    version_at_ask: int | None  # None: stored before versions were recorded
    gatekeeper_at_ask: str | None
    in_force: str
    version_in_force: int
    gatekeeper_in_force: str
    ungated_in_force: bool  # judged with the gatekeeper or an evidence rule off (RuleSet.ungated_by)
    added: list[GatekeeperError]
    removed: list[GatekeeperError]


def verdict_change(settings: Settings, store: Store, session_id: str) -> VerdictChange | None:
    """The session's verdict in force beside its verdict at ask (None: they agree), its findings
    replayed under the version that gave the verdict in force."""
    from pipeline.replay.inputs import SessionInputCache
    from pipeline.replay.per_session import replay
    from pipeline.runs.rulebook import rules_of

    with store.connected() as conn:
        # A row without a version of its own holds the verdict of the version last re-judged under.
        judged = select(RulesInForce.judged_version).where(RulesInForce.id == 1).scalar_subquery()
        row = conn.execute(select(VerdictInForce.verdict, VerdictInForce.gatekeeper_status,
                                  func.coalesce(VerdictInForce.rules_version, judged), VerdictInForce.ungated,
                                  DiagnosisSession.verdict, DiagnosisSession.gatekeeper_status,
                                  DiagnosisSession.rules_version)
                           .join(DiagnosisSession, DiagnosisSession.id == VerdictInForce.session_id)
                           .where(VerdictInForce.session_id == session_id)).first()
    if row is None:
        return None
    verdict, status, version, ungated, at_ask, status_at_ask, version_at_ask = row
    [replayed] = replay(SessionInputCache(store).inputs([session_id]), rules_of(settings, store, version))
    old = _gate_errors(read_session(store, session_id, with_llm_calls=False))
    new = replayed.result.errors

    def key(e: GatekeeperError) -> tuple[str, str, str]:
        return e.rule_id, e.target, e.message

    before, after = {key(e) for e in old}, {key(e) for e in new}
    return VerdictChange(at_ask, version_at_ask, status_at_ask, verdict, version, status, bool(ungated),
                         [e for e in new if key(e) not in before], [e for e in old if key(e) not in after])


@dataclass
class FormView:
    """The question's form, its proposition, and the form row with the coverage row that decided it
    (law 8 extended): what `workbench ask --json` prints and Trace shows beside the coverage."""

    form: str
    proposition: Proposition | None
    row: FormCoverage | None
    decided_by: ServiceCoverage | None

    def proposition_text(self, lang: str) -> str:
        """"cause: pricing-service -> checkout-service", "state: coupon-service healthy?" ("" for none)."""
        p = self.proposition
        if p is None:
            return ""
        negated = tr("proposition.negated", lang) if p.negated else ""
        if p.kind == "cause":
            return tr("proposition.cause", lang, subject=p.subject, target=p.target or "*", negated=negated)
        if p.kind == "state":
            return tr("proposition.state", lang, subject=p.subject or "*", expects=value_name(p.expects, lang),
                      negated=negated)
        if p.kind == "value":
            return tr("proposition.value", lang, subject=p.subject or "*", key=p.key or "version", value=p.value,
                      negated=negated)
        return tr("proposition.symptom", lang, subject=p.subject or "*", negated=negated)

    def as_json(self) -> dict[str, object]:
        return {"question_form": self.form,
                "proposition": self.proposition.model_dump(mode="json") if self.proposition else None,
                "form_coverage": self.row.model_dump(mode="json", exclude={"msg"}) if self.row else None,
                "decided_by": self.decided_by.model_dump(mode="json", exclude={"msg"}) if self.decided_by else None}


def form_view(scope: QuestionScope | None, audit: RoundAudit | None) -> FormView | None:
    if scope is None:
        return None
    row = audit.question_form_coverage if audit else None
    rows = audit.question_coverage if audit else []
    decided = next((c for c in rows if row and c.service == row.service and c.symptom == row.symptom), None)
    return FormView(scope.form, scope.proposition, row, decided)
