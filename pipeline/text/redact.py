"""Secrets never leave the process in clear: URL userinfo, bearer tokens, API keys (law 9).

Two nets, both applied by `redact`:
- the configured secrets themselves (OPENAI_API_KEY, backend bearer tokens, passwords in any
  configured URL, any *_TOKEN / *_KEY / *_SECRET / *_PASSWORD environment variable), replaced
  wherever they occur, whatever surrounds them;
  and the base64 of a URL's `user:pass` (the Basic credentials the backends send, which a
  backend may echo bare);
- shapes that are secrets wherever they come from: `scheme://user:pass@`, `Bearer <token>`,
  `Basic <base64 of user:pass>`, `Authorization: <value>` (a JSON header list included),
  `api_key=` / `token=` / `password=` parameters, `sk-...` keys.

Secret by what it is, not by what it looks like: a user name alone (`postgresql://payment@db`) is
no secret and is never masked as a word, so `payment-service` stays readable in the evidence.
`mask_known` keeps configured secrets a person types (a question, a note, a label) out of the
store. `safe_url` is every URL the workbench prints, and log lines (ours and the HTTP clients')
also lose a URL's path segments that read as generated tokens (a chat webhook's
`/services/T0/B0/<secret>`); stored evidence keeps its URLs verbatim, less configured secrets.

Applied where text is written or sent: backend errors (tools/http.py), invocation errors and
outputs (session.py, bundle import), LLM prompts and records (llm/invoker.py, session.py),
exports (bundle.py), `doctor`, and the worker's and webhook's logs (`redact_logs`). Text is data
here: a redaction never raises.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import re
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

MASK = "***"
# Shorter configured values are too likely to be ordinary words ("test", "abc") to mask everywhere.
MIN_SECRET_CHARS = 6
_SECRET_ENV = re.compile(r"(TOKEN|API_KEY|ACCESS_KEY|SECRET|PASSWORD|PASSWD)$", re.I)

_TOKEN_CHARS = re.compile(r"[A-Za-z0-9._~+/=%-]+")


def token_like(text: str) -> bool:
    """Whether a bare value reads as a generated secret rather than a name: 32+ characters of a
    token's alphabet, or 16+ mixing letters and digits. "payment", "postgres", "T0B1" do not."""
    if not _TOKEN_CHARS.fullmatch(text):
        return False
    return len(text) >= 32 or (len(text) >= 16 and any(c.isdigit() for c in text) and any(c.isalpha() for c in text))


def _credential_token(match: re.Match[bytes]) -> bytes:
    token = match.group(2)
    if re.search(rb"[0-9._~+/=-]", token) or _basic_pair(token):
        return match.group(1) + b" " + MASK.encode()
    return match.group(0)


