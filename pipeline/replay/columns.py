"""Columnar replay (docs/architecture.md#store, docs/spec.md#gatekeeper): a threshold replay over a million sessions as array arithmetic.

Per binding a few numbers that no threshold moves (best similarity, whether the quote chains
through its output, the widest gap, digest scores, invented words, the minLocatedScores at which
the entity rule's findings change and their levels, the text rules' findings); per claim its
standing in the verdict matrix under each gatekeeper outcome (pipeline.verdict.policy.claim_standings);
per session the facts that no threshold touches. A replay settles each session by the first of:

1. `maybe_flagged`: no rule can find anything under the candidate, so the result is a plain pass
   and the projected verdict `clean_verdict` (with no failed rule the policy reads no parameter);
2. `judge`: each rule's findings per binding or session from its kind's `judge_columns` (beside
   the kind's `validate`, pipeline/gatekeeper/rules.py), placed in claims, and combined by the
   verdict policy's own matrix function (pipeline.verdict.policy.verdict_code);
3. otherwise the per-session replay (pipeline/replay/per_session.py) decides: sessions stored
   before these rows existed, whose output did not parse into claims with their own ids, or
   whose entity findings change at more scores than the rows keep, between the ones they keep,
   or with a blocking utilization finding (the lowest coverage cannot tell its claim).

All three are exact; tests/test_history_columns.py holds them to the per-session replay. The
features are judged under the parameters fingerprinted by `lists_key` (word lists, kinds, length
filters): under a candidate with other ones, 1 and 2 settle nothing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np
import numpy.typing as npt

from pipeline.core.contracts import VERDICT_ORDER, GatekeeperResult, Verdict
from pipeline.core.feature_shapes import SourceEntry, digest_target, parse_target, source_score
from pipeline.gatekeeper.engine import FoundColumns, backed_columns, evaluate_columns, unbacked_claims
from pipeline.gatekeeper.kinds import RULES, ColumnFindings, Finding, RuleContext
from pipeline.gatekeeper.quote_rules import ExcerptEntitiesRule, ExcerptSimilarityRule
from pipeline.gatekeeper.rules import EvidenceUtilizationRule
from pipeline.gatekeeper.rules_schema import RuleSet
from pipeline.replay.per_session import ReplayInput, project_verdict
from pipeline.verdict.policy import (
    apply_gatekeeper_codes,
    claim_index,
    claim_standings,
    decide_verdict_codes,
    evidence_floor,
    gatekeeper_floor_codes,
    stricter,
)

COLUMNS_VERSION = 1  # part of lists_key: rows derived by older code are judged again
BindingRow = tuple[int, int, float | None, float | None, int | None, float | None, float | None, int, float,
                   float, int, int, int]
ClaimRow = tuple[int, int, int, int, bool, int]  # claim index, standing codes (VERDICT_ORDER), direct core, text bits


def stored_kinds() -> list[str]:
    """The kinds whose findings the gate rows keep as found (replay "stored"), in registration
    order: bit i of the text columns is the i-th one's."""
    return [kind_id for kind_id, kind in RULES.items() if kind.replay == "stored"]


def _fingerprinted() -> list[str]:
    """The kinds whose parameters lists_key fingerprints, each but its column_params (which the
    arrays compare): the stored ones, then those judged in columns from numbers that hold under
    their other parameters. In registration order: another order would orphan every stored row."""
    compared = [kind_id for kind_id, kind in RULES.items()
                if kind.replay == "columns" and kind.Params.model_fields.keys() - kind.column_params]
    return [*stored_kinds(), *compared]


def lists_key(rules: RuleSet) -> str:
    """Fingerprint of every parameter `lists_clean` depends on (not the digest quote thresholds)."""
    parts = [str(COLUMNS_VERSION)]
    for rule_id in _fingerprinted():
        spec = rules.get(rule_id)
        params = spec.params.model_dump(exclude=set(RULES[rule_id].column_params)) if spec else None
        parts.append(f"{rule_id}={params}")
    return hashlib.blake2b("\x1f".join(parts).encode(), digest_size=8).hexdigest()


def _columnar(rules: RuleSet) -> bool:
    """Whether the arrays can judge every rule of `rules` (a kind whose replay is "per_session"
    sends every session to the per-session replay)."""
    return all(RULES[spec.id].replay != "per_session" for spec in rules.rules)


def _text_findings(context: RuleContext, rules: RuleSet) -> list[list[Finding]]:
    """The findings of each stored kind's rule (in stored_kinds order) under `rules`' lists, as
    found (`as_found`: what judge_columns compares left out), whatever its switch."""
    out: list[list[Finding]] = []
    for rule_id in stored_kinds():
        spec = rules.get(rule_id)
        out.append(RULES[rule_id].validate(context, RULES[rule_id].as_found(spec)).findings if spec else [])
    return out


