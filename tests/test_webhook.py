"""`workbench webhook`: Alertmanager groups become queued sessions (in-process pool, SQLite).

The end-to-end run with real Prometheus and Alertmanager binaries is test_webhook_alertmanager.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from helpers import http_server

from pipeline.core.config import Settings
from pipeline.core.errors import ConfigError
from pipeline.frontends.webhook import Receiver, check_exposure, make_app
from pipeline.jobs.local import LocalQueue
from pipeline.store import Store
from pipeline.telemetry.metrics import Metrics

TOKEN = "s3cret-token"
DESCRIPTION = "CPU使用率过高: 92%, 进程: java (PID: 1), 线程数: 245"


@dataclass
class Webhook:
    url: str
    queue: LocalQueue
    store: Store

    def post(self, payload: Any, token: str | None = TOKEN, path: str = "/alertmanager") -> tuple[int, dict[str, Any]]:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        headers = {"content-type": "application/json"}
        if token:
            headers["authorization"] = f"Bearer {token}"
        req = urllib.request.Request(self.url + path, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, json.load(resp)
        except urllib.error.HTTPError as err:
            return err.code, json.load(err)


@pytest.fixture
def webhook(settings: Settings, store: Store) -> Iterator[Webhook]:
    queue = LocalQueue(settings, store)
    app = make_app(store, Metrics(store), settings.webhook, Receiver(settings, store, queue, TOKEN))
    with http_server(app, settings.webhook) as url:
        yield Webhook(url, queue, store)
    queue.close()


def alert(name: str = "HighCPUUsage", service: str = "payment-service", fingerprint: str = "a1b2c3",
          status: str = "firing", description: str = DESCRIPTION) -> dict[str, Any]:
    return {"status": status, "labels": {"alertname": name, "service": service, "severity": "critical"},
            "annotations": {"description": description}, "startsAt": "2026-12-01T04:52:00Z",
            "endsAt": "0001-01-01T00:00:00Z", "generatorURL": "http://prometheus/graph", "fingerprint": fingerprint}


def group(*alerts: dict[str, Any], key: str = '{}:{alertname="HighCPUUsage"}') -> dict[str, Any]:
    return {"version": "4", "groupKey": key, "truncatedAlerts": 0, "status": "firing", "receiver": "workbench",
            "groupLabels": {"alertname": "HighCPUUsage"}, "commonLabels": {}, "commonAnnotations": {},
            "externalURL": "http://alertmanager", "alerts": list(alerts)}


def test_only_a_matching_bearer_token_and_a_version_4_payload_are_accepted(webhook: Webhook) -> None:
    assert webhook.post(group(alert()), token=None)[0] == 401
    assert webhook.post(group(alert()), token="wrong")[0] == 401
    assert webhook.post(b"{not json")[0] == 400
    assert webhook.post(group(alert()) | {"version": "3"})[0] == 400
    assert webhook.post(group(alert()), path="/other")[0] == 404
    with urllib.request.urlopen(webhook.url + "/healthz", timeout=5) as resp:
        assert resp.status == 200
    assert webhook.store.session_ids() == []


@pytest.mark.slow  # starts a process
def test_one_session_per_alert_group_with_its_trigger_and_the_alerts_in_its_question(webhook: Webhook,
                                                                                     tmp_path: Any) -> None:
    status, first = webhook.post(group(alert(), alert("GatewayUpstreamErrors", "api-gateway", "d4e5f6",
                                                      description="上游错误率过高: 12.5%")))
    assert status == 202 and not first["deduplicated"]
    # Alertmanager resends the group (group_interval, repeat_interval): it joins the same session.
    assert webhook.post(group(alert("GatewayUpstreamErrors", "api-gateway", "d4e5f6",
                                    description="上游错误率过高: 12.5%"), alert()))[1] == first | {"deduplicated": True}
    # A new alert in the group is a new situation: a new session.
    status, grown = webhook.post(group(alert(), alert(fingerprint="0f0f0f", service="order-service")))
    assert status == 202 and grown["session_id"] != first["session_id"]
    assert webhook.post(group(alert(status="resolved")))[1] == {"ignored": "no firing alert in the group"}
    webhook.queue.close()

    row = webhook.store.get_session(first["session_id"])
    assert row["status"] == "completed" and row["verdict"]
    for text in ("HighCPUUsage", "payment-service", DESCRIPTION, "GatewayUpstreamErrors", "since 04:52 UTC"):
        assert text in row["question"]
    trigger = row["trigger"]
    assert trigger["kind"] == "alertmanager" and trigger["group_key"] == '{}:{alertname="HighCPUUsage"}'
    assert sorted(a["fingerprint"] for a in trigger["alerts"]) == ["a1b2c3", "d4e5f6"]
    assert trigger["starts_at"] == "2026-12-01T04:52:00+00:00"

    out = subprocess.run([sys.executable, "-m", "pipeline", "sessions", "--json", "--limit", "5"],
                         capture_output=True, text=True, check=True).stdout
    listed = {r["id"]: r for r in json.loads(out)}
    assert set(listed) == {first["session_id"], grown["session_id"]}
    assert {r["trigger"]["kind"] for r in listed.values()} == {"alertmanager"}
    assert set(listed[first["session_id"]]) >= {"id", "question", "trigger", "status", "verdict", "created_at"}
    verdict = row["verdict"]
    only = subprocess.run([sys.executable, "-m", "pipeline", "sessions", "--verdict", verdict],
                          capture_output=True, text=True, check=True).stdout
    assert first["session_id"] in only and "alertmanager" in only


@pytest.mark.parametrize("starts_at", ["0001-01-01T00:00:00Z", "0001-01-01T00:00:00+01:00",
                                       "9999-12-31T23:59:59-01:00", "2999-01-01T00:00:00Z"])
def test_an_alert_time_out_of_range_is_accepted_with_a_note_and_left_out(webhook: Webhook, starts_at: str) -> None:
    # A 5xx would have Alertmanager send the group again for ever; a session is still worth it.
    status, answer = webhook.post(group(alert() | {"startsAt": starts_at}))
    assert status == 202 and "diagnosed without a start time" in answer["note"]
    webhook.queue.close()
    row = webhook.store.get_session(answer["session_id"])
    assert row["status"] == "completed"
    assert "since" not in row["question"] and row["trigger"]["starts_at"] is None
    assert row["trigger"]["alerts"][0]["startsAt"] is None


def test_a_start_time_without_a_zone_is_read_as_utc(webhook: Webhook) -> None:
    status, answer = webhook.post(group(alert() | {"startsAt": "2026-12-01T04:52:00"}))
    assert status == 202 and "note" not in answer
    assert webhook.store.get_session(answer["session_id"])["trigger"]["starts_at"] == "2026-12-01T04:52:00+00:00"


@pytest.mark.slow  # starts a process
def test_without_a_token_the_webhook_listens_on_loopback_only() -> None:
    refused = subprocess.run([sys.executable, "-m", "pipeline", "webhook", "--host", "0.0.0.0", "--port", "0"],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2
    (line,) = [x for x in refused.stderr.splitlines() if x.startswith("workbench:")]
    assert "refusing to receive alerts" in line and "WORKBENCH_WEBHOOK_TOKEN" in line and "--insecure-no-auth" in line
    assert "Traceback" not in refused.stderr
    for host in ("127.0.0.1", "::1", "localhost"):
        assert check_exposure(host, None, insecure_no_auth=False) is None
    assert check_exposure("0.0.0.0", "a-token", insecure_no_auth=False) is None
    with pytest.raises(ConfigError):
        check_exposure("webhook.internal", None, insecure_no_auth=False)  # a name may resolve anywhere
    warning = check_exposure("0.0.0.0", None, insecure_no_auth=True)
    assert warning and warning.startswith("warning: anyone who reaches 0.0.0.0 can start sessions")
