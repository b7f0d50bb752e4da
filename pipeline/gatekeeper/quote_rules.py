"""The quote rules (docs/spec.md#quote-fidelity): an excerpt is found in what it cites
(evidence.excerpt_similarity), and its entities and meaning hold there (evidence.excerpt_entities).

Like every rule kind (kinds.py) they judge the cached features (features.py: where the excerpt
sits, its similarity, entity misses, invented words, the hunks where it differs) against their
thresholds, never a tool output, so `run_gatekeeper` and the replay share them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import numpy.typing as npt
from pydantic import StrictStr

from pipeline.core.errors import quote
from pipeline.core.feature_shapes import EntityMiss, SourceEntry, TargetFeatures, source_score
from pipeline.core.messages import Message, Param, msg
from pipeline.gatekeeper import fidelity
from pipeline.gatekeeper.kinds import (
    REMEMBERED_PARAMS,
    RULES,
    Bools,
    ColumnFacts,
    ColumnFindings,
    Count,
    Finding,
    Floats,
    Level,
    Number,
    RuleContext,
    RuleKind,
    RuleParams,
    RuleResult,
    RuleSpec,
    params_of,
    rule_kind,
)
from pipeline.gatekeeper.matcher import segments

ALWAYS = 2.0  # an entity change point above any minLocatedScore (thresholds lie in [0, 1])
# More invented words than an excerpt of a record holds, and longer words or runs than any: a
# tolerance this high, or length filters past it, let a sentence made up whole through.
_INVENTED_LIMIT = 50


@rule_kind
class ExcerptSimilarityRule(RuleKind):
    """evidence.excerpt_similarity (docs/spec.md#rule-excerpt-similarity): the excerpt is found in what it cites."""

    id = "evidence.excerpt_similarity"
    gates_evidence = True
    name = "Excerpt Similarity Check"
    description = "each excerpt is found in the full output it cites"
    severity = "error"
    verdict_impact = "low_confid_on_fail"
    # The word lists' length filters (inventedMin*) are fingerprinted: the stored count of
    # invented words holds under them only.
    # A quote is found in its output by structure or not: the similarity thresholds only judge the
    # digest quote and summary scores that compareAgainst lists.
    acts_on = {"passThreshold": "digest_scores", "warnThreshold": "digest_scores", "minPieceWeight": "bindings",
               "inventedMinLetters": "bindings", "inventedMinCjkRun": "bindings", "inventedTolerated": "bindings"}
    replay = "columns"
    column_params = frozenset({"passThreshold", "warnThreshold", "compareAgainst", "minPieceWeight",
                               "inventedTolerated"})

    class Params(RuleParams):
        passThreshold: Number
        warnThreshold: Number
        compareAgainst: list[Literal["output", "digest.source_quote", "digest.summary"]]
        minPieceWeight: Count
        inventedMinLetters: Count
        inventedMinCjkRun: Count
        inventedTolerated: Count

        ordered = (("warnThreshold", "passThreshold"),)

    def neutered_by(self, spec: RuleSpec) -> list[str]:
        """Either check unable to fail: the score (no compared source, or warnThreshold 0: no
        score is below it) or the invented words (tolerated or counted beyond _INVENTED_LIMIT)."""
        p = params_of(spec, ExcerptSimilarityRule.Params)
        out = [] if p.compareAgainst else ["compareAgainst []"]
        if p.warnThreshold <= 0:
            out.append(f"warnThreshold {p.warnThreshold}")
        if p.inventedTolerated >= _INVENTED_LIMIT:
            out.append(f"inventedTolerated {p.inventedTolerated}")
        if min(p.inventedMinLetters, p.inventedMinCjkRun) > _INVENTED_LIMIT:
            out.append(f"inventedMinLetters {p.inventedMinLetters}, inventedMinCjkRun {p.inventedMinCjkRun}")
        return out

    def validate(self, context: RuleContext, metadata: RuleSpec) -> RuleResult:
        p = params_of(metadata, ExcerptSimilarityRule.Params)
        out = RuleResult(self.id)
        compare, min_piece = p.compareAgainst, p.minPieceWeight
        lowest = context.fact((self.id, min_piece, *compare), lambda c: _lowest_similarity(c, compare, min_piece))
        # Invented words depend on their own three parameters only: a similarity threshold being
        # dragged re-judges scores, not words.
        key = (self.id, "invented", p.inventedMinLetters, p.inventedMinCjkRun, p.inventedTolerated)
        invented = context.fact(key, lambda c: _invented_words(c, p))
        if not invented and (lowest is None or self.score_level(p, lowest) is None):
            return out
        for target, _, feats in context.bindings:
            if feats is None:
                continue
            parts: list[Message] = []
            level: Level = "warn"
            name, score = _best_source(feats["sources"], compare, min_piece)
            low = self.score_level(p, score) if name else None
            if low is not None:
                level = low
                parts.append(self._low(feats, name, score, level, p))
            words = invented.get(target)
            if words:
                level = "fail"
                shown = ", ".join(f'"{w}"' for w in words[:6])
                found: dict[str, Param] = {"count": len(words), "tolerated": p.inventedTolerated, "words": shown}
                parts.append(msg("gk.invented_words_also", **found) if parts else msg("gk.invented_words", **found))
            if parts:
                out.findings.append(Finding(target, parts[0].model_copy(update={"then": [*parts[0].then, *parts[1:]]}), level))
        return out

    @staticmethod
    def score_level(p: ExcerptSimilarityRule.Params, score: float) -> Level | None:
        """What an excerpt's best compared score makes of it: nothing at passThreshold or above,
        a warning below it, a failure below warnThreshold."""
        if score >= p.passThreshold:
            return None
        return "fail" if score < p.warnThreshold else "warn"

    @staticmethod
    def too_many_invented(p: ExcerptSimilarityRule.Params, count: int) -> bool:
        """Whether this many invented words (a failure) are more than tolerated."""
        return count > p.inventedTolerated

    def judge_columns(self, spec: RuleSpec, facts: ColumnFacts, at: npt.NDArray[np.intp] | slice) -> ColumnFindings:
        """score_level and too_many_invented over arrays of bindings (-1: no compared score)."""
        p = params_of(spec, ExcerptSimilarityRule.Params)
        best = self.best_scores(p, facts)[at]
        scored = best >= 0
        invented = facts.b_invented[at] > p.inventedTolerated
        return ColumnFindings(True, (scored & (best < p.passThreshold)) | invented,
                              (scored & (best < p.warnThreshold)) | invented)

    @staticmethod
    def invented_count(feats: TargetFeatures, spec: RuleSpec) -> int:
        """The binding's invented words that count under `spec`'s length filters: the number the
        gate rows keep for judge_columns (b_invented)."""
        p = params_of(spec, ExcerptSimilarityRule.Params)
        return len(fidelity.invented(feats, p.inventedMinLetters, p.inventedMinCjkRun))

    @staticmethod
    def best_scores(p: ExcerptSimilarityRule.Params, facts: ColumnFacts) -> Floats:
        """Per binding the best compared score as _best_source picks it with
        fidelity.effective_score (-1: none scored). It moves with no threshold, so it is kept per
        (sources, piece weight) for the next replay."""
        key = (tuple(p.compareAgainst), p.minPieceWeight)
        best = facts.best_cache.get(key)
        if best is None:
            structural = facts.b_full & ((facts.b_split == 0) | (facts.b_split >= p.minPieceWeight))
            # Found by structure or not (fidelity.by_structure); NaN (no output scored) stays out.
            output = np.where(np.isnan(facts.b_score), np.nan, np.where(structural, 1.0, 0.0))
            candidates = {"output": output, "digest.source_quote": facts.b_quote, "digest.summary": facts.b_summary}
            best = np.full(len(facts.b_score), -1.0)
            for name in p.compareAgainst:
                best = np.fmax(best, candidates[name])  # fmax: a NaN (no score) loses to any score
            if len(facts.best_cache) >= 2:
                facts.best_cache.clear()
            facts.best_cache[key] = best
        return best

    @staticmethod
    def _low(feats: TargetFeatures, name: str, score: float, level: Level, p: ExcerptSimilarityRule.Params) -> Message:
        best = feats["sources"][name]
        bound_name, bound = ("warnThreshold", p.warnThreshold) if level == "fail" else ("passThreshold", p.passThreshold)
        message = (_not_found(best) if name == "output"
                   else msg("gk.similarity_source", score=score, bound_name=bound_name, bound=bound, source=name))
        other = feats.get("other_match")
        if other:
            message.then.append(msg("gk.similarity_other", invocation=other["invocation_id"], tool=other["tool_name"],
                                    score=other["score"]))
        return message


def _not_found(best: SourceEntry) -> Message:
    """Why an excerpt was not found in its output by structure: a record it cites is not there,
    the quote lies in other records than those it cites, or it is nowhere as written."""
    if best.get("missing"):
        return msg("gk.missing_records", records=", ".join(best["missing"][:6]))
    cited = best.get("records")
    if cited is None:
        return msg("gk.not_by_structure", invocation=best["invocation_id"], score=_similarity(best))
    shown = ", ".join(f"{inv}#{n}" for inv, numbers in cited.items() for n in numbers[:6])
    found = best.get("found_in")
    if found:
        return msg("gk.outside_cited", cited=shown, invocation=found["invocation_id"],
                   found=", ".join(f"#{n}" for n in found["records"][:6]))
    return msg("gk.not_in_cited", cited=shown, score=_similarity(best))


def _similarity(best: SourceEntry) -> float:
    # A source _best_source picked was scored: an unscored one never is.
    return best["score"] or 0.0


def _invented_words(context: RuleContext, p: ExcerptSimilarityRule.Params) -> dict[str, list[str]]:
    """Target -> the invented words that count, for the bindings with more than are tolerated."""
    out = {}
    for target, _, feats in context.bindings:
        if feats is not None and feats.get("invented"):
            words = fidelity.invented(feats, p.inventedMinLetters, p.inventedMinCjkRun)
            if ExcerptSimilarityRule.too_many_invented(p, len(words)):
                out[target] = words
    return out


def _best_source(sources: Mapping[str, SourceEntry], compare: Sequence[str], min_piece: int) -> tuple[str, float]:
    """The compared source an excerpt matches best; ("", -1.0) if none has a score."""
    name, score = "", -1.0
    for source in compare:
        entry = sources.get(source)
        if entry is None or entry["score"] is None:
            continue
        value = fidelity.effective_score(entry, source, min_piece)
        if value > score:
            name, score = source, value
    return name, score


def _lowest_similarity(context: RuleContext, compare: Sequence[str], min_piece: int) -> float | None:
    """The lowest best-source score over the session's scored bindings: below it no threshold flags anything."""
    scores = [score for _, _, feats in context.bindings if feats is not None
              for name, score in (_best_source(feats["sources"], compare, min_piece),) if name]
    return min(scores, default=None)


@rule_kind
class ExcerptEntitiesRule(RuleKind):
    """evidence.excerpt_entities: numbers, services, codes and ids of an excerpt are in what it cites."""

    id = "evidence.excerpt_entities"
    gates_evidence = True
    name = "Excerpt Entity Check"
    description = "numbers, services, codes and ids of an excerpt are in the cited output"
    severity = "error"
    verdict_impact = "reject_on_fail"
    # Its findings change only at scores the features hold, so the replay stores the
    # minLocatedScores where they change; the kinds and word lists are fingerprinted.
    replay = "columns"
    column_params = frozenset({"minLocatedScore"})
    entity_rule = True
    acts_on = {"minLocatedScore": "bindings"}

    class Params(RuleParams):
        kinds: list[Literal["service", "instance", "error_code", "identifier", "percentage", "quantity", "http_status", "number"]]
        minLocatedScore: Number
        negationTerms: list[StrictStr]
        negationOutcome: Literal["fail", "warn", "off"]
        antonyms: list[list[StrictStr]]
        logLevels: list[list[StrictStr]]

        def problems(self) -> Iterator[tuple[str, str]]:
            for pos, words in enumerate(self.antonyms):
                if len(words) != 2 or not all(t.strip() for t in words):
                    yield f"antonyms[{pos}]", f"must be a pair of two words, got {quote(words)}"
            for pos, group in enumerate(self.logLevels):
                if not group:
                    yield f"logLevels[{pos}]", "must list at least one level word"

    def neutered_by(self, spec: RuleSpec) -> list[str]:
        # With no kinds, any value, service or id may be swapped; the meaning lists alone are no gate.
        return [] if params_of(spec, ExcerptEntitiesRule.Params).kinds else ["kinds []"]

    def validate(self, context: RuleContext, metadata: RuleSpec) -> RuleResult:
        p = params_of(metadata, ExcerptEntitiesRule.Params)
        out = RuleResult(self.id)
        kinds = set(p.kinds)
        lists = _MeaningLists.of(metadata)
        for target, feats, said_caps, record_caps, words in context.fact(self.id, _entity_facts):
            for miss in feats.get("entities", ()):
                if miss["kind"] not in kinds:
                    continue
                located = self.located(p, miss["score"])
                if not located and miss["elsewhere"]:
                    continue
                out.findings.append(Finding(target, _entity_message(miss, located)))
            out.findings.extend(Finding(target, message, level)
                                for level, message in _meaning_changes(feats, p, lists, said_caps, record_caps, words))
        return out

    @staticmethod
    def located(p: ExcerptEntitiesRule.Params, score: float) -> bool:
        """Whether an excerpt (or a piece of it) scoring this is located in its output: its
        mismatches there count, and so do those the output holds elsewhere."""
        return score >= p.minLocatedScore

    def judge_columns(self, spec: RuleSpec, facts: ColumnFacts, at: npt.NDArray[np.intp] | slice) -> ColumnFindings:
        """`located` over arrays of bindings' stored change points: a binding has findings when
        minLocatedScore is at or below its highest point, a fail-level one as the findings from
        its highest or its lowest point down say. With more than two points the two kept are
        the ends, so a threshold strictly between them is unknown here."""
        p = params_of(spec, ExcerptEntitiesRule.Params)
        hi, lo = facts.b_entity[at] >= p.minLocatedScore, facts.b_entity_low[at] >= p.minLocatedScore
        points, fails = facts.b_entity_points[at], facts.b_entity_fail[at]
        unknown: Bools = ((points > 2) & hi & ~lo) | ((points < 0) & hi)
        return ColumnFindings(True, hi, (hi & ~lo & (fails & 1 > 0)) | (lo & (fails & 2 > 0)), unknown)

    @classmethod
    def change_points(cls, context: RuleContext, spec: RuleSpec) -> dict[str, list[tuple[float, bool]]]:
        """Per binding target, every minLocatedScore at which the findings under `spec` on it change,
        highest first (ALWAYS: found at any score), each with whether the findings from there down
        hold a fail-level one: what the gate rows keep for judge_columns (b_entity*). The findings
        only grow as the threshold falls and change only at a score the features hold, so trying
        those scores (highest first) is exact."""
        candidates = {ALWAYS}
        for _, _, feats in context.bindings:
            if feats is None:
                continue
            candidates.update(miss["score"] for miss in feats.get("entities") or ())
            candidates.update(hunk["score"] for hunk in fidelity.hunks(feats))
            out = source_score(feats)
            candidates.add(0.0 if out is None else out)
        points: dict[str, list[tuple[float, bool]]] = {}
        counts: Counter[str] = Counter()
        for threshold in sorted(candidates, reverse=True):
            at_score = replace(spec, params=spec.params.model_copy(update={"minLocatedScore": threshold}))
            findings = RULES[cls.id].validate(context, at_score).findings
            now = Counter(finding.target for finding in findings)
            failing = {finding.target for finding in findings if finding.level == "fail"}
            for target in now.keys() | counts.keys():
                if now[target] != counts[target]:
                    points.setdefault(target, []).append((threshold, target in failing))
            counts = now
        return points


@dataclass(frozen=True)
class _MeaningLists:
    """The entity rule's word lists in the shape the checks want, built once per parameter set."""

    negations: tuple[str, ...]
    level: Level  # what a negation finding is
    pairs: tuple[tuple[str, str], ...]
    levels: tuple[tuple[str, ...], ...]
    level_groups: dict[str, int]  # a level word in capitals -> its group in levels

    @staticmethod
    def of(spec: RuleSpec) -> _MeaningLists:
        lists = _MEANING_LISTS.get(spec.params_key)
        if lists is None:
            p = params_of(spec, ExcerptEntitiesRule.Params)
            if len(_MEANING_LISTS) >= REMEMBERED_PARAMS:
                _MEANING_LISTS.clear()
            lists = _MEANING_LISTS[spec.params_key] = _MeaningLists(
                tuple(p.negationTerms) if p.negationOutcome != "off" else (),
                "warn" if p.negationOutcome == "warn" else "fail",
                tuple((pair[0], pair[1]) for pair in p.antonyms if len(pair) == 2),
                tuple(tuple(group) for group in p.logLevels),
                {word.upper(): g for g, group in enumerate(p.logLevels) for word in group})
        return lists


_MEANING_LISTS: dict[str, _MeaningLists] = {}


def _meaning_changes(feats: TargetFeatures, p: ExcerptEntitiesRule.Params, lists: _MeaningLists, said_caps: frozenset[str],
                     record_caps: frozenset[str], preceding: tuple[str, ...]) -> Iterator[tuple[Level, Message]]:
    """Where a located excerpt says the opposite of its output: negation added or dropped, an
    antonym flipped, another log level. Each is an entity-kind mismatch (external_unknown)."""
    negations, level, levels = lists.negations, lists.level, lists.levels
    stated = fidelity.stated_level(said_caps, record_caps, levels, lists.level_groups) if said_caps and record_caps else None
    if stated:
        yield "fail", msg("gk.level_changed", said=stated[0].upper(), record=stated[1].upper())
    if negations and preceding and ExcerptEntitiesRule.located(p, source_score(feats) or 0.0):
        for word in preceding:
            term = fidelity.negation_before(word, negations)
            if term:
                yield level, msg("gk.negation_dropped_before", term=term)
    pairs = lists.pairs
    for hunk in fidelity.hunks(feats):
        if not ExcerptEntitiesRule.located(p, hunk["score"]):
            continue
        for term in fidelity.added_negations(hunk, negations):
            yield level, msg("gk.negation_added", term=term, added=hunk["added"])
        for term in fidelity.dropped_negations(hunk, negations):
            yield level, msg("gk.negation_dropped", term=term, out=hunk["out"])
        swap = fidelity.flipped(hunk, pairs)
        if swap:
            yield "fail", msg("gk.antonym", orig=swap[1], said=swap[0], ex=hunk["ex"], out=hunk["out"])
        number = fidelity.changed_number(hunk) if "number" in p.kinds else None
        if number:
            yield "fail", msg("gk.number_changed", said=number[0], orig=number[1], out=hunk["out"])
        changed = None if stated else fidelity.changed_level(hunk, fidelity.befores(feats), levels)
        if changed:
            yield "fail", msg("gk.level_changed", said=changed[0].upper(), record=changed[1].upper())


def _entity_facts(context: RuleContext) -> list[tuple[str, TargetFeatures, frozenset[str], frozenset[str], tuple[str, ...]]]:
    """Per binding with something to judge: (target, features, capitals of the excerpt, capitals
    of its records, words right before each quote). Parameter-free, so built once per session."""
    out = []
    for target, binding, feats in context.bindings:
        if feats is None:
            continue
        excerpt = binding.evidence_excerpt or ""
        # An excerpt written all in capitals says nothing by its capitals.
        stated = any(ch.islower() for ch in excerpt)
        said = frozenset(fidelity.capitals(excerpt)) if stated else frozenset()
        # A segment's "before" is the output just before it (the matcher's segments, in order).
        words = tuple(w for (part, _), before in zip(segments(excerpt), feats.get("before", ()), strict=False)
                      if before and not fidelity.opens_field(part) for w in (fidelity.preceding_word(before),) if w)
        if feats.get("entities") or feats.get("hunks") or feats.get("added") or words or (said and feats.get("caps")):
            out.append((target, feats, said, frozenset(feats.get("caps", ())), words))
    return out


def _entity_message(miss: EntityMiss, located: bool) -> Message:
    token, kind = miss["token"], miss["kind"]
    if located and miss["nearby"]:
        return msg("gk.entity_nearby", token=token, kind=kind, held=", ".join(f'"{t}"' for t in miss["nearby"]))
    if located:
        return (msg("gk.entity_elsewhere", token=token, kind=kind) if miss["elsewhere"]
                else msg("gk.entity_not_in_record", token=token, kind=kind))
    return msg("gk.entity_nowhere", token=token, kind=kind)
