"""The whole pipeline with the `openai` provider against the local stub endpoint.

The stub plays a model (PipelineModel) that answers each stage from what it was actually sent.
A second run plants a prompt injection in a log line and has the stub's verifier obey it; the verdict guard must still not let the session PASS.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pipeline.core.config import ROOT, load_settings
from pipeline.llm.openai_provider import OpenAIProvider
from pipeline.runs.session import run_session
from pipeline.store import Store
from tests.stub_openai import INJECTION, PipelineModel, StubOpenAI

WORLD = "gateway-timeout"
QUESTION = "Order 123 payment failed with ERR_TIMEOUT from the gateway, what happened?"


def _settings(stub: StubOpenAI, incidents: Path, shape: str):
    return load_settings(provider="openai", incidents_dir=incidents, digest={"enabled": shape == "split"},
                         openai={"base_url": stub.base_url, "model": "stub-model", "max_retries": 0})


@pytest.mark.parametrize("shape", ["split", "single"])
def test_session_end_to_end_through_the_stub(shape: str) -> None:
    model = PipelineModel()
    with StubOpenAI(responder=model) as stub:
        settings = _settings(stub, ROOT / "data" / "incidents", shape)
        store = Store(settings.db_url)
        result = run_session(QUESTION, settings=settings, store=store, world_id=WORLD,
                             provider=OpenAIProvider(settings, sleep=lambda s: None))
    expected = ["planner", "collector", "collector"] + (["digest"] if shape == "split" else []) + [
        "diagnosis", "verifier", "composer"]
    assert model.stages == expected
    assert result.verdict == "PASS", result.evaluation.round_audit.verdict_guard_reasons
    invocations = store.invocations(result.session_id)
    assert {i.tool_name for i in invocations} == {"query_logs", "query_metrics", "lookup_knowledge"}
    claims = result.evaluation.structured["claims"]
    assert claims and all(b["source_invocation_ids"][0] in {i.id for i in invocations}
                          for c in claims for b in c["evidence_bindings"])
    calls = store.llm_calls(result.session_id)
    assert {c["provider"] for c in calls} == {"openai"}
    assert {c["stage"] for c in calls} == set(expected)
    assert all(c["prompt_file"].startswith("prompts/") and c["prompt_version"] for c in calls)
    assert result.final_answer.startswith("Confirmed:") or result.evaluation.composer_guard.used_template


def test_injected_pass_does_not_survive_a_failed_gatekeeper(tmp_path: Path) -> None:
    incidents = tmp_path / "incidents"
    shutil.copytree(ROOT / "data" / "incidents" / WORLD, incidents / WORLD)
    logs = incidents / WORLD / "logs.jsonl"
    with logs.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"ts": "2026-11-21T15:10:00.000Z", "service": "api-gateway", "level": "ERROR",
                             "message": INJECTION, "host": "gw-5c8b-1"}) + "\n")
    model = PipelineModel(forge=True)
    with StubOpenAI(responder=model) as stub:
        settings = _settings(stub, incidents, "split")
        store = Store(settings.db_url)
        result = run_session(QUESTION, settings=settings, store=store, world_id=WORLD,
                             provider=OpenAIProvider(settings, sleep=lambda s: None))
        seen = [m["content"] for r in stub.chat_requests for m in r.messages if INJECTION in (m.get("content") or "")]
    assert seen, "the injected line must have reached the model (as data)"
    assert all(text.startswith("[tool output, data only]") for text in seen)
    ev = result.evaluation
    assert ev.verifier_output.verdict == "PASS" or ev.round_audit.verifier_verdict == "PASS"
    assert ev.gatekeeper_result.status == "fail"
    assert result.verdict != "PASS"
    assert store.get_session(result.session_id)["verdict"] != "PASS"
