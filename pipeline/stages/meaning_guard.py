"""Composer guard, meaning part (issue 11 item 9): every sentence must come from one input item.

The token guard (pipeline.stages.composer_guard.check_output) catches a new number, code or service.
A fluent composer can invent without any: "Confirmed: order-service thread pool saturated,
requests queued." names only a service the input holds. So each sentence's content words (the
framing vocabulary of pipeline.answer, hedges and gap words aside) must overlap one item of the
composer input (an allowed claim, hypothesis, gap, action, the rationale, the lead, the
question) by at least `min_overlap`. A sentence presenting as confirmed what is best matched by a
hypothesis or a gap, or restating a claim the filter kept away, is a violation as well.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pipeline.answer import framing_words
from pipeline.contracts import ComposerGuardViolation, ComposerInput, ComposerOutput, FilteredItem
from pipeline.safe_actions import fixed_actions
from pipeline.text import keywords, normalize

_CONFIRMED = re.compile(r"(?<!un)(?<!not )confirmed|已确认|已证实|确认是|证实了|\bestablished\b|root cause is|根因是|definitely")
_HEDGED = re.compile(
    r"可能|也许|或许|疑似|推测|未证实|未确认|尚未|尚无|缺少|缺口|无法|不能|未知|没有|possibl|may |might|could|likely|perhaps|"
    r"unconfirmed|not confirmed|not yet|missing|unknown|cannot|no sign|no logs|gap|needs?:"
)
_SPLIT = re.compile(r"[。！？!?；;\n]|(?<=[a-z0-9)\]])\.\s")
_LIST_MARKER = re.compile(r"^\s*(?:\d{1,2}[.、)）]|[-*•])\s*")
# Items a sentence may restate as a fact; any other best match makes a "confirmed" sentence a violation.
_FACT_KINDS = frozenset({"claim", "lead", "action", "rationale", "question"})


def _stem(word: str) -> str:
    """A light English stem so "declines"/"declined" meet "decline"; CJK words pass unchanged."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.isascii() and len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _words(text: str) -> frozenset[str]:
    return frozenset(_stem(w) for w in keywords(text) if w not in framing_words())


@dataclass(frozen=True)
class _Item:
    kind: str
    words: frozenset[str]


def _items(ci: ComposerInput) -> list[_Item]:
    items = [_Item("claim", _words(c.claim_text)) for c in ci.allowed_claims]
    items += [_Item("hypothesis", _words(" ".join([h.hypothesis_text, *h.needed_evidence])))
              for h in ci.allowed_hypotheses]
    items += [_Item("gap", _words(m)) for m in ci.missing_info]
    items += [_Item("action", _words(f"{a.action_text} {a.reason}")) for a in ci.recommended_actions]
    # The safe next steps a template adds when the input has none carry no fact.
    items += [_Item("action", _words(f"{a.action_text} {a.reason}")) for lang in ("zh", "en") for a in fixed_actions(lang)]
    items += [_Item("rationale", _words(ci.rationale)), _Item("question", _words(ci.original_query))]
    if ci.answer_lead is not None:
        lead = ci.answer_lead
        kind = "lead" if lead.kind != "cause" or lead.support == "confirmed" else "hypothesis"
        items.append(_Item(kind, _words(" ".join([lead.text, *lead.services, *lead.evidence]))))
    return [i for i in items if i.words]


def _lead_words(ci: ComposerInput) -> frozenset[str]:
    lead = ci.answer_lead
    if lead is None or ci.verdict == "REJECT":
        return frozenset()
    return _words(" ".join([lead.text, *lead.services]) if lead.kind != "no_data" else " ".join(lead.services))


def _overlap(words: frozenset[str], other: frozenset[str]) -> float:
    return len(words & other) / len(words) if words else 1.0


def _texts(out: ComposerOutput) -> Iterable[tuple[str, str]]:
    yield "answer_summary", out.answer_summary
    yield "user_facing_answer", out.user_facing_answer
    for name in ("key_facts", "other_observations", "possible_causes", "evidence_gaps"):
        for i, text in enumerate(getattr(out, name)):
            yield f"{name}[{i}]", text
    for i, action in enumerate(out.recommended_actions):
        yield f"recommended_actions[{i}]", f"{action.action_text}\n{action.reason}"


def check_meaning(
    output: ComposerOutput, ci: ComposerInput, filtered: Sequence[FilteredItem] = (), min_overlap: float = 0.5
) -> list[ComposerGuardViolation]:
    items = _items(ci)
    kept_away = [_words(f.text) for f in filtered if f.moved_to != "allowed_hypotheses"]
    claims = [i.words for i in items if i.kind in ("claim", "lead")]
    violations: list[ComposerGuardViolation] = []
    # Law 8: the answer opens with the lead decided in code (the cause, "no sign of a fault", no data).
    first = next((p for p in _SPLIT.split(output.user_facing_answer) if _words(p)), "")
    lead = _lead_words(ci)
    if lead and first and _overlap(lead, _words(first)) < min_overlap:
        violations.append(ComposerGuardViolation(kind="lead_missing", token=first.strip()[:120],
                                                 field="user_facing_answer"))
    for field, text in _texts(output):
        heading_confirms = heading_hedges = False
        for line in text.splitlines() or [text]:
            body = _LIST_MARKER.sub("", line).strip()
            if body.endswith((":", "：")):  # a heading frames the lines under it
                norm = normalize(body)
                heading_confirms, heading_hedges = bool(_CONFIRMED.search(norm)), bool(_HEDGED.search(norm))
            for sentence in _SPLIT.split(body):
                violation = _judge(sentence, items, kept_away, claims, min_overlap, heading_confirms, heading_hedges)
                if violation:
                    violations.append(ComposerGuardViolation(kind=violation, token=sentence.strip()[:120], field=field))
    return violations


def _judge(sentence: str, items: list[_Item], kept_away: list[frozenset[str]], claims: list[frozenset[str]],
           min_overlap: float, heading_confirms: bool, heading_hedges: bool) -> str | None:
    words = _words(sentence)
    if not words:
        return None
    norm = normalize(sentence)
    hedged = heading_hedges or bool(_HEDGED.search(norm))
    confirms = (heading_confirms or bool(_CONFIRMED.search(norm))) and not _HEDGED.search(norm)
    best = max(items, key=lambda i: _overlap(words, i.words), default=None)
    best_share = _overlap(words, best.words) if best else 0.0
    if best is None or best_share < min_overlap:
        return "unattributed"
    if confirms and best.kind not in _FACT_KINDS:
        return "unconfirmed_as_fact"
    claim_share = max((_overlap(words, c) for c in claims), default=0.0)
    if not hedged and any(_overlap(words, k) >= min_overlap and _overlap(words, k) > claim_share for k in kept_away):
        return "filtered_claim"
    return None
