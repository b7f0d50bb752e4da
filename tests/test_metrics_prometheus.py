"""A real Prometheus scrapes GET /metrics of `workbench webhook` (served in this process) and of
`workbench metrics` (its own process); the series are read back through Prometheus' HTTP API,
and the alert rules and dashboard queries of docs/deploy.md run on them.

Sessions come from the webhook's pool and from a `workbench ask` in another process, on one
SQLite store: both servers count both, since they read the store at scrape time.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import http_server, require

from pipeline.core.config import ROOT, Settings
from pipeline.frontends.webhook import Receiver, make_app
from pipeline.jobs.local import LocalQueue
from pipeline.store import Store
from pipeline.telemetry.metrics import Metrics

pytestmark = pytest.mark.slow
PROMETHEUS_BIN = shutil.which("prometheus") or "/usr/bin/prometheus"
DEADLINE_S = 90.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _post(url: str, payload: dict[str, Any]) -> dict[str, Any]:
    req = urllib.request.Request(url, data=json.dumps(payload).encode(), method="POST",
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return dict(json.load(resp))


def _api(prom: str, path: str, **params: str) -> Any:
    with urllib.request.urlopen(f"{prom}/api/v1/{path}?" + urllib.parse.urlencode(params), timeout=5) as resp:
        return json.load(resp)["data"]


def _query(prom: str, promql: str) -> dict[str, float]:
    """Instant query: {"label=value,..." : value} of each series."""
    try:
        data = _api(prom, "query", query=promql)["result"]
    except OSError:
        return {}
    return {",".join(f"{k}={v}" for k, v in sorted(r["metric"].items()) if k != "__name__"): float(r["value"][1])
            for r in data}


def _documented_rules(path: Path) -> Path:
    """The alert rules of docs/deploy.md, for the scrape job of this test."""
    doc = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    block = doc.split("### Alert on a rising REJECT share", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    path.write_text(block.replace('job="workbench"', 'job="metrics"'), encoding="utf-8")
    return path


def _dashboard_queries() -> list[str]:
    dashboard = json.loads((ROOT / "docs" / "grafana-dashboard.json").read_text(encoding="utf-8"))
    return [t["expr"].replace("$webhook_job", "webhook") for panel in dashboard["panels"] for t in panel["targets"]]


@pytest.fixture
def standalone_metrics(tmp_path: Path, settings: Settings) -> Iterator[str]:
    """`workbench metrics --port 0` on the test's store, as its own process; yields host:port."""
    log = tmp_path / "metrics.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "pipeline", "metrics", "--port", "0"], stdout=out,
                                stderr=subprocess.STDOUT, env={**os.environ, "WORKBENCH_HOME": str(settings.home)})
    try:
        deadline = time.monotonic() + 60
        while "/metrics" not in log.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        yield log.read_text().split("http://", 1)[1].split("/metrics", 1)[0]
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def test_prometheus_scrapes_sessions_stages_tokens_queue_and_requests(tmp_path: Path, settings: Settings,
                                                                      store: Store, standalone_metrics: str) -> None:
    require(Path(PROMETHEUS_BIN).exists(), f"the prometheus binary ({PROMETHEUS_BIN})")
    queue = LocalQueue(settings, store)
    app = make_app(store, Metrics(store), settings.webhook, Receiver(settings, store, queue, None))
    with http_server(app, settings.webhook) as webhook:
        prom_port = _free_port()
        config = tmp_path / "prometheus.yml"
        config.write_text(yaml.safe_dump({
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(_documented_rules(tmp_path / "rules.yml"))],
            "scrape_configs": [
                {"job_name": "webhook", "static_configs": [{"targets": [webhook.removeprefix("http://")]}]},
                {"job_name": "metrics", "static_configs": [{"targets": [standalone_metrics]}]},
            ]}), encoding="utf-8")
        with (tmp_path / "prometheus.log").open("wb") as log:
            prom_proc = subprocess.Popen([PROMETHEUS_BIN, f"--config.file={config}",
                                          f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                                          f"--web.listen-address=127.0.0.1:{prom_port}"],
                                         stdout=log, stderr=subprocess.STDOUT)
        prom = f"http://127.0.0.1:{prom_port}"
        try:
            answer = _post(f"{webhook}/alertmanager", {
                "version": "4", "groupKey": "g", "status": "firing", "receiver": "workbench", "alerts": [{
                    "status": "firing", "labels": {"alertname": "HighCPUUsage", "service": "payment-service"},
                    "annotations": {"description": "CPU使用率过高: 92%"}, "startsAt": "2026-12-01T04:52:00Z",
                    "fingerprint": "a1"}]})
            queue.close()
            # A session of another process: the servers read it from the store all the same.
            subprocess.run([sys.executable, "-m", "pipeline", "ask", "payment API times out since 10:00"],
                           check=True, capture_output=True, env={**os.environ, "WORKBENCH_HOME": str(settings.home)})
            verdicts = {store.get_session(s)["verdict"] for s in store.session_ids()}
            assert store.get_session(answer["session_id"])["status"] == "completed"

            wanted = {
                'sum by (job) (workbench_sessions{status="completed"})': {"job=metrics": 2, "job=webhook": 2},
                "sum by (job) (workbench_sessions_finished_total)": {"job=metrics": 2, "job=webhook": 2},
                'workbench_stage_seconds_count{job="metrics",stage="verification"}':
                    {"instance=" + standalone_metrics + ",job=metrics,stage=verification": 2},
                'workbench_jobs_queued{job="webhook",kind="diagnosis"}':
                    {"instance=" + webhook.removeprefix("http://") + ",job=webhook,kind=diagnosis": 0},
                'sum by (code) (workbench_webhook_requests_total{job="webhook",handler="/alertmanager"})':
                    {"code=202": 1},
                'count by (provider) (workbench_llm_tokens_total{job="metrics"})': {"provider=offline": 2},
                "count by (job) (workbench_store_up == 1)": {"job=metrics": 1, "job=webhook": 1},
            }
            deadline = time.monotonic() + DEADLINE_S
            while True:
                assert prom_proc.poll() is None, (tmp_path / "prometheus.log").read_text()[-2000:]
                got = {q: _query(prom, q) for q in wanted}
                if got == wanted or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            assert got == wanted
            by_verdict = _query(prom, 'sum by (verdict) (workbench_sessions_finished_total{job="metrics"})')
            assert set(by_verdict) == {f"verdict={v}" for v in verdicts}

            while not all(r.get("lastEvaluation", "0001").startswith("20") for g in _api(prom, "rules")["groups"]
                          for r in g["rules"]) and time.monotonic() < deadline:
                time.sleep(0.5)
            rules = {r["name"]: r for g in _api(prom, "rules")["groups"] for r in g["rules"]}
            assert set(rules) == {"WorkbenchRejectShareHigh", "WorkbenchQueueBacklog"}
            assert {r["health"] for r in rules.values()} == {"ok"}, rules
            assert {r["state"] for r in rules.values()} == {"inactive"}  # two sessions, none queued
            for promql in _dashboard_queries():
                _api(prom, "query", query=promql)  # a query Prometheus cannot parse is an HTTP 400
        finally:
            prom_proc.terminate()
            prom_proc.wait(timeout=15)
