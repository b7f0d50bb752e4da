"""Columnar replay (docs/architecture.md#store, docs/spec.md#gatekeeper): a threshold replay over a million sessions as array arithmetic.

Per binding a few numbers that no threshold moves (best similarity, whether the quote chains
through its output, the widest gap, digest scores, invented words, and the highest minLocatedScore
at which the entity rule finds something); per session the facts that no threshold touches. From these,
`maybe_flagged` finds, for candidate thresholds, every session in which some rule *could* find
something. The test is sound, not exact: a session it clears is one where every rule finds
nothing, so its gatekeeper result is a plain pass and its projected verdict is `clean_verdict`
(with no failed rule the verdict policy reads no rule parameter). Every other session goes
through the per-session replay (pipeline/gatekeeper/replay.py), which is exact.

Each binding's entity_score is found by running the entity rule itself at the scores its
features hold, and its invented count under the similarity rule's length filters; those and the
rules judged on text and lists (schema, invocation_ref, hallucination_phrases, digest refs) are
judged under the parameters fingerprinted by `lists_key`. A candidate with other word lists, kinds
or filters finds no session clean under its key, so every session takes the exact path.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from pipeline.contracts import GatekeeperResult
from pipeline.gatekeeper import fidelity
from pipeline.gatekeeper.engine import unbacked_claims
from pipeline.gatekeeper.replay import ReplayInput, project_verdict
from pipeline.gatekeeper.rules import (  # _keyword_coverage: the rule's own measure, not a copy
    RULES,
    DigestRefRule,
    EvidenceUtilizationRule,
    ExcerptEntitiesRule,
    ExcerptSimilarityRule,
    RuleContext,
    _keyword_coverage,
)
from pipeline.gatekeeper.rules_schema import RuleSet

COLUMNS_VERSION = 1  # part of lists_key: rows derived by older code are judged again
ALWAYS = 2.0  # an entity_score above any minLocatedScore (thresholds lie in [0, 1])
_TEXT_RULES = ("schema.executor_v2", "evidence.invocation_ref", "claim.hallucination_phrases", "evidence.digest_ref")
# Per rule, the parameters the arrays compare at replay; every other parameter is in lists_key.
_LISTS: dict[str, set[str]] = {
    **{rule_id: set() for rule_id in _TEXT_RULES},
    "evidence.digest_ref": {"quotePassThreshold", "quoteWarnThreshold"},
    "evidence.excerpt_similarity": {"passThreshold", "warnThreshold", "compareAgainst", "maxPieceGap",
                                    "inventedTolerated"},
    "evidence.excerpt_entities": {"minLocatedScore"},
}
# The kinds the columns judge; a rule of any other kind (a newly registered one) makes every
# session take the exact path.
_KNOWN = frozenset({*_LISTS, "claim.evidence_utilization"})

BindingRow = tuple[int, int, float | None, float | None, int | None, float | None, float | None, int, float]


def lists_key(rules: RuleSet) -> str:
    """Fingerprint of every parameter `lists_clean` depends on (not the digest quote thresholds)."""
    parts = [str(COLUMNS_VERSION)]
    for rule_id, thresholds in _LISTS.items():
        spec = rules.get(rule_id)
        params = spec.params.model_dump(exclude=thresholds) if spec else None
        parts.append(f"{rule_id}={params}")
    return hashlib.blake2b("\x1f".join(parts).encode(), digest_size=8).hexdigest()


def _lists_clean(context: RuleContext, rules: RuleSet) -> bool:
    for rule_id in _TEXT_RULES:
        spec = rules.get(rule_id)
        if spec is None:
            continue
        if isinstance(spec.params, DigestRefRule.Params):
            # The quote thresholds are judged per candidate from min_quote, so nothing is below 0 here.
            spec = replace(spec, params=spec.params.model_copy(update={"quotePassThreshold": 0.0,
                                                                       "quoteWarnThreshold": 0.0}))
        if RULES[rule_id].validate(context, spec).findings:
            return False
    return True


def _entity_scores(context: RuleContext, rules: RuleSet) -> dict[str, float]:
    """Per binding target, the highest minLocatedScore at which the entity rule finds something
    on it (ALWAYS: at any; absent: at none). Its findings only grow as the threshold falls and
    change only at a score the features hold, so trying those scores (highest first) is exact."""
    spec = rules.get("evidence.excerpt_entities")
    if spec is None:
        return {}
    candidates = {ALWAYS}
    for _, _, feats in context.bindings:
        if feats is None:
            continue
        candidates.update(miss["score"] for miss in feats.get("entities") or ())
        candidates.update(hunk["score"] for hunk in fidelity.hunks(feats))
        out = feats.get("sources", {}).get("output", {}).get("score")
        candidates.add(0.0 if out is None else out)
    found: dict[str, float] = {}
    for threshold in sorted(candidates, reverse=True):
        probe = replace(spec, params=spec.params.model_copy(update={"minLocatedScore": threshold}))
        for finding in RULES[spec.id].validate(context, probe).findings:
            found.setdefault(finding.target, threshold)
    return found


def _invented(feats: dict[str, Any], rules: RuleSet) -> int:
    spec = rules.get("evidence.excerpt_similarity")
    if spec is None or not isinstance(spec.params, ExcerptSimilarityRule.Params):
        return 0
    return len(fidelity.invented(feats, spec.params.inventedMinLetters, spec.params.inventedMinCjkRun))


def session_columns(item: ReplayInput, rules: RuleSet) -> tuple[dict[str, Any], list[BindingRow]]:
    """(gate_session values, gate_binding rows) of one stored session, judged under `rules`' lists."""
    context = item.rule_context()
    bindings: list[BindingRow] = []
    entity = _entity_scores(context, rules)
    for target, _, feats in context.bindings:
        if feats is None:
            continue  # no rule judges an unmeasured binding; it only leaves its claim unbacked
        ci, bi = (int(part.split("[")[1].rstrip("]")) for part in target.split("."))
        sources = feats.get("sources", {})
        out = sources.get("output", {})
        bindings.append((ci, bi, out.get("score"), out.get("covered"), out.get("gap", 0),
                         sources.get("digest.source_quote", {}).get("score"),
                         sources.get("digest.summary", {}).get("score"),
                         _invented(feats, rules), entity.get(target, -1.0)))
    # The same fact key as the utilization rule, so both share one computation per session.
    coverage = [c for _, c, _ in context.fact("claim.evidence_utilization", _keyword_coverage)]
    quotes = [score for di in range(len(item.digests or ()))
              for score in (context.features.get(f"digests[{di}]", {}).get("quote", {}).get("score"),)
              if score is not None]
    clean = GatekeeperResult(status="pass", unbacked_claims=unbacked_claims(context, set()))
    session = {
        "session_id": item.session_id,
        "lists_key": lists_key(rules),
        "lists_clean": _lists_clean(context, rules),
        "min_coverage": min(coverage, default=None),
        "min_quote": min(quotes, default=None) if item.digests is not None else None,
        "clean_verdict": project_verdict(clean, rules, item),
        "clean_unbacked": clean.unbacked_claims,
        "old_status": item.old_status,
        "old_verdict": item.old_verdict,
        "old_rules": ",".join(sorted({*item.old_failed_rules, *item.old_warnings})),
    }
    return session, bindings


