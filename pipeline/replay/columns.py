"""Columnar replay (docs/architecture.md#store, docs/spec.md#gatekeeper): a threshold replay over a million sessions as array arithmetic.

Per binding a few numbers that no threshold moves (best similarity, whether the quote chains
through its output, the widest gap, digest scores, invented words, the minLocatedScores at which
the entity rule's findings change and their levels, the text rules' findings); per claim its
standing in the verdict matrix under each gatekeeper outcome (pipeline.verdict.policy.claim_standings);
per session the facts that no threshold touches. A replay settles each session by the first of:

1. `maybe_flagged`: no rule can find anything under the candidate, so the result is a plain pass
   and the projected verdict `clean_verdict` (with no failed rule the policy reads no parameter);
2. `judge`: the rules' findings per binding and claim from the arrays, combined as the verdict
   policy combines them;
3. otherwise the per-session replay (pipeline/replay/per_session.py) decides: sessions stored
   before these rows existed, whose output did not parse into claims with their own ids, or
   whose entity findings change at more scores than the rows keep, between the ones they keep.

All three are exact; tests/test_history_columns.py holds them to the per-session replay. The
features are judged under the parameters fingerprinted by `lists_key` (word lists, kinds, length
filters): under a candidate with other ones, 1 and 2 settle nothing.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from pipeline.core.contracts import VERDICT_ORDER, ClaimCheck, GatekeeperResult, Verdict
from pipeline.gatekeeper import fidelity
from pipeline.gatekeeper.engine import unbacked_claims
from pipeline.gatekeeper.rules import (  # _keyword_coverage: the rule's own measure, not a copy
    RULES,
    DigestRefRule,
    EvidenceUtilizationRule,
    ExcerptEntitiesRule,
    ExcerptSimilarityRule,
    Finding,
    RuleContext,
    _keyword_coverage,
)
from pipeline.gatekeeper.rules_schema import RuleSet
from pipeline.replay.per_session import ReplayInput, project_verdict
from pipeline.verdict.policy import claim_dicts, claim_index, claim_standings, decide_verdict, gatekeeper_floor

COLUMNS_VERSION = 1  # part of lists_key: rows derived by older code are judged again
ALWAYS = 2.0  # an entity_score above any minLocatedScore (thresholds lie in [0, 1])
_TEXT_RULES = ("schema.executor_v2", "evidence.invocation_ref", "claim.hallucination_phrases", "evidence.digest_ref")
# Per rule, the parameters the arrays compare at replay; every other parameter is in lists_key.
_LISTS: dict[str, set[str]] = {
    **{rule_id: set() for rule_id in _TEXT_RULES},
    "evidence.digest_ref": {"quotePassThreshold", "quoteWarnThreshold"},
    "evidence.excerpt_similarity": {"passThreshold", "warnThreshold", "compareAgainst", "minPieceWeight",
                                    "inventedTolerated"},
    "evidence.excerpt_entities": {"minLocatedScore"},
}
# The kinds the columns judge; a rule of any other kind (a newly registered one) makes every
# session take the exact path.
_KNOWN = frozenset({*_LISTS, "claim.evidence_utilization"})

# The threshold parameters of each rule: what judge compares the stored numbers with.
_THRESHOLDS: dict[str, tuple[str, ...]] = {
    "evidence.excerpt_similarity": ("passThreshold", "warnThreshold"),
    "evidence.excerpt_entities": ("minLocatedScore",),
    "claim.evidence_utilization": ("minKeywordCoverage",),
    "evidence.digest_ref": ("quotePassThreshold", "quoteWarnThreshold"),
}
# An entity change point list longer than this is stored as its ends only (see entity_points).
MAX_POINTS = 2

BindingRow = tuple[int, int, float | None, float | None, int | None, float | None, float | None, int, float,
                   float, int, int, int]
ClaimRow = tuple[int, int, int, int, bool, int]  # claim index, standing codes (VERDICT_ORDER), direct core, text bits


def lists_key(rules: RuleSet) -> str:
    """Fingerprint of every parameter `lists_clean` depends on (not the digest quote thresholds)."""
    parts = [str(COLUMNS_VERSION)]
    for rule_id, thresholds in _LISTS.items():
        spec = rules.get(rule_id)
        params = spec.params.model_dump(exclude=thresholds) if spec else None
        parts.append(f"{rule_id}={params}")
    return hashlib.blake2b("\x1f".join(parts).encode(), digest_size=8).hexdigest()


def thresholds(rules: RuleSet) -> dict[str, float]:
    """The threshold parameters of `rules`, named rule_id:param."""
    out = {}
    for rule_id, names in _THRESHOLDS.items():
        spec = rules.get(rule_id)
        if spec is not None:
            out.update({f"{rule_id}:{name}": float(getattr(spec.params, name)) for name in names})
    return out


def _text_findings(context: RuleContext, rules: RuleSet) -> list[list[Finding]]:
    """The findings of each text rule (in _TEXT_RULES order) under `rules`' lists, whatever its switch."""
    out: list[list[Finding]] = []
    for rule_id in _TEXT_RULES:
        spec = rules.get(rule_id)
        if spec is None:
            out.append([])
            continue
        if isinstance(spec.params, DigestRefRule.Params):
            # The quote thresholds are judged per candidate from min_quote, so nothing is below 0 here.
            spec = replace(spec, params=spec.params.model_copy(update={"quotePassThreshold": 0.0,
                                                                       "quoteWarnThreshold": 0.0}))
        out.append(RULES[rule_id].validate(context, spec).findings)
    return out