def _basic_pair(token: bytes) -> bool:
    """Whether `token` is base64 of `user:pass` (printable text with a colon)."""
    try:
        decoded = base64.b64decode(token + b"=" * (-len(token) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded and decoded.isascii() and all(32 <= c < 127 for c in decoded)


# Byte patterns (ASCII only): a run of non-ASCII bytes is never split, so the result stays UTF-8.
_PATTERNS: tuple[tuple[re.Pattern[bytes], bytes | Callable[[re.Match[bytes]], bytes]], ...] = (
    # scheme://user:pass@host and scheme://token@host: the userinfo is credentials either way.
    (re.compile(rb"\b([a-zA-Z][a-zA-Z0-9+.-]{1,15}://)[^/\s@\"'<>]+@"), rb"\1***@"),
    # `Authorization: v`, `"Authorization": "v"` and a header dump's `"Authorization": ["v"]`.
    (re.compile(rb"(?i)\b(authorization[\"']?\s*[:=]\s*\[?\s*[\"']?)(?:(?:bearer|basic|token|apikey)\s+)?"
                rb"[^\s\"',;}\]]+"), rb"\1***"),
    # A token has a digit or a symbol, or is base64 of `user:pass`; "basic information" and
    # "bearer authentication" stay.
    (re.compile(rb"(?i)\b(bearer|basic)\s+([A-Za-z0-9._~+/=-]{8,})"), _credential_token),
    (re.compile(rb"(?i)\b((?:x-)?api[_-]?key|apikey|access[_-]?token|refresh[_-]?token|auth[_-]?token|token|secret|"
                rb"client[_-]?secret|password|passwd)([\"']?\s*[=:]\s*[\"']?)(?!\*\*\*)[^\s&\"',;}]{3,}"),
     rb"\1\2***"),
    (re.compile(rb"\bsk-[A-Za-z0-9_-]{16,}"), b"***"),
    (re.compile(rb"\b(?:ghp|gho|ghs|github_pat|xox[abprs])[-_][A-Za-z0-9_-]{12,}"), b"***"),
    (re.compile(rb"\bAKIA[0-9A-Z]{16}\b"), b"***"),
)
# Each pattern (by index) holds one of its hints (lower-cased). Python's regex engine tries an
# alternation at every position of an output, where bytes.find searches for a literal in C, so a
# pattern only runs on the windows around its own hints.
_HINTS: dict[bytes, tuple[int, ...]] = {
    b"://": (0,), b"authoriz": (1,), b"bearer": (2,), b"basic": (2,), b"key": (3,), b"token": (3,),
    b"secret": (3,), b"passw": (3,), b"sk-": (4,), b"ghp_": (5,), b"gho_": (5,), b"ghs_": (5,),
    b"github_pat": (5,), b"xox": (5,), b"akia": (6,),
}
# A name or scheme precedes its hint; a separator and the start of the value follow it, and the
# window then runs to the end of the value (up to _LONGEST: a JWT is a few KB).
_BEFORE, _AFTER, _LONGEST = 48, 64, 16384
_DELIM = re.compile(rb"[\s&\"',;}]")
_SECRET_KEY = re.compile(r"(?i)^(authorization|(x-)?api[_-]?key|apikey|[a-z_-]*token|[a-z_-]*secret|password|passwd)$")
_WORD = re.compile(rb"[A-Za-z0-9_]")

_lock = threading.Lock()
_known: frozenset[str] = frozenset()


def basic_forms(user: str, password: str) -> list[str]:
    """The base64 forms `user:pass` travels in as Basic credentials (padded and not, standard
    and URL-safe alphabet): a backend may echo the header value without its `Basic ` prefix."""
    pair = f"{user}:{password}".encode()
    forms = {base64.b64encode(pair).decode(), base64.urlsafe_b64encode(pair).decode()}
    return sorted(forms | {f.rstrip("=") for f in forms})


def remember(*secrets: str | None) -> None:
    """Add configured secret values; every later `redact` masks them."""
    global _known
    fresh = {s for s in secrets if s and len(s) >= MIN_SECRET_CHARS}
    # Percent-encoded passwords in URLs appear decoded in some messages and encoded in others.
    fresh |= {unquote(s) for s in fresh if len(unquote(s)) >= MIN_SECRET_CHARS}
    with _lock:
        _known = _known | fresh


def path_secrets(url: str | None) -> list[str]:
    """The path segments of a configured URL that read as tokens (a notify URL's secret path)."""
    try:
        path = urlsplit(url).path if url else ""
    except ValueError:
        return []
    return [unquote(seg) for seg in path.split("/") if token_like(unquote(seg))]


def url_secrets(url: str | None) -> list[str]:
    """The secret of a URL's userinfo: the password, or a lone user part that is a token
    (`https://TOKEN@host`), and the base64 forms of `user:pass` that tools/http.py sends as Basic
    credentials. A user name ("prometheus", or a database's `payment` in `postgresql://payment@db`)
    is no secret, and masking it everywhere would blank ordinary words (`***-service`)."""
    if not url or "@" not in url:
        return []
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    secret = parts.password
    if secret is None and parts.username and token_like(unquote(parts.username)):
        secret = parts.username
    if not secret:
        return []
    return [secret, *basic_forms(unquote(parts.username or ""), unquote(parts.password or ""))]


def remember_settings(settings: Any) -> None:
    """Every secret a Settings object (pipeline.core.config) or the environment can hold."""
    o = settings.openai
    found: list[str | None] = [o.api_key, *url_secrets(o.base_url), *url_secrets(settings.database_url)]
    for tool in ("query_logs", "query_metrics", "lookup_knowledge"):
        backend = getattr(settings.backends, tool)
        found += [backend.bearer_token, *url_secrets(backend.url)]
    found += [*path_secrets(settings.notify.url), *url_secrets(settings.notify.url),
              *path_secrets(settings.telemetry.otlp_endpoint), *url_secrets(settings.telemetry.otlp_endpoint)]
    found += [value for name, value in os.environ.items() if _SECRET_ENV.search(name)]
    found += [s for name, value in os.environ.items() if name.endswith("_URL") for s in url_secrets(value)]
    remember(*found)


def _windows(data: bytes) -> list[tuple[int, int, set[int]]]:
    low = data.lower()
    spans: list[tuple[int, int, tuple[int, ...]]] = []
    for hint, patterns in _HINTS.items():
        at = low.find(hint)
        while at >= 0:
            start = max(0, at - _BEFORE)
            while start > 0 and _WORD.match(data, start - 1):  # never start inside a word (\b)
                start -= 1
            end = at + len(hint) + _AFTER
            stop = _DELIM.search(data, end, end + _LONGEST)
            spans.append((start, min(len(data), stop.start() if stop else end + _LONGEST), patterns))
            at = low.find(hint, at + len(hint))
    spans.sort()
    merged: list[tuple[int, int, set[int]]] = []
    for start, end, patterns in spans:
        if merged and start <= merged[-1][1]:
            last = merged[-1]
            merged[-1] = (last[0], max(last[1], end), last[2] | set(patterns))
        else:
            merged.append((start, end, set(patterns)))
    return merged


def mask_known(text: str) -> str:
    """`text` with every configured secret masked, and nothing else changed: for what a person
    types (a question, a note, a label), where a secret-shaped word may be the very subject."""
    for secret in sorted((s for s in _known if s in text), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def safe_url(url: str) -> str:
    """A URL as the workbench prints or logs it: no userinfo, token-like path segments cut,
    secret parameters and configured secrets masked."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url)
    path = "/".join(MASK if token_like(unquote(seg)) else seg for seg in parts.path.split("/"))
    return redact(urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2], path=path)))


_URL_PATH = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]{1,15}://[^/\s\"'<>]*)(/[^\s\"'<>?#]*)")


def _cut_path(match: re.Match[str]) -> str:
    return match.group(1) + "/".join(MASK if token_like(seg) else seg for seg in match.group(2).split("/"))


def redact_line(text: str) -> str:
    """A log line redacted, with each URL's token-like path segments cut as well."""
    return _URL_PATH.sub(_cut_path, redact(text)) if "://" in text else redact(text)


def redact(text: str) -> str:
    """`text` with every known secret and secret-shaped token masked."""
    if not text:
        return text
    text = mask_known(text)
    data = text.encode("utf-8", "surrogatepass")
    windows = _windows(data)
    if not windows:
        return text
    out: list[bytes] = []
    done = 0
    for start, end, patterns in windows:
        piece = data[start:end]
        for index in sorted(patterns):
            pattern, repl = _PATTERNS[index]
            piece = pattern.sub(repl, piece)
        out += [data[done:start], piece]
        done = end
    out.append(data[done:])
    return b"".join(out).decode("utf-8", "surrogatepass")


def redact_value(value: Any) -> Any:
    """A JSON-like value (messages, bundles, arguments) with every string redacted, keys included."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(k) if isinstance(k, str) else k:
                MASK if isinstance(k, str) and isinstance(v, str) and v and _SECRET_KEY.match(k) else redact_value(v)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(v) for v in value]
    return value


class RedactingFilter(logging.Filter):
    """Log records redacted before any handler writes them: message, arguments and traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = redact_line(record.getMessage()), None
        if record.exc_info:
            # A formatter uses exc_text once it is set (an earlier handler may have set it), so
            # setting it redacted here makes every later handler write the traceback redacted.
            record.exc_text = redact_line(record.exc_text or logging.Formatter().formatException(record.exc_info))
        return True


# Clients that log URLs and headers themselves: httpx logs each request's URL (a chat webhook's
# secret path), openai and urllib3 log requests at debug. Their records reach the root's handlers,
# and a handler of their own (openai's OPENAI_LOG sets one up) is filtered too.
THIRD_PARTY_LOGGERS = ("httpx", "httpcore", "urllib3", "openai", "hypercorn.error")


def redact_logs() -> None:
    """Put a RedactingFilter on every handler of the root logger and of THIRD_PARTY_LOGGERS (call
    once logging is set up): a filter on a handler sees every record it writes, a filter on a
    logger only the records logged on that very logger, not its children's."""
    loggers = [logging.getLogger(), *(logging.getLogger(name) for name in THIRD_PARTY_LOGGERS)]
    for handler in (h for lg in loggers for h in lg.handlers):
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
