"""What the workbench tells the systems around it (docs/architecture.md#telemetry).

- metrics.py  Prometheus metrics read from the store at scrape time (GET /metrics)
- notify.py   a finished alert-triggered session announced to a chat webhook
- tracing.py  a stored session as an OpenTelemetry trace (OpenInference conventions)

`session_ended` is the one place where a finished session is observed: run_session calls it
once per session that had a row, completed or failed, in the process that ran it.
"""

from __future__ import annotations

import logging

from pipeline.core.config import Settings
from pipeline.store import Store

log = logging.getLogger(__name__)


def session_ended(settings: Settings, store: Store, session_id: str) -> None:
    """Announce session `session_id`, which has just ended; never raises (the session is stored)."""
    if settings.telemetry.otlp_endpoint:
        from pipeline.telemetry.tracing import export_session

        try:
            export_session(settings, store, session_id)  # queued; a background thread sends it
        except Exception:  # noqa: BLE001 - tracing a session never fails it
            log.exception("tracing session %s", session_id)
    if not settings.notify.url:
        return
    from pipeline.telemetry.notify import notify_session

    try:
        notify_session(settings, store, session_id)
    except Exception:  # noqa: BLE001 - telling others about a session never fails it
        log.exception("after session %s", session_id)
