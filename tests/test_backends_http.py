"""Loki and Prometheus backends against local stub servers speaking their documented formats."""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pipeline.core.config import BackendSettings, Settings
from pipeline.tools.health import backend_health
from pipeline.tools.http import BackendError, http_get
from pipeline.tools.loki import LokiLogs, build_logql
from pipeline.tools.prometheus import PrometheusMetrics, step_for
from pipeline.tools.queries import LogQuery, MetricsQuery, NoData


@dataclass
class Reply:
    body: bytes | str | dict[str, Any]
    status: int = 200
    delay_s: float = 0.0


@dataclass
class Stub:
    url: str
    routes: dict[str, Reply] = field(default_factory=dict)
    requests: list[tuple[str, dict[str, list[str]], dict[str, str]]] = field(default_factory=list)

    def params(self, path: str) -> dict[str, str]:
        return {k: v[0] for p, q, _ in self.requests if p == path for k, v in q.items()}


@pytest.fixture()
def stub() -> Iterator[Stub]:
    state = Stub(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            parsed = urllib.parse.urlparse(self.path)
            state.requests.append((parsed.path, urllib.parse.parse_qs(parsed.query), dict(self.headers)))
            reply = state.routes.get(parsed.path, Reply("not found", 404))
            time.sleep(reply.delay_s)
            body = reply.body
            if isinstance(body, dict):
                body = json.dumps(body)
            raw = body.encode() if isinstance(body, str) else body
            self.send_response(reply.status)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            try:
                self.wfile.write(raw)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def cfg(url: str, **kw: Any) -> BackendSettings:
    return BackendSettings(url=url, timeout_s=kw.pop("timeout_s", 3), **kw)  # the class is built directly: no kind


def ns(h: int, m: int, s: int = 0) -> str:
    return str(int(datetime(2026, 11, 28, h, m, s, tzinfo=UTC).timestamp() * 1e9))


LOKI_REPLY = {
    "status": "success",
    "data": {
        "resultType": "streams",
        "result": [
            {
                "stream": {"service": "payment-service", "job": "pay", "level": "error"},
                "values": [
                    [ns(10, 2, 13), "CPU使用率过高: 92.0%, 进程: java (PID: 1), 线程数: 245"],
                    [ns(10, 1, 0), "request timeout after 5300ms"],
                ],
            },
            {
                "stream": {"service": "payment-service", "job": "pay"},
                "values": [
                    [ns(10, 3, 0), '{"ts": "2026-11-28T10:03:00Z", "level": "warn", "message": "GC pause 1.2s"}'],
                    [ns(10, 0, 30), "2026-11-28T10:00:30Z INFO heartbeat ok"],
                ],
            },
        ],
        "stats": {},
    },
}


# ---- Loki ----------------------------------------------------------------------------------


def test_logql_is_built_from_the_query() -> None:
    assert build_logql(LogQuery()) == '{job=~".+"}'
    q = LogQuery(service='pay"ment', keywords=["timeout", "a.b(c)"], level="ERROR")
    assert build_logql(q) == (
        '{service="pay\\"ment"} |~ "(?i)timeout|a\\\\.b\\\\(c\\\\)" '
        '|~ "(?i)\\\\b(error|err|severe|fatal|critical|crit)\\\\b"'
    )


def test_loki_streams_become_logs(stub: Stub) -> None:
    stub.routes["/loki/api/v1/query_range"] = Reply(LOKI_REPLY)
    start = datetime(2026, 11, 28, 10, 0, tzinfo=UTC)
    end = datetime(2026, 11, 28, 10, 30, tzinfo=UTC)
    out = LokiLogs(cfg(stub.url, bearer_token="s3cret")).query_logs(
        LogQuery(service="payment-service", keywords=["cpu"], start=start, end=end, limit=50)
    )
    sent = stub.params("/loki/api/v1/query_range")
    assert sent["query"] == '{service="payment-service"} |~ "(?i)cpu"'
    assert sent["direction"] == "backward"
    assert sent["limit"] == "51"
    assert sent["start"] == ns(10, 0) and sent["end"] == ns(10, 30)
    assert stub.requests[0][2]["Authorization"] == "Bearer s3cret"

    logs = out["logs"]
    assert [e["timestamp"] for e in logs] == [
        "2026-11-28T10:00:30Z", "2026-11-28T10:01:00Z", "2026-11-28T10:02:13Z", "2026-11-28T10:03:00Z",
    ]
    cpu = logs[2]
    assert cpu["message"] == "CPU使用率过高: 92.0%, 进程: java (PID: 1), 线程数: 245"
    assert cpu["level"] == "ERROR" and cpu["service"] == "payment-service"
    assert cpu["labels"]["job"] == "pay"
    assert (logs[3]["level"], logs[3]["message"]) == ("WARN", "GC pause 1.2s")
    assert (logs[0]["level"], logs[0]["message"]) == ("INFO", "heartbeat ok")
    assert out["truncated"] is False and out["total"] == 4


def test_loki_level_is_rechecked_and_limit_keeps_the_newest(stub: Stub) -> None:
    stub.routes["/loki/api/v1/query_range"] = Reply(LOKI_REPLY)
    out = LokiLogs(cfg(stub.url)).query_logs(LogQuery(level="WARN", limit=2))
    assert [e["message"] for e in out["logs"]] == ["CPU使用率过高: 92.0%, 进程: java (PID: 1), 线程数: 245", "GC pause 1.2s"]
    assert out["truncated"] is True and out["total"] == 3


def test_loki_empty_is_no_data(stub: Stub) -> None:
    stub.routes["/loki/api/v1/query_range"] = Reply(
        {"status": "success", "data": {"resultType": "streams", "result": []}}
    )
    with pytest.raises(NoData):
        LokiLogs(cfg(stub.url)).query_logs(LogQuery(service="x"))


def test_loki_error_text_is_reported(stub: Stub) -> None:
    stub.routes["/loki/api/v1/query_range"] = Reply("parse error at line 1, col 9: syntax error", 400)
    with pytest.raises(BackendError, match="loki: HTTP 400 .*syntax error"):
        LokiLogs(cfg(stub.url)).query_logs(LogQuery())


def test_loki_invalid_utf8_is_replaced_and_counted(stub: Stub) -> None:
    body = json.dumps(
        {"status": "success", "data": {"resultType": "streams", "result": [
            {"stream": {"service": "s"}, "values": [[ns(10, 0), "bad PLACEHOLDER bytes"]]}
        ]}}
    ).encode().replace(b"PLACEHOLDER", b"\xff\xfe")
    stub.routes["/loki/api/v1/query_range"] = Reply(body)
    out = LokiLogs(cfg(stub.url)).query_logs(LogQuery())
    assert out["decode_errors"] == 2
    assert out["logs"][0]["message"] == "bad \ufffd\ufffd bytes"


# ---- Prometheus error paths (the happy path runs against the real binary) -------------------


def test_prometheus_api_error_is_raised_with_its_reason(stub: Stub) -> None:
    stub.routes["/api/v1/alerts"] = Reply({"status": "success", "data": {"alerts": []}})
    stub.routes["/api/v1/query"] = Reply(
        {"status": "error", "errorType": "bad_data", "error": "1:6: parse error: unclosed left parenthesis"}, 400
    )
    with pytest.raises(BackendError, match="HTTP 400 .*bad_data: 1:6: parse error"):
        PrometheusMetrics(cfg(stub.url)).query_metrics(MetricsQuery(status="firing", promql="sum(("))


def test_prometheus_server_error_and_non_json(stub: Stub) -> None:
    stub.routes["/api/v1/alerts"] = Reply("upstream connect error", 503)
    with pytest.raises(BackendError, match="HTTP 503"):
        PrometheusMetrics(cfg(stub.url)).query_metrics(MetricsQuery(status="firing"))
    stub.routes["/api/v1/alerts"] = Reply("<html>login</html>")
    with pytest.raises(BackendError, match="not JSON"):
        PrometheusMetrics(cfg(stub.url)).query_metrics(MetricsQuery(status="firing"))


def test_prometheus_timeout(stub: Stub) -> None:
    stub.routes["/api/v1/alerts"] = Reply({"status": "success", "data": {"alerts": []}}, delay_s=1.5)
    with pytest.raises(BackendError, match="within 0.3s"):
        PrometheusMetrics(cfg(stub.url, timeout_s=0.3)).query_metrics(MetricsQuery(status="firing"))


def test_prometheus_unreachable() -> None:
    with pytest.raises(BackendError, match="cannot reach"):
        PrometheusMetrics(cfg("http://127.0.0.1:9")).query_metrics(MetricsQuery(status="firing"))


def test_prometheus_no_alerts_is_no_data_and_resolved_come_from_alerts_series(stub: Stub) -> None:
    stub.routes["/api/v1/alerts"] = Reply({"status": "success", "data": {"alerts": []}})
    stub.routes["/api/v1/query_range"] = Reply({"status": "success", "data": {"resultType": "matrix", "result": []}})
    prom = PrometheusMetrics(cfg(stub.url))
    with pytest.raises(NoData):
        prom.query_metrics(MetricsQuery())
    t0 = datetime(2026, 11, 28, 10, 0, tzinfo=UTC).timestamp()
    stub.routes["/api/v1/query_range"] = Reply({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": "ALERTS", "alertname": "DiskFull", "alertstate": "firing", "service": "db"},
         "values": [[t0, "1"], [t0 + 60, "1"]]}
    ]}})
    out = prom.query_metrics(MetricsQuery(status="resolved", service="db"))
    (alert,) = out["alerts"]
    assert alert["status"] == "resolved"
    assert alert["description"] == 'DiskFull {service="db"} was firing from 2026-11-28T10:00:00Z to 2026-11-28T10:01:00Z'
    assert stub.params("/api/v1/query_range")["query"] == 'ALERTS{alertstate="firing"}'


