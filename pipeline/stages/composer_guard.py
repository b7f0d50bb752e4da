"""Composer guard (docs/spec.md#composer): the composer's answer says nothing its input does not license.

`judge_answer` is the one place that decides whether a composer answer is shown or replaced by
the fixed template. It refuses a degenerate answer first: empty, only punctuation, placeholders
such as "..." or "N/A", or without the wording its verdict requires
(docs/spec.md#verdict-expression). A model that answers "..." in every field states nothing new,
so no later check would stop it. Then it checks two parts: here the tokens (no number, duration, percentage, error code, service or id that the
composer input lacks, and no root-cause statement the verdict does not allow); in
pipeline.stages.meaning_guard the meaning (every clause attributable to an input item).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from pipeline.core.contracts import (
    ComposerGuardResult,
    ComposerGuardViolation,
    ComposerInput,
    ComposerOutput,
    FilteredItem,
    Verdict,
)
from pipeline.core.messages import msg, render
from pipeline.stages.meaning_guard import check_meaning, comparable
from pipeline.text.lexicon import CAUSAL, HEDGE, ROOT_CAUSE, UNSETTLED
from pipeline.text.primitives import (
    CJK_IDEOGRAPHS,
    Entity,
    EntityMatch,
    entity_values,
    find_entities,
    keywords,
    normalize,
)

_KIND = {
    "percentage": "percentage",
    "service": "service",
    "instance": "identifier",
    "error_code": "error_code",
    "http_status": "error_code",
    "identifier": "identifier",
    "number": "number",
}
# Share of a causal sentence's words that must come from the allowed claims / hypotheses.
GROUNDED_SHARE = 0.6
_LIST_MARKER = re.compile(r"^\s*(?:\d{1,2}[.、)）](?!\d)|[-*•])\s*", re.MULTILINE)
_SENTENCE = re.compile(r"[。！？!?；;\n]|(?<=[a-z0-9)\]])\.\s")
# Words a causal sentence may use beyond the facts it restates: they do not count against its grounding.
_MARKERS = tuple(w for words in (HEDGE, CAUSAL, ROOT_CAUSE) for w in (*words.zh, *words.en))


# key=value pairs of log lines ("idle=9"): the same key with another value is a changed fact.
_PAIR = re.compile(r"\b([a-z][a-z_]*)=([\w/\-]+(?:\.[\w/\-]+)*)")
# Ids the entity patterns do not know ("cfg-20261121-03", "inv-84cd-2"): letters and digits joined by
# hyphens or underscores; one written differently from the input is a new id.
_ID_TOKEN = re.compile(r"\b[a-z][a-z0-9]*(?:[-_][a-z0-9]+)+\b")


def _new_tokens(body: str, source_norm: str) -> list[tuple[str, str]]:
    """(kind, token) of changed key=value pairs and of unknown ids."""
    norm = normalize(body)
    pairs = set(_PAIR.findall(source_norm))
    keys = {k for k, _ in pairs}
    found = [("number", f"{k}={v}") for k, v in _PAIR.findall(norm) if k in keys and (k, v) not in pairs]
    found += [("identifier", t) for t in _ID_TOKEN.findall(norm)
              if sum(c.isdigit() for c in t) >= 2 and t not in source_norm]
    return found


def _literal(ent: EntityMatch, source_norm: str) -> bool:
    """The token written verbatim in the input: the extractor skips a number that ends a sentence
    ("waiting: 120.") or a code glued to a Chinese word ("5xx比例"), and an answer that writes the
    same token apart must not be punished."""
    return any(re.search(rf"(?<![\w.]){re.escape(t)}(?![a-z0-9]|\.\d)", source_norm, re.ASCII) is not None
               for t in {ent.token, ent.value})


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
        lead = ci.answer_lead
        parts += [lead.text, *lead.services, *lead.evidence, lead.since, lead.until, lead.span, lead.record]
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
             if not any(w in marker or marker in w for marker in _MARKERS)]
    if not reference or not words:
        return False
    return sum(1 for w in words if w in reference) / len(words) >= GROUNDED_SHARE


# A title quoted from the input ("《Redis 内存打满与淘汰导致的延迟》") names a document, not a cause.
_QUOTED = re.compile(r"《[^》]*》|“[^”]*”|\"[^\"]*\"")


def _cause_violation(sentence: str, ci: ComposerInput) -> bool:
    source = normalize(_input_text(ci))
    norm = _QUOTED.sub(lambda m: " " if normalize(m.group(0)[1:-1]) in source else m.group(0), normalize(sentence))
    root = ROOT_CAUSE.search(norm)
    causal = root or CAUSAL.search(norm)
    if not causal or UNSETTLED.search(norm):
        return False
    # Quoting an action's purpose or a stated gap word for word adds nothing (e.g. a runbook title).
    quoted = normalize("\n".join([*ci.missing_info, *(f"{a.action_text}\n{a.reason}" for a in ci.recommended_actions)]))
    if norm.strip(" 。.；;!！") in quoted:
        return False
    claims = [c.claim_text for c in ci.allowed_claims]
    hyps = [h.hypothesis_text for h in ci.allowed_hypotheses]
    if HEDGE.search(norm):
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
        for ent in find_entities(body):
            if comparable(Entity(ent.kind, ent.value)) not in allowed and not _literal(ent, source_norm):
                add(_violation_kind(ent.kind, ent.value), ent.value, field)
        for kind, token in _new_tokens(body, source_norm):
            add(kind, token, field)
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


# --- degenerate answers ---------------------------------------------------------------------------

# What a model writes when it has nothing: a field that is only one of these (case, spaces and
# punctuation aside) is a placeholder.
_PLACEHOLDER = re.compile(
    r"(?:n/?a|tbd|tba|todo|none|null|nil|xxx+|placeholder|lorem ipsum.*|<[^<>]*>|\[[^\[\]]*\]|\{[^{}]*\}"
    r"|待定|待补充|待填写|略|无|暂无|空)"
)
_TEXT = re.compile(f"[0-9a-z{CJK_IDEOGRAPHS}]")
# The wording docs/spec.md#verdict-expression requires of each verdict's answer, in either language. PASS requires none.
VERDICT_WORDING: dict[str, re.Pattern[str]] = {
    "LOW_CONFID": re.compile(
        r"\bgaps?\b|low[- ]confidence|incomplete|not (?:yet )?(?:confirmed|established)|unconfirmed|missing|"
        r"insufficient|\black|缺口|低置信|不完整|缺少|缺乏|尚未|未证实|未确认|无法确认|不足"),
    "REJECT": re.compile(
        r"(?:\bno\b|\bnot\b|n't|cannot|unable|insufficient)[^.。]{0,60}\breliable\b[^.。]{0,20}"
        r"(?:conclusion|answer|diagnosis)|"
        r"(?:无法|不能|不足以|没有|得不出|未能)[^。]{0,20}可靠[^。]{0,6}(?:结论|判断|答案)"),
}


def states_verdict(verdict: Verdict, text: str) -> bool:
    """The answer carries the wording its verdict requires (docs/spec.md#verdict-expression)."""
    pattern = VERDICT_WORDING.get(verdict)
    return pattern is None or pattern.search(normalize(text)) is not None


def _placeholder(text: str) -> bool:
    body = normalize(text).strip(" .。,，;；:：!！?？-—_*…·'\"`()（）")
    return not _TEXT.search(body) or _PLACEHOLDER.fullmatch(body) is not None


def degenerate(output: ComposerOutput, verdict: Verdict) -> list[ComposerGuardViolation]:
    """Why the answer cannot be shown whatever its content: nothing in it, placeholders, or no verdict wording."""
    if not _TEXT.search(normalize(output.user_facing_answer)):
        return [ComposerGuardViolation(kind="empty", token=output.user_facing_answer[:40], field="user_facing_answer")]
    # Every field, and every line of the answer (a heading over "..." is still no answer).
    pieces = [*_fields(output), *(("user_facing_answer", line) for line in output.user_facing_answer.splitlines())]
    found = [ComposerGuardViolation(kind="placeholder", token=text.strip()[:40], field=field)
             for field, text in pieces
             if _placeholder(_LIST_MARKER.sub("", text)) and (text.strip() or field == "answer_summary")]
    if not states_verdict(verdict, output.user_facing_answer):
        found.append(ComposerGuardViolation(kind="verdict_wording", token=verdict, field="user_facing_answer"))
    return found


def judge_answer(
    output: ComposerOutput, composer_input: ComposerInput, *, services: Iterable[str] = (),
    filtered: Sequence[FilteredItem] = (), min_overlap: float = 0.5,
) -> ComposerGuardResult:
    """Whether the composer's answer may be shown (status "pass") or the fixed template must be
    (status "fail", with the violations and the reason as a message code)."""
    bad = degenerate(output, composer_input.verdict)
    if any(v.kind in ("empty", "placeholder") for v in bad):
        why = msg("guard.degenerate", what=", ".join(dict.fromkeys(v.kind for v in bad)))
        return ComposerGuardResult(status="fail", violations=bad, detail=render(why, "en"), msg=why)
    # Missing verdict wording leaves the content worth checking: the record lists both.
    violations = bad + check_output(output, composer_input, services, filtered, min_overlap)
    if violations:
        why = msg("guard.degenerate", what=bad[0].kind) if bad else msg("guard.unlicensed", count=len(violations))
        return ComposerGuardResult(status="fail", violations=violations, detail=render(why, "en"), msg=why)
    return ComposerGuardResult(status="pass")
