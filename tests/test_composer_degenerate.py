"""No degenerate composer answer reaches a person (docs/spec.md#composer-output).

An answer that is empty, only punctuation, filled with placeholders, or without the wording its
verdict requires (docs/spec.md#verdict-expression) is replaced by the fixed template, and the guard records why
(`guard.degenerate` with the kinds found). The replies are scripted, as a small model gave them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.core.config import Settings, load_settings
from pipeline.core.contracts import ComposerAction, ComposerClaim, ComposerInput, ParseStatus
from pipeline.runs.session import run_session
from pipeline.stages.composer import run_composer
from pipeline.stages.templates import render
from pipeline.store import Store
from pipeline.verdict.provider import StageContext

INPUT = {
    verdict: ComposerInput(
        original_query="why does the payment API time out", verdict=verdict,
        allowed_claims=[ComposerClaim(claim_id="c1", claim_type="symptom",
                                      claim_text="payment-service logged request timeouts of 5.3 s.")],
        missing_info=["Pool metrics are missing."],
        recommended_actions=[ComposerAction(action_text="Query the pool metrics.", reason="Check saturation.")])
    for verdict in ("PASS", "LOW_CONFID", "REJECT")
}
GOOD = {
    "PASS": "payment-service logged request timeouts of 5.3 s. Next: query the pool metrics.",
    "LOW_CONFID": "payment-service logged request timeouts of 5.3 s. The evidence still has gaps: "
                  "pool metrics are missing.",
    "REJECT": "No reliable conclusion can be drawn from the evidence gathered. "
              "payment-service logged request timeouts of 5.3 s.",
}


class Scripted:
    """A composer that replies with one fixed raw text, as the scripted provider replays it."""

    def __init__(self, reply: dict | str):
        self.raw = reply if isinstance(reply, str) else json.dumps(reply, ensure_ascii=False)

    def compose(self, ctx: StageContext, composer_input: ComposerInput) -> str:
        return self.raw


def _compose(verdict: str, reply: dict | str):
    ctx = StageContext(settings=load_settings(), session_id="s", language="en", record=lambda r: None,
                       run_tool=lambda n, a: None)  # type: ignore[arg-type,return-value]
    return run_composer(ctx, Scripted(reply), INPUT[verdict], enabled=True, parse_status=ParseStatus(status="valid"))


def reply(text: str, summary: str | None = None, **sections: list[str]) -> dict:
    return {"answer_summary": summary if summary is not None else text.split(". ")[0],
            "recommended_actions": [], "user_facing_answer": text, **sections}


@pytest.mark.parametrize("verdict", ["PASS", "LOW_CONFID", "REJECT"])
def test_a_well_formed_answer_is_kept(verdict: str) -> None:
    out, guard, final = _compose(verdict, reply(GOOD[verdict]))
    assert guard.status == "pass" and not guard.used_template and final == GOOD[verdict]


@pytest.mark.parametrize(("verdict", "raw", "kinds"), [
    # the real small model's answer: "..." in every field
    ("REJECT", {"answer_summary": "...", "recommended_actions": [{"action_text": "...", "reason": "..."}],
                "user_facing_answer": "..."}, {"empty"}),
    ("PASS", reply(""), {"empty"}),
    ("PASS", reply("。。。 …… !!"), {"empty"}),
    ("LOW_CONFID", reply(GOOD["LOW_CONFID"], summary="N/A"), {"placeholder"}),
    ("PASS", reply(GOOD["PASS"], summary="<answer>"), {"placeholder"}),
    ("PASS", reply(GOOD["PASS"], key_facts=["TBD"], evidence_gaps=["..."]), {"placeholder"}),
    ("LOW_CONFID", reply(GOOD["LOW_CONFID"] + "\nNext steps:\n- ...", summary="payment-service timed out"),
     {"placeholder"}),
    ("REJECT", reply(GOOD["REJECT"], possible_causes=["待补充"]), {"placeholder"}),
    ("PASS", {"answer_summary": "payment-service logged request timeouts of 5.3 s",
              "recommended_actions": [{"action_text": "TODO", "reason": ""}],
              "user_facing_answer": GOOD["PASS"]}, {"placeholder"}),
    # the verdict's wording missing: LOW_CONFID must name its gaps, REJECT must say no reliable conclusion
    ("LOW_CONFID", reply("payment-service logged request timeouts of 5.3 s."), {"verdict_wording"}),
    ("REJECT", reply("payment-service logged request timeouts of 5.3 s. Query the pool metrics."),
     {"verdict_wording"}),
])
def test_a_degenerate_answer_falls_back_to_the_template_and_says_why(verdict: str, raw: dict, kinds: set[str]) -> None:
    out, guard, final = _compose(verdict, raw)
    template = render(INPUT[verdict], "en")
    assert guard.status == "fail" and guard.used_template
    assert final == template.user_facing_answer and out == template
    assert {v.kind for v in guard.violations} == kinds
    assert guard.msg is not None and guard.msg.code == "guard.degenerate"
    assert set(guard.msg.params["what"].split(", ")) == kinds


@pytest.mark.parametrize("text", [
    "当前无法基于已获取证据生成可靠结论。payment-service 出现请求超时。",
    "现有证据不足以得出可靠的结论。",
    "The evidence gathered does not support a reliable conclusion.",
])
def test_reject_wording_is_recognised_in_either_language(text: str) -> None:
    from pipeline.stages.composer_guard import states_verdict
    assert states_verdict("REJECT", text) and not states_verdict("REJECT", "payment-service 出现请求超时。")


def test_a_session_whose_composer_answers_dots_shows_the_template(settings: Settings, tmp_path: Path) -> None:
    fixture = tmp_path / "dots.yaml"
    fixture.write_text('composer: {answer_summary: "...", recommended_actions: [], user_facing_answer: "..."}\n',
                       encoding="utf-8")
    settings = settings.model_copy(update={"provider": "scripted", "scripted_fixture": str(fixture)})
    result = run_session("payment API times out since 10:00, what's going on?", settings=settings,
                         store=Store(settings.db_url), world_id="cpu-saturation")
    ev = result.evaluation
    guard = ev.round_audit.composer_guard
    assert guard is not None and guard.used_template and guard.msg is not None
    assert guard.msg.code == "guard.degenerate" and guard.violations[0].kind == "empty"
    assert result.final_answer == render(ev.composer_input, "en").user_facing_answer
    assert result.final_answer.strip(". ") != ""