def _text_bits(found: list[list[Finding]], bindings: list[str]) -> tuple[int, int, dict[int, int], dict[str, int]]:
    """The text rules' findings as bit i for rule i of _TEXT_RULES: any finding, a fail-level
    one, per claim index a finding in it, per binding target a finding on it or inside it."""
    has = fail = 0
    claims: dict[int, int] = {}
    flagged: dict[str, int] = {}
    for i, findings in enumerate(found):
        bit = 1 << i
        for finding in findings:
            has |= bit
            fail |= bit if finding.level == "fail" else 0
            index = claim_index(finding.target)
            if index is not None:
                claims[index] = claims.get(index, 0) | bit
            for target in bindings:
                if finding.target == target or finding.target.startswith(target + "."):
                    flagged[target] = flagged.get(target, 0) | bit
    return has, fail, claims, flagged


def _entity_points(context: RuleContext, rules: RuleSet) -> dict[str, list[tuple[float, bool]]]:
    """Per binding target, every minLocatedScore at which the entity rule's findings on it change,
    highest first (ALWAYS: found at any score), each with whether the findings from there down
    hold a fail-level one. Its findings only grow as the threshold falls and change only at a
    score the features hold, so trying those scores (highest first) is exact."""
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
    points: dict[str, list[tuple[float, bool]]] = {}
    counts: Counter[str] = Counter()
    for threshold in sorted(candidates, reverse=True):
        probe = replace(spec, params=spec.params.model_copy(update={"minLocatedScore": threshold}))
        findings = RULES[spec.id].validate(context, probe).findings
        now = Counter(finding.target for finding in findings)
        failing = {finding.target for finding in findings if finding.level == "fail"}
        for target in now.keys() | counts.keys():
            if now[target] != counts[target]:
                points.setdefault(target, []).append((threshold, target in failing))
        counts = now
    return points


def _invented(feats: dict[str, Any], rules: RuleSet) -> int:
    spec = rules.get("evidence.excerpt_similarity")
    if spec is None or not isinstance(spec.params, ExcerptSimilarityRule.Params):
        return 0
    return len(fidelity.invented(feats, spec.params.inventedMinLetters, spec.params.inventedMinCjkRun))


