"""`workbench webhook`: Alertmanager's webhook (payload version 4) at POST /alertmanager.

Each firing alert group becomes one queued diagnosis session whose question names the alerts'
service, alertname, description and start time (so the session's scope reads them like a typed
question), and whose row records the group as its `trigger`. A group seen again with the same
group key and firing fingerprints within `jobs.dedup_window_s` joins the session it started.

The row is queued before the 202 goes out: an enqueue failure answers 503 and Alertmanager
retries, so an accepted alert is never lost. With WORKBENCH_WEBHOOK_TOKEN set, a matching
`Authorization: Bearer` header is required. GET /healthz answers 200 while the store answers.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import threading
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import text

from pipeline.config import Settings
from pipeline.jobs import JobQueue, submit_session
from pipeline.store import Store
from pipeline.store.listing import recent_trigger

log = logging.getLogger(__name__)
MAX_BODY_BYTES = 1024 * 1024
MAX_ALERTS_IN_QUESTION = 5


class Alert(BaseModel):
    model_config = ConfigDict(extra="ignore")
    status: str
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    startsAt: datetime
    fingerprint: str = ""


class AlertGroup(BaseModel):
    """Alertmanager webhook payload, version 4 (field names as Alertmanager sends them)."""

    model_config = ConfigDict(extra="ignore")
    version: str
    groupKey: str
    status: str
    receiver: str = ""
    alerts: list[Alert]


def _service(alert: Alert) -> str:
    labels = alert.labels
    return labels.get("service") or labels.get("job") or labels.get("instance") or "unknown service"


def question_for(firing: list[Alert]) -> str:
    """The question a person would type for these alerts; the scope reader finds the service
    names and the `since HH:MM` window in it."""
    parts = []
    for a in firing[:MAX_ALERTS_IN_QUESTION]:
        text = a.annotations.get("description") or a.annotations.get("summary") or ""
        parts.append(f"{a.labels.get('alertname', 'alert')} on {_service(a)}" + (f": {text}" if text else ""))
    more = f" (+{len(firing) - MAX_ALERTS_IN_QUESTION} more)" if len(firing) > MAX_ALERTS_IN_QUESTION else ""
    start = min(a.startsAt for a in firing).astimezone(UTC)
    return f"Alertmanager: {'; '.join(parts)}{more}. Firing since {start:%H:%M} UTC: what is going on?"


def trigger_for(group: AlertGroup, firing: list[Alert]) -> tuple[dict[str, Any], str]:
    """The trigger record of the session and its dedup key (group key + firing fingerprints)."""
    fingerprints = sorted(a.fingerprint for a in firing)
    key = hashlib.sha256(json.dumps([group.groupKey, fingerprints]).encode()).hexdigest()[:32]
    trigger = {
        "kind": "alertmanager", "receiver": group.receiver, "group_key": group.groupKey,
        "starts_at": min(a.startsAt for a in firing).astimezone(UTC).isoformat(),
        "alerts": [{"fingerprint": a.fingerprint, "alertname": a.labels.get("alertname"), "service": _service(a),
                    "severity": a.labels.get("severity"), "description": a.annotations.get("description"),
                    "startsAt": a.startsAt.isoformat()} for a in firing],
    }
    return trigger, key


class Receiver:
    """What the HTTP handler calls; one per process. The lock makes check-then-queue atomic here;
    several receivers on one store should sit behind one address (docs/deploy.md)."""

    def __init__(self, settings: Settings, store: Store, queue: JobQueue, token: str | None):
        self.settings, self.store, self.queue, self.token = settings, store, queue, token
        self._lock = threading.Lock()

    def authorized(self, header: str | None) -> bool:
        if not self.token:
            return True
        return hmac.compare_digest((header or "").encode(), f"Bearer {self.token}".encode())

    def accept(self, body: bytes) -> tuple[int, dict[str, Any]]:
        try:
            group = AlertGroup.model_validate_json(body)
        except ValidationError as exc:
            return 400, {"error": f"not an Alertmanager webhook payload: {exc.errors()[0]['msg']}"}
        if group.version != "4":
            return 400, {"error": f"payload version {group.version!r} is not supported (expected \"4\")"}
        firing = [a for a in group.alerts if a.status == "firing"]
        if not firing:
            return 202, {"ignored": "no firing alert in the group"}
        trigger, key = trigger_for(group, firing)
        since = datetime.now(UTC) - timedelta(seconds=self.settings.jobs.dedup_window_s)
        with self._lock:
            earlier = recent_trigger(self.store, key, since)
            if earlier:
                return 202, {"session_id": earlier, "deduplicated": True}
            sid = submit_session(self.queue, self.settings, self.store, question_for(firing),
                                 trigger=trigger, trigger_key=key)
        log.info("alert group %s -> session %s", group.groupKey, sid)
        return 202, {"session_id": sid, "deduplicated": False}

    def healthy(self) -> bool:
        try:
            with self.store.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
        except Exception:  # noqa: BLE001 - any store failure means "not ready", reported as 503
            return False
        return True


def make_server(receiver: Receiver, host: str, port: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            log.debug(format, *args)

        def _answer(self, status: int, body: dict[str, Any]) -> None:
            payload = json.dumps(body, ensure_ascii=False).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:
            if self.path != "/healthz":
                return self._answer(404, {"error": "not found"})
            ok = receiver.healthy()
            self._answer(200 if ok else 503, {"ok": ok})

        def do_POST(self) -> None:
            if self.path != "/alertmanager":
                return self._answer(404, {"error": "POST alert groups to /alertmanager"})
            if not receiver.authorized(self.headers.get("authorization")):
                return self._answer(401, {"error": "a matching bearer token is required"})
            length = int(self.headers.get("content-length") or 0)
            if length > MAX_BODY_BYTES:
                return self._answer(413, {"error": f"payload over {MAX_BODY_BYTES} bytes"})
            try:
                status, body = receiver.accept(self.rfile.read(length))
            except Exception as exc:  # noqa: BLE001 - not queued: 503 makes Alertmanager send it again
                log.exception("could not queue an alert group")
                status, body = 503, {"error": f"not queued: {type(exc).__name__}"}
            self._answer(status, body)

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server
