"""Token budget: estimate, cut one tool output, fit a whole prompt."""

from __future__ import annotations

import json
import random

import pytest

from pipeline.llm.budget import (
    cut_output,
    estimate_messages_tokens,
    estimate_tokens,
    fit_messages,
    focus_terms_for,
)
from pipeline.llm.prompts import PromptError, load_prompt
from pipeline.verdict.provider import STAGES


def _ten_mb_logs() -> str:
    rng = random.Random(7)
    services = ["order-service", "inventory-service", "api-gateway", "payment-service"]
    logs, size, i = [], 0, 0
    while size < 10 * 1024 * 1024:
        item = {"timestamp": f"2024-05-01T10:{i % 60:02d}:00Z", "service": rng.choice(services), "level": "INFO",
                "message": f"GET /api/v1/items/{i} 200 in {rng.randint(3, 90)} ms"}
        if i == 51234:
            item = {"timestamp": "2024-05-01T10:07:00Z", "service": "payment-service", "level": "ERROR",
                    "message": "payment-service upstream timeout after 5300ms ERR_TIMEOUT order_id=8812"}
        line = json.dumps(item)
        logs.append(item)
        size += len(line)
        i += 1
    return json.dumps({"total": len(logs), "logs": logs})


def test_estimate_counts_cjk_per_char_and_other_text_per_four() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd" * 10) == 10
    assert estimate_tokens("支付接口超时") == 6
    assert estimate_tokens("支付 timeout") == 2 + 2  # " timeout" is 8 chars
    assert estimate_tokens("order_id=123") == 3 + 3  # digits one each, "order_id=" 9 chars


def test_small_output_is_untouched() -> None:
    text, report = cut_output("one line\ntwo", 100, ["x"])
    assert text == "one line\ntwo" and not report.cut


def test_ten_mb_log_output_is_cut_to_the_budget_with_a_statement() -> None:
    big = _ten_mb_logs()
    assert len(big) > 10 * 1024 * 1024
    terms = focus_terms_for("payment-service 支付接口超时 ERR_TIMEOUT", ["payment-service"])
    text, report = cut_output(big, 2500, terms)
    assert estimate_tokens(text) <= 2500
    assert report.cut and report.unit == "logs[] items" and report.kept_matching >= 1
    assert report.kept_head > 0 and report.kept_tail > 0
    assert "upstream timeout after 5300ms ERR_TIMEOUT order_id=8812" in text  # the matching line survives
    statement = text.splitlines()[-1]
    assert statement == report.statement()
    assert f"of {report.total:,} logs[] items cut" in statement
    assert f"kept {report.kept_head} head, {report.kept_tail} tail, {report.kept_matching} matching" in statement
    first_items = text.splitlines()[2:4]
    assert all(json.loads(line)["message"].startswith("GET /api/v1/items/") for line in first_items)


def test_plain_text_is_cut_by_line_and_long_lines_are_clipped() -> None:
    lines = [f"INFO line {i}" for i in range(5000)]
    lines[2500] = "ERROR " + "x" * 50000
    text, report = cut_output("\n".join(lines), 800, ["error"])
    assert estimate_tokens(text) <= 800 and report.unit == "lines" and report.kept_matching == 1
    assert "line cut:" in text and "INFO line 0" in text and "INFO line 4999" in text


@pytest.mark.parametrize("budget", [1000, 3000, 12000])
def test_fit_messages_never_exceeds_the_budget(budget: int) -> None:
    big = _ten_mb_logs()[:600_000]
    messages = [
        {"role": "system", "content": "You are a verifier. " * 40},
        {"role": "user", "content": "Question: payment-service timeout"},
        {"role": "user", "content": "[tool output] invocation_id=1\n" + "\n".join(f"l{i} timeout" for i in range(9000))},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "queryLogs", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c", "content": big},
        {"role": "tool", "tool_call_id": "d", "content": "small result"},
    ]
    fitted, reports = fit_messages(messages, budget, ["timeout"])
    assert estimate_messages_tokens(fitted) <= budget
    assert reports and fitted[0] == messages[0] and fitted[3] == messages[3] and fitted[5] == messages[5]
    assert messages[4]["content"] == big  # the input is never modified


def test_fit_messages_cuts_the_largest_part_first() -> None:
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "\n".join(f"a{i}" for i in range(3000))},
        {"role": "user", "content": "\n".join(f"bbbbbbbb{i}" for i in range(3000))},
    ]
    total = estimate_messages_tokens(messages)
    fitted, reports = fit_messages(messages, total - 500)
    assert len(reports) == 1 and fitted[1] == messages[1] and fitted[2] != messages[2]


def test_fit_messages_refuses_when_only_the_system_prompt_is_left() -> None:
    with pytest.raises(ValueError, match="cannot be cut"):
        fit_messages([{"role": "system", "content": "x" * 8000}, {"role": "user", "content": "q"}], 1000)


def test_prompts_load_with_versions(tmp_path) -> None:
    from pipeline.core.config import load_settings

    settings = load_settings()
    for stage in STAGES:
        prompt = load_prompt(stage, settings.prompts_dir)
        assert prompt.stage == stage and prompt.version and prompt.file == f"prompts/{stage}.md"
        assert "data" in prompt.text and "instruction" in prompt.text  # tool output is data, never instructions
    (tmp_path / "composer.md").write_text("no front matter", encoding="utf-8")
    with pytest.raises(PromptError, match="front matter"):
        load_prompt("composer", tmp_path)
    (tmp_path / "composer.md").write_text("---\nversion: 7\n---\nhello", encoding="utf-8")
    assert load_prompt("composer", tmp_path).version == "7"