def _claims_ok(item: ReplayInput) -> bool:
    """Can gate_claim rows stand for this session's claims? Its output parsed, every claim an
    object with a claim_id of its own (the policy matches claims by id, findings by index)."""
    claims = item.structured.get("claims") if isinstance(item.structured, dict) else None
    if item.parse_status != "valid" or not isinstance(claims, list):
        return False
    ids = [c.get("claim_id") if isinstance(c, dict) else None for c in claims]
    return all(isinstance(i, str) for i in ids) and len(set(ids)) == len(ids)


def _evidence_floor(item: ReplayInput) -> Verdict:
    """The verdict the session's coverage and failed tool calls allow at best: the policy itself
    over one directly observed core claim and no findings, so nothing else can lower it."""
    probe = {"claims": [{"claim_id": "c", "claim_type": "root_cause", "claim_text": ""}]}
    return decide_verdict(parse_status="valid", structured=probe,
                          claim_checks=[ClaimCheck(claim_id="c", verification="direct_observation")],
                          gatekeeper=GatekeeperResult(), rule_impacts={}, verifier_verdict=item.verifier_verdict,
                          coverage=item.coverage, invocations=item.failed_tools).verdict


def session_columns(item: ReplayInput, rules: RuleSet) -> tuple[dict[str, Any], list[BindingRow], list[ClaimRow]]:
    """(gate_session values, gate_binding rows, gate_claim rows) of one stored session, judged
    under `rules`' lists."""
    context = item.rule_context()
    bindings: list[BindingRow] = []
    entity = _entity_points(context, rules)
    text = _text_findings(context, rules)
    text_has, text_fail, text_claims, text_flagged = _text_bits(text, [t for t, _, _ in context.bindings])
    for target, _, feats in context.bindings:
        if feats is None:
            continue  # no rule judges an unmeasured binding; it only leaves its claim unbacked
        ci, bi = (int(part.split("[")[1].rstrip("]")) for part in target.split("."))
        sources = feats.get("sources", {})
        out = sources.get("output", {})
        points = entity.get(target, [])
        fails = points[0][1] + 2 * points[-1][1] if points else 0
        bindings.append((ci, bi, out.get("score"), out.get("covered"), out.get("split", 0),
                         sources.get("digest.source_quote", {}).get("score"),
                         sources.get("digest.summary", {}).get("score"),
                         _invented(feats, rules), points[0][0] if points else -1.0,
                         points[-1][0] if points else -1.0, len(points), fails, text_flagged.get(target, 0)))
    # The same fact key as the utilization rule, so both share one computation per session.
    coverage = [c for _, c, _ in context.fact("claim.evidence_utilization", _keyword_coverage)]
    quotes = [score for di in range(len(item.digests or ()))
              for score in (context.features.get(f"digests[{di}]", {}).get("quote", {}).get("score"),)
              if score is not None]
    clean = GatekeeperResult(status="pass", unbacked_claims=unbacked_claims(context, set()))
    claims_ok = _claims_ok(item)
    claims = [(ci, VERDICT_ORDER[c.untouched], VERDICT_ORDER[c.hit], VERDICT_ORDER[c.entity_hit], c.direct_core,
               text_claims.get(ci, 0))
              for ci, c in enumerate(claim_standings(claim_dicts(item.structured), item.claim_checks))] \
        if claims_ok else []
    session = {
        "session_id": item.session_id,
        "lists_key": lists_key(rules),
        "lists_clean": not text_has,
        "min_coverage": min(coverage, default=None),
        "min_quote": min(quotes, default=None) if item.digests is not None else None,
        "clean_verdict": project_verdict(clean, rules, item),
        "clean_unbacked": clean.unbacked_claims,
        "old_status": item.old_status,
        "old_verdict": item.old_verdict,
        "old_rules": ",".join(sorted({*item.old_failed_rules, *item.old_warnings})),
        "claims_ok": claims_ok,
        "text_has": text_has,
        "text_fail": text_fail,
        "evidence_floor": _evidence_floor(item),
    }
    return session, bindings, claims


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
    b_full: npt.NDArray[np.bool_]  # covered == 1.0: every segment found by structure
    b_split: npt.NDArray[np.int32]  # the lightest piece of a quote split between records (0: none split)
    b_quote: npt.NDArray[np.float64]
    b_summary: npt.NDArray[np.float64]
    b_invented: npt.NDArray[np.int16]
    b_entity: npt.NDArray[np.float64]  # the highest entity change point (-1: none)
    b_entity_low: npt.NDArray[np.float64]  # the lowest (NaN: not recorded)
    b_entity_points: npt.NDArray[np.int16]  # how many (-1: not recorded)
    claims_ok: npt.NDArray[np.bool_]  # gate_claim rows stand for every claim
    evidence_floor: npt.NDArray[np.int8]  # VERDICT_ORDER code (-1: not recorded)
    b_claim_row: npt.NDArray[np.int32]  # index into the claim arrays (-1: none)
    b_entity_fail: npt.NDArray[np.int8]  # entity_fail bits
    c_session: npt.NDArray[np.int32]  # claims grouped by session index, in claim order
    c_standing: npt.NDArray[np.int8]  # (claims, 3): untouched, hit, entity_hit as VERDICT_ORDER codes
    c_direct: npt.NDArray[np.bool_]
    # The text rules' findings as bits in _TEXT_RULES order (text_has -1: not recorded).
    text_has: npt.NDArray[np.int8]
    text_fail: npt.NDArray[np.int8]
    b_text: npt.NDArray[np.int8]  # a finding on or inside the binding
    c_text: npt.NDArray[np.int8]  # a finding in the claim
    # Threshold-free per-binding results kept between replays (see _best).
    best_cache: dict[tuple[Any, ...], npt.NDArray[np.float64]] = field(default_factory=dict, repr=False, compare=False)


