"""Quote fidelity by structure (docs/spec.md#quote-fidelity, design Law 10).

Inside one record an excerpt is one contiguous span after folding; it splits only at an elision
mark or between adjacent records. Reordered words and a value taken from a sibling record of the
same template are not the tool's own, however close their similarity.
"""

from __future__ import annotations

import json

import pytest

from pipeline.core.contracts import ExecutorOutput, ToolInvocation
from pipeline.gatekeeper import GateContext, load_rules, run_gatekeeper
from pipeline.gatekeeper.features import match_excerpt
from pipeline.gatekeeper.folding import fold
from pipeline.gatekeeper.prepared import PreparedOutput, record_text
from tests.test_gatekeeper_fidelity import RULES_DIR

SIMILARITY, ENTITIES = "evidence.excerpt_similarity", "evidence.excerpt_entities"
# Two lines of one template (a block id and an address each), as a DataNode logs them.
LINES = [
    "Receiving block blk_-1608999687919862906 src: /10.250.19.102:54106 dest: /10.250.19.102:50010",
    "Receiving block blk_7503483334202473044 src: /10.251.215.16:55695 dest: /10.251.215.16:50010",
    "PacketResponder 1 for block blk_-1608999687919862906 terminating",
    "服务 order-service 健康检查通过，耗时 12 毫秒",
]
OUTPUT = json.dumps({"logs": [{"ts": f"2026-11-30T08:00:0{i}Z", "service": "hdfs-datanode", "level": "INFO",
                               "message": m, "host": f"dn-{i}"} for i, m in enumerate(LINES)]}, ensure_ascii=False)
INVOCATION = ToolInvocation(id=11, session_id="s", tool_name="query_logs", model_tool_name="queryLogs", output=OUTPUT)


@pytest.fixture(scope="module")
def rules():
    return load_rules(RULES_DIR)


def _run(rules, excerpt: str, records: list[str] | None = None):
    binding = {"source_type": "tool_trace", "tool_name": "query_logs", "source_invocation_ids": [11],
               "evidence_excerpt": excerpt}
    if records is not None:
        binding["source_record_ids"] = records
    structured = {"answer_version": "executor_evidence_v2", "claims": [
        {"claim_id": "c1", "claim_type": "observation", "claim_text": "hdfs-datanode received a block",
         "support_level": "direct", "evidence_bindings": [binding]}]}
    return run_gatekeeper(GateContext("s", ExecutorOutput.read(structured), {11: INVOCATION}, {11: INVOCATION}.get), rules)


def _check(rules, excerpt: str, records: list[str] | None = None):
    return _run(rules, excerpt, records).result


@pytest.mark.parametrize("excerpt", [
    "Receiving block blk_7503483334202473044 src: /10.251.215.16:55695",  # a sub-span
    "receiving   BLOCK blk_7503483334202473044\nsrc：／10.251.215.16：55695",  # case, width, reflowed spaces
    "hdfs-datanode INFO Receiving block blk_-1608999687919862906",  # the record's fields, without their keys
    "Receiving block blk_-1608999687919862906 … dest: /10.250.19.102:50010",  # elided with a mark
    "Receiving block blk_-1608999687919862906 [...] dest: /10.250.19.102:50010",
    # the end of one record and the next record's message: adjacent records
    "dest: /10.250.19.102:50010 Receiving block blk_7503483334202473044",
    "blk_-1608999687919862906 terminating 服务 order-service 健康检查通过",
])
def test_faithful_quotes_are_found_by_structure(rules, excerpt):
    result = _check(rules, excerpt)
    assert result.status == "pass" and result.unbacked_claims == [], result.errors


def test_full_width_separators_fold_like_ascii_ones():
    # A full-width comma or point inside a number is still number formatting, not a word break.
    assert fold("18：01：50，556") == fold("18:01:50,556") == PreparedOutput("18:01:50,556").folded
    assert fold("5，312 rows at 92．0%") == fold("5,312 rows at 92.0%") == "5312 rows at 92"


def test_reordered_tokens_fail_whatever_their_similarity(rules):
    reordered = "Receiving block src: blk_7503483334202473044 /10.251.215.16:55695"
    result = _check(rules, reordered)
    assert SIMILARITY in result.failed_rules and result.unbacked_claims == ["c1"]
    (error,) = [e for e in result.errors if e.rule_id == SIMILARITY]
    assert error.msg is not None and error.msg.code == "gk.not_by_structure"
    assert error.msg.params["score"] > 0.8  # close by similarity, and still not the tool's own


def test_a_value_from_a_sibling_line_fails_as_a_swapped_entity(rules):
    # The block id of the first line with the address of the second: every token is in the output.
    stitched = "Receiving block blk_-1608999687919862906 src: /10.251.215.16:55695"
    result = _check(rules, stitched)
    assert SIMILARITY in result.failed_rules
    assert ENTITIES in result.failed_rules, result.errors
    # The record it was located in holds its own values instead.
    assert any("54106" in e.message for e in result.errors if e.rule_id == ENTITIES)


