"""Fixed answer templates per verdict (seed 000 §19.4), in Chinese and English.

Used when the composer is switched off, the executor output is unusable, the composer's JSON is
malformed, or its answer fails the guard. A template only rearranges composer_input text plus
fixed sentences that carry no fact, so it can never add a number, a service or a cause.
"""

from __future__ import annotations

from pipeline.contracts import ComposerInput, ComposerOutput
from pipeline.safe_actions import fixed_actions

_TEXT = {
    "zh": {
        "pass_head": "基于已获取的证据，以下信息已确认：",
        "root_cause": "根因已确认：{text}",
        "low_head": "当前证据仍有缺口，以下结论为低置信。",
        "reject_head": "无法基于已获取证据生成可靠结论。",
        "confirmed": "已确认：",
        "none_confirmed": "暂无可直接确认的事实。",
        "possible": "可能方向（未证实）：",
        "hypothesis": "可能（未证实）：{text}",
        "needed": "（需补充：{items}）",
        "gaps": "证据缺口：",
        "next": "下一步建议：",
        "action": "{text}（{reason}）",
        "pass_summary": "已确认：{first}",
        "pass_summary_rc": "根因已确认：{first}",
        "low_summary": "证据仍有缺口，结论为低置信；已确认：{first}",
        "reject_summary": "无法基于已获取证据生成可靠结论，需补充证据。",
        "sep": "；",
    },
    "en": {
        "pass_head": "From the evidence gathered, these facts are confirmed:",
        "root_cause": "Root cause confirmed: {text}",
        "low_head": "The evidence still has gaps; this answer is low confidence.",
        "reject_head": "No reliable conclusion can be drawn from the evidence gathered.",
        "confirmed": "Confirmed:",
        "none_confirmed": "Nothing could be confirmed directly yet.",
        "possible": "Possible directions (unconfirmed):",
        "hypothesis": "Possibly (unconfirmed): {text}",
        "needed": " (needs: {items})",
        "gaps": "Evidence gaps:",
        "next": "Next steps:",
        "action": "{text} ({reason})",
        "pass_summary": "Confirmed: {first}",
        "pass_summary_rc": "Root cause confirmed: {first}",
        "low_summary": "The evidence has gaps, so this is low confidence; confirmed: {first}",
        "reject_summary": "No reliable conclusion can be drawn from the evidence gathered; more evidence is needed.",
        "sep": "; ",
    },
}


def _bullets(items: list[str]) -> list[str]:
    return [f"- {item}" for item in items]


def render(composer_input: ComposerInput, language: str) -> ComposerOutput:
    t = _TEXT[language if language in _TEXT else "en"]
    verdict = composer_input.verdict
    claims = composer_input.allowed_claims
    if verdict == "REJECT":  # §19.4: REJECT states no root cause, whatever reached the input
        claims = [c for c in claims if c.claim_type != "root_cause"]
    facts = [c.claim_text for c in claims]
    actions = list(composer_input.recommended_actions)
    if verdict != "PASS" and not actions:
        actions = fixed_actions(language)
    action_lines = [t["action"].format(text=a.action_text, reason=a.reason) if a.reason else a.action_text
                    for a in actions]

    lines: list[str]
    if verdict == "PASS":
        root = [c.claim_text for c in claims if c.claim_type == "root_cause"]
        lines = [t["pass_head"], *_bullets(facts)]
        lines += [t["root_cause"].format(text=r) for r in root]
        summary = (t["pass_summary_rc"].format(first=root[0]) if root
                   else t["pass_summary"].format(first=facts[0] if facts else t["none_confirmed"]))
    elif verdict == "LOW_CONFID":
        hyps = [
            t["hypothesis"].format(text=h.hypothesis_text)
            + (t["needed"].format(items=t["sep"].join(h.needed_evidence)) if h.needed_evidence else "")
            for h in composer_input.allowed_hypotheses
        ]
        lines = [t["low_head"], t["confirmed"], *(_bullets(facts) or [f"- {t['none_confirmed']}"])]
        if hyps:
            lines += [t["possible"], *_bullets(hyps)]
        if composer_input.missing_info:
            lines += [t["gaps"], *_bullets(composer_input.missing_info)]
        summary = t["low_summary"].format(first=facts[0] if facts else t["none_confirmed"])
    else:
        lines = [t["reject_head"], t["confirmed"], *(_bullets(facts) or [f"- {t['none_confirmed']}"])]
        summary = t["reject_summary"]
    if action_lines:
        lines += [t["next"], *_bullets(action_lines)]
    return ComposerOutput(answer_summary=summary, recommended_actions=actions, user_facing_answer="\n".join(lines))
