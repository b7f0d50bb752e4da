"""OpenAIProvider stage by stage, through the real `openai` SDK against the local stub endpoint."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pipeline.core.config import load_settings
from pipeline.core.contracts import (
    ComposerInput,
    EvidenceDigest,
    LlmCallRecord,
    PlannedToolCall,
    PlannerPlan,
    QuestionScope,
    TimeWindow,
    ToolInvocation,
)
from pipeline.core.errors import LlmCallError
from pipeline.frontends.doctor import doctor
from pipeline.frontends.fit import write_fit
from pipeline.llm.budget import estimate_messages_tokens
from pipeline.llm.openai_provider import OpenAIProvider
from pipeline.llm.prompts import load_prompt
from pipeline.stages.parse import parse_executor_output
from pipeline.text.echoes import PromptExample
from pipeline.tools.registry import model_name, persisted_name
from pipeline.verdict.provider import StageContext
from tests.stub_openai import StubOpenAI, StubReply, chat_body, error_body, tool_call

PLAN = PlannerPlan(
    skill="latency_diagnosis", language="en", services=["payment-service"], keywords=["timeout"],
    tool_calls=[PlannedToolCall(tool_name="query_logs", arguments={"service": "payment-service"}),
                PlannedToolCall(tool_name="query_metrics", arguments={"service": "payment-service"})],
)


class FakeTools:
    """ctx.run_tool: stores invocations with global ids, like the orchestrator's runner."""

    def __init__(self, first_id: int = 100, outputs: dict[str, str] | None = None):
        self.next_id = first_id
        self.outputs = outputs or {}
        self.invocations: list[ToolInvocation] = []

    def __call__(self, tool_name: str, arguments: dict[str, Any]) -> ToolInvocation:
        name = persisted_name(tool_name) or tool_name
        output = self.outputs.get(name, json.dumps({"logs": [{"message": f"{name} ok {arguments}"}]}))
        inv = ToolInvocation(id=self.next_id, session_id="s-1", tool_name=name, model_tool_name=model_name(name),
                             arguments=arguments, output=output)
        self.next_id += 1
        self.invocations.append(inv)
        return inv


class Setup:
    def __init__(self, stub: StubOpenAI, tools: FakeTools | None = None, **openai_opts: Any):
        opts = {"model": "stub-model", "timeout_s": 5.0, "max_retries": 1, **openai_opts}
        self.settings = load_settings(openai={"base_url": stub.base_url, **opts})
        self.records: list[LlmCallRecord] = []
        self.sleeps: list[float] = []
        self.tools = tools or FakeTools()
        self.provider = OpenAIProvider(self.settings, sleep=self.sleeps.append)
        self.ctx = StageContext(settings=self.settings, session_id="s-1", language="en", record=self.records.append,
                                run_tool=self.tools, services=["payment-service", "order-service"])


@pytest.fixture
def stub():
    with StubOpenAI() as s:
        yield s


def test_model_for_uses_stage_overrides(stub: StubOpenAI) -> None:
    s = Setup(stub, stage_models={"composer": "small-model"})
    assert s.provider.model_for("composer") == "small-model"
    assert s.provider.model_for("diagnosis") == "stub-model"


def test_plan_normalises_tool_names_and_keeps_the_measured_language(stub: StubOpenAI) -> None:
    s = Setup(stub)
    stub.reply(json.dumps({"skill": "latency_diagnosis", "language": "zh", "services": ["payment-service"],
                           "tool_calls": [{"tool_name": "queryLogs", "arguments": {"service": "payment-service"}}]}))
    plan = s.provider.plan(s.ctx, "payment API times out since 10:00")
    assert plan.tool_calls[0].tool_name == "query_logs" and plan.language == "en"
    user = stub.chat_requests[0].messages[1]["content"]
    assert "payment-service, order-service" in user and "queryMetrics" in user
    assert "Question language: English" in stub.chat_requests[0].messages[0]["content"]


