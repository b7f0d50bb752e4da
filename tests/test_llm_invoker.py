"""StructuredLlmInvoker through the real `openai` SDK against the local stub endpoint."""

from __future__ import annotations

import json
import socket
from typing import Any

import openai
import pytest

from pipeline.core.config import load_settings
from pipeline.core.contracts import ComposerOutput, ExecutorOutputV2, LlmCallRecord, PlannerPlan, ToolInvocation
from pipeline.core.errors import LlmCallError, StageFailure
from pipeline.core.events import StreamProgress
from pipeline.llm import invoker
from pipeline.llm.invoker import StructuredLlmInvoker
from pipeline.llm.prompts import load_prompt
from pipeline.text.replies import strip_wrappers
from pipeline.verdict.provider import StageContext
from tests.stub_openai import StubOpenAI, StubReply, chat_body

PLAN = {"skill": "latency_diagnosis", "language": "en", "services": ["payment-service"], "tool_calls": []}


class Harness:
    def __init__(self, stub: StubOpenAI, budget: dict[str, Any] | None = None, **openai_opts: Any):
        opts = {"model": "stub-model", "timeout_s": 5.0, "max_retries": 2, "reask_attempts": 2, **openai_opts}
        self.settings = load_settings(openai={"base_url": stub.base_url, **opts}, budget=budget)
        self.records: list[LlmCallRecord] = []
        self.sleeps: list[float] = []
        client = openai.OpenAI(base_url=self.settings.openai.base_url, api_key="not-needed",
                               timeout=self.settings.openai.timeout_s, max_retries=0)
        self.invoker = StructuredLlmInvoker(client, settings=self.settings, sleep=self.sleeps.append,
                                            jitter=lambda: 0.5)
        self.ctx = StageContext(settings=self.settings, session_id="s-1", language="en",
                                record=self.records.append, run_tool=_no_tools)
        self.prompt = load_prompt("planner", self.settings.prompts_dir)

    def plan(self):
        messages = [{"role": "system", "content": self.prompt.text}, {"role": "user", "content": "payment times out"}]
        return self.invoker.invoke(self.ctx, stage="planner", model="stub-model", prompt=self.prompt,
                                   messages=messages, schema=PlannerPlan)


def _no_tools(name: str, args: dict[str, Any]) -> ToolInvocation:
    raise AssertionError("no tool in this test")


@pytest.fixture
def stub():
    with StubOpenAI() as s:
        yield s


def test_valid_reply_is_parsed_and_recorded(stub: StubOpenAI) -> None:
    h = Harness(stub)
    stub.reply(json.dumps(PLAN), usage={"prompt_tokens": 120, "completion_tokens": 30})
    result = h.plan()
    assert result.value == PlannerPlan.model_validate(PLAN)
    assert result.attempts == 1 and result.prompt_tokens == 120 and result.completion_tokens == 30
    [rec] = h.records
    assert (rec.stage, rec.provider, rec.parse_status, rec.attempt) == ("planner", "openai", "valid", 1)
    assert rec.prompt_file == "prompts/planner.md"
    assert rec.prompt_version == load_prompt("planner", load_settings().prompts_dir).version
    assert rec.messages[1]["content"] == "payment times out" and rec.raw_response == json.dumps(PLAN)
    sent = stub.chat_requests[0].body
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["name"] == "PlannerPlan"


def test_malformed_json_then_valid_after_reask(stub: StubOpenAI) -> None:
    h = Harness(stub)
    stub.reply('{"skill": "latency_diagnosis", "services": [')
    stub.reply(json.dumps(PLAN))
    result = h.plan()
    assert result.value is not None and result.attempts == 2
    assert [(r.attempt, r.parse_status) for r in h.records] == [(1, "malformed"), (2, "valid")]
    assert "not valid JSON" in (h.records[0].error or "")
    reask = stub.chat_requests[1].messages
    assert reask[-2] == {"role": "assistant", "content": '{"skill": "latency_diagnosis", "services": ['}
    assert "could not be used" in reask[-1]["content"] and "not valid JSON" in reask[-1]["content"]


def test_schema_invalid_output_is_reasked_with_the_validation_error(stub: StubOpenAI) -> None:
    h = Harness(stub)
    stub.reply(json.dumps({"services": ["payment-service"]}))  # no skill
    stub.reply(json.dumps(PLAN))
    result = h.plan()
    assert result.value is not None and result.value.skill == "latency_diagnosis"
    assert [r.parse_status for r in h.records] == ["malformed", "valid"]
    assert "skill" in stub.chat_requests[1].messages[-1]["content"]


