"""End to end: a real Prometheus fires a rule, a real Alertmanager posts the group to
`workbench webhook`, and the session it queues completes with the alert's text in its evidence.

Prometheus scrapes the incident simulator as in test_prometheus_real.py; the session's
query_metrics backend is that Prometheus, so the evidence is the live alert, not a recording.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import http_server, require

from pipeline.core.config import ROOT, BackendSettings, Settings
from pipeline.frontends.simulate import serve_metrics, write_prometheus_config
from pipeline.frontends.webhook import Receiver, make_app
from pipeline.jobs.local import LocalQueue
from pipeline.store import Store
from pipeline.telemetry.metrics import Metrics

pytestmark = pytest.mark.slow

PROMETHEUS_BIN = shutil.which("prometheus") or "/usr/bin/prometheus"
# Debian names the binary prometheus-alertmanager; upstream releases call it alertmanager.
ALERTMANAGER_BIN = (shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
                    or "/usr/bin/prometheus-alertmanager")
WORLD = ROOT / "data" / "incidents" / "cpu-saturation"
TOKEN = "am-token"
DEADLINE_S = 120.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Processes:
    def __init__(self, tmp: Path):
        self.tmp, self.procs = tmp, []  # type: list[tuple[str, subprocess.Popen[bytes]]]

    def start(self, name: str, argv: list[str]) -> None:
        log = (self.tmp / f"{name}.log").open("wb")
        self.procs.append((name, subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)))

    def check(self) -> None:
        for name, proc in self.procs:
            if proc.poll() is not None:
                pytest.fail(f"{name} exited with {proc.returncode}: {(self.tmp / f'{name}.log').read_text()[-2000:]}")

    def stop(self) -> None:
        for _, proc in reversed(self.procs):
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture
def alerting_stack(tmp_path: Path, settings: Settings, store: Store) -> Iterator[tuple[Store, Processes]]:
    """Simulator <- Prometheus -> Alertmanager -> webhook receiver (in this process) -> pool."""
    require(Path(PROMETHEUS_BIN).exists(), f"the prometheus binary ({PROMETHEUS_BIN})")
    require(Path(ALERTMANAGER_BIN).exists(), f"the alertmanager binary ({ALERTMANAGER_BIN})")
    prom_port, am_port = _free_port(), _free_port()
    backends = settings.backends.model_copy(update={"query_metrics": BackendSettings(
        kind="prometheus", url=f"http://127.0.0.1:{prom_port}", timeout_s=5)})
    settings = settings.model_copy(update={"backends": backends})
    queue = LocalQueue(settings, store)
    stack = ExitStack()
    app = make_app(store, Metrics(store), settings.webhook, Receiver(settings, store, queue, TOKEN))
    webhook_url = stack.enter_context(http_server(app, settings.webhook))

    am_config = tmp_path / "alertmanager.yml"
    am_config.write_text(yaml.safe_dump({
        "route": {"receiver": "workbench", "group_by": ["alertname", "service"], "group_wait": "1s",
                  "group_interval": "5s", "repeat_interval": "1h"},
        "receivers": [{"name": "workbench", "webhook_configs": [{
            "url": f"{webhook_url}/alertmanager", "send_resolved": False,
            "http_config": {"authorization": {"type": "Bearer", "credentials": TOKEN}}}]}],
    }), encoding="utf-8")
    sim = serve_metrics(WORLD, 0)
    prom_config = write_prometheus_config(tmp_path / "prom", sim.server_address[1], WORLD, for_override="0s")
    config = yaml.safe_load(prom_config.read_text(encoding="utf-8"))
    config["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": [f"127.0.0.1:{am_port}"]}]}]}
    prom_config.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")

    procs = Processes(tmp_path)
    try:
        procs.start("alertmanager", [ALERTMANAGER_BIN, f"--config.file={am_config}",
                                     f"--storage.path={tmp_path / 'am-data'}",
                                     f"--web.listen-address=127.0.0.1:{am_port}", "--cluster.listen-address="])
        procs.start("prometheus", [PROMETHEUS_BIN, f"--config.file={prom_config}",
                                   f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                                   f"--web.listen-address=127.0.0.1:{prom_port}"])
        yield store, procs
    finally:
        procs.stop()
        stack.close()
        queue.close()
        sim.shutdown()
        sim.server_close()


def _alert_session(store: Store, procs: Processes) -> dict[str, Any]:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        procs.check()
        for sid in store.session_ids():
            row = store.get_session(sid)
            names = {a.get("alertname") for a in (row.get("trigger") or {}).get("alerts", [])}
            if "HighCPUUsage" in names and row["status"] not in ("queued", "running"):
                return row
        time.sleep(0.25)
    pytest.fail(f"no completed session for HighCPUUsage within {DEADLINE_S:.0f}s; sessions: {store.session_ids()}")


def test_a_firing_rule_becomes_a_session_with_the_alert_text_in_its_evidence(alerting_stack: Any) -> None:
    store, procs = alerting_stack
    row = _alert_session(store, procs)
    assert row["status"] == "completed", row["error"]
    assert "HighCPUUsage on payment-service" in row["question"] and "CPU使用率过高" in row["question"]
    trigger = row["trigger"]
    assert trigger["kind"] == "alertmanager" and trigger["receiver"] == "workbench"
    (cpu,) = [a for a in trigger["alerts"] if a["alertname"] == "HighCPUUsage"]
    assert cpu["fingerprint"] and cpu["service"] == "payment-service"
    evidence = [inv for inv in store.invocations(row["id"]) if inv.tool_name == "query_metrics" and inv.status == "ok"]
    assert any("CPU使用率过高" in inv.output and "92" in inv.output for inv in evidence), \
        [inv.output[:300] for inv in store.invocations(row["id"])]
    # One session per group: Alertmanager's resends within the window joined it.
    cpu_sessions = [s for s in store.session_ids()
                    if any(a.get("alertname") == "HighCPUUsage"
                           for a in (store.get_session(s).get("trigger") or {}).get("alerts", []))]
    assert cpu_sessions == [row["id"]]
