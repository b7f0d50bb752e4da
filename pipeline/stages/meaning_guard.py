"""Composer guard, meaning part: every clause of the answer must come from the composer input.

The token guard (pipeline.stages.composer_guard.check_output) catches a new number, code or service.
A fluent composer can invent without any: "Confirmed: order-service thread pool saturated,
requests queued." names only a service the input holds. So the answer is cut into sentences and
each sentence into clauses (at commas, colons and joining words: a composer that joins two
confirmed facts in one sentence writes one clause per fact). Each clause's content words (the
framing vocabulary of pipeline.verdict.answer, verdict wording and connectives aside) must overlap one
item of the composer input (an allowed claim, hypothesis, gap, action, the rationale, the lead,
the question) by at least `min_overlap`, and the services, numbers and codes it names must belong
to an item it matches: a fact moved onto another service or a value taken from a sibling fact is
a violation. A sentence presenting as fact what is best matched by a hypothesis, or restating
what the filter kept away, is a violation as well.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from pipeline.core.contracts import ComposerGuardViolation, ComposerInput, ComposerOutput, FilteredItem
from pipeline.text.lexicon import CONFIRMED, GAP, HEDGE, NEGATION, UNSETTLED, pattern
from pipeline.text.primitives import Entity, entity_values, find_entities, keywords, normalize, synonyms
from pipeline.verdict.answer import framing_words
from pipeline.verdict.safe_actions import fixed_actions

# A sentence that guesses or names a gap confirms nothing; "needs:" heads the evidence still wanted.
_HEDGED = pattern(HEDGE, UNSETTLED, GAP, extra=r"needs?:")
# A full stop ends a sentence after a word, figure or bracket; after a capital, a percent sign or a quote
# ("... 15:23 UTC. Each time ...", "PAY_UNKNOWN. GatewayUpstreamTimeout ...") when a new sentence starts
# after it ("U.S. customers" does not). "e.g." and "i.e." end nothing.
_STOP = r"(?<!\be\.g)(?<!\bi\.e)(?:(?<=[a-z0-9)\]])\.\s|(?<=[A-Z_%`'\"”’])\.\s+(?=[A-Z`\"“*(\u4e00-\u9fff]))"
_SPLIT = re.compile(rf"[。！？!?；;\n]|{_STOP}")
# The lead is one sentence that may list its evidence after a semicolon.
_FIRST = re.compile(rf"[。！？!?\n]|{_STOP}")
# Where one sentence joins facts: punctuation between clauses and the joining words of both languages.
_CLAUSE = re.compile(
    r"[，,、（）()]|(?<!\d)[:：](?!\d)|\s(?:and|while|whereas|but|yet|so|then|since|because|which|where)\s|"
    # "after" opens a clause, but not in an interval ("about 40 s after the first 500")
    r"(?<!\ds)(?<!\d s)(?<!\dms)(?<!\d ms)(?<!\dmin)(?<!\d min)(?<!minutes)(?<!seconds)\safter\s|"
    r"同时|并且|而且|随后|之后|然后|于是|但是|不过|因此|所以"
)
_LIST_MARKER = re.compile(r"^\s*(?:\d{1,2}[.、)）](?!\d)|[-*•])\s*")
# Items a sentence may restate as a fact; any other best match makes a "confirmed" sentence a violation.
_FACT_KINDS = frozenset({"claim", "lead", "action", "rationale", "question"})
# Words that carry no fact about the incident: how a composer says the verdict (docs/spec.md#verdict-expression)
# and joins sentences. A clause made only of them needs no source.
_NO_FACT = frozenset(
    "evidence collected gathered enough insufficient reliable conclusion conclusions support supports allow allows draw "
    "drawn based available current currently incomplete gap gaps low confidence answer still yet know known what "
    "we do does is also both meanwhile additionally however next step steps then there here below above see following "
    "details detail confirm confirmed would settle it two things need needed needs missing lack lacks its their "
    "证据 收集 收集到 已获取 获取 可靠 结论 足以 不足 不足以 无法 不能 得出 生成 依据 目前 现有 当前 缺口 低置信 置信 回答 本次 "
    "仍有 仍然 还有 完整 不完整 另外 此外 同时 随后 之后 下一步 建议 可以 详见 下列 以下 关键 事实 需要 还需要 确认 要确认 "
    "有一条 另有 一条 观察 缺少 尚未 证实 只有 已确认 信息 方向 这一 这一点".split()
)


def sentences(text: str) -> list[str]:
    """The sentences and list items of a text, split where the guard splits them, list markers off."""
    out: list[str] = []
    for line in text.splitlines():
        out.extend(p.strip() for p in _SPLIT.split(_LIST_MARKER.sub("", line)) if p.strip())
    return out


def _stem(word: str) -> str:
    """A light English stem so "declines"/"declined" meet "decline"; CJK words pass unchanged."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.isascii() and len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


@lru_cache(maxsize=1)
def _no_fact() -> frozenset[str]:
    return frozenset(_stem(w) for w in framing_words() | _NO_FACT)