def _text_bits(found: list[list[Finding]], bindings: list[str]) -> tuple[int, int, dict[int, int], dict[str, int]]:
    """The stored kinds' findings as bit i for kind i of stored_kinds: any finding, a fail-level
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


def _claims_ok(item: ReplayInput) -> bool:
    """Can gate_claim rows stand for this session's claims? Its output parsed, every claim an
    object with a claim_id of its own (the policy matches claims by id, findings by index)."""
    claims = item.structured.get("claims") if isinstance(item.structured, dict) else None
    if item.parse_status != "valid" or not isinstance(claims, list):
        return False
    ids = [c.get("claim_id") if isinstance(c, dict) else None for c in claims]
    return all(isinstance(i, str) for i in ids) and len(set(ids)) == len(ids)


class SessionValues(TypedDict):
    """A gate_session row as `session_columns` derives it (the table's columns but `seq`)."""

    session_id: str
    lists_key: str
    lists_clean: bool
    min_coverage: float | None
    min_quote: float | None
    clean_verdict: Verdict
    clean_unbacked: list[str]
    old_status: str
    old_verdict: str
    old_rules: str
    claims_ok: bool
    text_has: int
    text_fail: int
    evidence_floor: Verdict


def session_columns(item: ReplayInput, rules: RuleSet) -> tuple[SessionValues, list[BindingRow], list[ClaimRow]]:
    """(gate_session values, gate_binding rows, gate_claim rows) of one stored session, judged
    under `rules`' lists."""
    context = item.rule_context()
    bindings: list[BindingRow] = []
    entities, similarity = rules.get(ExcerptEntitiesRule.id), rules.get(ExcerptSimilarityRule.id)
    entity = ExcerptEntitiesRule.change_points(context, entities) if entities else {}
    text = _text_findings(context, rules)
    text_has, text_fail, text_claims, text_flagged = _text_bits(text, [t for t, _, _ in context.bindings])
    for target, _, feats in context.bindings:
        if feats is None:
            continue  # no rule judges an unmeasured binding; it only leaves its claim unbacked
        ci, bi = _binding_position(target)
        out: SourceEntry = feats.get("sources", {}).get("output") or {"score": None}
        points = entity.get(target, [])
        fails = points[0][1] + 2 * points[-1][1] if points else 0
        bindings.append((ci, bi, out.get("score"), out.get("covered"), out.get("split", 0),
                         source_score(feats, "digest.source_quote"), source_score(feats, "digest.summary"),
                         ExcerptSimilarityRule.invented_count(feats, similarity) if similarity else 0,
                         points[0][0] if points else -1.0,
                         points[-1][0] if points else -1.0, len(points), fails, text_flagged.get(target, 0)))
    coverage = [c for _, c, _ in EvidenceUtilizationRule.coverages(context)]
    quotes = [score for di in range(len(item.digests or ()))
              for score in (context.features.get(digest_target(di), {}).get("quote", {}).get("score"),)
              if score is not None]
    clean = GatekeeperResult(status="pass", unbacked_claims=unbacked_claims(context, set()))
    claims_ok = _claims_ok(item)
    claims = [(ci, VERDICT_ORDER[c.untouched], VERDICT_ORDER[c.hit], VERDICT_ORDER[c.entity_hit], c.direct_core,
               text_claims.get(ci, 0))
              for ci, c in enumerate(claim_standings(context.output.claims if context.output else [], item.claim_checks))] \
        if claims_ok else []
    session: SessionValues = {
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
        # What the session's coverage, failed tool calls and verifier allow at best, whatever its claims.
        "evidence_floor": stricter(evidence_floor(item.coverage, item.failed_tools, item.form), item.verifier_verdict or "PASS"),
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
    # The stored kinds' findings as bits in stored_kinds order (text_has -1: not recorded).
    text_has: npt.NDArray[np.int8]
    text_fail: npt.NDArray[np.int8]
    b_text: npt.NDArray[np.int8]  # a finding on or inside the binding
    c_text: npt.NDArray[np.int8]  # a finding in the claim
    # Threshold-free per-binding results kept between replays (see _best).
    best_cache: dict[tuple[Any, ...], npt.NDArray[np.float64]] = field(default_factory=dict, repr=False, compare=False)


def maybe_flagged(arrays: HistoryArrays, rules: RuleSet) -> npt.NDArray[np.bool_]:
    """Per session: could any enabled rule of `rules` find something in it? (False is certain.)"""
    n = len(arrays.session_ids)
    if not _columnar(rules):
        return np.ones(n, dtype=bool)
    key = lists_key(rules)
    code = arrays.keys.index(key) if key in arrays.keys else -1
    session = ~(arrays.lists_clean & (arrays.lists_key == code))
    flagged = np.zeros(len(arrays.b_session), dtype=bool)
    for spec in rules.enabled():
        found = RULES[spec.id].judge_columns(spec, arrays, slice(None))
        if found is not None and found.per_binding:
            flagged |= found.found
        elif found is not None:
            session |= found.found  # NaN (nothing measured) compares False
    hit: npt.NDArray[np.bool_] = session | np.bincount(arrays.b_session[flagged], minlength=n).astype(bool)
    return hit


@dataclass
class Judged:
    """judge's outcome, per session: whether it holds (`ok`), the gatekeeper status (index into
    engine.STATUSES), the projected verdict (VERDICT_ORDER code), and the failed and the warned rules as
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
    sessions under `rules`, in arrays, and which of them that holds for: those judged under this
    word list whose claims gate_claim describes. Each rule's findings are its kind's
    `judge_columns` and, for a stored kind, its stored bits; the engine (evaluate_columns,
    backed_columns) and the verdict policy (gatekeeper_floor_codes, apply_gatekeeper_codes,
    decide_verdict_codes) judge them as they judge one session."""
    n = len(arrays.session_ids)
    key = lists_key(rules)
    ok = wanted & arrays.claims_ok & (arrays.text_has >= 0) & (arrays.evidence_floor >= 0)
    ok &= arrays.lists_key == (arrays.keys.index(key) if key in arrays.keys else -1)
    if not _columnar(rules) or not ok.any():
        none = np.zeros(n, dtype=np.int8)
        return Judged(np.zeros(n, dtype=bool), none, none, np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64))
    at = np.flatnonzero(ok[arrays.b_session])
    orphans = arrays.b_claim_row[at] < 0  # a binding of a claim without a row: not judged here
    if orphans.any():
        ok[arrays.b_session[at[orphans]]] = False
        at = np.flatnonzero(ok[arrays.b_session])
    found = _found(arrays, rules, at, ok)
    gate = evaluate_columns(rules, found, n, len(at))
    floor = gatekeeper_floor_codes(gate.failed, {spec.id: spec.verdict_impact for spec in rules.rules}, n)
    n_claims = len(arrays.c_session)
    hits = [(RULES[rule_id].entity_rule, claims, failed) for rule_id, failed in gate.failed.items()  # in rule order
            if (claims := found[rule_id].claims) is not None]
    backed = backed_columns(arrays.b_claim_row[at], gate.flagged, n_claims)
    standing = apply_gatekeeper_codes(hits, backed, arrays.c_session)
    verdict = decide_verdict_codes(chosen=np.flatnonzero(ok[arrays.c_session]), c_session=arrays.c_session,
                                   levels=arrays.c_standing, direct_core=arrays.c_direct, standing=standing,
                                   backed=backed, gate_floor=floor, evidence=arrays.evidence_floor)
    return Judged(ok, gate.status, verdict, gate.failed_bits, gate.warned_bits)


def _found(arrays: HistoryArrays, rules: RuleSet, at: npt.NDArray[np.intp], ok: npt.NDArray[np.bool_]) -> dict[str, FoundColumns]:
    """Per enabled rule, its findings under the candidate: its kind's judge_columns over the
    bindings at `at` (or per session) and, for a stored kind, the bits its findings were stored
    as. Sessions whose findings the arrays cannot decide are taken out of `ok`."""
    n, n_claims = len(arrays.session_ids), len(arrays.c_session)
    b_session, claim_of = arrays.b_session[at], arrays.b_claim_row[at]
    bits = {rule_id: np.int8(1 << i) for i, rule_id in enumerate(stored_kinds())}
    out: dict[str, FoundColumns] = {}
    for spec in rules.enabled():
        judged: ColumnFindings | None = RULES[spec.id].judge_columns(spec, arrays, at)
        columns = FoundColumns(np.zeros(n, dtype=bool), np.zeros(n, dtype=bool))
        if judged is not None and judged.unknown is not None:  # left to the per-session replay
            ok[b_session[judged.unknown] if judged.per_binding else judged.unknown] = False
        if judged is not None and judged.per_binding:
            columns.found = np.bincount(b_session[judged.found], minlength=n) > 0
            columns.failing = np.bincount(b_session[judged.failing], minlength=n) > 0
            columns.bindings = judged.found
            columns.claims = np.bincount(claim_of[judged.found], minlength=n_claims) > 0
        elif judged is not None:
            columns.found, columns.failing = judged.found, judged.failing
        bit = bits.get(spec.id)
        if bit is not None:
            columns.found = columns.found | (arrays.text_has & bit != 0)
            columns.failing = columns.failing | (arrays.text_fail & bit != 0)
            on_binding = arrays.b_text[at] & bit != 0
            in_claim = arrays.c_text & bit != 0
            columns.bindings = on_binding if columns.bindings is None else columns.bindings | on_binding
            columns.claims = in_claim if columns.claims is None else columns.claims | in_claim
        out[spec.id] = columns
    return out


def _binding_position(target: str) -> tuple[int, int]:
    at = parse_target(target)
    assert at is not None and at[1] is not None, target  # the rule context's bindings are binding targets
    return at[0], at[1]