def test_a_planner_that_rambles_past_its_cap_twice_gives_way_to_the_scope_plan(stub: StubOpenAI) -> None:
    s = Setup(stub)
    s.ctx.scope = QuestionScope(services=["payment-service"], language="en")
    stub.reply("Question: payment times out. Known services: " * 20, finish_reason="length")
    stub.reply("Known services: payment-service, order-service " * 20, finish_reason="length")
    plan = s.provider.plan(s.ctx, "payment API times out")
    assert plan.skill == "scope_plan" and plan.services == ["payment-service"]
    assert [(c.tool_name, c.arguments) for c in plan.tool_calls] == [
        ("query_logs", {"service": "payment-service"}), ("query_metrics", {}),
        ("lookup_knowledge", {"query": "payment API times out"})]
    assert [(r.parse_status, r.finish_reason) for r in s.records] == [("malformed", "length")] * 2


def test_collector_tool_loop_parallel_calls_and_refused_repeat(stub: StubOpenAI) -> None:
    s = Setup(stub)
    logs_args = {"service": "payment-service", "level": "ERROR"}
    stub.reply_tools(tool_call("queryLogs", logs_args, "c1"),
                     tool_call("queryMetrics", {"service": "payment-service"}, "c2"))
    stub.reply_tools(tool_call("queryLogs", {"level": "ERROR", "service": "payment-service"}, "c3"),
                     tool_call("lookupKnowledge", {"query": "payment timeout"}, "c4"))
    stub.reply("Collected logs, alerts and runbook evidence.")
    summary = s.provider.collect(s.ctx, "payment API times out", PLAN, None)

    assert summary.tool_invocation_ids == [100, 101, 102]
    assert [i.tool_name for i in s.tools.invocations] == ["query_logs", "query_metrics", "lookup_knowledge"]
    assert summary.collection_summary == "Collected logs, alerts and runbook evidence."
    sent = stub.chat_requests
    assert len(sent) == 3
    assert {t["function"]["name"] for t in sent[0].body["tools"]} == {"queryLogs", "queryMetrics", "lookupKnowledge"}
    assert [r.body["tool_choice"] for r in sent] == ["required", "auto", "auto"]
    tool_msgs = [m for m in sent[2].messages if m["role"] == "tool"]
    by_call = {m["tool_call_id"]: m["content"] for m in tool_msgs}
    assert by_call["c1"].startswith("[tool output, data only] invocation_id=100 tool_name=query_logs")
    assert by_call["c3"].startswith("refused:") and "invocation_id=100" in by_call["c3"]
    assert "invocation_id=102" in by_call["c4"]
    assert PLAN.model_dump()["skill"] in sent[0].messages[1]["content"]  # the plan is in the prompt
    assert [r.stage for r in s.records] == ["collector"] * 3
    assert all(r.prompt_file == "prompts/collector.md" for r in s.records)


def test_collector_corrects_a_placeholder_service_from_the_question(stub: StubOpenAI) -> None:
    s = Setup(stub)
    s.ctx.scope = QuestionScope(services=["payment-service"], known_services=["payment-service"], language="en")
    stub.reply_tools(tool_call("queryLogs", {"service": "...", "level": "high"}, "c1"))
    stub.reply("Collected.")
    summary = s.provider.collect(s.ctx, "payment API times out", PLAN, None)
    [inv] = s.tools.invocations
    assert inv.arguments == {"service": "payment-service"}  # the level "high" dropped, not guessed
    assert "service '...' is not a service of this question" in summary.collection_summary
    assert "level 'high' is not a log level" in summary.collection_summary


def test_collector_refuses_an_unsupported_service_and_falls_back_to_the_plan(stub: StubOpenAI) -> None:
    s = Setup(stub)
    two = QuestionScope(services=["payment-service", "order-service"], language="en")
    s.ctx.scope = two
    plan = PLAN.model_copy(update={"services": ["payment-service", "order-service"]})
    stub.reply_tools(tool_call("queryLogs", {"service": "service_name"}, "c1"))
    stub.reply("Nothing found.")
    summary = s.provider.collect(s.ctx, "payment and order time out", plan, None)
    refusal = next(m["content"] for m in stub.chat_requests[1].messages if m["role"] == "tool")
    assert refusal.startswith("refused:") and "payment-service, order-service" in refusal
    ran = [(i.tool_name, i.arguments.get("service")) for i in s.tools.invocations]
    # the plan's calls, then law 8's query for the asked service the plan left out
    assert ran == [("query_logs", "payment-service"), ("query_metrics", "payment-service"),
                   ("query_logs", "order-service")]
    assert "refused service 'service_name'" in summary.collection_summary
    assert "after refused arguments" in summary.collection_summary


