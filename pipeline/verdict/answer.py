"""The answer's shape, shared by the fixed templates (pipeline.stages.templates) and the offline
composer, which must not import a stage.

Law 8: the first sentence answers the question (the AnswerLead decided in code), then at most N
key facts, other observations, possible causes, evidence gaps, next steps. Every word here is
framing: it carries no fact, so the composer guard subtracts this vocabulary before it asks
whether a sentence's content comes from the composer input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from pipeline.core.contracts import AnswerLead, ComposerAction, ComposerInput
from pipeline.core.messages import SYMPTOM_NAMES, Lang
from pipeline.text.primitives import keywords
from pipeline.verdict.safe_actions import fixed_actions

PHRASES: dict[str, dict[str, str]] = {
    "zh": {
        "cause_confirmed": "最可能的原因（已确认）：{text}",
        "cause_likely": "最可能的原因（可能，但未证实）：{text}",
        "healthy": "{services} 没有故障迹象：已检查的证据为工具调用 {evidence}。",
        "healthy_symptom": "没有发现 {pairs} 的迹象：{text}（已查 {evidence}）",
        "present": "是的，{pairs}：{text}",
        "also_healthy": "没有发现 {pairs} 的迹象：{text}",
        "no_data": "无法判断 {pairs}：{text}",
        "no_data_any": "{services}：{text}",
        "instead_confirmed": "；证据实际显示的是：{text}",
        "also_confirmed": "；原因（已确认）：{text}",
        "also_likely": "；最可能的原因（可能，但未证实）：{text}",
        "instead_likely": "；证据指向的原因（可能，但未证实）：{text}",
        "pair": "{service} {symptom}",
        "any_service": "任一服务",
        "unknown": "原因未知：现有证据不足以确定原因。",
        "unknown_fact": "原因未知：现有证据不足以确定原因；{services} 的证据显示：{text}",
        "low_note": "当前证据仍有缺口，以上结论为低置信。",
        "reject_note": "无法基于已获取证据生成可靠结论。",
        "key_facts": "已确认的关键事实：",
        "other": "其他观察：",
        "possible": "可能的原因：",
        "hypothesis": "{text}（未证实）",
        "needed": "（需补充：{items}）",
        "gaps": "证据缺口：",
        "next": "下一步建议：",
        "action": "{text}（{reason}）",
        "none_confirmed": "暂无可直接确认的事实。",
        "sep": "；",
        "and": "、",
    },
    "en": {
        "cause_confirmed": "Most likely cause (confirmed): {text}",
        "cause_likely": "Most likely cause (likely but not confirmed): {text}",
        "healthy": "No sign of a fault in {services}: checked tool calls {evidence}.",
        "healthy_symptom": "No sign of {pairs}: {text} (checked {evidence})",
        "present": "Yes, {pairs}: {text}",
        "also_healthy": "no sign of {pairs}: {text}",
        "no_data": "Cannot tell about {pairs}: {text}",
        "no_data_any": "{services}: {text}",
        "instead_confirmed": "; what the evidence does show is: {text}",
        "also_confirmed": "; the cause (confirmed): {text}",
        "also_likely": "; the most likely cause (likely but not confirmed): {text}",
        "instead_likely": "; what the evidence points to instead (likely but not confirmed): {text}",
        "pair": "{symptom} in {service}",
        "any_service": "any service",
        "unknown": "Cause unknown: the evidence does not establish one.",
        "unknown_fact": "Cause unknown: the evidence does not establish one; what {services} shows: {text}",
        "low_note": "The evidence still has gaps, so this answer is low confidence.",
        "reject_note": "No reliable conclusion can be drawn from the evidence gathered.",
        "key_facts": "Key facts (confirmed):",
        "other": "Other observations:",
        "possible": "Possible causes:",
        "hypothesis": "{text} (unconfirmed)",
        "needed": " (needs: {items})",
        "gaps": "Evidence gaps:",
        "next": "Next steps:",
        "action": "{text} ({reason})",
        "none_confirmed": "Nothing could be confirmed directly yet.",
        "sep": "; ",
        "and": ", ",
    },
}


def phrases(language: str) -> dict[str, str]:
    return PHRASES[language if language in PHRASES else "en"]


@lru_cache(maxsize=1)
def framing_words() -> frozenset[str]:
    """Content words of every framing phrase, both languages: they say nothing about the incident."""
    words: set[str] = set()
    for table in PHRASES.values():
        for text in table.values():
            words |= keywords(text.replace("{", " ").replace("}", " "))
    return frozenset(words)


def _item(text: str) -> str:
    return text.strip().rstrip("。.；;")


def pairs_phrase(services: Sequence[str], symptoms: Sequence[str], language: str) -> str:
    """"a memory problem in order-service, high latency in user-service": asked pairs in a sentence."""
    p = phrases(language)
    lang: Lang = "zh" if language == "zh" else "en"
    pairs = [p["pair"].format(service=service or p["any_service"],
                              symptom=SYMPTOM_NAMES.get(symptom, {}).get(lang, symptom))
             for service, symptom in dict.fromkeys(zip(services, symptoms, strict=False))]
    return p["and"].join(pairs)


def lead_sentence(lead: AnswerLead | None, language: str, needed: Sequence[str] = ()) -> str:
    """The first sentence; `needed` is what the hypothesis it names still needs (the possible
    causes section then leaves that hypothesis out rather than say it twice)."""
    p = phrases(language)
    needs = p["needed"].format(items=p["sep"].join(needed)) if needed else ""
    if lead is None:
        return p["unknown"]
    end = "。" if language == "zh" else "."
    services = p["and"].join(lead.services)
    evidence = p["and"].join(lead.evidence) or "-"
    if lead.kind == "cause":
        key = "cause_confirmed" if lead.support == "confirmed" else "cause_likely"
        return p[key].format(text=_item(lead.text)) + needs + end
    if lead.symptoms and lead.kind in ("present", "healthy", "no_data"):
        key = "healthy_symptom" if lead.kind == "healthy" else lead.kind
        head = p[key].format(pairs=pairs_phrase(lead.services, lead.symptoms, language), text=_item(lead.text), evidence=evidence)
        if lead.instead:
            key = ("also_" if lead.kind == "present" else "instead_") + (
                "likely" if lead.instead_support == "likely" else "confirmed")
            head += p[key].format(text=_item(lead.instead)) + (needs if lead.instead_support == "likely" else "")
        return head + end
    if lead.kind == "healthy":
        return p["healthy"].format(services=services, evidence=evidence)
    if lead.kind == "no_data":
        return p["no_data_any"].format(services=services, text=_item(lead.text)) + end
    if lead.text and services:
        return p["unknown_fact"].format(services=services, text=_item(lead.text)) + ("。" if language == "zh" else ".")
    return p["unknown"]


@dataclass
class AnswerSections:
    lead: str
    verdict_note: str = ""
    key_facts: list[str] = field(default_factory=list)
    other_observations: list[str] = field(default_factory=list)
    possible_causes: list[str] = field(default_factory=list)
    evidence_gaps: list[str] = field(default_factory=list)
    actions: list[ComposerAction] = field(default_factory=list)


def sections(ci: ComposerInput, language: str) -> AnswerSections:
    """The answer's sections from the composer input alone (it is already filtered in code)."""
    p = phrases(language)
    claims = ci.allowed_claims
    if ci.verdict == "REJECT":  # docs/spec.md#verdict-expression: REJECT states no root cause, whatever reached the input
        claims = [c for c in claims if c.claim_type != "root_cause"]
    key_ids = set(ci.key_claim_ids) if ci.key_claim_ids else {c.claim_id for c in claims}
    actions = list(ci.recommended_actions)
    if ci.verdict != "PASS" and not actions:
        actions = fixed_actions(language)
    # The hypothesis the lead names is said there, with what it needs, and not again below.
    lead = ci.answer_lead
    named = (lead.text if lead.kind == "cause" and lead.support == "likely" else
             lead.instead if lead.instead_support == "likely" else "") if lead else ""
    in_lead = next((h for h in ci.allowed_hypotheses if named and h.hypothesis_text == named), None)
    # One hedge per cause, on the item itself: the guard reads each item alone, and a heading
    # that hedged again read "Possible causes (unconfirmed): Possibly (unconfirmed): ...".
    causes = [] if ci.verdict == "REJECT" else [
        p["hypothesis"].format(text=_item(h.hypothesis_text))
        + (p["needed"].format(items=p["sep"].join(h.needed_evidence)) if h.needed_evidence else "")
        for h in ci.allowed_hypotheses if h is not in_lead
    ]
    note = {"LOW_CONFID": p["low_note"], "REJECT": p["reject_note"]}.get(ci.verdict, "")
    return AnswerSections(
        lead=lead_sentence(lead, language, in_lead.needed_evidence if in_lead else ())
        if ci.verdict != "REJECT" else p["reject_note"],
        verdict_note=note if ci.verdict != "REJECT" else "",
        key_facts=[c.claim_text for c in claims if c.claim_id in key_ids],
        other_observations=[c.claim_text for c in claims if c.claim_id not in key_ids],
        possible_causes=causes,
        evidence_gaps=list(ci.missing_info),
        actions=actions,
    )