def test_final_failure_carries_last_raw_attempts_and_tokens(stub: StubOpenAI) -> None:
    h = Harness(stub, reask_attempts=1)
    stub.reply("no json here", usage={"prompt_tokens": 50, "completion_tokens": 5})
    stub.reply("still prose", usage={"prompt_tokens": 60, "completion_tokens": 6})
    with pytest.raises(LlmCallError) as err:
        h.plan()
    assert isinstance(err.value, StageFailure) and err.value.stage == "planner"
    assert err.value.last_raw == "still prose" and err.value.attempts == 2 and err.value.reason == "output"
    assert (err.value.prompt_tokens, err.value.completion_tokens) == (110, 11)
    assert len(h.records) == 2


def test_429_honours_retry_after(stub: StubOpenAI) -> None:
    h = Harness(stub)
    stub.fail(429, "slow down", headers={"retry-after": "0.25"})
    stub.reply(json.dumps(PLAN))
    result = h.plan()
    assert result.value is not None
    assert h.sleeps == [0.25]
    assert [(r.attempt, r.parse_status) for r in h.records] == [(1, "n/a"), (2, "valid")]
    assert "HTTP 429" in (h.records[0].error or "")


def test_retry_after_is_capped(stub: StubOpenAI) -> None:
    h = Harness(stub)
    stub.fail(429, "slow down", headers={"retry-after": "3600"})
    stub.reply(json.dumps(PLAN))
    h.plan()
    assert h.sleeps == [30.0]


def test_500_then_success_backs_off(stub: StubOpenAI) -> None:
    h = Harness(stub)
    stub.fail(500, "boom")
    stub.fail(503, "busy")
    stub.reply(json.dumps(PLAN))
    assert h.plan().value is not None
    # equal jitter with jitter()=0.5: 3/4 of 0.5 s, then 3/4 of 1 s
    assert h.sleeps == [0.375, 0.75]
    assert [r.attempt for r in h.records] == [1, 2, 3]


def test_5xx_until_retries_are_exhausted(stub: StubOpenAI) -> None:
    h = Harness(stub, max_retries=1)
    stub.fail(502, "bad gateway")
    stub.fail(502, "bad gateway")
    with pytest.raises(LlmCallError, match="HTTP 502.*gave up after 2 attempt"):
        h.plan()


def test_timeout_is_a_clear_stage_failure(stub: StubOpenAI) -> None:
    h = Harness(stub, timeout_s=0.2, max_retries=1)
    stub.reply(json.dumps(PLAN), delay_s=5)
    stub.reply(json.dumps(PLAN), delay_s=5)
    with pytest.raises(StageFailure, match="no reply within 0.2 s"):
        h.plan()
    assert len(h.sleeps) == 1 and all(r.error for r in h.records)


def test_connection_refused_names_the_endpoint() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # the port is closed again: connecting is refused
    settings = load_settings(openai={"base_url": f"http://127.0.0.1:{port}/v1", "max_retries": 1})
    records: list[LlmCallRecord] = []
    sleeps: list[float] = []
    client = openai.OpenAI(base_url=settings.openai.base_url, api_key="x", timeout=5, max_retries=0)
    invoker = StructuredLlmInvoker(client, settings=settings, sleep=sleeps.append)
    ctx = StageContext(settings=settings, session_id="s", language="en", record=records.append, run_tool=_no_tools)
    prompt = load_prompt("planner", settings.prompts_dir)
    with pytest.raises(StageFailure) as err:
        invoker.invoke(ctx, stage="planner", model="m", prompt=prompt,
                       messages=[{"role": "system", "content": "x"}, {"role": "user", "content": "q"}], schema=PlannerPlan)
    assert f"cannot connect to http://127.0.0.1:{port}/v1" in str(err.value)
    assert "gave up after 2 attempt" in str(err.value)
    assert len(records) == 2 and len(sleeps) == 1


def test_truncated_output_is_malformed_and_reasked_shorter(stub: StubOpenAI) -> None:
    h = Harness(stub)
    stub.reply('{"skill": "latency_diag', finish_reason="length")
    stub.reply(json.dumps(PLAN))
    assert h.plan().value is not None
    assert h.records[0].parse_status == "malformed" and "finish_reason=length" in (h.records[0].error or "")
    assert "cut off" in stub.chat_requests[1].messages[-1]["content"]