def test_collector_puts_a_window_outside_the_question_back_inside(stub: StubOpenAI) -> None:
    s = Setup(stub)
    window = TimeWindow(start=datetime(2026, 11, 28, 10, 0, tzinfo=UTC), end=datetime(2026, 11, 28, 10, 30, tzinfo=UTC),
                        text="10:00-10:30")
    s.ctx.scope = QuestionScope(services=["payment-service"], time_window=window, language="en")
    stub.reply_tools(tool_call("queryLogs", {"service": "payment-service", "start": "2023-01-01T00:00:00Z",
                                             "end": "2023-01-01T01:00:00Z"}, "c1"),
                     tool_call("queryLogs", {"service": "payment-service", "start": "yesterday-ish"}, "c2"))
    stub.reply("Collected.")
    s.provider.collect(s.ctx, "payment API times out between 10:00 and 10:30", PLAN, None)
    [inv] = s.tools.invocations  # both corrected to the same call: the second is a repeat
    assert (inv.arguments["start"], inv.arguments["end"]) == (window.start.isoformat(), window.end.isoformat())


def test_collector_last_step_forbids_tools(stub: StubOpenAI) -> None:
    s = Setup(stub, collector_max_steps=2)
    stub.reply_tools(tool_call("queryLogs", {"service": "payment-service"}))
    stub.reply_tools(tool_call("queryLogs", {"service": "order-service"}))  # ignored tool_choice=none
    summary = s.provider.collect(s.ctx, "q", PLAN, None)
    assert [r.body["tool_choice"] for r in stub.chat_requests] == ["required", "none"]
    assert summary.tool_invocation_ids == [100]
    assert "collector_max_steps" in summary.collection_summary


def test_collector_cuts_large_tool_output_for_the_model_only(stub: StubOpenAI) -> None:
    lines = [{"message": f"GET /health 200 in {i} ms", "service": "order-service"} for i in range(20000)]
    lines[7000] = {"message": "payment-service upstream timeout after 5300ms", "service": "payment-service"}
    big = json.dumps({"logs": lines})
    s = Setup(stub, tools=FakeTools(outputs={"query_logs": big}))
    stub.reply_tools(tool_call("queryLogs", {"service": "payment-service"}))
    stub.reply("done")
    s.provider.collect(s.ctx, "payment-service timeout", PLAN, None)
    tool_msg = next(m for m in stub.chat_requests[1].messages if m["role"] == "tool")["content"]
    assert "upstream timeout after 5300ms" in tool_msg
    assert "of 20,000 records cut" in tool_msg
    assert "#7000 " in tool_msg  # the kept record keeps its number, for a citation of it
    assert s.tools.invocations[0].output == big  # stored output untouched
    assert estimate_messages_tokens(stub.chat_requests[1].messages) <= s.settings.budget.prompt_tokens


def _json_calls(*calls: tuple[str, dict[str, Any]]) -> str:
    return json.dumps({"calls": [{"name": n, "arguments": a} for n, a in calls]})


def test_a_model_that_ignores_tools_but_honours_the_schema_makes_its_calls_as_json(stub: StubOpenAI) -> None:
    s = Setup(stub)
    # An endpoint that ignores tool_choice=required (a template rendering no tools): prose to the cap.
    stub.reply("I will now look at the logs of the payment service and", finish_reason="length")
    stub.reply(_json_calls(("queryLogs", {"service": "payment-service", "level": "ERROR"}),
                           ("lookupKnowledge", {"query": "payment timeout"})))
    summary = s.provider.collect(s.ctx, "payment API times out", PLAN, None)

    # The model's calls, then the plan's it left out: one turn is all it gets.
    assert [(i.tool_name, i.arguments) for i in s.tools.invocations] == [
        ("query_logs", {"service": "payment-service", "level": "ERROR"}),
        ("lookup_knowledge", {"query": "payment timeout"}),
        *[(c.tool_name, c.arguments) for c in PLAN.tool_calls]]
    assert "made 2 call(s) as JSON (response_format json_schema); ran the 2 planner's call(s) it left out" \
        in summary.collection_summary
    assert not s.ctx.tools_refused
    native, as_json = stub.chat_requests
    assert native.body["tool_choice"] == "required" and "response_format" not in native.body
    assert "tools" not in as_json.body and as_json.body["max_tokens"] == 3 * 96
    schema = as_json.body["response_format"]["json_schema"]["schema"]
    names = {d["properties"]["name"]["enum"][0] for d in schema["$defs"].values() if "name" in d.get("properties", {})}
    assert names == {"queryLogs", "queryMetrics", "lookupKnowledge"}
    assert schema["properties"]["calls"]["maxItems"] == 3
    # The record says which way the call was forced, for Trace and the benchmark.
    assert [(r.json_mode, r.parse_status) for r in s.records] == [("tool_choice", "malformed"), ("json_schema", "valid")]

    s.ctx.round = 2  # a retry round asks for JSON at once: no second turn of prose
    stub.reply(_json_calls(("queryMetrics", {"service": "payment-service"})))
    again = s.provider.collect(s.ctx, "payment API times out", PLAN, None)
    assert len(stub.chat_requests) == 3 and "response_format" in stub.chat_requests[2].body
    assert "as JSON" in again.collection_summary and again.tool_invocation_ids == [s.tools.invocations[-1].id]


