"""A finished alert-triggered session is announced to a chat webhook: a real HTTP receiver in
this process records what arrives, fails on purpose, or never answers."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from pipeline.core.config import NotifySettings, Settings
from pipeline.frontends.webhook import Receiver
from pipeline.jobs import submit_session
from pipeline.jobs.local import LocalQueue
from pipeline.store import Store

pytestmark = pytest.mark.slow
UI = "http://workbench.example:8501"


class ChatReceiver:
    """Answers each POST with the next status of `plan` (the last one repeats); `hang_s` delays it."""

    def __init__(self, plan: list[int], hang_s: float = 0.0):
        self.plan, self.hang_s, self.posts = list(plan), hang_s, []  # type: list[int], float, list[Any]
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                receiver.posts.append((self.headers["content-type"], json.loads(body)))
                time.sleep(receiver.hang_s)
                status = receiver.plan.pop(0) if len(receiver.plan) > 1 else receiver.plan[0]
                try:
                    self.send_response(status)
                    self.send_header("content-length", "2")
                    self.end_headers()
                    self.wfile.write(b"ok")
                except ConnectionError:
                    pass  # the notifier gave up waiting (hang_s)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/T000/B000/secret"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def chat() -> Iterator[Any]:
    made: list[ChatReceiver] = []

    def make(plan: list[int], hang_s: float = 0.0) -> ChatReceiver:
        made.append(ChatReceiver(plan, hang_s))
        return made[-1]

    yield make
    for receiver in made:
        receiver.close()


def _with_notify(settings: Settings, url: str, **overrides: Any) -> Settings:
    notify = NotifySettings(url=url, ui_url=UI + "/", timeout_s=overrides.pop("timeout_s", 2.0), **overrides)
    return settings.model_copy(update={"notify": notify})


def _alert_session(settings: Settings, store: Store) -> dict[str, Any]:
    """A new Alertmanager group through the receiver, run to its end by the in-process pool."""
    queue = LocalQueue(settings, store)
    status, answer = Receiver(settings, store, queue, None).accept(json.dumps({
        "version": "4", "groupKey": uuid.uuid4().hex, "status": "firing", "receiver": "workbench", "alerts": [{
            "status": "firing", "labels": {"alertname": "HighCPUUsage", "service": "payment-service"},
            "annotations": {"description": "CPU使用率过高: 92%, 进程: java"}, "startsAt": "2026-12-01T04:52:00Z",
            "fingerprint": "a1"}]}).encode())
    queue.close()
    assert status == 202
    row = store.get_session(answer["session_id"])
    assert row["status"] == "completed"
    return row


def test_a_finished_alert_session_posts_its_verdict_lead_and_trace_link(chat: Any, settings: Settings,
                                                                        store: Store) -> None:
    receiver = chat([200])
    row = _alert_session(_with_notify(settings, receiver.url), store)
    ((content_type, payload),) = receiver.posts
    assert content_type == "application/json" and set(payload) == {"text"}
    first, lead, link = payload["text"].split("\n")
    assert first == f"Diagnosis of HighCPUUsage on payment-service: {row['verdict']}"
    assert lead == row["composer_output"]["answer_summary"].replace("<", "&lt;").replace(">", "&gt;") and lead
    assert link == f"Trace: {UI}/trace?session={row['id']}"


def test_a_failing_receiver_is_tried_again_and_never_fails_the_session(chat: Any, settings: Settings,
                                                                       store: Store) -> None:
    flaky = chat([503, 429, 200])
    _alert_session(_with_notify(settings, flaky.url, attempts=3), store)
    assert len(flaky.posts) == 3  # 503 and 429 are worth another try; the third got through

    down = chat([500])
    row = _alert_session(_with_notify(settings, down.url, attempts=2), store)
    assert len(down.posts) == 2 and row["status"] == "completed"

    refusing = chat([404])
    _alert_session(_with_notify(settings, refusing.url, attempts=3), store)
    assert len(refusing.posts) == 1  # a wrong URL stays wrong: no second try

    silent = chat([200], hang_s=3.0)
    row = _alert_session(_with_notify(settings, silent.url, attempts=2, timeout_s=0.3), store)
    assert len(silent.posts) == 2 and row["status"] == "completed"


def test_only_alert_triggered_sessions_are_announced(chat: Any, settings: Settings, store: Store,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    receiver = chat([200])
    notifying = _with_notify(settings, receiver.url)
    queue = LocalQueue(notifying, store)
    submit_session(queue, notifying, store, "payment API times out since 10:00")
    queue.close()
    assert receiver.posts == []

    # Nobody listens there: one warning line that names the host, never the URL's secret path.
    unreachable = _with_notify(settings, "http://127.0.0.1:9/hooks/T000/B000/secret", attempts=1)
    _alert_session(unreachable, store)
    (warning,) = [r.getMessage() for r in caplog.records if r.name == "pipeline.telemetry.notify"]
    assert "127.0.0.1" in warning and "secret" not in warning