def _enabled(rules: RuleSet, rule_id: str) -> Any:
    spec = rules.get(rule_id)
    return spec.params if spec is not None and spec.enabled else None


def _best(arrays: HistoryArrays, sim: ExcerptSimilarityRule.Params,
          at: npt.NDArray[np.intp] | slice = slice(None)) -> npt.NDArray[np.float64]:
    """Per binding (those at `at`) the best compared score, as the similarity rule picks it (-1:
    none scored). It moves with no threshold, so it is kept per (sources, piece weight) for the next replay."""
    key = (tuple(sim.compareAgainst), sim.minPieceWeight)
    best = arrays.best_cache.get(key)
    if best is None:
        structural = arrays.b_full & ((arrays.b_split == 0) | (arrays.b_split >= sim.minPieceWeight))
        # Found by structure or not; NaN (no output scored) stays out of the comparison.
        output = np.where(np.isnan(arrays.b_score), np.nan, np.where(structural, 1.0, 0.0))
        candidates = {"output": output,
                      "digest.source_quote": arrays.b_quote, "digest.summary": arrays.b_summary}
        best = np.full(len(arrays.b_session), -1.0)
        for name in sim.compareAgainst:
            best = np.fmax(best, candidates[name])  # fmax: a NaN (no score) loses to any score
        if len(arrays.best_cache) >= 2:
            arrays.best_cache.clear()
        arrays.best_cache[key] = best
    return best[at]


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
        best = _best(arrays, sim)
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


STATUSES = ("pass", "warn", "fail")


@dataclass
class Judged:
    """judge's outcome, per session: whether it holds (`ok`), the gatekeeper status (index into
    STATUSES), the projected verdict (VERDICT_ORDER code), and the failed and the warned rules as
    bits (bit k: rules.rules[k])."""

    ok: npt.NDArray[np.bool_]
    status: npt.NDArray[np.int8]
    verdict: npt.NDArray[np.int8]
    failed: npt.NDArray[np.int64]
    warned: npt.NDArray[np.int64]


