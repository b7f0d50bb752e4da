"""The Ask page follows a session from the store: one queued elsewhere (another replica, a
closed tab, the webhook) shows its stage progress and then its answer on a reload."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from pipeline.core.config import ROOT, Settings, load_settings
from pipeline.frontends.views import ask as ask_view
from pipeline.jobs import submit_session
from pipeline.jobs.local import LocalQueue
from pipeline.store import Store
from tests.stub_openai import PipelineModel, StubOpenAI, StubReply

QUESTION = "Order 123 payment failed with ERR_TIMEOUT from the gateway, what happened?"


def test_a_reload_follows_a_session_running_elsewhere_to_its_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    model, following = PipelineModel(), threading.Event()

    def held_until_followed(request: Any) -> StubReply:
        following.wait(timeout=60)  # the session stays mid-run until the page is watching it
        return model(request)

    read_events = ask_view.events

    def events(*args: Any, **kwargs: Any) -> list[tuple[int, str, dict[str, Any]]]:
        following.set()
        return read_events(*args, **kwargs)

    # Where the page reads them: the name it imported, whatever test imported it first.
    monkeypatch.setattr(ask_view, "events", events)
    with StubOpenAI(responder=held_until_followed) as stub:
        for var, value in (("WORKBENCH_PROVIDER", "openai"), ("OPENAI_BASE_URL", stub.base_url),
                           ("OPENAI_MODEL", "stub-model")):
            monkeypatch.setenv(var, value)
        settings: Settings = load_settings()
        store = Store(settings.db_url)
        replica = LocalQueue(settings, store)  # another app replica's pool
        sid = submit_session(replica, settings, store, QUESTION, world_id="gateway-timeout")

        # A browser opening the shared link ?session=... (Ask is the default page).
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        at.query_params["session"] = sid
        at.run()
        replica.close()
    assert not at.exception, at.exception
    assert following.is_set()
    row = store.get_session(sid)
    assert row["status"] == "completed"
    labels = [e.label for e in at.expander] + [getattr(e, "label", "") for e in at.get("status")]
    assert any("Planner" in str(label) for label in labels), labels
    assert any(f"-badge[{row['verdict']}]" in m.value for m in at.markdown)