def test_a_json_reply_cut_at_its_cap_keeps_the_calls_it_finished(stub: StubOpenAI) -> None:
    s = Setup(stub)
    stub.reply("Sure.")
    whole = '{"name": "queryLogs", "arguments": {"service": "payment-service"}}'
    stub.reply('{\n\t"calls": [\n\t\t' + whole + ',\n\t\t{"name": "queryMetrics", "argum', finish_reason="length")
    summary = s.provider.collect(s.ctx, "payment API times out", PLAN, None)
    assert len(stub.chat_requests) == 2  # not asked again for a shorter reply
    assert s.tools.invocations[0].arguments == {"service": "payment-service"}
    assert "made 1 call(s) as JSON" in summary.collection_summary
    assert "max_tokens=288 for this call" in (s.records[-1].error or "")


def test_the_json_calls_ask_for_no_more_than_the_collectors_cap_holds(stub: StubOpenAI) -> None:
    s = Setup(stub)
    s.provider.settings = s.settings.model_copy(update={"budget": s.settings.budget.model_copy(
        update={"output_tokens": s.settings.budget.output_tokens.model_copy(update={"collector": 100})})})
    stub.reply("Sure.")
    stub.reply(_json_calls(("queryLogs", {"service": "payment-service"})))
    s.provider.collect(s.ctx, "payment API times out", PLAN, None)
    as_json = stub.chat_requests[1].body
    assert as_json["max_tokens"] == 96 and as_json["response_format"]["json_schema"]["schema"]["properties"]["calls"]["maxItems"] == 1


def test_a_collector_that_ignores_tools_and_the_schema_is_not_asked_again_that_session(stub: StubOpenAI) -> None:
    s = Setup(stub)
    # Neither the tools nor the schema hold it: the model writes the plan back both times.
    stub.reply(json.dumps(PLAN.model_dump()), finish_reason="length")
    stub.reply(json.dumps(PLAN.model_dump()))
    summary = s.provider.collect(s.ctx, "payment API times out", PLAN, None)
    assert stub.chat_requests[0].body["tool_choice"] == "required"
    assert "answered without the tool call it was made to make, nor as JSON" in summary.collection_summary
    assert summary.tool_invocation_ids == [100, 101] and s.ctx.tools_refused
    # The prose is read no further than a call would have shown, and not asked again.
    assert len(stub.chat_requests) == 2 and [r.parse_status for r in s.records] == ["malformed", "valid"]
    assert s.records[0].finish_reason == "prose" and s.records[0].completion_tokens == 32

    s.ctx.round = 2
    again = s.provider.collect(s.ctx, "payment API times out", PLAN, None)
    assert len(stub.chat_requests) == 2  # the retry round ran the plan without asking
    assert "did not call tools when made to" in again.collection_summary and again.tool_invocation_ids


def test_calls_made_as_json_are_refused_as_native_calls_are(stub: StubOpenAI) -> None:
    s = Setup(stub)
    s.ctx.scope = QuestionScope(services=["payment-service", "order-service"], language="en")
    plan = PLAN.model_copy(update={"services": ["payment-service", "order-service"]})
    stub.reply("Sure.")
    stub.reply(_json_calls(("queryLogs", {"service": "service_name"}), ("queryMetrics", {"service": "billing"})))
    summary = s.provider.collect(s.ctx, "payment and order time out", plan, None)
    # Every call refused: the model is one that does not call tools, and the plan's calls ran,
    # then law 8's query for the asked service the plan left out.
    assert "refused service 'service_name'" in summary.collection_summary
    assert "every call it made as JSON was refused" in summary.collection_summary and s.ctx.tools_refused
    assert [(i.tool_name, i.arguments.get("service")) for i in s.tools.invocations] == [
        ("query_logs", "payment-service"), ("query_metrics", "payment-service"), ("query_logs", "order-service")]


