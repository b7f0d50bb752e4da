"""Typed tool results (docs/spec.md#tool-results): numbered records read from the stored JSON."""

from __future__ import annotations

import json

from pipeline.tools.results import read_result


def test_knowledge_blocks_are_numbered_before_the_packed_text():
    output = json.dumps({"evidenceBlocks": [{"id": "b1", "title": "Pool", "source": "r.md", "score": 1.2,
                                             "relevance": 0.8, "content": "Raise maxPoolSize."},
                                            {"id": "b2", "title": "GC", "source": "g.md", "score": 0.4,
                                             "content": "Check the heap."}],
                         "contextPack": {"packedText": "[b1] Pool (r.md)\nRaise maxPoolSize."}, "skipped": []})
    result = read_result(output)
    assert [(r.number, r.kind) for r in result.records] == [(0, "block"), (1, "block"), (2, "pack")]
    assert result.records[0].line == "Pool\nRaise maxPoolSize." and result.records[0].number_value("relevance") == 0.8
    assert result.records[1].number_value("relevance") is None
    assert result.meta() == {"skipped": []}
    text, starts = result.quotable()
    assert [text[s:].split("\n")[0] for s in starts] == ["Pool", "GC", "[b1] Pool (r.md)"]


def test_alerts_read_service_and_severity_from_labels_when_the_item_lacks_them():
    output = json.dumps({"alerts": [{"alertname": "Oom", "status": "Firing", "startsAt": "2026-11-20T10:00:00Z",
                                     "endsAt": None, "description": "heap 98%",
                                     "labels": {"service": "order-service", "severity": "critical"}}]})
    alert = read_result(output).records[0]
    assert (alert.service, alert.severity, alert.status, alert.text) == ("order-service", "critical", "firing", "heap 98%")
    assert alert.at is not None and alert.at.hour == 10 and alert.until is None
    # Values without keys, the description last (the labels the tool wrote after it come first).
    assert alert.line == "service=order-service severity=critical Oom Firing 2026-11-20T10:00:00Z heap 98%"


def test_text_and_unknown_json_are_one_record_per_line():
    assert [r.line for r in read_result("a\nb").records] == ["a", "b"]
    result = read_result(json.dumps({"no_data": "nothing matched"}))
    assert not result.structured and [r.kind for r in result.records] == ["line"] * 3
