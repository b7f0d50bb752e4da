"""A finished alert-triggered session, announced to a chat webhook (`notify.url`).

The post is Slack-compatible JSON `{"text": ...}` (Mattermost, Rocket.Chat and most chat tools
take the same): the alerts, the verdict, the answer's lead sentence and the Trace link. It is
tried `notify.attempts` times, each within `notify.timeout_s`, with backoff between them, again
only after a timeout, a lost connection, 429 or 5xx. A message that cannot be delivered is
logged and dropped: the session is stored either way. The URL itself is never logged, since a
chat webhook's path is its secret.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from pipeline.core.config import NotifySettings, Settings
from pipeline.store import Store
from pipeline.store.rows import SessionColumns

log = logging.getLogger(__name__)
MAX_ALERTS_NAMED = 3


def trace_url(ui_url: str, session_id: str) -> str:
    return f"{ui_url.rstrip('/')}/trace?session={quote(session_id)}"


def _slack_text(text: str) -> str:
    # Slack reads <...> as a link or mention and & as an entity: text from the alert is plain text.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def message(row: SessionColumns, ui_url: str) -> str:
    """The text posted for a completed session row."""
    alerts = row["trigger"].get("alerts", []) if row["trigger"] else []
    named = ", ".join(f"{a.get('alertname') or 'alert'} on {a.get('service') or 'unknown service'}"
                      for a in alerts[:MAX_ALERTS_NAMED])
    if len(alerts) > MAX_ALERTS_NAMED:
        named += f" (+{len(alerts) - MAX_ALERTS_NAMED} more)"
    lead = ((row.get("composer_output") or {}).get("answer_summary")
            or (row.get("final_answer") or "").strip().split("\n", 1)[0])
    return "\n".join([
        _slack_text(f"Diagnosis of {named or 'an alert group'}: {row.get('verdict')}"),
        _slack_text(lead),
        f"Trace: {trace_url(ui_url, row['id'])}",
    ])


def _worth_retrying(exc: BaseException) -> bool:
    if isinstance(exc, httpx.HTTPStatusError):
        return exc.response.status_code == 429 or exc.response.status_code >= 500
    return isinstance(exc, httpx.TransportError)


def post(url: str, payload: dict[str, Any], cfg: NotifySettings) -> None:
    """POST `payload` as JSON to `url`, retried as the module says; raises the last failure."""
    with httpx.Client(timeout=cfg.timeout_s, follow_redirects=False) as client:
        for attempt in Retrying(stop=stop_after_attempt(cfg.attempts), wait=wait_exponential(multiplier=0.5, max=4),
                                retry=retry_if_exception(_worth_retrying), reraise=True):
            with attempt:
                client.post(url, json=payload).raise_for_status()


def notify_session(settings: Settings, store: Store, session_id: str) -> bool:
    """Post the session if it was triggered by Alertmanager, completed, and a URL is set;
    whether a post was delivered. Never raises for a receiver that fails."""
    cfg = settings.notify
    if not cfg.url:
        return False
    row = store.get_session(session_id)
    if not row or row["status"] != "completed" or not row["trigger"] or row["trigger"]["kind"] != "alertmanager":
        return False
    try:
        post(cfg.url, {"text": message(row, cfg.ui_url)}, cfg)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        status = f" {exc.response.status_code}" if isinstance(exc, httpx.HTTPStatusError) else ""
        log.warning("notify: session %s not announced to %s: %s%s", session_id, urlsplit(cfg.url).hostname,
                    type(exc).__name__, status)
        return False
    return True
