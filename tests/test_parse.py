"""The executor output read once at parse (docs/spec.md#parse-status, docs/spec.md#executor-v2):
typed, lenient, positions kept, and stored exactly as written."""

from __future__ import annotations

import json

from pipeline.core.contracts import ExecutorOutput, RoundAudit
from pipeline.stages.parse import parse_executor_output

WRITTEN = {
    "answer_version": "executor_evidence_v2",
    "claims": [
        "CPU is high",  # not an object: still claims[0]
        {"claim_id": "c2", "claim_type": "symptom", "claim_text": 5, "support_level": "direct",
         "evidence_bindings": [7, {"tool_name": "queryLogs", "source_invocation_ids": [12, "13", True, 14],
                                   "evidence_excerpt": "timeout after 3000ms", "source_record_ids": ["12#3", 4]}]},
    ],
    "hypotheses": {"not": "a list"},
    "missing_info": ["who deployed", 3],
    "diagnosis_summary": "a removed field, kept as written",
}


def test_malformed_elements_keep_their_positions() -> None:
    status, out = parse_executor_output("```json\n" + json.dumps(WRITTEN) + "\n```")
    assert status.status == "valid" and out is not None
    assert [c.claim_id for c in out.claims] == [None, "c2"]
    assert [c.written_as_object for c in out.claims] == [False, True]
    claim = out.claims[1]
    assert claim.claim_text is None  # not a string: absent, for the schema rule to name
    assert claim.support_level == "direct"
    # claims[1].evidence_bindings[1] is the second written binding, though the first is not an object.
    assert [b.written_as_object for b in claim.evidence_bindings or ()] == [False, True]
    assert [(ci, bi, b.tool_name) for ci, bi, b in out.bindings()] == [(1, 1, "queryLogs")]
    binding = claim.evidence_bindings[1]
    assert binding.source_invocation_ids == [12, 14]  # "13" and true are not ids
    assert binding.source_record_ids == ["12#3", 4]  # as written: record_ids names what it cannot read
    assert out.hypotheses == [] and out.missing_info == ["who deployed"]


def test_an_element_not_written_as_an_object_stays_one_through_copies() -> None:
    """The flag lives on the element's class: a copy, a pickle and a model_copy keep it, and an
    element written as a string is not equal to one written as an empty object."""
    import copy
    import pickle

    out = ExecutorOutput.read({"claims": ["x", {}], "hypotheses": [1, {}], "recommended_actions": ["a", {}]})
    assert out is not None
    for again in (copy.deepcopy(out), pickle.loads(pickle.dumps(out)), out.model_copy(), out.with_raw({})):
        for elements in (again.claims, again.hypotheses, again.recommended_actions):
            assert [e.written_as_object for e in elements] == [False, True]
    assert out.claims[0] != out.claims[1] and out.claims[1] == ExecutorOutput.read({"claims": [{}]}).claims[0]  # type: ignore[union-attr]
    assert ExecutorOutput().raw == {} and ExecutorOutput().raw is not ExecutorOutput().raw


def test_stored_form_is_the_object_as_written() -> None:
    _, out = parse_executor_output(json.dumps(WRITTEN, ensure_ascii=False))
    assert out is not None
    assert out.raw == WRITTEN
    assert out.model_dump() == WRITTEN
    assert json.loads(out.model_dump_json()) == WRITTEN
    again = ExecutorOutput.model_validate(json.loads(out.model_dump_json()))
    assert again.claims == out.claims


def test_not_an_object_is_not_an_output() -> None:
    assert parse_executor_output("[1, 2]")[1] is None
    assert parse_executor_output("{bad json")[0].status == "malformed"
    assert parse_executor_output("")[0].status == "missing"
    assert ExecutorOutput.read(None) is None


def test_a_stored_audit_record_reads_typed_and_dumps_byte_for_byte() -> None:
    stored = {"verdict": "LOW_CONFID", "groundedness_score": 0.0,
              "executor_output_parse_status": {"status": "valid", "detail": ""},
              "executor_structured_output": WRITTEN, "gatekeeper_result": {"status": "fail"}}
    audit = RoundAudit.model_validate_json(json.dumps(stored, ensure_ascii=False))
    assert audit.executor_structured_output is not None
    assert audit.executor_structured_output.claims[1].claim_id == "c2"
    dumped = json.loads(audit.model_dump_json())
    assert json.dumps(dumped["executor_structured_output"], ensure_ascii=False) == json.dumps(WRITTEN, ensure_ascii=False)
    assert RoundAudit.model_validate(audit.model_dump(mode="json")) == audit
