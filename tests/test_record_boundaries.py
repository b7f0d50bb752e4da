"""Where a quote's record ends: what lies before it, inside it and around it in its output.

Each log here is made up for the test. A word counts as preceding a quote only inside the quote's
own record, and not when it is the value of the field before the quote's own; dots drawn in a banner are the output's characters, not an elision; a quote's edge
word is not found as the first letter of a longer word; and a question naming whose logs it asks
about (a product's) does not ask about that product's symptom.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pipeline.bundles.check import check_bundle
from pipeline.bundles.session_bundle import parse_bundle
from pipeline.core.config import Settings
from pipeline.gatekeeper import load_rules
from pipeline.gatekeeper.matcher import locate, segments
from pipeline.gatekeeper.prepared import PreparedOutput
from pipeline.llm import make_provider
from pipeline.text.primitives import ELLIPSIS
from pipeline.verdict.scope import asked_pairs, read_scope

RULES_DIR = Path(__file__).resolve().parent.parent / "rules"
NEGATION = "excerpt drops the negation"

# A queue worker's log: the first line ends in a field whose value is "none", the next one does not.
WORKER_LOG = (
    "2031-02-11 08:14:02.118 [w-7] INFO  retry policy for batch 5512 set, override: no\n"
    "2031-02-11 08:14:02.431 [w-7] INFO  batch 5512 committed, 380 rows in 212 ms\n"
    "2031-02-11 08:14:03.006 [w-7] WARN  integrity check found no orphan rows in ledger_q4\n"
)

# A service's start-up banner drawn in ASCII art, then its first record.
BANNER_LOG = (
    "      .-~~~-.       kestrel-cache 2.4.1\n"
    " |`-._`-...-` __...-.``-._|     Listening: 7911\n"
    " |    `-._   `._   _.-'   |     Worker: 2208\n"
    "2208:S 14 Mar 03:12:55.101 * Warm start: 5120 keys restored in 0.004 seconds\n"
)


@pytest.fixture(scope="module")
def checker():
    settings = Settings()
    rules = load_rules(RULES_DIR)
    provider = make_provider(settings)

    def check(output: str, excerpt: str, question: str = "What does the worker log show?"):
        return check_bundle(parse_bundle(_bundle(output, excerpt, question)), settings=settings, rules=rules,
                            provider=provider)

    return check


def _bundle(output: str, excerpt: str, question: str) -> dict[str, Any]:
    """A session quoting `excerpt` from one tool output, its verifier accepting the claim: the
    verdict is what the deterministic checks make of the quote and the question."""
    invocation = {"id": 7, "session_id": "rb", "tool_name": "query_logs", "model_tool_name": "queryLogs",
                  "arguments": {"source": "made-up"}, "status": "ok", "output": output}
    executor = {"answer_version": "executor_evidence_v2", "claims": [{
        "claim_id": "c1", "claim_type": "symptom", "claim_text": excerpt, "support_level": "direct",
        "evidence_bindings": [{"source_type": "tool_trace", "tool_name": "query_logs", "source_invocation_ids": [7],
                               "evidence_excerpt": excerpt}]}],
        "hypotheses": [], "recommended_actions": [], "missing_info": []}
    return {"bundle_version": 1,
            "session": {"id": "rb", "question": question, "shape": "single", "provider": "test", "model": "none"},
            "tool_invocations": [invocation], "executor_raw_output": json.dumps(executor),
            "verifier_output": {"verdict": "PASS", "groundedness_score": 1.0,
                                "claim_checks": [{"claim_id": "c1", "verification": "direct_observation"}]},
            "composer_output": {"answer_summary": excerpt, "user_facing_answer": excerpt}}


def _negation_findings(evaluation) -> list[str]:
    return [e.message for e in evaluation.gatekeeper_result.errors if NEGATION in e.message]


def test_a_negation_ending_the_previous_line_does_not_precede_the_quote(checker):
    # "no" is the last word of the line before: it is that record's value, not said of this one.
    quote = "2031-02-11 08:14:02.431 [w-7] INFO  batch 5512 committed, 380 rows in 212 ms"
    evaluation = checker(WORKER_LOG, quote)
    assert _negation_findings(evaluation) == []
    assert evaluation.verdict == "PASS"


def test_a_negation_earlier_on_the_same_line_still_precedes_the_quote(checker):
    # Inside one record the dropped "no" turns "no orphan rows" into "orphan rows".
    evaluation = checker(WORKER_LOG, "orphan rows in ledger_q4")
    assert _negation_findings(evaluation)
    assert evaluation.verdict != "PASS"


def test_a_fields_value_before_a_quote_opening_with_a_key_is_not_a_negation_of_it(checker):
    # "no" is the value of "override:"; the quote starts a field of its own.
    output = "2031-02-11 08:14:04.200 [w-7] STAT  override: no  rows_written: 380  lag_ms: 12\n"
    evaluation = checker(output, "rows_written: 380  lag_ms: 12")
    assert _negation_findings(evaluation) == []
    assert evaluation.verdict == "PASS"


def test_a_negation_after_a_colon_still_precedes_a_quote_that_opens_no_field(checker):
    # "failed: no route to host": here "no" negates the words that follow it.
    output = "2031-02-11 08:14:05.001 [w-7] ERROR connect to 10.2.0.9 failed: no route to host\n"
    evaluation = checker(output, "route to host")
    assert _negation_findings(evaluation)
    assert evaluation.verdict != "PASS"


def test_a_negation_ending_the_previous_record_of_a_json_output_does_not_precede_the_quote(checker):
    records = [{"ts": "2031-02-11T08:14:02Z", "level": "INFO", "message": "dry run requested: no"},
               {"ts": "2031-02-11T08:14:03Z", "level": "INFO", "message": "snapshot 77 uploaded to bucket east-2"}]
    evaluation = checker(json.dumps({"logs": records}), "2031-02-11T08:14:03Z INFO snapshot 77 uploaded to bucket east-2")
    assert _negation_findings(evaluation) == []
    assert evaluation.verdict == "PASS"


def test_dots_drawn_in_a_banner_are_not_an_elision():
    assert ELLIPSIS.split(" |`-._`-...-` __...-.``-._|") == [" |`-._`-...-` __...-.``-._|"]
    assert len(ELLIPSIS.split("Warm start: ... restored in 0.004 seconds")) == 2
    assert len(ELLIPSIS.split("Warm start: 5120 keys [...] seconds")) == 2


def test_words_swapped_across_banner_dots_are_not_found_by_structure():
    prepared = PreparedOutput(BANNER_LOG)
    faithful = " |`-._`-...-` __...-.``-._|     Listening: 7911"
    swapped = "7911 __...-.``-._|     Listening: |`-._`-...-`"
    assert [locate(seg, prepared, needle).covered for seg, needle in segments(faithful)] == [1.0]
    assert [locate(seg, prepared, needle).covered for seg, needle in segments(swapped)] == [0.0]


def test_a_one_letter_edge_word_is_not_the_start_of_a_longer_word():
    output = "SELECT id FROM orders o\n  JOIN users u ON u.id = o.user_id\nSELECT name FROM tenants\n"
    prepared = PreparedOutput(output)
    # "FROM t" occurs only as the start of "FROM tenants": a quote ending in "t" is not that line.
    assert locate("FROM t", prepared).covered == 0.0
    assert locate("FROM orders o", prepared).covered == 1.0
    # A longer piece of a word cut short still says which word it was.
    assert locate("FROM tena", prepared).covered == 1.0


def test_a_product_named_as_whose_logs_are_asked_is_not_its_symptom():
    assert asked_pairs(read_scope("What do the Redis logs show?")) == []
    assert asked_pairs(read_scope("anything odd in the logs from redis?")) == []
    assert asked_pairs(read_scope("any evictions in the redis logs?")) == [("", "cache")]
    assert asked_pairs(read_scope("is redis slow?")) == [("", "latency"), ("", "cache")]


def test_a_faithful_quote_of_a_products_own_log_passes(checker):
    quote = "2208:S 14 Mar 03:12:55.101 * Warm start: 5120 keys restored in 0.004 seconds"
    evaluation = checker(BANNER_LOG, quote, question="What do the Redis logs show?")
    assert evaluation.gatekeeper_result.errors == []
    assert evaluation.verdict == "PASS"
