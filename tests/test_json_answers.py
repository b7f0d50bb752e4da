"""An agent's answer written as JSON of its own shape ({"root_cause": ..., "evidence": [...]}) is prose in
fields: each value is read under its key as a statement, what the answer says of itself ("confidence")
is no statement, and JSON naming the Executor V2 contract's fields stays that contract. Judged end to
end over a small world of this file's own."""

from __future__ import annotations

import json

from helpers import agent_trace, log_output, refusals

from pipeline.bundles.trace_import import read_trace
from pipeline.bundles.trace_session import trace_bundle
from pipeline.core.config import Settings

LOGS = [
    ("2026-03-09T07:58:00Z", "ledger-service", "INFO", "batch posting switched to synchronous mode (was async)", "ledger-2c4f-1"),
    ("2026-03-09T08:02:11Z", "ledger-service", "WARN", "posting queue depth 4200 exceeds 1000", "ledger-2c4f-1"),
    ("2026-03-09T08:04:40Z", "ledger-service", "ERROR", "POST /api/ledger/post 504 after 8000ms", "ledger-2c4f-1"),
    ("2026-03-09T08:05:02Z", "billing-service", "WARN", "upstream ledger-service timed out after 8000ms on invoice 7781",
     "billing-91ab-3"),
]
QUESTION = "Why are ledger posts timing out?"
TOOLS = [("query_logs", log_output(LOGS))]


def _answer(queue: str) -> str:
    return json.dumps({
        "root_cause": "probably the switch of batch posting to synchronous mode; no line says so outright",
        "evidence": [f"ledger-service posting queue depth {queue} exceeds 1000",
                     "POST /api/ledger/post 504 after 8000ms on ledger-2c4f-1",
                     "billing-service: upstream ledger-service timed out after 8000ms on invoice 7781"],
        "confidence": "medium",
    })


def test_json_of_the_agents_own_shape_is_read_as_the_statements_it_holds() -> None:
    _, form = trace_bundle(read_trace(agent_trace(QUESTION, _answer("4200"), TOOLS), 10**7, 10**6))
    assert form == "prose"


def test_its_faithful_statements_are_kept_and_a_changed_figure_is_caught(settings: Settings) -> None:
    refused = refusals(settings, QUESTION, TOOLS)
    assert refused(_answer("4200")) == []
    assert any("4800" in finding or "external_unknown" in finding or "contradicted" in finding
               for finding in refused(_answer("4800")))


def test_json_naming_the_contracts_fields_stays_the_contract() -> None:
    answer = json.dumps({"answer_version": "executor_evidence_v2", "claims": []})
    _, form = trace_bundle(read_trace(agent_trace(QUESTION, answer, TOOLS), 10**7, 10**6))
    assert form == "executor_v2"
