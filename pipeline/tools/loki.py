"""query_logs against Loki's /loki/api/v1/query_range.

The LogQL is built from the query: a stream selector on `service`, a case-insensitive line
filter for the keywords, and a line filter for the minimum level. Loki matches the level only
as text, so each returned line is parsed again (JSON or text shape, as for log files) and its
level checked here; a stream label `level`/`detected_level` wins over the line's own.
"""

from __future__ import annotations

import re

from pipeline.core.config import BackendSettings
from pipeline.core.errors import BackendError
from pipeline.tools.http import http_get
from pipeline.tools.logfiles import (
    LEVEL_RANK,
    iso,
    level_words,
    normalize_level,
    parse_line,
    parse_timestamp,
    utc,
)
from pipeline.tools.queries import LogQuery, NoData
from pipeline.tools.results import LogItem, LogsOutput

_RE2_SPECIAL = re.compile(r"([\\.^$|?*+()\[\]{}])")


def _logql_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _re2_literal(text: str) -> str:
    return _RE2_SPECIAL.sub(r"\\\1", text)


def build_logql(q: LogQuery) -> str:
    selector = "{service=" + _logql_string(q.service) + "}" if q.service else '{job=~".+"}'
    parts = [selector]
    keywords = [k for k in q.keywords if k.strip()]
    if keywords:
        parts.append("|~ " + _logql_string("(?i)" + "|".join(_re2_literal(k) for k in keywords)))
    level = normalize_level(q.level) if q.level else None
    if level and LEVEL_RANK[level] > 0:
        parts.append("|~ " + _logql_string("(?i)\\b(" + "|".join(level_words(level)) + ")\\b"))
    return " ".join(parts)


class LokiLogs:
    """The query_logs backend over a Loki server at cfg.url."""

    def __init__(self, cfg: BackendSettings) -> None:
        if not cfg.url:
            raise ValueError("query_logs backend 'loki' needs backends.query_logs.url")
        self.cfg = cfg

    def query_logs(self, q: LogQuery) -> LogsOutput:
        limit = min(q.limit, self.cfg.limit)
        logql = build_logql(q)
        start, end = utc(q.start), utc(q.end)
        params = {
            "query": logql,
            # One more than we keep: a full extra line is how we know the answer was cut.
            "limit": limit + 1,
            "direction": "backward",
            "start": int(start.timestamp() * 1e9) if start else None,
            "end": int(end.timestamp() * 1e9) if end else None,
        }
        reply = http_get(self.cfg, "/loki/api/v1/query_range", params, what="loki")
        body = reply.json()
        if not isinstance(body, dict) or body.get("status") != "success":
            raise BackendError(f"loki: {reply.url} answered {str(body)[:300]}")
        data = body.get("data") or {}
        if data.get("resultType") != "streams":
            raise BackendError(f"loki: expected resultType 'streams' for a log query, got {data.get('resultType')!r}")

        min_level = normalize_level(q.level) if q.level else None
        entries: list[tuple[int, LogItem]] = []
        seen = 0
        for stream in data.get("result") or []:
            labels = {str(k): str(v) for k, v in (stream.get("stream") or {}).items()}
            label_level = normalize_level(labels.get("level") or labels.get("detected_level"))
            for ts_ns, line in stream.get("values") or []:
                seen += 1
                parsed = parse_line(line)
                level = label_level or parsed.level
                if min_level and (level is None or LEVEL_RANK[level] < LEVEL_RANK[min_level]):
                    continue
                entries.append(
                    (
                        int(ts_ns),
                        {
                            "timestamp": iso(parse_timestamp(str(ts_ns))),
                            "service": labels.get("service") or parsed.service or labels.get("job"),
                            "level": level,
                            "message": parsed.message,
                            "labels": labels,
                        },
                    )
                )
        if not entries:
            raise NoData(f"Loki returned no line for {logql}")
        # Loki answered newest first; keep the newest `limit`, present them oldest first.
        entries.sort(key=lambda e: e[0], reverse=True)
        kept = [e for _, e in entries[:limit]][::-1]
        return {
            "logs": kept,
            "total": len(entries),
            "truncated": len(entries) > limit,
            "decode_errors": reply.decode_errors,
            "query": logql,
            "lines_returned_by_loki": seen,
            "source": f"loki:{self.cfg.url}",
        }
