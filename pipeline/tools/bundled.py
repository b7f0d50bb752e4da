"""Tool backends over one bundled incident world (data/incidents/<world>/).

The world's files are read once per process and filtered in memory: they are small, and the
offline session benchmark runs every bundled question many times.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from pipeline.core.contracts import EvidenceTime
from pipeline.text.primitives import normalize
from pipeline.tools.prometheus import series_name
from pipeline.tools.queries import LogQuery, MetricsQuery, NoData
from pipeline.tools.results import Alert, LogItem, LogsOutput, MetricsOutput, Series

LEVELS = {"DEBUG": 10, "INFO": 20, "WARN": 30, "WARNING": 30, "ERROR": 40, "FATAL": 50}


def _ts(value: str | None) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


@lru_cache(maxsize=32)
def _logs(path: Path) -> tuple[tuple[dict[str, Any], datetime | None, str], ...]:
    rows = []
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.strip():
                rec = json.loads(line)
                rows.append((rec, _ts(rec.get("ts")), normalize(rec.get("message", ""))))
    return tuple(rows)


@lru_cache(maxsize=32)
def _alerts(path: Path) -> tuple[Alert, ...]:
    return tuple(json.loads(path.read_text(encoding="utf-8")))


@lru_cache(maxsize=32)
def _series(path: Path) -> tuple[tuple[dict[str, str], float], ...]:
    """metrics.yaml `series:` as (labels with __name__, value); a world without the file has none."""
    if not path.is_file():
        return ()
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return tuple(({"__name__": str(s["name"]), **{str(k): str(v) for k, v in (s.get("labels") or {}).items()}},
                  float(s["value"])) for s in data.get("series") or [] if isinstance(s, dict) and "name" in s)


_SELECTOR = re.compile(r'^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*(?:\{(.*)\})?\s*$')
_MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*,?')


def _selector(promql: str) -> list[tuple[str, str, str]] | None:
    """A bare PromQL series selector (`name{label="v", __name__=~"re"}`) as (label, op, value)
    matchers; None for anything else (functions, arithmetic): the bundled world holds instant
    values only, so it answers selectors and says so otherwise."""
    m = _SELECTOR.match(promql)
    if not m or not (m.group(1) or m.group(2)):
        return None
    matchers = [("__name__", "=", m.group(1))] if m.group(1) else []
    body = m.group(2) or ""
    pos = 0
    while pos < len(body):
        mm = _MATCHER.match(body, pos)
        if not mm or mm.end() == pos:
            return None
        matchers.append((mm.group(1), mm.group(2), mm.group(3)))
        pos = mm.end()
    return matchers


def _matches(labels: dict[str, str], matchers: list[tuple[str, str, str]]) -> bool:
    for label, op, value in matchers:
        have = labels.get(label, "")
        if (op == "=" and have != value) or (op == "!=" and have == value) or (
                op == "=~" and not re.fullmatch(value, have)):
            return False
    return True


def _nothing(what: str, service: str | None, world_dir: Path | None) -> str:
    """The no-data message names the service and where it was looked for: the answer repeats
    it ("no logs ... for billing-service in ..."), never another incident's story."""
    subject = f" for {service}" if service else ""
    where = f"bundled incident {world_dir.name}" if world_dir else "the bundled incidents (none holds this service)"
    return f"no {what}{subject} matched the query in {where}"


class BundledLogs:
    def __init__(self, world_dir: Path | None, limit: int = 500):
        self.world_dir = world_dir
        self.limit = limit

    def latest_evidence(self, services: Sequence[str]) -> EvidenceTime | None:
        if self.world_dir is None:
            return None
        times = [(ts, str(rec.get("service") or "")) for rec, ts, _ in _logs(self.world_dir / "logs.jsonl")
                 if ts is not None and (not services or rec.get("service") in services)]
        at, service = max(times, default=(None, ""))
        return EvidenceTime(at=at, service=service, kind="log") if at else None

    def query_logs(self, q: LogQuery) -> LogsOutput:
        if self.world_dir is None:
            raise NoData(_nothing("log lines", q.service, None))
        min_level = LEVELS.get((q.level or "DEBUG").upper(), 10)
        words = [normalize(k) for k in q.keywords if k.strip()]
        limit = min(q.limit, self.limit)
        hits: list[LogItem] = []
        total = 0
        for rec, ts, norm_msg in _logs(self.world_dir / "logs.jsonl"):
            if q.service and rec.get("service") != q.service:
                continue
            if LEVELS.get(str(rec.get("level", "INFO")).upper(), 20) < min_level:
                continue
            if q.start and ts and ts < q.start:
                continue
            if q.end and ts and ts > q.end:
                continue
            if words and not any(w in norm_msg for w in words):
                continue
            total += 1
            if len(hits) < limit:
                hits.append(
                    {
                        "timestamp": rec.get("ts"),
                        "service": rec.get("service"),
                        "level": rec.get("level"),
                        "message": rec.get("message", ""),
                        "host": rec.get("host"),
                    }
                )
        if not hits:
            raise NoData(_nothing("log lines", q.service, self.world_dir))
        return {"logs": hits, "total": total, "truncated": total > len(hits)}


class BundledMetrics:
    def __init__(self, world_dir: Path | None):
        self.world_dir = world_dir

    def latest_evidence(self, services: Sequence[str]) -> EvidenceTime | None:
        """When an alert of `services` last began or ended."""
        if self.world_dir is None:
            return None
        times = [(ts, str(alert.get("service") or "")) for alert in _alerts(self.world_dir / "alerts.json")
                 if not services or alert.get("service") in services
                 for ts in (_ts(alert.get("startsAt")), _ts(alert.get("endsAt"))) if ts is not None]
        at, service = max(times, default=(None, ""))
        return EvidenceTime(at=at, service=service, kind="alert") if at else None

    def query_metrics(self, q: MetricsQuery) -> MetricsOutput:
        if self.world_dir is None:
            raise NoData(_nothing("alerts", q.service, None))
        status = (q.status or "all").lower()
        alerts: list[Alert] = []
        for alert in _alerts(self.world_dir / "alerts.json"):
            if q.service and alert.get("service") != q.service:
                continue
            if status not in ("all", "") and alert.get("status") != status:
                continue
            if q.alertname and alert.get("alertname") != q.alertname:
                continue
            # An alert belongs to a window it overlaps: one firing since before it still counts.
            began, ended = _ts(alert.get("startsAt")), _ts(alert.get("endsAt"))
            if q.end and began and began > q.end:
                continue
            if q.start and ended and ended < q.start:
                continue
            alerts.append(alert.copy())
        series = self._series(q) if q.promql else []
        if not alerts and not series:
            raise NoData(_nothing("alerts or series" if q.promql else "alerts", q.service, self.world_dir))
        out: MetricsOutput = {"alerts": alerts, "total": len(alerts)}
        if q.promql:
            out["series"], out["series_total"] = series, len(series)
            out["query"] = {"promql": q.promql, "type": "instant"}
        return out

    def _series(self, q: MetricsQuery) -> list[Series]:
        assert self.world_dir is not None and q.promql is not None
        matchers = _selector(q.promql)
        if matchers is None:
            raise NoData(f"the bundled incident {self.world_dir.name} answers PromQL series selectors only, "
                         f"not {q.promql!r}")
        out: list[Series] = []
        for labels, value in _series(self.world_dir / "metrics.yaml"):
            if _matches(labels, matchers) and (not q.service or labels.get("service") == q.service):
                shown = f"{value:g}"
                out.append({"metric": labels, "values": [[None, shown]],
                            "description": f"{series_name(labels)} = {shown}"})
        return out
