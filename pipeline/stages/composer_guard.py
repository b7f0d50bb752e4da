"""Composer guard (docs/spec.md#composer): the composer's answer says nothing its input does not license.

Two parts: here the tokens (no number, duration, percentage, error code, service or id that the
composer input lacks, and no root-cause statement the verdict does not allow); in
pipeline.stages.meaning_guard the meaning (every sentence attributable to one input item).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from pipeline.contracts import ComposerGuardViolation, ComposerInput, ComposerOutput, FilteredItem
from pipeline.stages.meaning_guard import check_meaning
from pipeline.text import Entity, entity_values, extract_entities, keywords, normalize

_KIND = {
    "percentage": "percentage",
    "service": "service",
    "error_code": "error_code",
    "http_status": "error_code",
    "identifier": "identifier",
    "number": "number",
}
# Share of a causal sentence's words that must come from the allowed claims / hypotheses.
GROUNDED_SHARE = 0.6
_LIST_MARKER = re.compile(r"^\s*(?:\d{1,2}[.、)）]|[-*•])\s*", re.MULTILINE)
_SENTENCE = re.compile(r"[。！？!?；;\n]|(?<=[a-z0-9)\]])\.\s")
_ROOT_WORDS = ("根因", "根本原因", "root cause", "root-cause")
_CAUSAL_WORDS = (
    "导致", "造成", "引起", "引发", "归因", "原因是", "由于", "因为", "caused by", "because", "due to", "led to",
    "leads to", "lead to", "resulted in", "result of", "responsible for", "the cause",
)
# A sentence with one of these says a cause is NOT established: a gap, not a conclusion.
_GAP_WORDS = (
    "无法", "尚无", "尚未", "未能", "不能", "未确认", "未证实", "没有", "缺少", "不确定", "待确认", "不得", "cannot", "can't",
    "could not", "not yet", "unconfirmed", "not confirmed", "no reliable", "unknown", "missing", "insufficient",
    "not been", "no root cause", "unverified", "not established",
)
_HEDGE_WORDS = (
    "可能", "也许", "或许", "疑似", "推测", "猜测", "possibly", "possible", "may ", "might", "could", "likely",
    "perhaps", "suspected", "hypothes",
)


def _literal_number(ent: Entity, source_norm: str) -> bool:
    """A bare number or id written verbatim in the input: the extractor skips a number that ends
    a sentence ("waiting: 120."), and an answer that drops the full stop must not be punished."""
    return ent.kind in ("number", "identifier") and re.search(
        rf"(?<![\d.]){re.escape(ent.value)}(?!\d)", source_norm) is not None


def _violation_kind(kind: str, value: str) -> str:
    if kind == "quantity":  # durations are normalised to seconds ("5.3s"); other units stay numbers
        return "duration" if re.fullmatch(r"[\d.]+s", value) else "number"
    return _KIND.get(kind, "number")


def _input_text(ci: ComposerInput) -> str:
    parts = [ci.original_query, ci.rationale, *ci.missing_info]
    parts += [c.claim_text for c in ci.allowed_claims]
    for h in ci.allowed_hypotheses:
        parts += [h.hypothesis_text, *h.needed_evidence]
    for a in ci.recommended_actions:
        parts += [a.action_text, a.reason]
    if ci.answer_lead is not None:
        parts += [ci.answer_lead.text, *ci.answer_lead.services, *ci.answer_lead.evidence]
    return "\n".join(parts)


def _fields(out: ComposerOutput) -> list[tuple[str, str]]:
    fields = [("answer_summary", out.answer_summary), ("user_facing_answer", out.user_facing_answer)]
    for name in ("key_facts", "other_observations", "possible_causes", "evidence_gaps"):
        fields += [(f"{name}[{i}]", text) for i, text in enumerate(getattr(out, name))]
    for i, a in enumerate(out.recommended_actions):
        fields += [(f"recommended_actions[{i}].action_text", a.action_text),
                   (f"recommended_actions[{i}].reason", a.reason)]
    return fields


def _grounded(sentence: str, texts: Iterable[str]) -> bool:
    """Most of the sentence's content words (hedges and causal words aside) occur in `texts`."""
    reference = normalize("\n".join(texts))
    words = [w for w in keywords(sentence)
             if not any(w in marker or marker.strip() in w for marker in _HEDGE_WORDS + _CAUSAL_WORDS + _ROOT_WORDS)]
    if not reference or not words:
        return False
    return sum(1 for w in words if w in reference) / len(words) >= GROUNDED_SHARE


def _cause_violation(sentence: str, ci: ComposerInput) -> bool:
    norm = normalize(sentence)
    root = any(w in norm for w in _ROOT_WORDS)
    causal = root or any(w in norm for w in _CAUSAL_WORDS)
    if not causal or any(w in norm for w in _GAP_WORDS):
        return False
    # Quoting an action's purpose or a stated gap word for word adds nothing (e.g. a runbook title).
    quoted = normalize("\n".join([*ci.missing_info, *(f"{a.action_text}\n{a.reason}" for a in ci.recommended_actions)]))
    if norm.strip(" 。.；;!！") in quoted:
        return False
    claims = [c.claim_text for c in ci.allowed_claims]
    hyps = [h.hypothesis_text for h in ci.allowed_hypotheses]
    if any(w in norm for w in _HEDGE_WORDS):
        # a possible cause: never under REJECT, and only one the input already names
        return ci.verdict == "REJECT" or not _grounded(sentence, claims + hyps)
    if root:
        roots = [c.claim_text for c in ci.allowed_claims if c.claim_type == "root_cause"]
        return ci.verdict != "PASS" or not _grounded(sentence, roots)
    # an asserted causal link must be an allowed claim restated, not a new one
    return ci.verdict == "REJECT" or not any(normalize(c).rstrip("。.；;!！") in norm for c in claims)


def check_output(
    output: ComposerOutput, composer_input: ComposerInput, services: Iterable[str] = (),
    filtered: Sequence[FilteredItem] = (), min_overlap: float = 0.5,
) -> list[ComposerGuardViolation]:
    """Everything in the composer's answer that its input does not license: new tokens here,
    sentences no input item says (or that say a kept-away claim) in pipeline.stages.meaning_guard."""
    source = _input_text(composer_input)
    allowed = entity_values(source)
    source_norm = normalize(source)
    violations: list[ComposerGuardViolation] = []
    seen: set[tuple[str, str]] = set()

    def add(kind: str, token: str, field: str) -> None:
        if (kind, token) not in seen:
            seen.add((kind, token))
            violations.append(ComposerGuardViolation(kind=kind, token=token, field=field))

    for field, text in _fields(output):
        body = _LIST_MARKER.sub("", text)
        for ent in sorted(extract_entities(body)):
            if ent.value not in allowed and not _literal_number(ent, source_norm):
                add(_violation_kind(ent.kind, ent.value), ent.value, field)
        norm = normalize(body)
        for svc in services:
            s = normalize(svc)
            if s and s in norm and s not in source_norm:
                add("service", s, field)
        for sentence in _SENTENCE.split(body):
            if sentence.strip() and _cause_violation(sentence, composer_input):
                add("root_cause", sentence.strip().rstrip("。.!！")[:120], field)
    violations += [v for v in check_meaning(output, composer_input, filtered, min_overlap)
                   if (v.kind, v.token) not in seen]
    return violations
