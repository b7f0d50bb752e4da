"""The answer's shape, shared by the fixed templates (pipeline.stages.templates) and the offline
composer, which must not import a stage.

Law 8: the first sentence answers the question (the AnswerLead decided in code), then at most N
key facts, other observations, possible causes, evidence gaps, next steps. Every word here is
framing: it carries no fact, so the composer guard subtracts this vocabulary before it asks
whether a sentence's content comes from the composer input.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from pipeline.contracts import AnswerLead, ComposerAction, ComposerInput
from pipeline.safe_actions import fixed_actions
from pipeline.text import keywords

PHRASES: dict[str, dict[str, str]] = {
    "zh": {
        "cause_confirmed": "最可能的原因（已确认）：{text}",
        "cause_likely": "最可能的原因（可能，但未证实）：{text}",
        "healthy": "{services} 没有故障迹象：已检查的证据为工具调用 {evidence}。",
        "no_data": "已配置的数据源中没有 {services} 的日志、告警或指标（已查询 {evidence}）。",
        "unknown": "原因未知：现有证据不足以确定原因。",
        "unknown_fact": "原因未知：现有证据不足以确定原因；{services} 的证据显示：{text}",
        "low_note": "当前证据仍有缺口，以上结论为低置信。",
        "reject_note": "无法基于已获取证据生成可靠结论。",
        "key_facts": "已确认的关键事实：",
        "other": "其他观察：",
        "possible": "可能的原因（未证实）：",
        "hypothesis": "可能（未证实）：{text}",
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
        "no_data": "No logs, alerts or metrics for {services} in the configured backends (queried {evidence}).",
        "unknown": "Cause unknown: the evidence does not establish one.",
        "unknown_fact": "Cause unknown: the evidence does not establish one; what {services} shows: {text}",
        "low_note": "The evidence still has gaps, so this answer is low confidence.",
        "reject_note": "No reliable conclusion can be drawn from the evidence gathered.",
        "key_facts": "Key facts (confirmed):",
        "other": "Other observations:",
        "possible": "Possible causes (unconfirmed):",
        "hypothesis": "Possibly (unconfirmed): {text}",
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


def lead_sentence(lead: AnswerLead | None, language: str) -> str:
    p = phrases(language)
    if lead is None:
        return p["unknown"]
    services = p["and"].join(lead.services)
    evidence = p["and"].join(lead.evidence) or "-"
    if lead.kind == "cause":
        key = "cause_confirmed" if lead.support == "confirmed" else "cause_likely"
        return p[key].format(text=_item(lead.text)) + ("。" if language == "zh" else ".")
    if lead.kind == "healthy":
        return p["healthy"].format(services=services, evidence=evidence)
    if lead.kind == "no_data":
        return p["no_data"].format(services=services, evidence=evidence)
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
    causes = [] if ci.verdict == "REJECT" else [
        p["hypothesis"].format(text=_item(h.hypothesis_text))
        + (p["needed"].format(items=p["sep"].join(h.needed_evidence)) if h.needed_evidence else "")
        for h in ci.allowed_hypotheses
    ]
    note = {"LOW_CONFID": p["low_note"], "REJECT": p["reject_note"]}.get(ci.verdict, "")
    return AnswerSections(
        lead=lead_sentence(ci.answer_lead, language) if ci.verdict != "REJECT" else p["reject_note"],
        verdict_note=note if ci.verdict != "REJECT" else "",
        key_facts=[c.claim_text for c in claims if c.claim_id in key_ids],
        other_observations=[c.claim_text for c in claims if c.claim_id not in key_ids],
        possible_causes=causes,
        evidence_gaps=list(ci.missing_info),
        actions=actions,
    )