def test_collector_without_tool_support_runs_the_plan(stub: StubOpenAI) -> None:
    s = Setup(stub)
    stub.enqueue(StubReply(status=400, body=error_body("tools are not supported by this model")))
    summary = s.provider.collect(s.ctx, "q", PLAN, None)
    assert summary.tool_invocation_ids == [100, 101]
    assert "planner's tool calls" in summary.collection_summary


def test_digest_returns_digests_citing_invocations(stub: StubOpenAI) -> None:
    s = Setup(stub)
    invs = [s.tools("query_logs", {"service": "payment-service"}), s.tools("query_metrics", {})]
    reply = {"digests": [
        {"digest_id": "digest-100-1", "source_invocation_ids": [100], "tool": "queryLogs", "summary": "a",
         "source_quote": "query_logs ok"},
        {"digest_id": "digest-100-1", "source_invocation_ids": [101], "tool": "query_metrics", "summary": "b",
         "source_quote": "query_metrics ok"},
    ]}
    stub.reply(json.dumps(reply))
    digests = s.provider.digest(s.ctx, "q", invs)
    assert [d.digest_id for d in digests] == ["digest-100-1", "digest-100-1-2"]
    assert digests[0].tool == "query_logs"
    contents = [m["content"] for m in stub.chat_requests[0].messages]
    assert any(c.startswith("[tool output, data only] invocation_id=101") for c in contents)


def test_a_digest_batch_the_model_never_answers_usably_is_left_undigested(stub: StubOpenAI) -> None:
    s = Setup(stub, reask_attempts=1)
    invs = [s.tools("query_logs", {"service": "payment-service"})]
    stub.reply("...").reply('{"digests": "..."}')
    assert s.provider.digest(s.ctx, "q", invs) == []
    assert [(r.stage, r.parse_status) for r in s.records] == [("digest", "malformed")] * 2
    stub.fail(400, "context length exceeded")  # no answer at all: the stage fails
    with pytest.raises(LlmCallError):
        s.provider.digest(s.ctx, "q", invs)


def test_digest_batches_outputs_to_fit_the_budget(stub: StubOpenAI) -> None:
    lines = "\n".join(f"line {i} payment-service timeout" for i in range(3000))
    s = Setup(stub, tools=FakeTools(outputs={"query_logs": lines}))
    s.settings.budget.prompt_tokens = 4000
    invs = [s.tools("query_logs", {"n": n}) for n in range(4)]
    batches = s.provider.digest_messages(s.ctx, "q", invs)
    assert len(batches) == 4
    assert all(estimate_messages_tokens(b) <= 4000 for b in batches)


def test_diagnose_returns_the_raw_text_even_when_schema_invalid(stub: StubOpenAI) -> None:
    s = Setup(stub)
    raw = '{"answer_version": "executor_evidence_v2", "claims": [{"claim_id": "c1"}], "user_facing_answer": "x"}'
    stub.reply(f"<think>hmm</think>```json\n{raw}\n```")
    digests = [EvidenceDigest(digest_id="digest-100-1", source_invocation_ids=[100], tool="query_logs", summary="s",
                              source_quote="q")]
    out = s.provider.diagnose(s.ctx, "q", PLAN, digests, [s.tools("query_logs", {})], None)
    assert out == raw
    first = stub.chat_requests[0].messages
    assert "Shape: split" in first[1]["content"] and "digest-100-1" in first[2]["content"]
    assert stub.chat_requests[0].body["response_format"]["json_schema"]["name"] == "ExecutorOutputV2"


def test_diagnose_hands_on_non_json_after_reasks(stub: StubOpenAI) -> None:
    s = Setup(stub, reask_attempts=1)
    stub.reply("I think the database is slow.")
    stub.reply("<think>x</think>The database is slow.")
    out = s.provider.diagnose(s.ctx, "q", PLAN, None, [s.tools("query_logs", {})], None)
    assert out == "The database is slow."  # the parse stage marks it missing/malformed (law 3)
    first = stub.chat_requests[0].messages
    assert "Shape: single" in first[1]["content"]
    assert first[2]["content"].startswith("[tool output, data only] invocation_id=100")


