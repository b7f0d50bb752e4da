"""The offline composer: a prose answer woven only from composer_input text (seed 000 §19.4).

Where the fixed templates list, this writes sentences; it adds connective words and nothing
else, so its answer passes the composer guard. Each possible cause carries its own
"unconfirmed" marker because the guard reads sentence by sentence.
"""

from __future__ import annotations

from pipeline.contracts import ComposerInput, ComposerOutput
from pipeline.safe_actions import fixed_actions

_P = {
    "zh": {
        "pass": "根据本次获取的证据，已确认：{facts}。",
        "root": "根因已确认：{text}。",
        "low": "目前证据还不完整，只能给出低置信的判断。",
        "reject": "无法基于已获取证据生成可靠结论。",
        "confirmed": "已确认的情况：{facts}。",
        "nothing": "暂无可直接确认的事实",
        "possible": "可能的方向：{items}。",
        "hyp": "可能（未证实）{text}",
        "gaps": "仍缺少的证据：{items}。",
        "next": "建议下一步：{items}。",
        "sep": "；",
        "summary_pass": "已确认：{first}",
        "summary_low": "证据仍有缺口，目前只能确认：{first}",
        "summary_reject": "无法基于已获取证据生成可靠结论，需补充证据。",
    },
    "en": {
        "pass": "From the evidence gathered, this is confirmed: {facts}.",
        "root": "Root cause confirmed: {text}.",
        "low": "The evidence is still incomplete, so this is a low-confidence answer.",
        "reject": "No reliable conclusion can be drawn from the evidence gathered.",
        "confirmed": "Confirmed so far: {facts}.",
        "nothing": "nothing could be confirmed directly yet",
        "possible": "Possible directions: {items}.",
        "hyp": "possibly (unconfirmed) {text}",
        "gaps": "Still missing: {items}.",
        "next": "Suggested next steps: {items}.",
        "sep": "; ",
        "summary_pass": "Confirmed: {first}",
        "summary_low": "The evidence has gaps; confirmed so far: {first}",
        "summary_reject": "No reliable conclusion can be drawn from the evidence gathered; more evidence is needed.",
    },
}


def _item(text: str) -> str:
    return text.strip().rstrip("。.；;")


def compose(composer_input: ComposerInput, language: str) -> ComposerOutput:
    p = _P[language if language in _P else "en"]
    ci = composer_input
    claims = [c for c in ci.allowed_claims if ci.verdict != "REJECT" or c.claim_type != "root_cause"]
    facts = p["sep"].join(_item(c.claim_text) for c in claims) or p["nothing"]
    actions = list(ci.recommended_actions) or ([] if ci.verdict == "PASS" else fixed_actions(language))
    next_steps = p["next"].format(items=p["sep"].join(_item(a.action_text) for a in actions)) if actions else ""

    if ci.verdict == "PASS":
        roots = [c.claim_text for c in claims if c.claim_type == "root_cause"]
        body = [p["pass"].format(facts=facts), *(p["root"].format(text=_item(r)) for r in roots), next_steps]
        summary = p["summary_pass"].format(first=_item(roots[0]) if roots else facts)
    elif ci.verdict == "LOW_CONFID":
        hyps = p["sep"].join(p["hyp"].format(text=_item(h.hypothesis_text)) for h in ci.allowed_hypotheses)
        body = [p["low"], p["confirmed"].format(facts=facts)]
        if hyps:
            body.append(p["possible"].format(items=hyps))
        if ci.missing_info:
            body.append(p["gaps"].format(items=p["sep"].join(_item(m) for m in ci.missing_info)))
        body.append(next_steps)
        summary = p["summary_low"].format(first=facts)
    else:
        body = [p["reject"], p["confirmed"].format(facts=facts), next_steps]
        summary = p["summary_reject"]
    joiner = "" if language == "zh" else " "
    return ComposerOutput(
        answer_summary=summary,
        recommended_actions=actions,
        user_facing_answer=joiner.join(s for s in body if s),
    )