def test_length_with_complete_json_is_still_reasked(stub: StubOpenAI) -> None:
    h = Harness(stub)
    stub.reply(json.dumps(PLAN), finish_reason="length")
    stub.reply(json.dumps(PLAN))
    h.plan()
    assert [r.parse_status for r in h.records] == ["malformed", "valid"]


def test_empty_content_is_missing_and_reasked(stub: StubOpenAI) -> None:
    h = Harness(stub)
    stub.reply("")
    stub.reply(None)
    stub.reply(json.dumps(PLAN))
    assert h.plan().attempts == 3
    assert [r.parse_status for r in h.records] == ["missing", "missing", "valid"]


def test_fences_and_think_blocks_are_stripped(stub: StubOpenAI) -> None:
    h = Harness(stub)
    stub.reply(f"<think>the user wants a plan\n{{not json}}</think>\n```json\n{json.dumps(PLAN)}\n```")
    result = h.plan()
    assert result.value is not None and result.raw == json.dumps(PLAN)
    assert strip_wrappers("Here it is:\n```\n{\"a\": 1}\n```") == '{"a": 1}'


def test_json_mode_falls_back_and_is_remembered(stub: StubOpenAI) -> None:
    h = Harness(stub)
    stub.fail(400, "response_format json_schema is not supported by this model")
    stub.fail(400, "Invalid value for 'response_format': json_object")
    stub.reply(json.dumps(PLAN))
    stub.reply(json.dumps(PLAN))
    h.plan()
    sent = [r.body for r in stub.chat_requests]
    assert sent[0]["response_format"]["type"] == "json_schema"
    assert sent[1]["response_format"]["type"] == "json_object"
    assert "response_format" not in sent[2]
    assert "JSON Schema" in sent[2]["messages"][0]["content"]  # prompt-only mode carries the schema
    assert h.invoker.json_mode("stub-model") == "prompt"
    h.plan()  # the next call starts in the remembered mode
    assert "response_format" not in stub.chat_requests[3].body
    assert h.sleeps == []


def test_other_400_is_not_retried(stub: StubOpenAI) -> None:
    h = Harness(stub)
    stub.fail(400, "context length exceeded")
    with pytest.raises(LlmCallError) as err:
        h.plan()
    assert err.value.status_code == 400 and err.value.reason == "http" and len(stub.chat_requests) == 1


def test_invoke_json_does_not_judge_the_schema(stub: StubOpenAI) -> None:
    h = Harness(stub)
    schema_invalid = '{"diagnosis_summary": "it is the database", "claims": "none"}'
    stub.reply("not json at all")
    stub.reply(f"```json\n{schema_invalid}\n```")
    prompt = load_prompt("diagnosis", h.settings.prompts_dir)
    result = h.invoker.invoke_json(h.ctx, stage="diagnosis", model="stub-model", prompt=prompt,
                                   messages=[{"role": "system", "content": prompt.text}, {"role": "user", "content": "q"}],
                                   schema_hint=ExecutorOutputV2)
    assert result.raw == schema_invalid and result.value is None
    assert [r.parse_status for r in h.records] == ["malformed", "valid"]


def test_missing_usage_is_estimated(stub: StubOpenAI) -> None:
    h = Harness(stub)
    stub.reply(json.dumps({"answer_summary": "ok", "user_facing_answer": "ok"}))
    prompt = load_prompt("composer", h.settings.prompts_dir)
    h.invoker.invoke(h.ctx, stage="composer", model="stub-model", prompt=prompt,
                     messages=[{"role": "system", "content": prompt.text}, {"role": "user", "content": "x" * 400}],
                     schema=ComposerOutput)
    [rec] = h.records
    assert rec.prompt_tokens > 100 and rec.completion_tokens > 0


def test_every_call_sends_the_stage_output_cap_and_records_its_terms(stub: StubOpenAI) -> None:
    h = Harness(stub)
    stub.reply(json.dumps(PLAN))
    h.plan()
    assert stub.chat_requests[0].body["max_tokens"] == h.settings.budget.output_tokens.planner
    [rec] = h.records
    assert (rec.json_mode, rec.finish_reason) == ("json_schema", "stop")

    capped = Harness(stub, budget={"output_tokens": {"planner": 64}})
    stub.reply(json.dumps(PLAN))
    capped.plan()
    assert stub.chat_requests[1].body["max_tokens"] == 64