def test_prometheus_caps_alerts_at_the_limit(stub: Stub) -> None:
    alerts = [
        {"labels": {"alertname": f"A{i}", "job": "node"}, "annotations": {}, "state": "firing",
         "activeAt": "2026-11-28T10:00:00Z", "value": "1e+00"}
        for i in range(30)
    ]
    stub.routes["/api/v1/alerts"] = Reply({"status": "success", "data": {"alerts": alerts}})
    out = PrometheusMetrics(cfg(stub.url, limit=10)).query_metrics(MetricsQuery(status="firing"))
    assert len(out["alerts"]) == 10 and out["total"] == 30 and out["truncated"] is True
    first = out["alerts"][0]
    assert first["service"] == "node" and first["value"] == "1"
    assert first["description"] == '{alertname="A0", job="node"}'  # no annotations: the labels


def test_range_step_keeps_about_a_hundred_points() -> None:
    t0 = datetime(2026, 11, 28, 0, 0, tzinfo=UTC)
    assert step_for(t0, t0.replace(hour=1)) == 36
    assert step_for(t0, t0.replace(minute=1)) == 1


# ---- shared HTTP helper and doctor lines ----------------------------------------------------


def test_size_cap(stub: Stub) -> None:
    stub.routes["/big"] = Reply("x" * 10_000)
    with pytest.raises(BackendError, match="exceeds 1000 bytes"):
        http_get(cfg(stub.url), "/big", what="test", max_bytes=1000)
    assert len(http_get(cfg(stub.url), "/big", what="test").text) == 10_000


def test_backend_health_lines(stub: Stub, tmp_path: Path) -> None:
    stub.routes["/-/ready"] = Reply("Prometheus Server is Ready.")
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "a.md").write_text("# A\n\ntext\n", encoding="utf-8")
    settings = Settings.model_validate(
        {
            "backends": {
                "query_metrics": {"kind": "prometheus", "url": stub.url},
                "query_logs": {"kind": "loki", "url": "http://127.0.0.1:9"},
                "lookup_knowledge": {"kind": "folder", "path": str(tmp_path / "kb")},
            }
        }
    )
    lines = backend_health(settings)
    assert len(lines) == 3
    logs, metrics, knowledge = lines
    assert logs.startswith("query_logs: loki http://127.0.0.1:9 — UNREACHABLE")
    assert metrics == f"query_metrics: prometheus {stub.url} — reachable"
    assert knowledge.startswith(f"lookup_knowledge: folder {tmp_path / 'kb'} — ok: 1 runbook file(s), 1 block(s)")