@dataclass
class HistoryArrays:
    """The whole history as arrays: sessions in `seq` order, bindings grouped by session index."""

    session_ids: list[str]
    lists_key: npt.NDArray[np.int16]  # code into `keys`
    keys: list[str]
    lists_clean: npt.NDArray[np.bool_]
    min_coverage: npt.NDArray[np.float64]  # NaN: no claim with keywords
    min_quote: npt.NDArray[np.float64]  # NaN: no scored digest
    b_session: npt.NDArray[np.int32]
    b_score: npt.NDArray[np.float64]  # NaN: no output score
    b_full: npt.NDArray[np.bool_]  # covered == 1.0
    b_gap: npt.NDArray[np.int32]
    b_quote: npt.NDArray[np.float64]
    b_summary: npt.NDArray[np.float64]
    b_invented: npt.NDArray[np.int16]
    b_entity: npt.NDArray[np.float64]


def _enabled(rules: RuleSet, rule_id: str) -> Any:
    spec = rules.get(rule_id)
    return spec.params if spec is not None and spec.enabled else None


def maybe_flagged(arrays: HistoryArrays, rules: RuleSet) -> npt.NDArray[np.bool_]:
    """Per session: could any enabled rule of `rules` find something in it? (False is certain.)"""
    n = len(arrays.session_ids)
    if any(spec.id not in _KNOWN for spec in rules.rules):
        return np.ones(n, dtype=bool)
    key = lists_key(rules)
    code = arrays.keys.index(key) if key in arrays.keys else -1
    session = ~(arrays.lists_clean & (arrays.lists_key == code))
    flagged = np.zeros(len(arrays.b_session), dtype=bool)
    sim: ExcerptSimilarityRule.Params | None = _enabled(rules, "evidence.excerpt_similarity")
    if sim is not None:
        candidates = {"output": np.where(arrays.b_full & (arrays.b_gap <= sim.maxPieceGap), 1.0, arrays.b_score),
                      "digest.source_quote": arrays.b_quote, "digest.summary": arrays.b_summary}
        best = np.full(len(flagged), -1.0)
        for name in sim.compareAgainst:
            best = np.fmax(best, candidates[name])  # fmax: a NaN (no score) loses to any score
        flagged |= (best >= 0) & (best < sim.passThreshold)
        flagged |= arrays.b_invented > sim.inventedTolerated
    ent: ExcerptEntitiesRule.Params | None = _enabled(rules, "evidence.excerpt_entities")
    if ent is not None:
        flagged |= arrays.b_entity >= ent.minLocatedScore
    util: EvidenceUtilizationRule.Params | None = _enabled(rules, "claim.evidence_utilization")
    if util is not None:
        session |= arrays.min_coverage < util.minKeywordCoverage  # NaN compares False
    ref: DigestRefRule.Params | None = _enabled(rules, "evidence.digest_ref")
    if ref is not None:
        session |= arrays.min_quote < ref.quotePassThreshold
    hit: npt.NDArray[np.bool_] = session | np.bincount(arrays.b_session[flagged], minlength=n).astype(bool)
    return hit
