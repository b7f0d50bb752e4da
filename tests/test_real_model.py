"""A real open model behind llama.cpp's OpenAI-compatible server, through the openai provider.

Every other test of the openai path talks to a stub we wrote; this one asks bundled questions of
Gemma 3 270M (`.ci/llama.sh` starts the prebuilt server with Jinja templates, then exports
WORKBENCH_TEST_LLM_URL and WORKBENCH_TEST_LLM_MODEL). A model this small answers badly, which is
the point: whatever it says, the session completes, every call is on record with the JSON mode
the endpoint took, no claim it could not support passes, and the person asking never reads a
degenerate answer. Two questions keep its share of CI small (figures: docs/benchmarks.md).
"""

from __future__ import annotations

import os
import re

import pytest

from pipeline.core.config import load_settings
from pipeline.runs.session import run_session
from pipeline.stages.composer_guard import states_verdict
from pipeline.store import Store
from tests.helpers import require

QUESTIONS = [
    ("gateway-timeout", "Order 123 payment failed with ERR_TIMEOUT from the gateway, what happened?"),
    ("db-pool-exhaustion", "Users can't place order: create order fails with 500s since about 08:15, what is happening?"),
]
# The stages answering in JSON through response_format (the collector calls tools instead).
JSON_STAGES = {"planner", "digest", "verifier", "composer"}


@pytest.mark.slow
@pytest.mark.parametrize(("world", "question"), QUESTIONS, ids=[w for w, _ in QUESTIONS])
def test_a_real_model_session_completes_on_record_and_never_shows_a_degenerate_answer(world: str, question: str) -> None:
    url = os.environ.get("WORKBENCH_TEST_LLM_URL")
    require(bool(url), "an OpenAI-compatible LLM server (WORKBENCH_TEST_LLM_URL, started by .ci/llama.sh)")
    # Generous per-request time: CI machines are shared, and a slow answer is not what this tests.
    settings = load_settings(provider="openai", openai={
        "base_url": url, "model": os.environ.get("WORKBENCH_TEST_LLM_MODEL", "gemma-3-270m"),
        "timeout_s": 300, "stage_timeout_s": 900})
    store = Store(settings.db_url)

    result = run_session(question, settings=settings, store=store, world_id=world)

    row = store.get_session(result.session_id)
    assert row["status"] == "completed"
    ev = result.evaluation
    if result.verdict == "PASS":
        assert ev.gatekeeper_result.status != "fail"
        claim_ids = {c.get("claim_id") for c in (ev.structured or {}).get("claims", [])}
        checks = {c.claim_id: c.verification for c in ev.verifier_output.claim_checks}
        assert claim_ids and all(checks.get(cid) == "direct_observation" for cid in claim_ids), checks

    calls = store.llm_calls(result.session_id)
    stages = {c["stage"] for c in calls}
    assert {"planner", "collector", "diagnosis"} <= stages
    if ev.parse_status.status == "valid":  # malformed diagnosis output is LOW_CONFID with no verifier call
        assert {"verifier", "composer"} <= stages
    assert all(c["provider"] == "openai" and c["messages"] for c in calls)
    answered = [c for c in calls if c["parse_status"] != "n/a"]
    assert all(c["finish_reason"] and c["completion_tokens"] > 0 for c in answered)
    assert all(c["error"] for c in calls if c["parse_status"] == "n/a")  # a failed attempt says why
    # llama.cpp's server takes response_format json_schema: no stage had to step down.
    assert {c["json_mode"] for c in answered if c["stage"] in JSON_STAGES} == {"json_schema"}

    answer = result.final_answer
    assert re.search(r"[0-9A-Za-z\u4e00-\u9fff]", answer), answer
    assert states_verdict(result.verdict, answer), answer
    assert answer == row["final_answer"]