def rule_bits(rules: RuleSet, bits: int) -> list[str]:
    """The rule ids of a Judged bit set, in rule order (the gatekeeper's order)."""
    return [spec.id for k, spec in enumerate(rules.rules) if bits >> k & 1]


def judge(arrays: HistoryArrays, rules: RuleSet, wanted: npt.NDArray[np.bool_]) -> Judged:
    """The gatekeeper status, failed and warned rules and projected verdict of the `wanted`
    sessions under `rules`, in arrays, and which of them that holds for: those judged
    under this word list whose claims gate_claim describes. The combination is the verdict
    policy's (pipeline/verdict/policy.py decide_verdict): a claim hit by a failed blocking rule (the first
    in rule order deciding entity or not) or left without evidence takes its hit standing; the
    matrix, the failed rules' floors, unbacked claims and the evidence floor: the strictest wins."""
    n = len(arrays.session_ids)
    status = np.zeros(n, dtype=np.int8)
    verdict = np.zeros(n, dtype=np.int8)
    failed_bits = np.zeros(n, dtype=np.int64)
    warned_bits = np.zeros(n, dtype=np.int64)
    key = lists_key(rules)
    ok = wanted & arrays.claims_ok & (arrays.text_has >= 0) & (arrays.evidence_floor >= 0)
    ok &= arrays.lists_key == (arrays.keys.index(key) if key in arrays.keys else -1)
    if any(spec.id not in _KNOWN for spec in rules.rules) or not ok.any():
        return Judged(np.zeros(n, dtype=bool), status, verdict, failed_bits, warned_bits)
    thr = thresholds(rules)
    util = rules.get("claim.evidence_utilization")
    if util is not None and util.enabled and not util.downgraded:
        # A blocking utilization finding marks its own claim: the lowest coverage cannot tell which.
        ok &= ~(arrays.min_coverage < thr["claim.evidence_utilization:minKeywordCoverage"])
    at = np.flatnonzero(ok[arrays.b_session])
    orphans = arrays.b_claim_row[at] < 0  # a binding of a claim without a row: not judged here
    if orphans.any():
        ok[arrays.b_session[at[orphans]]] = False
        at = np.flatnonzero(ok[arrays.b_session])
    b_session = arrays.b_session[at]
    # Per rule and binding: (any finding, a fail-level finding).
    found: dict[str, tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]] = {}
    sim: ExcerptSimilarityRule.Params | None = _enabled(rules, "evidence.excerpt_similarity")
    if sim is not None:
        best = _best(arrays, sim, at)
        invented = arrays.b_invented[at] > sim.inventedTolerated
        scored = best >= 0
        found["evidence.excerpt_similarity"] = (
            (scored & (best < thr["evidence.excerpt_similarity:passThreshold"])) | invented,
            (scored & (best < thr["evidence.excerpt_similarity:warnThreshold"])) | invented)
    if _enabled(rules, "evidence.excerpt_entities") is not None:
        located = thr["evidence.excerpt_entities:minLocatedScore"]
        hi, lo = located <= arrays.b_entity[at], located <= arrays.b_entity_low[at]
        points, fails = arrays.b_entity_points[at], arrays.b_entity_fail[at]
        unknown = ((points > MAX_POINTS) & hi & ~lo) | ((points < 0) & hi)
        ok[b_session[unknown]] = False
        found["evidence.excerpt_entities"] = (hi, (hi & ~lo & (fails & 1 > 0)) | (lo & (fails & 2 > 0)))
    bits = {rule_id: np.int8(1 << i) for i, rule_id in enumerate(_TEXT_RULES)}
    # Per session and enabled rule: failed (blocking) or warned.
    failed_any = np.zeros(n, dtype=bool)
    warned_any = np.zeros(n, dtype=bool)
    floor = np.zeros(n, dtype=np.int8)
    failed: dict[str, npt.NDArray[np.bool_]] = {}
    position = {spec.id: k for k, spec in enumerate(rules.rules)}
    for spec in rules.enabled():
        has = fail = np.zeros(n, dtype=bool)
        if spec.id in found:
            any_b, fail_b = found[spec.id]
            has = np.bincount(b_session[any_b], minlength=n) > 0
            fail = np.bincount(b_session[fail_b], minlength=n) > 0
        elif spec.id == "claim.evidence_utilization":
            has = fail = arrays.min_coverage < thr["claim.evidence_utilization:minKeywordCoverage"]
        elif spec.id == "evidence.digest_ref":
            has = arrays.min_quote < thr["evidence.digest_ref:quotePassThreshold"]
            fail = arrays.min_quote < thr["evidence.digest_ref:quoteWarnThreshold"]
        if spec.id in bits:
            has = has | (arrays.text_has & bits[spec.id] != 0)
            fail = fail | (arrays.text_fail & bits[spec.id] != 0)
        if spec.downgraded:
            fail = np.zeros(n, dtype=bool)
        failed[spec.id] = fail
        failed_any |= fail
        warned_any |= has & ~fail
        bit = np.int64(1 << position[spec.id])
        np.bitwise_or(failed_bits, bit, out=failed_bits, where=fail)
        np.bitwise_or(warned_bits, bit, out=warned_bits, where=has & ~fail)
        impact = VERDICT_ORDER[gatekeeper_floor([spec.id], {spec.id: spec.verdict_impact})]
        np.maximum(floor, np.int8(impact), out=floor, where=fail)
    status[:] = np.where(failed_any, 2, np.where(warned_any, 1, 0))
    # Per claim: evidence left, and the first failed blocking rule (in rule order) with a finding in it.
    n_claims = len(arrays.c_session)
    claim_of = arrays.b_claim_row[at]
    flagged = np.zeros(len(at), dtype=bool)
    kind = np.zeros(n_claims, dtype=np.int8)  # 0 untouched, 1 hit, 2 entity_hit
    for spec in rules.enabled():
        if spec.downgraded or spec.id not in failed or (spec.id not in found and spec.id not in bits):
            continue  # no finding of it sits in a binding or claim
        if spec.id in found:
            any_b = found[spec.id][0]
            in_claim = np.bincount(claim_of[any_b], minlength=n_claims) > 0
        else:
            any_b = np.zeros(len(at), dtype=bool)
            in_claim = np.zeros(n_claims, dtype=bool)
        if spec.id in bits:
            any_b = any_b | (arrays.b_text[at] & bits[spec.id] != 0)
            in_claim = in_claim | (arrays.c_text & bits[spec.id] != 0)
        flagged |= any_b
        # Only claims with a finding and no standing yet are looked up: a few of all claims.
        open_claims = np.flatnonzero(in_claim & (kind == 0))
        hit = open_claims[failed[spec.id][arrays.c_session[open_claims]]]
        kind[hit] = 2 if spec.id == "evidence.excerpt_entities" else 1
    backed = np.bincount(claim_of[~flagged], minlength=n_claims) > 0
    kind = np.where((kind == 0) & ~backed, 1, kind).astype(np.int8)
    chosen = np.flatnonzero(ok[arrays.c_session])
    c_session = arrays.c_session[chosen]
    level = arrays.c_standing[chosen, kind[chosen]]
    strictest = np.zeros(n, dtype=np.int8)
    np.maximum.at(strictest, c_session, level)
    direct = np.bincount(c_session[arrays.c_direct[chosen] & (kind[chosen] == 0)], minlength=n) > 0
    unbacked = np.bincount(c_session[~backed[chosen]], minlength=n) > 0
    matrix = np.where(strictest == 2, 2, np.where((strictest == 1) | ~direct, 1, 0))
    verdict[:] = np.maximum.reduce([matrix, floor, unbacked.astype(np.int8), arrays.evidence_floor])
    return Judged(ok, status, verdict, failed_bits, warned_bits)
