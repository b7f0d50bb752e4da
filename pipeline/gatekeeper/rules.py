"""Rule kinds (docs/spec.md#rules-as-data, docs/spec.md#rule-set): one class per kind, `validate(context, metadata) -> RuleResult`,
declaring its defaults and its `Params` and registered by `@rule_kind` (see kinds.py). The quote
rules (excerpt similarity and entities) are in quote_rules.py; importing this module registers
every kind.

Rules read only the executor output, the cited invocations' (session, tool) pairs, the digests
and the cached features, never a tool output, so `run_gatekeeper` and `replay` share them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from functools import lru_cache, partial
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import StrictBool, StrictStr

from pipeline.core.contracts import ANSWER_VERSION, READ_FROM_PROSE
from pipeline.core.errors import quote
from pipeline.core.feature_shapes import claim_target, digest_target
from pipeline.core.messages import Message, msg
from pipeline.gatekeeper.features import valid_ids
from pipeline.gatekeeper.kinds import RULES as RULES  # re-exported: filled by the kinds here and in quote_rules
from pipeline.gatekeeper.kinds import (
    Bools,
    ColumnFacts,
    ColumnFindings,
    Finding,
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

# Importing the quote rules registers them: RULES, re-exported above, then holds every kind.
from pipeline.gatekeeper.quote_rules import ExcerptEntitiesRule as ExcerptEntitiesRule
from pipeline.gatekeeper.quote_rules import ExcerptSimilarityRule as ExcerptSimilarityRule
from pipeline.text.primitives import keywords, normalize, unquoted
from pipeline.tools.registry import persisted_name

_FIELD_PATH = re.compile(r"[a-z_]+(\[\])?(\.[a-z_]+(\[\])?)*")  # claims[].claim_text


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
    replay = "stored"  # no threshold: the replay keeps its findings as found

    class Params(RuleParams):
        requiredFields: list[StrictStr]
        claimRequiredFields: list[StrictStr]
        bindingRequiredFields: list[StrictStr]
        supportLevels: list[StrictStr]
        deprecatedFields: list[StrictStr]
        arrayFields: list[StrictStr]
        allowEmptyClaims: StrictBool

    def neutered_by(self, spec: RuleSpec) -> list[str]:
        return []  # an output that does not parse fails it whatever the lists say

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
            prose = _read_from_prose(context)
            # Prose whose every statement is hedged states its guesses as hypotheses and no fact: an
            # answer in its right shape, which only the reading into this one left without claims.
            if not claims and not p.allowEmptyClaims and not (prose and data.get("hypotheses")):
                out.findings.append(Finding("claims", msg("gk.claims_empty")))
            need_claim, need_binding = frozenset(p.claimRequiredFields), frozenset(p.bindingRequiredFields)
            for ci, claim in enumerate(claims):
                if not _clean_claim(claim, need_claim, need_binding, p.supportLevels):
                    out.findings.extend(f for f in self._claim(claim_target(ci), claim, p)
                                        if not (prose and f.msg is not None and f.msg.code == "gk.bindings_empty"))
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


def _read_from_prose(context: RuleContext) -> bool:
    """The output is a foreign prose answer read into this shape (READ_FROM_PROSE)."""
    return context.output is not None and context.output.raw.get(READ_FROM_PROSE[0]) == READ_FROM_PROSE[1]


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
    replay = "stored"  # no threshold: the replay keeps its findings as found

    def neutered_by(self, spec: RuleSpec) -> list[str]:
        return []  # no parameters: a fabricated id always fails

    def validate(self, context: RuleContext, metadata: RuleSpec) -> RuleResult:
        out = RuleResult(self.id)
        # A statement of a prose answer that nothing backs cites no invocation, forged or not: it is
        # an unbacked claim (the verdict policy's cause), not a reference fault.
        claims = () if context.output is None or _read_from_prose(context) else context.output.claims
        for ci, claim in enumerate(claims):
            if claim.evidence_bindings == []:
                out.findings.append(Finding(claim_target(ci), msg("gk.claim_no_bindings")))
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

    replay = "stored"  # no threshold: the replay keeps its findings as found

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

    def neutered_by(self, spec: RuleSpec) -> list[str]:
        p = params_of(spec, HallucinationPhraseRule.Params)
        return [f"{name} []" for name, words in (("targetFields", p.targetFields), ("blacklist", p.blacklist)) if not words]

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
    # A quoted record's words are the tool's, not the writer's speculation: a claim quoting a log
    # line that says "may be retried" speculates nothing (an invented quote fails the evidence rules).
    texts = [(target, normalize(unquoted(text))) for target, text in
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

    replay = "columns"
    column_params = frozenset({"minKeywordCoverage"})
    acts_on = {"minKeywordCoverage": "claims"}

    class Params(RuleParams):
        minKeywordCoverage: Number

    def neutered_by(self, spec: RuleSpec) -> list[str]:
        p = params_of(spec, EvidenceUtilizationRule.Params)
        return [] if p.minKeywordCoverage > 0 else [f"minKeywordCoverage {p.minKeywordCoverage}"]  # no share is below 0

    def validate(self, context: RuleContext, metadata: RuleSpec) -> RuleResult:
        p = params_of(metadata, EvidenceUtilizationRule.Params)
        out = RuleResult(self.id)
        for target, coverage, missing in self.coverages(context):
            if self.too_low(p, coverage):
                out.findings.append(
                    Finding(target, msg("gk.keyword_coverage", coverage=coverage, min=p.minKeywordCoverage, missing=missing))
                )
        return out

    @classmethod
    def coverages(cls, context: RuleContext) -> list[tuple[str, float, str]]:
        """(target, share of the claim's keywords found in its excerpts, some missing ones) per
        claim with keywords, computed once per session (the replay's rows read it too)."""
        found: list[tuple[str, float, str]] = context.fact(cls.id, _keyword_coverage)
        return found

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
        out.append((f"{claim_target(ci)}.claim_text", coverage, ", ".join(sorted(wanted - have)[:6])))
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
    replay = "stored"
    column_params = frozenset({"quotePassThreshold", "quoteWarnThreshold"})
    acts_on = {"quotePassThreshold": "digests", "quoteWarnThreshold": "digests"}

    class Params(RuleParams):
        requireDigestId: StrictBool
        requireIdsWithinDigest: StrictBool
        quotePassThreshold: Number
        quoteWarnThreshold: Number

        ordered = (("quoteWarnThreshold", "quotePassThreshold"),)

    def neutered_by(self, spec: RuleSpec) -> list[str]:
        """Without requireDigestId a binding escapes every check here by naming no digest; with
        quoteWarnThreshold 0 no quote scores below it (scores are in [0, 1])."""
        p = params_of(spec, DigestRefRule.Params)
        return [*([] if p.requireDigestId else ["requireDigestId false"]),
                *([] if p.quoteWarnThreshold > 0 else [f"quoteWarnThreshold {p.quoteWarnThreshold}"])]

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
            target = digest_target(di)
            for problem in _ref_problems(digest.source_invocation_ids, digest.tool, context):
                out.findings.append(Finding(target, _in_digest(problem, digest.digest_id)))
            quote = context.features.get(target, {}).get("quote", {})
            score = quote.get("score")
            level = None if score is None else self.quote_level(p, score)
            if score is None or level is None:
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

    def as_found(self, spec: RuleSpec) -> RuleSpec:
        """The reference checks alone: no quote scores below 0."""
        params = params_of(spec, DigestRefRule.Params).model_copy(update={"quotePassThreshold": 0.0, "quoteWarnThreshold": 0.0})
        return replace(spec, params=params)

    def judge_columns(self, spec: RuleSpec, facts: ColumnFacts, at: npt.NDArray[np.intp] | slice) -> ColumnFindings:
        """`quote_level` over each session's lowest digest quote score (NaN: none scored)."""
        p = params_of(spec, DigestRefRule.Params)
        return ColumnFindings(False, facts.min_quote < p.quotePassThreshold, facts.min_quote < p.quoteWarnThreshold)
