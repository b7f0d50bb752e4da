"""query_metrics against a real Prometheus binary scraping the incident simulator.

`prometheus_server` is written to move into tests/conftest.py unchanged: request it with
`@pytest.mark.parametrize("prometheus_server", ["cpu-saturation"], indirect=True)` or use the
`cpu_prometheus` fixture below, and get the base URL of a Prometheus whose alerts already fire.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers import require

from pipeline.core.config import ROOT, BackendSettings
from pipeline.frontends.simulate import load_metrics, serve_metrics, write_prometheus_config
from pipeline.tools.prometheus import PrometheusMetrics
from pipeline.tools.queries import MetricsQuery, NoData

PROMETHEUS_BIN = shutil.which("prometheus") or "/usr/bin/prometheus"
STARTUP_TIMEOUT_S = 60.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _firing(url: str) -> set[str]:
    try:
        with urllib.request.urlopen(f"{url}/api/v1/alerts", timeout=2) as resp:
            body = json.load(resp)
    except OSError:
        return set()
    return {a["labels"]["alertname"] for a in body["data"]["alerts"] if a["state"] == "firing"}


@pytest.fixture(scope="module")
def prometheus_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of a Prometheus scraping the simulator of world `request.param`, rules firing.

    Module-scoped: starting Prometheus and waiting for the first rule evaluation takes seconds.
    """
    tmp_path = tmp_path_factory.mktemp(f"prometheus-{request.param}")
    world_dir = ROOT / "data" / "incidents" / request.param
    require(Path(PROMETHEUS_BIN).exists(), f"the prometheus binary ({PROMETHEUS_BIN})")
    expected = {r["alert"] for r in load_metrics(world_dir).get("rules") or []}
    sim = serve_metrics(world_dir, 0)
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    config = write_prometheus_config(tmp_path / "config", sim.server_address[1], world_dir, for_override="0s")
    log = (tmp_path / "prometheus.log").open("wb")
    proc = subprocess.Popen(
        [
            PROMETHEUS_BIN,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while _firing(url) < expected:
            if proc.poll() is not None:
                pytest.fail(f"prometheus exited with {proc.returncode}: {(tmp_path / 'prometheus.log').read_text()[-2000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"alerts {sorted(expected)} not firing within {STARTUP_TIMEOUT_S:.0f}s; firing: {_firing(url)}")
            time.sleep(0.25)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        sim.shutdown()
        sim.server_close()


@pytest.fixture(scope="module")
def cpu_prometheus(prometheus_server: str) -> str:
    return prometheus_server


pytestmark = [pytest.mark.slow, pytest.mark.parametrize("prometheus_server", ["cpu-saturation"], indirect=True)]


def backend(url: str) -> PrometheusMetrics:
    return PrometheusMetrics(BackendSettings(kind="prometheus", url=url, timeout_s=5))


def test_firing_alert_carries_its_description(cpu_prometheus: str) -> None:
    out = backend(cpu_prometheus).query_metrics(MetricsQuery(service="payment-service", status="firing"))
    (alert,) = [a for a in out["alerts"] if a["alertname"] == "HighCPUUsage"]
    assert alert["status"] == "firing"
    assert alert["service"] == "payment-service"
    assert alert["severity"] == "critical"
    assert "92" in alert["description"] and "CPU使用率过高" in alert["description"]
    assert alert["value"] == "92"
    assert alert["startsAt"]
    assert all(a["service"] == "payment-service" for a in out["alerts"])


def test_alertname_filter_and_no_data(cpu_prometheus: str) -> None:
    prom = backend(cpu_prometheus)
    out = prom.query_metrics(MetricsQuery(alertname="HighCPUUsage"))
    assert [a["alertname"] for a in out["alerts"]] == ["HighCPUUsage"]
    with pytest.raises(NoData):
        prom.query_metrics(MetricsQuery(alertname="NoSuchAlert", status="firing"))


def test_promql_instant_query(cpu_prometheus: str) -> None:
    out = backend(cpu_prometheus).query_metrics(
        MetricsQuery(alertname="HighCPUUsage", promql='process_cpu_usage_percent{service="payment-service"}')
    )
    assert out["query"]["type"] == "instant"
    (series,) = out["series"]
    assert series["metric"]["service"] == "payment-service"
    assert series["values"][0][1] == "92"
    assert "= 92 at" in series["description"]


def test_promql_range_query_is_bounded_in_points(cpu_prometheus: str) -> None:
    now = datetime.now(UTC)
    out = backend(cpu_prometheus).query_metrics(
        MetricsQuery(promql="process_cpu_usage_percent", start=now - timedelta(minutes=10), end=now)
    )
    assert out["query"]["type"] == "range"
    assert {s["metric"]["service"] for s in out["series"]} >= {"payment-service", "api-gateway"}
    for s in out["series"]:
        assert 1 <= len(s["values"]) <= 101
        assert "points from" in s["description"] or "= " in s["description"]


def test_bad_promql_is_an_error_not_no_data(cpu_prometheus: str) -> None:
    with pytest.raises(Exception, match="HTTP 400.*bad_data"):
        backend(cpu_prometheus).query_metrics(MetricsQuery(promql="sum(("))


def test_session_with_prometheus_backend_binds_claims_to_real_alert_text(cpu_prometheus: str, settings,
                                                                          store) -> None:
    from pipeline.runs.session import run_session

    backends = settings.backends.model_copy(update={
        "query_metrics": BackendSettings(kind="prometheus", url=cpu_prometheus, timeout_s=5)})
    s = settings.model_copy(update={"backends": backends})
    result = run_session("payment API times out, what's going on?", settings=s, store=store)
    invocations = {inv.id: inv for inv in store.invocations(result.session_id)}
    prom_ids = {i for i, inv in invocations.items() if inv.tool_name == "query_metrics" and inv.status == "ok"}
    assert prom_ids, "no successful Prometheus call"
    bound = [(n, c) for n, c in enumerate(result.evaluation.structured["claims"])
             if set(c["evidence_bindings"][0]["source_invocation_ids"]) & prom_ids]
    assert bound, "no claim cites the Prometheus alerts"
    cpu = [c for _, c in bound if "CPU使用率过高" in c["evidence_bindings"][0]["evidence_excerpt"]]
    assert cpu and "92" in cpu[0]["evidence_bindings"][0]["evidence_excerpt"]
    for n, _ in bound:
        hits = [e for e in result.evaluation.gatekeeper_result.errors if e.target.startswith(f"claims[{n}]")]
        assert not hits, hits
    assert result.evaluation.gatekeeper_result.status in ("pass", "warn")