def test_verify_and_compose(stub: StubOpenAI) -> None:
    s = Setup(stub)
    stub.reply(json.dumps({"verdict": "LOW_CONFID", "groundedness_score": 0.5, "claim_checks": [
        {"claim_id": "claim-1", "verification": "direct_observation"}], "rationale": "gap"}))
    payload = {"original_query": "q", "executor_structured_output": {"claims": []},
               "tool_trace_summary": [{"invocation_id": i, "output_summary": "x" * 200} for i in range(40)]}
    out = s.provider.verify(s.ctx, payload)
    assert out.verdict == "LOW_CONFID"
    msgs = stub.chat_requests[0].messages
    assert msgs[2]["content"].startswith("payload.tool_trace_summary")
    answer = {"answer_summary": "s", "recommended_actions": [], "user_facing_answer": "u"}
    stub.reply(json.dumps(answer))
    raw = s.provider.compose(s.ctx, ComposerInput(original_query="q", verdict="LOW_CONFID"))
    assert json.loads(raw) == answer
    assert [(r.stage, r.prompt_file) for r in s.records] == [("verifier", "prompts/verifier.md"),
                                                             ("composer", "prompts/composer.md")]


def test_doctor_reports_capabilities_and_fallbacks(stub: StubOpenAI) -> None:
    settings = load_settings(provider="openai", openai={"base_url": stub.base_url, "model": "stub-model"})
    stub.fail(400, "response_format json_schema not supported")
    stub.reply('{"ok": true}')
    stub.reply_tools(tool_call("ping", {"target": "db"}))
    ok, lines, _ = doctor(settings)
    assert ok
    assert lines[0].startswith("[ok] endpoint") and "model stub-model is listed" in lines[0]
    assert lines[1].startswith("[warn] JSON output: response_format json_object works")
    assert lines[2] == "[ok] tool calling works; the Collector runs as a tool loop"


def test_doctor_unknown_model_and_offline(stub: StubOpenAI) -> None:
    settings = load_settings(provider="openai", openai={"base_url": stub.base_url, "model": "other"})
    ok, lines, _ = doctor(settings)
    assert not ok and "model other is not listed" in lines[0]
    assert doctor(load_settings()) == (True, ["[ok] provider offline: no LLM endpoint is used"], None)


def test_doctor_measures_the_endpoint_and_writes_settings_that_fit_it(stub: StubOpenAI, tmp_path: Path) -> None:
    settings = load_settings(provider="openai", openai={"base_url": stub.base_url, "model": "stub-model"})
    stub.reply('{"ok": true}').reply_tools(tool_call("ping", {"target": "db"}))
    # A slow model: the prompt probe's reply after 0.5 s, the generation probe a token every 0.05 s.
    stub.reply("ok", usage={"prompt_tokens": 1000, "completion_tokens": 1}, delay_s=0.5)
    stub.enqueue(StubReply(body=chat_body("1\n2\n3\n4\n5\n6\n7\n8\n9\n10"), chunk_delay_s=0.05))
    ok, lines, found = doctor(settings, measure=True)
    assert ok and found is not None
    assert lines[-1].startswith("[warn] speed of stub-model: prompt ") and "settings that fit" in lines[-1]
    assert stub.chat_requests[-1].body["stream"] is True
    caps = settings.budget.output_tokens
    assert all(found.output_tokens[s] <= getattr(caps, s) for s in found.output_tokens)
    assert found.output_tokens["diagnosis"] < caps.diagnosis  # ~20 tokens/s cannot write 2,048 in its share
    path = tmp_path / "workbench.yaml"
    path.write_text("provider: openai\nopenai:\n  model: stub-model\n", encoding="utf-8")
    write_fit(path, found)
    written = load_settings(path)
    assert written.openai.model == "stub-model" and written.openai.stage_timeouts == found.stage_timeouts
    assert written.budget.output_tokens.diagnosis == found.output_tokens["diagnosis"]
    assert written.openai.timeout_s == found.timeout_s


