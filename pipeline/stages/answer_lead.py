"""What the answer leads with, in code (law 8): the composer input's ranking and first sentence.

- allowed claims are ranked by relevance to the question's scope (asked services, symptom);
  the first N are the key facts, the rest other observations;
- the lead: a confirmed root cause, else the most likely hypothesis about an asked service (or,
  with no service asked, the most likely one), else "no sign of a fault" for asked services the
  coverage shows healthy, else no data for them, else "cause unknown" with the first key fact;
- a gap that a confirmed fact already closes is dropped ("missing jstack" beside a confirmed
  jstack line), and so is such an item of a hypothesis' needed evidence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pipeline.contracts import (
    AnswerLead,
    ComposerClaim,
    ComposerHypothesis,
    QuestionScope,
    ServiceCoverage,
    Verdict,
)
from pipeline.scope import symptom_words
from pipeline.text import normalize

_CORE = {"root_cause": 2.0, "symptom": 1.0, "impact": 1.0}
# Words that describe a gap rather than name the evidence it lacks.
_GAP_FRAME = frozenset(
    "missing lack lacks lacking need needs needed evidence confirm confirmed cannot direction root cause this "
    "that there yet from with more before relying claim something absent gathered unknown whether which".split()
)
_LATIN = re.compile(r"[a-z][a-z0-9_]{3,}")
_NAME = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)+")


def _asked_in(text: str, scope: QuestionScope | None) -> bool:
    if scope is None:
        return False
    norm = normalize(text)
    return any(normalize(s) in norm for s in scope.services)


def _score(c: ComposerClaim, scope: QuestionScope | None) -> float:
    words = [normalize(w) for w in symptom_words(t.strip() for t in (scope.symptom if scope else "").split(","))]
    norm = normalize(c.claim_text)
    return 3.0 * _asked_in(c.claim_text, scope) + _CORE.get(c.claim_type, 0.0) + sum(w in norm for w in words)


def rank_claims(claims: Sequence[ComposerClaim], scope: QuestionScope | None) -> list[ComposerClaim]:
    """Most relevant first: about an asked service, a core type, naming the symptom; stable."""
    return sorted(claims, key=lambda c: -_score(c, scope))


def key_claims(ranked: Sequence[ComposerClaim], scope: QuestionScope | None, limit: int) -> list[str]:
    """The key facts: at most `limit`, and when services were asked only facts about them (another
    service's facts are other observations), unless none is about them."""
    about = [c for c in ranked if _asked_in(c.claim_text, scope)]
    return [c.claim_id for c in (about or list(ranked))[:limit]]


def _distinct_terms(gap: str, services: Sequence[str]) -> list[str]:
    norm = normalize(gap)
    for s in services:
        norm = norm.replace(normalize(s), " ")
    return [t for t in _LATIN.findall(norm) if t not in _GAP_FRAME]


def closed_by(gap: str, claims: Sequence[ComposerClaim], services: Sequence[str]) -> bool:
    """A confirmed claim holds every distinctive term the gap names (terms of 4+ letters that are
    not service names nor gap wording): the evidence the gap asks for is already in hand."""
    terms = _distinct_terms(gap, services)
    return bool(terms) and any(all(t in normalize(c.claim_text) for t in terms) for c in claims)


def drop_closed(
    missing: list[str], hypotheses: list[ComposerHypothesis], claims: Sequence[ComposerClaim], services: Sequence[str]
) -> tuple[list[str], list[ComposerHypothesis], list[str]]:
    """(gaps kept, hypotheses with closed needs removed, gaps dropped)."""
    kept = [g for g in missing if not closed_by(g, claims, services)]
    hyps = [h.model_copy(update={"needed_evidence": [n for n in h.needed_evidence if not closed_by(n, claims, services)]})
            for h in hypotheses]
    return kept, hyps, [g for g in missing if g not in kept]


def _tied(hypothesis: str, claims: Sequence[ComposerClaim], scope: QuestionScope | None) -> bool:
    """A confirmed fact about an asked service names the hypothesis' component, in full or by a
    distinctive part ("redis command timeout" ties cart-service to redis-cart)."""
    asked_parts = {p for svc in (scope.services if scope else []) for p in normalize(svc).split("-")}
    names = set(_NAME.findall(normalize(hypothesis)))
    names |= {p for n in names for p in n.split("-") if len(p) >= 4 and p not in asked_parts and p != "service"}
    return any(_asked_in(c.claim_text, scope) and any(n in normalize(c.claim_text) for n in names) for c in claims)


def decide_lead(
    verdict: Verdict,
    claims: Sequence[ComposerClaim],
    hypotheses: Sequence[ComposerHypothesis],
    scope: QuestionScope | None,
    coverage: Sequence[ServiceCoverage],
) -> AnswerLead:
    asked = list(scope.services) if scope else []
    roots = [c for c in claims if c.claim_type == "root_cause"] if verdict == "PASS" else []
    root = next((c for c in roots if _asked_in(c.claim_text, scope)), roots[0] if roots and not asked else None)
    if root is not None:
        return AnswerLead(kind="cause", support="confirmed", services=asked, text=root.claim_text)
    if verdict != "REJECT" and hypotheses:
        hyp = next((h for h in hypotheses if _asked_in(h.hypothesis_text, scope)), None if asked else hypotheses[0])
        # A cause in a dependency leads only when a confirmed fact ties it to an asked service
        # ("order-service: payment failed ... from api-gateway"); an unrelated incident never does.
        hyp = hyp or next((h for h in hypotheses if _tied(h.hypothesis_text, claims, scope)), None)
        if hyp is not None:
            return AnswerLead(kind="cause", support="likely", services=asked, text=hyp.hypothesis_text)
    missing = [c for c in coverage if c.status in ("no_data", "not_queried")]
    if missing:
        return AnswerLead(kind="no_data", services=[c.service for c in missing],
                          evidence=[f"#{i}" for c in missing for i in c.invocation_ids], text=missing[0].detail)
    if coverage and all(c.status == "healthy" for c in coverage):
        return AnswerLead(kind="healthy", services=[c.service for c in coverage],
                          evidence=[f"#{i}" for i in sorted({i for c in coverage for i in c.invocation_ids})])
    first = next((c for c in claims if _asked_in(c.claim_text, scope)), claims[0] if claims and not asked else None)
    return AnswerLead(kind="unknown", services=asked if first else [], text=first.claim_text if first else "")
