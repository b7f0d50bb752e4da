"""Rule kinds (docs/spec.md#rules-as-data, docs/spec.md#rule-set): one class per kind, `validate(context, metadata) -> RuleResult`,
declaring its defaults and its `Params` and registered by `@rule_kind` (see kinds.py).

Rules read only the executor output, the cited invocations' (session, tool) pairs, the digests
and the cached features, never a tool output, so `run_gatekeeper` and `replay` share them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic import StrictBool, StrictStr

from pipeline.core.contracts import ANSWER_VERSION, EvidenceDigest, ExecutorBinding, ExecutorOutput
from pipeline.core.errors import quote
from pipeline.core.messages import Message, Param, msg, render
from pipeline.gatekeeper import fidelity
from pipeline.gatekeeper.features import binding_target, valid_ids
from pipeline.gatekeeper.kinds import RULES as RULES  # re-exported: filled by the kinds below
from pipeline.gatekeeper.kinds import (
    Bools,
    ColumnFacts,
    ColumnFindings,
    Count,
    Floats,
    Number,
    RuleKind,
    RuleParams,
    params_of,
    rule_kind,
)
from pipeline.text.primitives import keywords, normalize
from pipeline.tools.registry import persisted_name

if TYPE_CHECKING:
    from pipeline.gatekeeper.rules_schema import RuleSpec

Level = Literal["fail", "warn"]
_FIELD_PATH = re.compile(r"[a-z_]+(\[\])?(\.[a-z_]+(\[\])?)*")  # claims[].claim_text
InvocationInfo = Callable[[int], "tuple[str, str] | None"]  # id -> (session_id, persisted tool name)
# Parameter sets remembered per rule and session: a slider being dragged should not grow memory.
_REMEMBERED_PARAMS = 4


@dataclass
class RuleContext:
    """One session as the rules see it. A replay keeps it per session, so the facts derived from
    the session (never from a rule parameter) and each rule's findings per parameter set are
    computed once and reused while the user tunes other rules or moves a threshold."""

    session_id: str
    output: ExecutorOutput | None  # None: the output did not parse
    invocation: InvocationInfo
    digests: list[EvidenceDigest] | None
    features: dict[str, dict[str, Any]]
    _bindings: list[tuple[str, ExecutorBinding, dict[str, Any] | None]] | None = field(default=None, repr=False)
    _facts: dict[Any, Any] = field(default_factory=dict, repr=False)
    _findings: dict[str, dict[str, tuple[str, tuple[Finding, ...]]]] = field(default_factory=dict, repr=False)
    last_result: tuple[Any, Any] | None = field(default=None, repr=False)  # (rule outcomes, result), see evaluate

    @property
    def bindings(self) -> list[tuple[str, ExecutorBinding, dict[str, Any] | None]]:
        """(target, binding, cached features) of every claim binding, walked once for all rules."""
        if self._bindings is None:
            features = self.features
            self._bindings = [
                (target, binding, features.get(target))
                for ci, bi, binding in (self.output.bindings() if self.output is not None else ())
                for target in (binding_target(ci, bi),)
            ]
        return self._bindings

    def fact(self, key: Any, compute: Callable[[RuleContext], Any]) -> Any:
        """A parameter-free fact about this session, computed on first use."""
        try:
            return self._facts[key]
        except KeyError:
            value = self._facts[key] = compute(self)
            return value

    def findings(self, spec: RuleSpec) -> tuple[str, tuple[Finding, ...]]:
        """(status, findings) of one rule under its parameters, remembered for the last few sets."""
        by_params = self._findings.get(spec.id)
        if by_params is None:
            by_params = self._findings[spec.id] = {}
        key = spec.params_key
        found = by_params.get(key)
        if found is None:
            result = RULES[spec.id].validate(self, spec)
            found = (result.status, tuple(result.findings)) if result.findings else _NO_FINDINGS
            if len(by_params) >= _REMEMBERED_PARAMS:
                del by_params[next(iter(by_params))]
            by_params[key] = found
        return found


@dataclass
class Finding:
    target: str
    # A catalogued Message (pipeline/core/messages.py), rendered in the reader's language; plain English
    # text is accepted from a rule kind that has no codes yet.
    message: str | Message
    level: Level = "fail"

    @property
    def text(self) -> str:
        return self.message if isinstance(self.message, str) else render(self.message, "en")

    @property
    def msg(self) -> Message | None:
        return None if isinstance(self.message, str) else self.message


@dataclass
class RuleResult:
    rule_id: str
    findings: list[Finding] = field(default_factory=list)

    @property
    def status(self) -> str:
        if any(f.level == "fail" for f in self.findings):
            return "fail"
        return "warn" if self.findings else "pass"


_NO_FINDINGS: tuple[str, tuple[Finding, ...]] = ("pass", ())


def _is_text(value: Any) -> bool:
    return type(value) is str and not value.isspace() and value != ""


@rule_kind
class SchemaRule(RuleKind):
    """schema.executor_v2 (docs/spec.md#rule-schema): the V2 shape; deprecated fields refused."""

    id = "schema.executor_v2"
    name = "Executor V2 Schema"
    description = "the executor output has the Executor V2 shape"
    severity = "error"
    verdict_impact = "low_confid_on_fail"
    column_params = frozenset()  # no threshold: the replay keeps its findings as found

    class Params(RuleParams):
        requiredFields: list[StrictStr]
        claimRequiredFields: list[StrictStr]
        bindingRequiredFields: list[StrictStr]
        supportLevels: list[StrictStr]
        deprecatedFields: list[StrictStr]
        arrayFields: list[StrictStr]
        allowEmptyClaims: StrictBool

    def validate(self, context: RuleContext, metadata: RuleSpec) -> RuleResult:
        p = params_of(metadata, SchemaRule.Params)
        out = RuleResult(self.id)
        if context.output is None:
            out.findings.append(Finding("$", msg("gk.no_output")))
            return out
        # This rule judges the object as written: which fields are there and of what type.
        data = context.output.raw
        for name in p.requiredFields:
            if name not in data:
                out.findings.append(Finding(name, msg("gk.field_missing", name=name)))
        if "answer_version" in data and data["answer_version"] != ANSWER_VERSION:
            out.findings.append(
                Finding("answer_version", msg("gk.answer_version", got=repr(data["answer_version"]),
                                              expected=repr(ANSWER_VERSION)))
            )
        present = set(data) | set(context.features.get("$", {}).get("raw_keys", ()))
        for name in p.deprecatedFields:
            if name in present:
                out.findings.append(Finding(name, msg("gk.deprecated_field", name=name)))
        for name in p.arrayFields:
            if data.get(name) is not None and not isinstance(data[name], list):
                out.findings.append(Finding(name, msg("gk.not_array", name=name, type=type(data[name]).__name__)))
        claims = data.get("claims")
        if "claims" in data and not isinstance(claims, list):
            out.findings.append(Finding("claims", msg("gk.not_array", name="claims", type=type(claims).__name__)))
        elif isinstance(claims, list):
            if not claims and not p.allowEmptyClaims:
                out.findings.append(Finding("claims", msg("gk.claims_empty")))
            need_claim, need_binding = frozenset(p.claimRequiredFields), frozenset(p.bindingRequiredFields)
            for ci, claim in enumerate(claims):
                if not _clean_claim(claim, need_claim, need_binding, p.supportLevels):
                    out.findings.extend(self._claim(f"claims[{ci}]", claim, p))
        return out

    def _claim(self, target: str, claim: Any, p: SchemaRule.Params) -> Iterator[Finding]:
        if not isinstance(claim, dict):
            yield Finding(target, msg("gk.claim_not_object"))
            return
        for name in p.claimRequiredFields:
            if name not in claim:
                yield Finding(f"{target}.{name}", msg("gk.claim_field_missing", name=name))
        for name in ("claim_id", "claim_type", "claim_text"):
            if name in claim and not _is_text(claim[name]):
                yield Finding(f"{target}.{name}", msg("gk.not_text", name=name))
        if "support_level" in claim and claim["support_level"] not in p.supportLevels:
            yield Finding(
                f"{target}.support_level",
                msg("gk.support_level", value=repr(claim["support_level"]), allowed=", ".join(p.supportLevels)),
            )
        bindings = claim.get("evidence_bindings")
        if "evidence_bindings" not in claim:
            return
        if not isinstance(bindings, list):
            yield Finding(f"{target}.evidence_bindings", msg("gk.bindings_not_array"))
            return
        if not bindings:
            yield Finding(f"{target}.evidence_bindings", msg("gk.bindings_empty"))
        for bi, binding in enumerate(bindings):
            found = self._binding(f"{target}.evidence_bindings[{bi}]", binding, p)
            if found:
                yield from found

    def _binding(self, target: str, binding: Any, p: SchemaRule.Params) -> list[Finding]:
        if type(binding) is not dict:
            return [Finding(target, msg("gk.binding_not_object"))]
        found = [
            Finding(f"{target}.{name}", msg("gk.binding_field_missing", name=name))
            for name in p.bindingRequiredFields
            if name not in binding
        ]
        ids = binding.get("source_invocation_ids")
        if ids is not None and (type(ids) is not list or len(valid_ids(ids)) != len(ids)):
            found.append(Finding(f"{target}.source_invocation_ids", msg("gk.ids_not_integers")))
        for name in ("tool_name", "evidence_excerpt"):
            if name in binding and not _is_text(binding[name]):
                found.append(Finding(f"{target}.{name}", msg("gk.not_text", name=name)))
        return found


def _clean_claim(claim: Any, need_claim: frozenset[str], need_binding: frozenset[str], levels: list[str]) -> bool:
    """True only if SchemaRule._claim would find nothing: the common case, checked without building findings."""
    if not isinstance(claim, dict) or not claim.keys() >= need_claim:
        return False
    for name in ("claim_id", "claim_type", "claim_text"):
        value = claim.get(name, "x")
        if type(value) is not str or not value or value.isspace():
            return False
    if "support_level" in claim and claim["support_level"] not in levels:
        return False
    bindings = claim.get("evidence_bindings", _ABSENT)
    if bindings is _ABSENT:
        return True
    if type(bindings) is not list or not bindings:
        return False
    for binding in bindings:
        if type(binding) is not dict or not binding.keys() >= need_binding:
            return False
        ids = binding.get("source_invocation_ids")
        if ids is not None and (type(ids) is not list or len(valid_ids(ids)) != len(ids)):
            return False
        for name in ("tool_name", "evidence_excerpt"):
            value = binding.get(name, "x")
            if type(value) is not str or not value or value.isspace():
                return False
    return True


_ABSENT = object()
_persisted: dict[str, str | None] = {}


def _tool(name: str) -> str | None:
    if name not in _persisted:
        _persisted[name] = persisted_name(name)
    return _persisted[name]


def _ref_problems(ids: list[int], tool_name: str | None, context: RuleContext) -> list[Message]:
    """What is wrong with citing `ids` under `tool_name` (None: not written) from this session
    (shared with digest_ref)."""
    good = valid_ids(ids)
    if not good:
        return [msg("gk.ref.ids_empty")]
    problems: list[Message] = []
    wanted = _tool(tool_name) if tool_name is not None else None
    if wanted is None and tool_name is not None:
        problems.append(msg("gk.ref.unknown_tool", tool=repr(tool_name)))
    for inv_id in good:
        info = context.invocation(inv_id)
        if info is None:
            problems.append(msg("gk.ref.fabricated_id", invocation=inv_id))
        elif info[0] != context.session_id:
            problems.append(msg("gk.ref.other_session", invocation=inv_id, session=info[0]))
        elif wanted is not None and tool_name is not None and wanted != info[1]:
            problems.append(msg("gk.ref.tool_mismatch", tool=tool_name, wanted=wanted, invocation=inv_id, actual=info[1]))
    return problems


def _in_digest(problem: Message, digest_id: str) -> Message:
    """A reference problem said of a digest: its gk.digest_ref twin, which names the digest."""
    return problem.model_copy(update={"code": problem.code.replace("gk.ref.", "gk.digest_ref.", 1),
                                      "params": {**problem.params, "digest": digest_id}})


@rule_kind
class InvocationRefRule(RuleKind):
    """evidence.invocation_ref (docs/spec.md#rule-invocation-ref): claims cite real invocations of this session with the right tool."""

    id = "evidence.invocation_ref"
    gates_evidence = True
    name = "Invocation Reference Check"
    description = "cited invocations exist, belong to this session and match tool_name"
    severity = "error"
    verdict_impact = "reject_on_fail"
    column_params = frozenset()  # no threshold: the replay keeps its findings as found

    def validate(self, context: RuleContext, metadata: RuleSpec) -> RuleResult:
        out = RuleResult(self.id)
        for ci, claim in enumerate(context.output.claims if context.output is not None else ()):
            if claim.evidence_bindings == []:
                out.findings.append(Finding(f"claims[{ci}]", msg("gk.claim_no_bindings")))
        # Bindings of a session mostly repeat a few (ids, tool) pairs; the problems depend on nothing else.
        problems_of: dict[tuple[tuple[int, ...], str | None], list[Message]] = {}
        for target, binding, _ in context.bindings:
            key = (tuple(binding.source_invocation_ids), binding.tool_name)
            problems = problems_of.get(key)
            if problems is None:
                problems = problems_of[key] = _ref_problems(binding.source_invocation_ids, binding.tool_name, context)
            for problem in problems:
                out.findings.append(Finding(target, problem))
        return out


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

        def problems(self) -> Iterator[tuple[str, str]]:
            if self.warnThreshold > self.passThreshold:
                yield "warnThreshold", f"{self.warnThreshold} > passThreshold {self.passThreshold}"

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
    def _low(feats: dict[str, Any], name: str, score: float, level: Level, p: ExcerptSimilarityRule.Params) -> Message:
        best = feats["sources"][name]
        bound_name, bound = ("warnThreshold", p.warnThreshold) if level == "fail" else ("passThreshold", p.passThreshold)
        message = (_not_found(best) if name == "output"
                   else msg("gk.similarity_source", score=score, bound_name=bound_name, bound=bound, source=name))
        other = feats.get("other_match")
        if other:
            message.then.append(msg("gk.similarity_other", invocation=other["invocation_id"], tool=other["tool_name"],
                                    score=other["score"]))
        return message


def _not_found(best: dict[str, Any]) -> Message:
    """Why an excerpt was not found in its output by structure: a record it cites is not there,
    the quote lies in other records than those it cites, or it is nowhere as written."""
    if best.get("missing"):
        return msg("gk.missing_records", records=", ".join(best["missing"][:6]))
    cited = best.get("records")
    if cited is None:
        return msg("gk.not_by_structure", invocation=best["invocation_id"], score=best["score"])
    shown = ", ".join(f"{inv}#{n}" for inv, numbers in cited.items() for n in numbers[:6])
    found = best.get("found_in")
    if found:
        return msg("gk.outside_cited", cited=shown, invocation=found["invocation_id"],
                   found=", ".join(f"#{n}" for n in found["records"][:6]))
    return msg("gk.not_in_cited", cited=shown, score=best["score"])


def _invented_words(context: RuleContext, p: ExcerptSimilarityRule.Params) -> dict[str, list[str]]:
    """Target -> the invented words that count, for the bindings with more than are tolerated."""
    out = {}
    for target, _, feats in context.bindings:
        if feats is not None and feats.get("invented"):
            words = fidelity.invented(feats, p.inventedMinLetters, p.inventedMinCjkRun)
            if ExcerptSimilarityRule.too_many_invented(p, len(words)):
                out[target] = words
    return out


def _best_source(sources: dict[str, Any], compare: Sequence[str], min_piece: int) -> tuple[str, float]:
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
    column_params = frozenset({"minLocatedScore"})

    class Params(RuleParams):
        kinds: list[Literal["service", "error_code", "identifier", "percentage", "quantity", "http_status", "number"]]
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
            if len(_MEANING_LISTS) >= _REMEMBERED_PARAMS:
                _MEANING_LISTS.clear()
            lists = _MEANING_LISTS[spec.params_key] = _MeaningLists(
                tuple(p.negationTerms) if p.negationOutcome != "off" else (),
                "warn" if p.negationOutcome == "warn" else "fail",
                tuple((pair[0], pair[1]) for pair in p.antonyms if len(pair) == 2),
                tuple(tuple(group) for group in p.logLevels),
                {word.upper(): g for g, group in enumerate(p.logLevels) for word in group})
        return lists


_MEANING_LISTS: dict[str, _MeaningLists] = {}


def _meaning_changes(feats: dict[str, Any], p: ExcerptEntitiesRule.Params, lists: _MeaningLists, said_caps: frozenset[str],
                     record_caps: frozenset[str], preceding: tuple[str, ...]) -> Iterator[tuple[Level, Message]]:
    """Where a located excerpt says the opposite of its output: negation added or dropped, an
    antonym flipped, another log level. Each is an entity-kind mismatch (external_unknown)."""
    negations, level, levels = lists.negations, lists.level, lists.levels
    stated = fidelity.stated_level(said_caps, record_caps, levels, lists.level_groups) if said_caps and record_caps else None
    if stated:
        yield "fail", msg("gk.level_changed", said=stated[0].upper(), record=stated[1].upper())
    if negations and preceding and ExcerptEntitiesRule.located(p, feats["sources"].get("output", {}).get("score", 0.0)):
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


def _entity_facts(context: RuleContext) -> list[tuple[str, dict[str, Any], frozenset[str], frozenset[str], tuple[str, ...]]]:
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
        words = tuple(w for w in map(fidelity.preceding_word, fidelity.befores(feats)) if w)
        if feats.get("entities") or feats.get("hunks") or feats.get("added") or words or (said and feats.get("caps")):
            out.append((target, feats, said, frozenset(feats.get("caps", ())), words))
    return out


def _entity_message(miss: dict[str, Any], located: bool) -> Message:
    token, kind = miss["token"], miss["kind"]
    if located and miss["nearby"]:
        return msg("gk.entity_nearby", token=token, kind=kind, held=", ".join(f'"{t}"' for t in miss["nearby"]))
    if located:
        return (msg("gk.entity_elsewhere", token=token, kind=kind) if miss["elsewhere"]
                else msg("gk.entity_not_in_record", token=token, kind=kind))
    return msg("gk.entity_nowhere", token=token, kind=kind)


def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    """Latin phrases match on word boundaries; CJK phrases anywhere (no spaces between words)."""
    escaped = re.escape(phrase)
    if phrase[:1].isascii() and phrase[:1].isalnum():
        escaped = r"(?<![a-z0-9])" + escaped
    if phrase[-1:].isascii() and phrase[-1:].isalnum():
        escaped += r"(?![a-z0-9])"
    return re.compile(escaped)


def _field_values(data: Any, path: str) -> Iterator[tuple[str, str]]:
    """(concrete target, text) for a path like claims[].claim_text or hypotheses[].needed_evidence[],
    walked in the object as written: the paths are configured (targetFields), any field may be named."""
    items: list[tuple[str, Any]] = [("", data)]
    for part in path.split("."):
        many = part.endswith("[]")
        name = part[:-2] if many else part
        nxt: list[tuple[str, Any]] = []
        for where, value in items:
            if not isinstance(value, dict) or name not in value:
                continue
            here = f"{where}.{name}" if where else name
            child = value[name]
            if many:
                if isinstance(child, list):
                    nxt.extend((f"{here}[{i}]", v) for i, v in enumerate(child))
            else:
                nxt.append((here, child))
        items = nxt
    for where, value in items:
        if isinstance(value, str):
            yield where, value


@rule_kind
class HallucinationPhraseRule(RuleKind):
    """claim.hallucination_phrases (docs/spec.md#rule-hallucination-phrases): no speculative wording in confirmed claims."""

    id = "claim.hallucination_phrases"
    name = "Hallucination Phrase Check"
    description = "no speculative wording in confirmed claims"
    severity = "error"
    verdict_impact = "low_confid_on_fail"

    column_params = frozenset()  # no threshold: the replay keeps its findings as found

    class Params(RuleParams):
        targetFields: list[StrictStr]
        blacklist: list[StrictStr]
        allowInFields: list[StrictStr]

        def problems(self) -> Iterator[tuple[str, str]]:
            for name in sorted(set(self.targetFields) & set(self.allowInFields)):
                yield "allowInFields", f"{name} is also a targetField"
            for name in self.targetFields:
                if not _FIELD_PATH.fullmatch(name):
                    yield "targetFields", f"{quote(name)} is not a field path like claims[].claim_text"

    def validate(self, context: RuleContext, metadata: RuleSpec) -> RuleResult:
        p = params_of(metadata, HallucinationPhraseRule.Params)
        literals = _blacklist_literals(tuple(p.blacklist))
        out = RuleResult(self.id)
        for path in p.targetFields:
            # partial, not a closure over the loop variable: the fact is computed now or never
            # today, but a lazier cache must not read the loop's last path.
            texts, joined = context.fact((self.id, path), partial(_normalized_field, path))
            # Every match is one of the literals, so the alternation of just the literals the texts
            # contain finds the same (leftmost, first-listed) matches, and most sessions contain
            # none. The texts are normalized (no newlines), so joining them cannot create a match.
            present = tuple(literal for literal in literals if literal in joined)
            if not present:
                continue
            pattern = _alternation(present)
            for target, text in texts:
                hits = list(dict.fromkeys(m.group(0) for m in pattern.finditer(text)))
                if hits:
                    quoted = ", ".join(f'"{h}"' for h in hits)
                    out.findings.append(Finding(target, msg("gk.speculative", phrases=quoted)))
        return out


def _normalized_field(path: str, context: RuleContext) -> tuple[list[tuple[str, str]], str]:
    texts = [(target, normalize(text)) for target, text in
             _field_values(context.output.raw if context.output is not None else None, path)]
    return texts, "\n".join(text for _, text in texts)


@lru_cache(maxsize=32)
def _blacklist_literals(phrases: tuple[str, ...]) -> tuple[str, ...]:
    """The normalized phrases, longest (as written) first: the order the alternation tries them."""
    return tuple(normalize(p) for p in sorted(phrases, key=len, reverse=True) if p.strip())


@lru_cache(maxsize=1024)
def _alternation(literals: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(_phrase_pattern(literal).pattern for literal in literals))


@rule_kind
class EvidenceUtilizationRule(RuleKind):
    """claim.evidence_utilization (docs/spec.md#rule-evidence-utilization): the claim's content words come from its excerpts."""

    id = "claim.evidence_utilization"
    name = "Evidence Utilization Check"
    description = "keyword coverage of a claim by its excerpts"
    severity = "warning"
    verdict_impact = "warn_only"

    column_params = frozenset({"minKeywordCoverage"})

    class Params(RuleParams):
        minKeywordCoverage: Number

    def validate(self, context: RuleContext, metadata: RuleSpec) -> RuleResult:
        p = params_of(metadata, EvidenceUtilizationRule.Params)
        out = RuleResult(self.id)
        for target, coverage, missing in context.fact(self.id, _keyword_coverage):
            if self.too_low(p, coverage):
                out.findings.append(
                    Finding(target, msg("gk.keyword_coverage", coverage=coverage, min=p.minKeywordCoverage, missing=missing))
                )
        return out

    @staticmethod
    def too_low(p: EvidenceUtilizationRule.Params, coverage: float) -> bool:
        """Whether a claim with this share of its keywords in its excerpts is a finding."""
        return coverage < p.minKeywordCoverage

    def judge_columns(self, spec: RuleSpec, facts: ColumnFacts, at: npt.NDArray[np.intp] | slice) -> ColumnFindings:
        """`too_low` over each session's lowest claim coverage (NaN, no claim with keywords,
        compares False): any finding is at that claim or another. A finding names its claim, which
        the lowest coverage cannot tell, so where it fails (a blocking rule) it is unknown here."""
        p = params_of(spec, EvidenceUtilizationRule.Params)
        found: Bools = facts.min_coverage < p.minKeywordCoverage
        return ColumnFindings(False, found, found, None if spec.downgraded else found)


def _keyword_coverage(context: RuleContext) -> list[tuple[str, float, str]]:
    """(target, share of the claim's keywords found in its excerpts, some missing ones) per claim."""
    out = []
    for ci, claim in enumerate(context.output.claims if context.output is not None else ()):
        if claim.claim_text is None or not _is_text(claim.claim_text):
            continue
        wanted = keywords(claim.claim_text)
        if not wanted:
            continue
        have: set[str] = set()
        for binding in claim.evidence_bindings or ():
            if binding.evidence_excerpt is not None and _is_text(binding.evidence_excerpt):
                have |= keywords(binding.evidence_excerpt)
        coverage = len(wanted & have) / len(wanted)
        out.append((f"claims[{ci}].claim_text", coverage, ", ".join(sorted(wanted - have)[:6])))
    return out


@rule_kind
class DigestRefRule(RuleKind):
    """evidence.digest_ref (split shape): claims cite real digests, digests cite real invocations."""

    id = "evidence.digest_ref"
    gates_evidence = True
    name = "Digest Reference Check"
    description = "split shape only; cited digests exist and quote their invocations"
    severity = "error"
    verdict_impact = "reject_on_fail"

    # The reference checks have no threshold and are kept as found; the quote scores are compared.
    column_params = frozenset({"quotePassThreshold", "quoteWarnThreshold"})

    class Params(RuleParams):
        requireDigestId: StrictBool
        requireIdsWithinDigest: StrictBool
        quotePassThreshold: Number
        quoteWarnThreshold: Number

        def problems(self) -> Iterator[tuple[str, str]]:
            if self.quoteWarnThreshold > self.quotePassThreshold:
                yield "quoteWarnThreshold", f"{self.quoteWarnThreshold} > quotePassThreshold {self.quotePassThreshold}"

    def validate(self, context: RuleContext, metadata: RuleSpec) -> RuleResult:
        p = params_of(metadata, DigestRefRule.Params)
        out = RuleResult(self.id)
        if context.digests is None:
            return out
        by_id = {d.digest_id: d for d in context.digests}
        for target, binding, _ in context.bindings:
            digest_id = binding.digest_id
            if digest_id is None:
                if p.requireDigestId:
                    out.findings.append(Finding(target, msg("gk.no_digest_id")))
                continue
            digest = by_id.get(digest_id)
            if digest is None:
                out.findings.append(Finding(target, msg("gk.digest_missing", digest=repr(digest_id))))
                continue
            if p.requireIdsWithinDigest:
                outside = [i for i in binding.source_invocation_ids if i not in digest.source_invocation_ids]
                if outside:
                    out.findings.append(
                        Finding(target, msg("gk.ids_outside_digest", ids=str(outside), digest=digest_id))
                    )
        for di, digest in enumerate(context.digests):
            target = f"digests[{di}]"
            for problem in _ref_problems(digest.source_invocation_ids, digest.tool, context):
                out.findings.append(Finding(target, _in_digest(problem, digest.digest_id)))
            quote = context.features.get(target, {}).get("quote", {})
            score = quote.get("score")
            level = None if score is None else self.quote_level(p, score)
            if level is None:
                continue
            out.findings.append(
                Finding(target, msg("gk.quote_similarity", digest=digest.digest_id, score=score,
                                    bound=p.quotePassThreshold if level == "warn" else p.quoteWarnThreshold), level)
            )
        return out

    @staticmethod
    def quote_level(p: DigestRefRule.Params, score: float) -> Level | None:
        """What a digest's quote scoring this against its invocations makes of it: nothing at
        quotePassThreshold or above, a warning below it, a failure below quoteWarnThreshold."""
        if score >= p.quotePassThreshold:
            return None
        return "fail" if score < p.quoteWarnThreshold else "warn"

    def judge_columns(self, spec: RuleSpec, facts: ColumnFacts, at: npt.NDArray[np.intp] | slice) -> ColumnFindings:
        """`quote_level` over each session's lowest digest quote score (NaN: none scored)."""
        p = params_of(spec, DigestRefRule.Params)
        return ColumnFindings(False, facts.min_quote < p.quotePassThreshold, facts.min_quote < p.quoteWarnThreshold)