def _words(text: str) -> frozenset[str]:
    """Content words, each as its concept (a synonym across zh/en) and light stem."""
    return frozenset(_stem(synonyms(w)[0]) for w in keywords(text)) - _no_fact()


# Counting units add nothing to a number ("245 个" is the 245 of "线程数: 245").
_COUNT_UNIT = re.compile(r"^([\d.]+)(?:个|次|条)$")
# Values specific enough to tie a clause to the item that holds them (a bare one-digit number is not).
_ANCHOR_KINDS = frozenset({"error_code", "identifier", "percentage", "quantity", "version", "http_status"})


def comparable(ent: Entity) -> str:
    """An entity's value as the composer input's entity_values spell it."""
    m = _COUNT_UNIT.match(ent.value) if ent.kind == "quantity" else None
    return m.group(1) if m else ent.value


def _anchors(text: str) -> frozenset[str]:
    return frozenset(comparable(Entity(e.kind, e.value)) for e in find_entities(text)
                     if e.kind in _ANCHOR_KINDS or (e.kind == "number" and len(e.value) >= 3))


def _services(text: str) -> frozenset[str]:
    return frozenset(e.value for e in find_entities(text) if e.kind == "service")


@dataclass(frozen=True)
class _Item:
    kind: str
    words: frozenset[str]
    entities: frozenset[str]
    services: frozenset[str]
    norm: str


def _item(kind: str, text: str) -> _Item:
    return _Item(kind, _words(text), frozenset(entity_values(text)), _services(text), normalize(text))


def _items(ci: ComposerInput) -> list[_Item]:
    items = [_item("claim", c.claim_text) for c in ci.allowed_claims]
    items += [_item("hypothesis", h.hypothesis_text) for h in ci.allowed_hypotheses]
    items += [_item("gap", n) for h in ci.allowed_hypotheses for n in h.needed_evidence]
    items += [_item("gap", m) for m in ci.missing_info]
    # An action's reason may quote a hypothesis ("To confirm: ..."), so it licenses a sentence but
    # never outweighs a claim the filter kept away (see _judge).
    for a in [*ci.recommended_actions, *(a for lang in ("zh", "en") for a in fixed_actions(lang))]:
        items += [_item("action", a.action_text), _item("reason", a.reason)]
    items += [_item("rationale", ci.rationale), _item("question", ci.original_query)]
    if ci.answer_lead is not None:
        lead = ci.answer_lead
        kind = "lead" if lead.kind != "cause" or lead.support == "confirmed" else "hypothesis"
        items.append(_item(kind, " ".join([lead.text, *lead.services, *lead.evidence])))
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
    violations: list[ComposerGuardViolation] = []
    # Law 8: the answer opens with the lead decided in code (the cause, "no sign of a fault", no data).
    first = next((p for p in _FIRST.split(output.user_facing_answer) if _words(p)), "")
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
                heading_confirms, heading_hedges = bool(CONFIRMED.search(norm)), bool(_HEDGED.search(norm))
            for sentence in _SPLIT.split(body):
                found = _judge(sentence, items, kept_away, min_overlap, heading_confirms, heading_hedges)
                if found:
                    kind, token = found
                    violations.append(ComposerGuardViolation(kind=kind, token=token[:120], field=field))
    return violations


# A clause that says the opposite of the item it restates: a failure word where the item says it
# went fine ("within SLO" restated as "breached the SLO", "retry succeeded" as "重试后仍然失败").
_POLARITY = (
    (frozenset({"fail", "failed", "failure", "breach", "breached", "exceeded", "violated", "失败", "超出", "违反"}),
     frozenset({"within", "succeeded", "success", "successful", "成功", "正常"})),
    (frozenset({"skipped", "skip", "跳过"}), frozenset({"passed", "通过"})),
)
_WINDOW = 24


def _sides(text: str) -> set[tuple[int, int]]:
    norm = normalize(text)
    return {(n, side) for n, pair in enumerate(_POLARITY) for side in (0, 1)
            if any(w in norm for word in pair[side] for w in synonyms(word))}


# "120ms, within the 100ms threshold": a comparison the clause's own figures deny.
_BELOW = re.compile(r"within|below|under|less than|之内|以内|低于|不超过|未超过")
_ABOVE = re.compile(r"exceed|above|over|more than|超过|高于")
_NEAR = 10
_ZERO = re.compile(r"^[a-z_]*\s*[=:]\s*0(?![\w.])")
_NEGATION = pattern(NEGATION, extra=r"\b0\b")


def _compares_wrongly(sentence: str) -> bool:
    """Two durations and a comparison word right beside the second: the first must lie on that side of it."""
    norm = normalize(sentence)
    found = [e for e in find_entities(sentence) if e.kind == "quantity" and e.value.endswith("s")]
    if len(found) != 2:
        return False
    first, second = (float(e.value[:-1]) for e in found)
    near = norm[max(0, found[1].start - _NEAR): found[1].end + _NEAR]
    return bool(first > second and _BELOW.search(near) or first < second and _ABOVE.search(near))


