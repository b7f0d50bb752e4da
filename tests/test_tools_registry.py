"""A tool is one ToolSpec: both spellings, argument model, backends by kind."""

from __future__ import annotations

import json

import pytest

from pipeline.core.config import BackendKind, Settings, load_settings
from pipeline.core.errors import ConfigError
from pipeline.tools import build_toolbox
from pipeline.tools.registry import TOOLS, model_name, persisted_name, tool_schemas


def test_each_tool_answers_to_both_spellings_and_reports_the_persisted_one():
    assert {name: spec.model_name for name, spec in TOOLS.items()} == {
        "query_logs": "queryLogs", "query_metrics": "queryMetrics", "lookup_knowledge": "lookupKnowledge"}
    for name, spec in TOOLS.items():
        assert persisted_name(name) == persisted_name(spec.model_name) == name
        assert model_name(name) == model_name(spec.model_name) == spec.model_name
    assert persisted_name("queryTraces") is None


def test_the_former_model_name_of_the_metrics_tool_still_resolves_but_is_not_offered():
    # Sessions stored before the rename hold it as model_tool_name and in their bindings.
    assert persisted_name("queryPrometheusAlerts") == "query_metrics"
    assert model_name("queryPrometheusAlerts") == "queryMetrics"
    assert "queryPrometheusAlerts" not in {s["function"]["name"] for s in tool_schemas()}


def test_the_model_is_offered_every_tool_with_its_argument_schema():
    offered = {s["function"]["name"]: s["function"]["parameters"]["properties"] for s in tool_schemas()}
    assert offered.keys() == {spec.model_name for spec in TOOLS.values()}
    assert "service" in offered["queryLogs"] and "query" in offered["lookupKnowledge"]


def test_every_backend_kind_serves_some_tool():
    assert {kind for spec in TOOLS.values() for kind in spec.backends} == set(BackendKind)


def test_an_unknown_backend_kind_is_refused_by_the_config_with_the_choices():
    with pytest.raises(ValueError) as err:
        Settings.model_validate({"backends": {"query_logs": {"kind": "elastic"}}})
    assert "loki" in str(err.value) and "files" in str(err.value)


def test_a_kind_the_tool_has_no_backend_for_is_a_config_error_naming_the_choices():
    settings = load_settings(backends={"query_metrics": {"kind": "loki", "url": "http://localhost:3100"}})
    with pytest.raises(ConfigError, match=r"backends\.query_metrics\.kind: loki .*bundled, prometheus"):
        build_toolbox(settings, None)


def test_a_runbook_folder_without_a_path_is_a_config_error():
    with pytest.raises(ConfigError, match="needs a path"):
        build_toolbox(load_settings(backends={"lookup_knowledge": {"kind": "folder"}}), None)


def test_a_call_by_either_spelling_validates_arguments_and_reaches_the_configured_backend():
    settings = load_settings()
    box = build_toolbox(settings, settings.incidents_dir / "jvm-oom")
    by_model = box.call("queryLogs", {"level": "ERROR", "limit": 3, "unknown_key": 1})
    by_persisted = box.call("query_logs", {"level": "ERROR", "limit": 3})
    assert by_model.to_json() == by_persisted.to_json()
    logs = by_model.of_kind("log")
    assert 0 < len(logs) <= 3 and all(log.level == "ERROR" for log in logs)
    # Numbered records in output order, each the stored item's values without its keys.
    assert [r.number for r in logs] == list(range(len(logs)))
    first = json.loads(by_model.to_json())["logs"][0]
    message = list(first).index("message")
    keys = [*list(first)[message + 1 :], *list(first)[:message], "message"]  # the message last
    assert logs[0].line == " ".join(str(first[k]) for k in keys)
    with pytest.raises(ValueError):
        box.call("query_logs", {"limit": 0})  # below the argument model's bound
    with pytest.raises(ValueError, match="unknown tool"):
        box.call("queryTraces", {})