def test_doctor_write_writes_the_settings_file_named_by_config(stub: StubOpenAI, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from pipeline.frontends.cli import main

    monkeypatch.chdir(tmp_path)  # a workbench.yaml here or beside the checkout must stay untouched
    stub.reply('{"ok": true}').reply_tools(tool_call("ping", {"target": "db"}))
    stub.reply("ok", usage={"prompt_tokens": 1000, "completion_tokens": 1})
    stub.enqueue(StubReply(body=chat_body("1\n2\n3\n4\n5\n6\n7\n8\n9\n10"), chunk_delay_s=0.05))
    named = tmp_path / "elsewhere" / "local-model.yaml"
    named.parent.mkdir()
    named.write_text(f"provider: openai\nopenai:\n  base_url: {stub.base_url}\n  model: stub-model\n",
                     encoding="utf-8")
    main(["--config", str(named), "doctor", "--write"])
    assert f"to {named}" in capsys.readouterr().out
    assert load_settings(named).openai.stage_timeouts and not (tmp_path / "workbench.yaml").exists()


def test_collector_refuses_tool_arguments_with_a_number_json_lacks(stub: StubOpenAI) -> None:
    s = Setup(stub)
    stub.reply_tools(tool_call("queryLogs", '{"service": "payment-service", "limit": NaN}', "c1"),
                     tool_call("queryLogs", '{"service": "payment-service", "limit": 1e999}', "c2"))
    stub.reply("done")
    s.provider.collect(s.ctx, "payment API times out", PLAN, None)
    assert all("limit" not in i.arguments for i in s.tools.invocations)  # neither ran (the plan's calls did)
    by_call = {m["tool_call_id"]: m["content"] for m in stub.chat_requests[1].messages if m["role"] == "tool"}
    assert by_call["c1"] == ("error: arguments of queryLogs are not valid JSON (NaN is not a number JSON allows); "
                             "nothing was run")
    assert "beyond the range of a number" in by_call["c2"]


# --- prompt echoes (law 12): a reply repeating its prompt's example is malformed -------------

def _example(stage: str) -> dict[str, Any]:
    """The JSON shape a stage's prompt file ends with, as a model that copies it would send it."""
    text = load_prompt(stage, load_settings().prompts_dir).text
    return json.loads(text[text.rstrip().rfind("\n{"):])


def test_a_plan_copying_the_prompt_example_is_reasked_once_then_replaced_by_the_scope_plan(stub: StubOpenAI) -> None:
    s = Setup(stub)
    s.ctx.scope = QuestionScope(services=["payment-service"], language="en")
    stub.reply(json.dumps(_example("planner"))).reply(json.dumps(_example("planner")))
    plan = s.provider.plan(s.ctx, "payment API times out")
    assert plan.skill == "scope_plan" and plan.services == ["payment-service"]
    assert len(stub.chat_requests) == 2  # re-asked once, with the reason
    assert "repeats the prompt's example" in stub.chat_requests[1].messages[-1]["content"]
    assert [r.parse_status for r in s.records] == ["malformed", "malformed"]
    # The old example's bare placeholders are caught by their form alone.
    stub.reply(json.dumps({"skill": "latency_diagnosis", "language": "en", "services": ["..."], "tool_calls": []}))
    stub.reply(json.dumps({"skill": "latency_diagnosis", "language": "en", "services": ["payment-service"],
                           "tool_calls": []}))
    assert s.provider.plan(s.ctx, "payment API times out").services == ["payment-service"]
    assert "services is the placeholder '...'" in (s.records[2].error or "")


def test_a_placeholder_service_is_never_run_even_when_the_plan_lists_it(stub: StubOpenAI) -> None:
    s = Setup(stub)
    s.ctx.scope = QuestionScope(services=["payment-service", "order-service"], language="en")
    plan = PLAN.model_copy(update={"services": ["...", "<service>", "payment-service"], "tool_calls": []})
    stub.reply_tools(tool_call("queryLogs", {"service": "..."}, "c1"), tool_call("queryLogs", {"service": "xxx"}, "c2"))
    stub.reply("Collected.")
    summary = s.provider.collect(s.ctx, "payment and order time out", plan, None)
    refusals = [m["content"] for m in stub.chat_requests[1].messages if m["role"] == "tool"]
    assert all(r.startswith("refused:") for r in refusals) and "'...'" in refusals[0]
    assert "<service>" not in refusals[0]  # a placeholder is not offered as a supported service
    # Law 8 still asks every asked service; nothing ran with a placeholder.
    assert [i.arguments["service"] for i in s.tools.invocations] == ["payment-service", "order-service"]
    assert "refused service '...'" in summary.collection_summary


def test_a_digest_copying_the_prompt_example_leaves_its_batch_undigested(stub: StubOpenAI) -> None:
    s = Setup(stub, reask_attempts=2)
    invs = [s.tools("query_logs", {"service": "payment-service"})]
    stub.reply(json.dumps(_example("digest"))).reply(json.dumps(_example("digest")))
    assert s.provider.digest(s.ctx, "q", invs) == []
    assert len(stub.chat_requests) == 2  # one re-ask for an echo, not reask_attempts of them
    assert "source_invocation_ids 0 is copied from the prompt's example" in (s.records[0].error or "") or \
        "placeholder" in (s.records[0].error or "")


def test_a_diagnosis_copying_the_prompt_example_is_malformed_at_parse(stub: StubOpenAI) -> None:
    s = Setup(stub)
    example = _example("diagnosis")
    # A model that fills the slots but keeps the example's invocation id and its hypothesis slot.
    claim = example["claims"][0]
    claim["claim_text"] = "payment-service logged request timeouts"
    claim["evidence_bindings"][0].update(evidence_excerpt="query_logs ok", source_record_ids=["100#1"],
                                         digest_id="digest-100-1")
    stub.reply(json.dumps(example)).reply(json.dumps(example))
    raw = s.provider.diagnose(s.ctx, "q", PLAN, None, [s.tools("query_logs", {})], None)
    assert len(stub.chat_requests) == 2 and [r.parse_status for r in s.records] == ["malformed", "malformed"]
    status, output = parse_executor_output(raw, load_prompt("diagnosis", s.settings.prompts_dir).example)
    assert status.status == "malformed" and output is None
    assert "repeats the prompt's example" in status.detail


def test_the_example_values_are_read_from_the_prompt_file_itself() -> None:
    # A team's own prompt with a concrete example: its sentences and cited ids are example data,
    # contract tokens its prose names are not.
    prompt = ('Cite `source_invocation_ids`; `claim_id` is "claim-1".\nReply with one JSON object:\n'
              '{"claims": [{"claim_id": "claim-1", "evidence_bindings": [{"source_invocation_ids": [394]}]}],\n'
              ' "hypotheses": [{"hypothesis_text": "连接池压力可能参与了超时问题。"}]}')
    example = PromptExample.of(prompt)
    assert example.echo_in({"hypotheses": [{"hypothesis_text": "连接池压力可能参与了超时问题。"}]})
    assert example.echo_in({"claims": [{"evidence_bindings": [{"source_invocation_ids": [394]}]}]})
    assert example.echo_in({"claims": [{"claim_id": "claim-1", "evidence_bindings": [
        {"source_invocation_ids": [395], "evidence_excerpt": "at Pool.<init>(Pool.java:42)"}]}]}) is None


def test_a_model_too_slow_for_its_stage_budgets_still_gets_a_session_through(stub: StubOpenAI) -> None:
    # Each stage has 0.4 s (its own bound in openai.stage_timeouts); the model stalls mid-reply.
    s = Setup(stub, timeout_s=5.0, stage_timeouts={"planner": 0.4, "collector": 0.4, "diagnosis": 0.4})
    s.ctx.scope = QuestionScope(services=["payment-service"], language="en")
    slow = StubReply(body=chat_body(json.dumps(PLAN.model_dump())), stall_after=3, stall_s=5)
    stub.enqueue(slow).enqueue(slow).enqueue(slow)
    plan = s.provider.plan(s.ctx, "payment API times out")
    assert plan.skill == "scope_plan"  # the planner's fallback, not a failed session
    summary = s.provider.collect(s.ctx, "payment API times out", plan, None)
    assert "no usable tool call in time (deadline)" in summary.collection_summary and summary.tool_invocation_ids
    raw = s.provider.diagnose(s.ctx, "q", plan, None, s.tools.invocations, None)
    assert raw == '{"skill": "'[:len(raw)]  # what streamed before the cut goes on to parse (malformed)
    errors = [r.error or "" for r in s.records if r.parse_status == "n/a"]
    assert errors and all("openai.stage_timeouts." in e for e in errors)
    assert all(r.completion_tokens > 0 for r in s.records)  # each cut reply's tokens are on record