def _contradicts(part: str, item: _Item) -> bool:
    """The part names one side of a polarity pair where the item, next to the same concept, names the
    other; or it asserts what the item counts as zero ("retries=0")."""
    polar = {w for pair in _POLARITY for side in pair for w in side}
    concepts = [w for w in keywords(part) if w not in polar and not any(w in p for p in polar)]
    hits = [(m.end(), w) for c in concepts for w in synonyms(c) for m in re.finditer(re.escape(w), item.norm)]
    if not _NEGATION.search(normalize(part)) and any(_ZERO.match(item.norm[end:]) for end, _ in hits):
        return True
    said = _sides(part)
    if not said:
        return False
    windows = [item.norm[end - len(w): end + _WINDOW] for end, w in hits]
    found = set().union(*(_sides(w) for w in windows)) if windows else set()
    found = found or _sides(item.norm)
    return any((n, 1 - side) in found and (n, side) not in found for n, side in said)


# A clause of fewer content words is read with the one before it: "6 in the last 5 minutes" or
# "though it is not confirmed" says nothing alone.
_MIN_CLAUSE_WORDS = 3


def clauses(sentence: str) -> list[str]:
    """The sentence's clauses as the guard attributes them (short ones read with the one before)."""
    return [" ".join(p.strip() for p in parts) for parts in _clauses(sentence)]


def _clauses(sentence: str) -> list[list[str]]:
    """The sentence's clauses, each as the parts it was merged from."""
    clauses: list[list[str]] = []
    for part in _CLAUSE.split(sentence):
        if not _words(part):
            continue
        if clauses and (len(_words(part)) < _MIN_CLAUSE_WORDS or len(_words(" ".join(clauses[-1]))) < _MIN_CLAUSE_WORDS):
            clauses[-1].append(part)
        else:
            clauses.append([part])
    return clauses


def _holds(item: _Item, anchors: frozenset[str]) -> bool:
    return all(a in item.entities or a in item.norm for a in anchors)


def _judge(sentence: str, items: list[_Item], kept_away: list[frozenset[str]], min_overlap: float,
           heading_confirms: bool, heading_hedges: bool) -> tuple[str, str] | None:
    norm = normalize(sentence)
    hedged = heading_hedges or bool(_HEDGED.search(norm))
    # A hedge with one content word ("that is the likely reading") states nothing to check.
    if len(_words(sentence)) < (2 if hedged else 1):
        return None
    if _compares_wrongly(sentence):
        return "negation", sentence.strip()
    confirms = (heading_confirms or bool(CONFIRMED.search(norm))) and not _HEDGED.search(norm)
    for parts in _clauses(sentence):
        kind = _judge_clause(parts, items, kept_away, min_overlap, confirms=confirms, hedged=hedged)
        if kind:
            return kind, sentence.strip()
    return None


def _judge_clause(parts: list[str], items: list[_Item], kept_away: list[frozenset[str]], min_overlap: float, *,
                  confirms: bool, hedged: bool) -> str | None:
    clause = " ".join(parts)
    words = _words(clause)
    shares = [(_overlap(words, i.words), i) for i in items]
    anchors = _anchors(clause)
    # A clause matches an item when most of its words do, or when the item holds every specific
    # value it names and a fair part of its words (a restatement in other words or the other language).
    matching = [i for share, i in shares
                if share >= min_overlap or (anchors and share >= min_overlap / 2 and _holds(i, anchors))]
    if not matching:
        return "unattributed"
    best = max(matching, key=lambda i: _overlap(words, i.words))
    services = _services(clause)
    if services and not any(services <= i.services for i in matching) and best.services - services:
        return "misattributed"
    if any(_contradicts(part, best) for part in parts):
        return "negation"
    if confirms and best.kind not in _FACT_KINDS:
        return "unconfirmed_as_fact"
    # A hypothesis restated without a hedge is a fact it never was; a gap or an action may say the
    # same words, and values only a fact holds tie the clause to that fact, whatever words it borrows.
    best_fact = max((s for s, i in shares if i.kind not in ("hypothesis", "reason")), default=0.0)
    if anchors and any(_holds(i, anchors) for _, i in shares if i.kind not in ("hypothesis", "reason")) \
            and not any(_holds(i, anchors) for _, i in shares if i.kind == "hypothesis"):
        best_fact = 1.0
    best_hyp = max((s for s, i in shares if i.kind == "hypothesis"), default=0.0)
    if best_hyp > best_fact and (confirms or not hedged):
        return "unconfirmed_as_fact"
    # An action's reason never licenses restating what the filter kept away.
    licensed = max((s for s, i in shares if i.kind != "reason"), default=0.0)
    if any(_overlap(words, k) >= min_overlap and _overlap(words, k) > licensed for k in kept_away):
        return "filtered_claim"
    return None