def test_a_reply_cut_at_the_cap_is_reasked_once_then_fails_as_cut(stub: StubOpenAI) -> None:
    h = Harness(stub, reask_attempts=2)
    stub.reply('{"skill": "latency_diag', finish_reason="length")
    stub.reply('{"skill": "lat', finish_reason="length")
    with pytest.raises(LlmCallError) as err:
        h.plan()
    assert err.value.reason == "output" and "cut at the output cap twice" in str(err.value)
    assert "budget.output_tokens.planner" in str(err.value)
    assert len(stub.chat_requests) == 2 and stub.pending == 0  # one re-ask, not reask_attempts of them
    assert "shorter" in stub.chat_requests[1].messages[-1]["content"]
    assert [(r.parse_status, r.finish_reason) for r in h.records] == [("malformed", "length")] * 2


def test_a_cut_tool_loop_reply_is_asked_once_for_a_shorter_one(stub: StubOpenAI) -> None:
    h = Harness(stub)
    stub.reply("I will now explain at length why the payment service", finish_reason="length")
    stub.reply("Collected.")
    prompt = load_prompt("collector", h.settings.prompts_dir)
    comp = h.invoker.complete(h.ctx, stage="collector", model="stub-model", prompt=prompt,
                              messages=[{"role": "system", "content": prompt.text}, {"role": "user", "content": "q"}])
    assert comp.content == "Collected."
    assert [(r.parse_status, r.finish_reason) for r in h.records] == [("malformed", "length"), ("valid", "stop")]
    assert stub.chat_requests[0].body["max_tokens"] == h.settings.budget.output_tokens.collector
    assert "shorter" in stub.chat_requests[1].messages[-1]["content"]


def test_a_stalled_endpoint_fails_the_stage_at_its_wall_time_bound(stub: StubOpenAI) -> None:
    # Each request would be allowed 5 s and 3 retries; the stage as a whole only 0.3 s.
    h = Harness(stub, timeout_s=5.0, max_retries=3, stage_timeout_s=0.3)
    stub.reply(json.dumps(PLAN), delay_s=5)
    with pytest.raises(LlmCallError) as err:
        h.plan()
    assert err.value.reason == "deadline" and "openai.stage_timeout_s" in str(err.value)
    assert "timed out" in str(err.value)
    assert len(stub.chat_requests) == 1 and h.sleeps == []
    [rec] = h.records
    assert rec.parse_status == "n/a" and "timed out" in (rec.error or "")


def test_a_configured_json_mode_is_where_negotiation_starts(stub: StubOpenAI) -> None:
    h = Harness(stub, json_mode="prompt")
    stub.reply(json.dumps(PLAN))
    h.plan()
    sent = stub.chat_requests[0].body
    assert "response_format" not in sent and "JSON Schema" in sent["messages"][0]["content"]
    assert h.records[0].json_mode == "prompt"


def test_a_stream_that_stalls_mid_reply_fails_on_inactivity_and_records_what_it_generated(stub: StubOpenAI) -> None:
    h = Harness(stub, timeout_s=0.3, max_retries=1)
    stalled = StubReply(body=chat_body(json.dumps(PLAN)), stall_after=6, stall_s=5)
    stub.enqueue(stalled).enqueue(stalled)
    with pytest.raises(LlmCallError) as err:
        h.plan()
    assert "no token within 0.3 s (openai.timeout_s), after 5 token(s)" in str(err.value)
    # The cut attempts are on record with the tokens generated before the cut, not 0.
    assert [(r.parse_status, r.completion_tokens) for r in h.records] == [("n/a", 5), ("n/a", 5)]
    assert all(r.raw_response == json.dumps(PLAN)[:20] and r.prompt_tokens > 0 for r in h.records)
    assert err.value.completion_tokens == 10


def test_a_slow_model_that_keeps_generating_is_not_cut_and_reports_its_progress(
    stub: StubOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(invoker, "PROGRESS_EVERY_S", 0.0)
    h = Harness(stub, timeout_s=0.5)
    seen: list[StreamProgress] = []
    h.ctx.progress = seen.append
    # Each chunk well within the idle bound, the whole reply well past it.
    stub.enqueue(StubReply(body=chat_body(json.dumps(PLAN), usage={"prompt_tokens": 50, "completion_tokens": 21}),
                           chunk_delay_s=0.05))
    result = h.plan()
    assert result.value == PlannerPlan.model_validate(PLAN) and result.completion_tokens == 21
    assert stub.chat_requests[0].body["stream"] is True
    assert seen and seen[-1].stage == "planner" and seen[-1].tokens > seen[0].tokens
