"""Sessions as OpenTelemetry traces (pipeline/telemetry/tracing.py): read back from a real Arize
Phoenix server, and a collector that is down costs a session nothing."""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import require

from pipeline.core.config import Settings, TelemetrySettings
from pipeline.frontends.cli import main
from pipeline.runs.session import run_session
from pipeline.store import Store
from pipeline.telemetry.tracing import export_session


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _phoenix_bin() -> str | None:
    return os.environ.get("PHOENIX_BIN") or shutil.which("phoenix") or (
        "/opt/phoenix/bin/phoenix" if Path("/opt/phoenix/bin/phoenix").exists() else None)


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary = _phoenix_bin()
    require(binary is not None, "Arize Phoenix (PHOENIX_BIN, or `phoenix` on PATH)")
    assert binary
    port, grpc = _free_port(), _free_port()
    work = tmp_path_factory.mktemp("phoenix")
    env = dict(os.environ, PHOENIX_WORKING_DIR=str(work), PHOENIX_PORT=str(port), PHOENIX_GRPC_PORT=str(grpc),
               PHOENIX_HOST="127.0.0.1", PHOENIX_TELEMETRY_ENABLED="false")
    proc = subprocess.Popen([binary, "serve"], env=env, stdout=open(work / "out.log", "wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            if proc.poll() is not None:
                pytest.fail(f"phoenix exited: {(work / 'out.log').read_text()[-2000:]}")
            try:
                urllib.request.urlopen(f"{url}/healthz", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail(f"phoenix did not answer in 120 s: {(work / 'out.log').read_text()[-2000:]}")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _spans(url: str, project: str) -> list[dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"{url}/v1/projects/{project}/spans?limit=1000", timeout=10) as r:
            return list(json.load(r)["data"])
    except urllib.error.HTTPError as exc:
        if exc.code == 404:  # the project appears with its first inserted span
            return []
        raise


@pytest.mark.slow
def test_a_session_is_one_trace_in_phoenix_with_stage_tool_and_llm_spans(
        settings: Settings, store: Store, phoenix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix)
    traced = settings.model_copy(update={"telemetry": TelemetrySettings(otlp_endpoint=phoenix)})
    # The session's own end exports it (pipeline.telemetry.session_ended); nothing else is called.
    result = run_session("payment API times out since 10:00, what's going on?", settings=traced, store=store)

    spans: list[dict[str, Any]] = []
    for _ in range(240):  # Phoenix inserts what it received in batches; slowly on a loaded machine
        spans = _spans(phoenix, "evidence-workbench")
        if any(s["name"] == "diagnosis session" for s in spans):
            break
        time.sleep(0.5)
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for s in spans:
        by_kind.setdefault(s["span_kind"], []).append(s)  # Phoenix lifts openinference.span.kind out
    (root,) = by_kind["AGENT"]
    assert root["attributes"]["session.id"] == result.session_id
    assert root["attributes"]["workbench.verdict"] == result.verdict
    assert "payment API times out" in root["attributes"]["input.value"]
    trace_ids = {s["context"]["trace_id"] for s in spans}
    assert len(trace_ids) == 1  # the whole session is one trace
    stages = {s["name"] for s in by_kind["CHAIN"]} | {s["name"] for s in by_kind["GUARDRAIL"]}
    assert {"planner_r1", "collector_r1", "digest_r1", "diagnosis_r1", "verification_r1"} <= stages
    tools = by_kind["TOOL"]
    assert {t["attributes"]["tool.name"] for t in tools} <= {"queryLogs", "queryMetrics", "lookupKnowledge"}
    assert all(t["attributes"]["workbench.output_bytes"] > 0 for t in tools)
    llm = by_kind["LLM"]
    assert {c["attributes"]["llm.model_name"] for c in llm} == {"rule-based"}
    verification = next(s for s in by_kind["GUARDRAIL"] if s["name"] == "verification_r1")
    assert any(e["name"] == "claim_check" for e in verification["events"])

    # The resend of a stored session through the CLI reaches the same collector: a second trace.
    assert main(["export", "--otlp", result.session_id]) == 0
    for _ in range(240):
        roots = [s for s in _spans(phoenix, "evidence-workbench") if s["name"] == "diagnosis session"]
        if len(roots) == 2:
            break
        time.sleep(0.5)
    assert {r["attributes"]["session.id"] for r in roots} == {result.session_id} and len(roots) == 2


def test_a_collector_that_is_down_costs_the_session_nothing_and_says_so_once(
        settings: Settings, store: Store, caplog: pytest.LogCaptureFixture) -> None:
    dead = f"http://127.0.0.1:{_free_port()}"  # nothing listens there
    traced = settings.model_copy(update={"telemetry": TelemetrySettings(otlp_endpoint=dead, timeout_s=0.5)})
    caplog.set_level(logging.WARNING)
    first = run_session("payment API times out since 10:00", settings=traced, store=store)
    second = run_session("order-service memory keeps growing", settings=traced, store=store)
    assert {store.get_session(r.session_id)["status"] for r in (first, second)} == {"completed"}
    # Both were queued by their sessions' end; a flush shows the collector took neither.
    assert not export_session(traced, store, second.session_id, flush=True)
    said = [r for r in caplog.records if r.name == "pipeline.telemetry.tracing"]
    assert len(said) == 1 and dead in said[0].getMessage()


def test_export_otlp_without_an_endpoint_is_a_one_line_error(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "--otlp", "no-such-session"]) == 2
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" in capsys.readouterr().err
