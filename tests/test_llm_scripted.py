"""ScriptedProvider: replayed stages, placeholders resolved to this session's invocation ids."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pipeline.core.config import load_settings
from pipeline.core.contracts import (
    CollectionSummary,
    ComposerInput,
    LlmCallRecord,
    PlannerPlan,
    ToolInvocation,
    VerifierOutput,
)
from pipeline.core.errors import StageFailure
from pipeline.llm.scripted import ScriptedProvider
from pipeline.verdict.provider import StageContext

FIXTURE = """
planner:
  skill: latency_diagnosis
  language: en
  services: [payment-service]
  tool_calls:
    - {tool_name: query_logs, arguments: {service: payment-service}}
digest:
  - digest_id: digest-1
    source_invocation_ids: ["{inv:queryLogs:1}"]
    tool: query_logs
    summary: "timeout seen in invocation {inv:query_logs:1}"
    source_quote: upstream timeout
diagnosis: |
  {"answer_version": "executor_evidence_v2", "claims": [{"claim_id": "claim-1", "claim_type": "symptom",
   "claim_text": "timeouts", "support_level": "direct", "evidence_bindings": [{"tool_name": "query_logs",
   "source_invocation_ids": [{inv:query_logs:0}, {inv:foreign}], "evidence_excerpt": "upstream timeout"}]}],
   "note": "first call of any tool: {inv:0}"}
verifier: {verdict: PASS, groundedness_score: 1.0}
"""


class Fallback:
    """Stands in for the offline provider: says which stages reached it."""

    name = "offline"

    def __init__(self) -> None:
        self.calls: list[str] = []

    def model_for(self, stage: str) -> str:
        return "rule-based"

    def collect(self, ctx: StageContext, question: str, plan: PlannerPlan, retry: Any) -> CollectionSummary:
        self.calls.append("collector")
        ids = [ctx.run_tool(c.tool_name, c.arguments).id for c in plan.tool_calls]
        return CollectionSummary(collection_summary="ran the plan", tool_invocation_ids=ids)

    def compose(self, ctx: StageContext, composer_input: ComposerInput) -> str:
        self.calls.append("composer")
        return '{"answer_summary": "offline", "user_facing_answer": "offline"}'


def _inv(id_: int, tool: str) -> ToolInvocation:
    return ToolInvocation(id=id_, session_id="s-2", tool_name=tool, model_tool_name=tool, output="{}")


INVOCATIONS = [_inv(41, "query_metrics"), _inv(40, "query_logs"), _inv(43, "query_logs")]


@pytest.fixture
def setup(tmp_path: Path):
    path = tmp_path / "fixture.yaml"
    path.write_text(FIXTURE, encoding="utf-8")
    records: list[LlmCallRecord] = []
    fallback = Fallback()
    provider = ScriptedProvider(load_settings(), path, fallback=fallback)
    ctx = StageContext(settings=load_settings(), session_id="s-2", language="en", record=records.append,
                       run_tool=lambda name, args: _inv(50, name))
    return provider, ctx, records, fallback


def test_scripted_stages_and_placeholders(setup) -> None:
    provider, ctx, records, fallback = setup
    plan = provider.plan(ctx, "q")
    assert plan.skill == "latency_diagnosis"
    assert provider.collect(ctx, "q", plan, None).tool_invocation_ids == [50]

    [digest] = provider.digest(ctx, "q", INVOCATIONS)
    assert digest.source_invocation_ids == [43]  # a whole-string placeholder becomes a number
    assert digest.summary == "timeout seen in invocation 43"

    raw = provider.diagnose(ctx, "q", plan, [digest], INVOCATIONS, None)
    data = json.loads(raw)
    assert data["claims"][0]["evidence_bindings"][0]["source_invocation_ids"] == [40, 39]
    assert data["note"] == "first call of any tool: 40"

    assert provider.verify(ctx, {}) == VerifierOutput(verdict="PASS", groundedness_score=1.0)
    assert json.loads(provider.compose(ctx, ComposerInput(original_query="q", verdict="PASS")))["answer_summary"] == "offline"
    assert fallback.calls == ["collector", "composer"]
    assert [(r.stage, r.provider) for r in records] == [
        ("planner", "scripted"), ("digest", "scripted"), ("diagnosis", "scripted"), ("verifier", "scripted")]
    assert records[2].raw_response == raw
    assert provider.model_for("diagnosis") == "scripted:fixture.yaml" and provider.model_for("composer") == "rule-based"


def test_raw_diagnosis_string_is_replayed_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    path.write_text(json.dumps({"diagnosis": '{"claims": [ broken', "composer": {"answer_summary": "a",
                                                                                  "user_facing_answer": "b"}}))
    provider = ScriptedProvider(load_settings(), path, fallback=Fallback())
    ctx = StageContext(settings=load_settings(), session_id="s", language="en", record=lambda r: None,
                       run_tool=lambda n, a: _inv(1, n))
    plan = PlannerPlan(skill="x")
    assert provider.diagnose(ctx, "q", plan, None, [], None) == '{"claims": [ broken'
    assert json.loads(provider.compose(ctx, ComposerInput(original_query="q", verdict="PASS"))) == {
        "answer_summary": "a", "user_facing_answer": "b"}


def test_foreign_placeholder_when_the_session_starts_at_id_one(tmp_path: Path) -> None:
    path = tmp_path / "f.yaml"
    path.write_text('diagnosis: {"ids": ["{inv:foreign}"]}\n')
    provider = ScriptedProvider(load_settings(), path, fallback=Fallback())
    ctx = StageContext(settings=load_settings(), session_id="s", language="en", record=lambda r: None,
                       run_tool=lambda n, a: _inv(1, n))
    raw = provider.diagnose(ctx, "q", PlannerPlan(skill="x"), None, [_inv(1, "query_logs")], None)
    assert json.loads(raw) == {"ids": [1_000_001]}


def test_placeholder_beyond_the_session_is_a_stage_failure(setup) -> None:
    provider, ctx, _, _ = setup
    with pytest.raises(StageFailure, match=r"only 1 such invocation"):
        provider.digest(ctx, "q", [_inv(5, "query_logs")])