def test_pieces_split_only_between_adjacent_records_in_order():
    prepared = PreparedOutput(OUTPUT)
    # Records 0 and 2 are not adjacent; record 1 before record 0 is out of order.
    assert match_excerpt("dest: /10.250.19.102:50010 PacketResponder 1 for block", prepared).covered == 0.0
    assert match_excerpt("dest: /10.251.215.16:50010 Receiving block blk_-1608999687919862906", prepared).covered == 0.0
    # A first piece that does not end its record does not split.
    assert match_excerpt("Receiving block blk_-1608999687919862906 Receiving block blk_7503", prepared).covered == 0.0
    found = match_excerpt("dest: /10.250.19.102:50010 Receiving block blk_7503483334202473044", prepared)
    assert found.covered == 1.0 and found.segments[0].split > 0
    assert len(found.segments[0].main) == 2  # one span per record, for Trace to mark


def _codes(result) -> list[str]:
    return [e.msg.code for e in result.errors if e.rule_id == SIMILARITY and e.msg is not None]


def test_a_quote_citing_its_records_is_checked_against_those_records_only(rules):
    second = "Receiving block blk_7503483334202473044 src: /10.251.215.16:55695"
    outcome = _run(rules, second, ["11#1"])
    assert outcome.result.status == "pass", outcome.result.errors
    out = outcome.features["claims[0].evidence_bindings[0]"]["sources"]["output"]
    # Offsets index the whole output's text (what Trace shows), not the cited records alone.
    assert record_text(OUTPUT)[0][out["start"] : out["end"]] == second and out["records"] == {"11": [1]}
    assert _check(rules, second, ["inv-11#1", "11#2"]).status == "pass"  # source_id's spelling, an extra record

    elsewhere = _check(rules, second, ["11#0"])
    assert elsewhere.unbacked_claims == ["c1"] and _codes(elsewhere) == ["gk.outside_cited"]
    assert "#1" in next(e.message for e in elsewhere.errors if e.rule_id == SIMILARITY)
    assert _codes(_check(rules, second, ["11#9"])) == ["gk.missing_records"]
    assert _codes(_check(rules, second, ["12#1"])) == ["gk.missing_records"]  # not an invocation it cites
    assert _codes(_check(rules, "Receiving block blk_7503483334202473044 dest: /10.251.215.16:55695",
                         ["11#1"])) == ["gk.not_in_cited"]


def test_cited_records_split_only_where_they_are_adjacent(rules):
    adjacent = "dest: /10.250.19.102:50010 Receiving block blk_7503483334202473044"
    assert _check(rules, adjacent, ["11#0", "11#1"]).status == "pass"
    # Records 0 and 2 are cited together, yet 1 lies between them in the output.
    apart = "dest: /10.250.19.102:50010 PacketResponder 1 for block blk_-1608999687919862906"
    assert SIMILARITY in _check(rules, apart, ["11#0", "11#2"]).failed_rules


# MongoDB 4.4 writes one JSON document per line; a file of them read as text keeps the keys.
JSON_LINES = "\n".join([
    '{"t":{"$date":"2021-03-22T21:21:26.460+00:00"},"s":"I",  "c":"NETWORK",  "id":23016,   "ctx":"listener",'
    '"msg":"Waiting for connections","attr":{"port":27017,"ssl":"off"}}',
    '{"t":{"$date":"2021-03-22T21:21:26.473+00:00"},"s":"I",  "c":"CONTROL",  "id":20712,   "ctx":"LogicalSessionCacheReap",'
    '"msg":"Sessions collection is not set up; waiting until next sessions reap interval"}',
])


@pytest.mark.parametrize("excerpt, cited", [
    ('"ctx":"listener","msg":"Waiting for connections"', None),
    ('"ctx":"listener","msg":"Waiting for connections"', ["12#0"]),  # citing the very record that says it
    ('"ctx":"listener",\n  "msg":"Waiting\tfor\nconnections"', ["12#0"]),  # whitespace reflowed inside values
    ('"port":27017,"ssl":"off"}} {"t":{"$date":"2021-03-22T21:21:26.473+00:00"},"s":"I",  "c":"CONTROL"', ["12#0", "12#1"]),
])
def test_a_quote_of_a_json_per_line_log_keeps_its_keys(rules, excerpt, cited):
    """A JSON-per-line log read as text holds its keys: a quote of it is found with them, by
    structure, in the records it cites (not "not in the records it cites ... found in #0"), and
    a value taken from the other record is still not found."""
    inv = ToolInvocation(id=12, session_id="s", tool_name="query_logs", model_tool_name="queryLogs", output=JSON_LINES)

    def gate(quote: str):
        binding = {"source_type": "tool_trace", "tool_name": "query_logs", "source_invocation_ids": [12],
                   "evidence_excerpt": quote, **({"source_record_ids": cited} if cited else {})}
        structured = {"answer_version": "executor_evidence_v2", "claims": [
            {"claim_id": "c1", "claim_type": "observation", "claim_text": "mongod waits for connections",
             "support_level": "direct", "evidence_bindings": [binding]}]}
        return run_gatekeeper(GateContext("s", ExecutorOutput.read(structured), {12: inv}, {12: inv}.get), rules)

    outcome = gate(excerpt)
    assert outcome.result.status == "pass", outcome.result.errors
    assert outcome.features["claims[0].evidence_bindings[0]"]["sources"]["output"]["covered"] == 1.0
    swapped = excerpt.replace("listener", "LogicalSessionCacheReap").replace("CONTROL", "NETWORK")
    assert gate(swapped).result.status != "pass"
