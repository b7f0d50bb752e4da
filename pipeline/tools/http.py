"""The one HTTP GET the real backends share: auth, TLS, timeout, size cap, tolerant decoding.

On httpx (as the notifications are): one timeout per connect, read and write, redirects
followed as a browser would, the reply read as a stream so the size cap holds before the body
is in memory. Every failure becomes a BackendError whose message names the backend, the URL
and the cause; the orchestrator stores it as the invocation's error.
"""

from __future__ import annotations

import base64
import json
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from pipeline.core.config import BackendSettings
from pipeline.core.errors import BackendError
from pipeline.text.redact import redact, safe_url

_READ_CHUNK = 256 * 1024


@dataclass(frozen=True)
class HttpReply:
    url: str  # redacted: it is only ever shown
    status: int
    text: str
    # Invalid UTF-8 sequences replaced by U+FFFD; reported so a mangled line is not mistaken
    # for what the service really logged.
    decode_errors: int

    def json(self) -> Any:
        try:
            return json.loads(self.text)
        except json.JSONDecodeError as exc:
            raise BackendError(f"{self.url}: reply is not JSON ({exc.msg} at char {exc.pos})") from exc


def decode_counting(raw: bytes) -> tuple[str, int]:
    """UTF-8 text of raw bytes and the number of invalid sequences that were replaced."""
    try:
        return raw.decode("utf-8"), 0
    except UnicodeDecodeError:
        text = raw.decode("utf-8", errors="replace")
        genuine = raw.count("\ufffd".encode())
        return text, text.count("\ufffd") - genuine


def build_url(base: str, path: str, params: dict[str, Any] | None = None) -> str:
    url = base.rstrip("/") + "/" + path.lstrip("/")
    clean = {k: v for k, v in (params or {}).items() if v is not None}
    return f"{url}?{urllib.parse.urlencode(clean)}" if clean else url


def _without_userinfo(url: str) -> tuple[str, str | None]:
    """(url without `user:pass@`, a Basic Authorization value for it): sent as a header, the
    credentials never appear in a URL that a message shows."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.hostname or ""
    netloc = (f"[{host}]" if ":" in host else host) + (f":{parts.port}" if parts.port else "")
    pair = f"{urllib.parse.unquote(parts.username or '')}:{urllib.parse.unquote(parts.password or '')}"
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc)), "Basic " + base64.b64encode(pair.encode()).decode()


def http_get(
    cfg: BackendSettings,
    path: str,
    params: dict[str, Any] | None = None,
    *,
    what: str,
    max_bytes: int | None = None,
) -> HttpReply:
    """GET `path` under cfg.url. HTTP >= 400, timeouts and oversized replies raise BackendError,
    whose message is redacted: it becomes an invocation error, a prompt line, a doctor line."""
    if not cfg.url:
        raise BackendError(f"{what}: no url configured")
    base, basic = _without_userinfo(cfg.url)
    url = build_url(base, path, params)
    shown = safe_url(url)
    headers = {"Accept": "application/json", "User-Agent": "evidence-workbench"}
    if cfg.bearer_token:
        headers["Authorization"] = f"Bearer {cfg.bearer_token}"
    elif basic:
        headers["Authorization"] = basic
    try:
        with httpx.Client(timeout=cfg.timeout_s, verify=cfg.verify_tls, follow_redirects=True) as client, \
                client.stream("GET", url, headers=headers) as resp:
            if resp.status_code >= 400:
                body = _read_capped(resp.iter_bytes(_READ_CHUNK), 64 * 1024, what, shown, cut=True)
                raise BackendError(redact(f"{what}: HTTP {resp.status_code} from {shown}: {_error_detail(body)}"))
            # Refused rather than parsed beyond the cap: a runaway query must not eat memory.
            raw = _read_capped(resp.iter_bytes(_READ_CHUNK), max_bytes or cfg.max_reply_bytes, what, shown)
            status = resp.status_code
    except httpx.TimeoutException as exc:
        raise BackendError(f"{what}: no answer from {shown} within {cfg.timeout_s:g}s") from exc
    except httpx.ConnectError as exc:
        raise BackendError(redact(f"{what}: cannot reach {shown}: {exc}")) from exc
    except (httpx.HTTPError, OSError) as exc:
        raise BackendError(redact(f"{what}: connection to {shown} failed: {exc}")) from exc
    text, errors = decode_counting(raw)
    return HttpReply(url=shown, status=status, text=text, decode_errors=errors)


def _read_capped(chunks: Iterator[bytes], max_bytes: int, what: str, url: str, *, cut: bool = False) -> bytes:
    kept: list[bytes] = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > max_bytes:
            if cut:
                kept.append(chunk)
                return b"".join(kept)[:max_bytes]
            raise BackendError(f"{what}: reply from {url} exceeds {max_bytes} bytes (max_reply_bytes); narrow the query")
        kept.append(chunk)
    return b"".join(kept)


def _error_detail(body: bytes) -> str:
    """Prometheus and Loki put the reason in a JSON `error` field or in plain text."""
    text, _ = decode_counting(body)
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return text.strip()[:300] or "(empty body)"
    if isinstance(data, dict) and data.get("error"):
        kind = data.get("errorType")
        return f"{kind}: {data['error']}" if kind else str(data["error"])
    return text.strip()[:300]
