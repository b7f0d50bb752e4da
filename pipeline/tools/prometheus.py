"""query_metrics against a Prometheus server's HTTP API.

Alerts come from /api/v1/alerts (firing and pending). Prometheus forgets an alert once it
resolves, so resolved ones are recovered from the ALERTS series over the query window.
An optional PromQL expression runs as an instant query, or as a range query when the window is
given, with a step that keeps each series near 100 points. Every series gets a one-line
`description` so a digest can quote it the way it quotes an alert.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pipeline.core.config import BackendSettings
from pipeline.core.errors import BackendError
from pipeline.tools.http import http_get
from pipeline.tools.logfiles import iso, parse_timestamp, utc
from pipeline.tools.queries import MetricsQuery, NoData
from pipeline.tools.results import Alert, MetricsOutput, Series

MAX_POINTS = 100
# How far back resolved alerts are looked for when the question names no window.
DEFAULT_LOOKBACK = timedelta(hours=1)


def _format_value(raw: Any) -> str:
    try:
        num = float(raw)
    except (TypeError, ValueError):
        return str(raw)
    if math.isnan(num) or math.isinf(num):
        return str(raw)
    return str(int(num)) if num.is_integer() and abs(num) < 1e15 else f"{num:.6g}"


def render_labels(labels: dict[str, str], *, skip: tuple[str, ...] = ()) -> str:
    inner = ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items()) if k not in skip)
    return "{" + inner + "}"


def series_name(metric: dict[str, str]) -> str:
    return metric.get("__name__", "") + render_labels(metric, skip=("__name__",))


def step_for(start: datetime, end: datetime) -> int:
    """Seconds between points so that [start, end] holds at most ~MAX_POINTS of them."""
    return max(1, math.ceil((end - start).total_seconds() / MAX_POINTS))


class PrometheusMetrics:
    """The query_metrics backend over a Prometheus server at cfg.url."""

    def __init__(self, cfg: BackendSettings) -> None:
        if not cfg.url:
            raise ValueError("query_metrics backend 'prometheus' needs backends.query_metrics.url")
        self.cfg = cfg

    def _api(self, path: str, params: dict[str, Any] | None = None) -> Any:
        reply = http_get(self.cfg, path, params, what="prometheus")
        body = reply.json()
        if not isinstance(body, dict):
            raise BackendError(f"prometheus: {reply.url} answered {str(body)[:200]!r}, not an API object")
        if body.get("status") != "success":
            raise BackendError(f"prometheus: {reply.url} answered status {body.get('status')!r}: {body.get('error')}")
        return body.get("data")

    def query_metrics(self, q: MetricsQuery) -> MetricsOutput:
        now = datetime.now(UTC)
        alerts = [a for a in self._active_alerts() if self._wanted(a, q)]
        if q.status in ("resolved", "all"):
            active = {(a["alertname"], tuple(sorted(a["labels"].items()))) for a in alerts}
            for a in self._resolved_alerts(q, now):
                if (a["alertname"], tuple(sorted(a["labels"].items()))) not in active and self._wanted(a, q):
                    alerts.append(a)
        alerts.sort(key=lambda a: (a["status"] != "firing", a["startsAt"] or ""))
        limit = self.cfg.limit
        out: MetricsOutput = {
            "alerts": alerts[:limit],
            "total": len(alerts),
            "truncated": len(alerts) > limit,
            "source": f"prometheus:{self.cfg.url}",
        }
        if q.promql:
            series, kind = self._promql(q, now)
            out["series"] = series[:limit]
            out["query"] = {"promql": q.promql, "type": kind}
            out["series_total"] = len(series)
            out["truncated"] = out["truncated"] or len(series) > limit
        if not out["alerts"] and not out.get("series"):
            parts = [f"PromQL {q.promql!r} returned no series"] if q.promql else []
            parts.append("no alert matches" if q.status == "all" else f"no {q.status} alert matches")
            raise NoData("; ".join(parts))
        return out

    @staticmethod
    def _wanted(alert: Alert, q: MetricsQuery) -> bool:
        if q.alertname and alert["alertname"] != q.alertname:
            return False
        if q.service and q.service not in (alert["labels"].get("service"), alert["labels"].get("job")):
            return False
        if q.status == "firing" and alert["status"] != "firing":
            return False
        return not (q.status == "resolved" and alert["status"] != "resolved")

    def _active_alerts(self) -> list[Alert]:
        data = self._api("/api/v1/alerts")
        items = data.get("alerts", []) if isinstance(data, dict) else []
        return [self._alert(a) for a in items if a.get("state") in ("firing", "pending")]

    @staticmethod
    def _alert(raw: dict[str, Any]) -> Alert:
        labels = dict(raw.get("labels") or {})
        ann = dict(raw.get("annotations") or {})
        description = ann.get("description") or ann.get("summary") or render_labels(labels)
        return {
            "alertname": labels.get("alertname", ""),
            "service": labels.get("service") or labels.get("job"),
            "severity": labels.get("severity"),
            "status": raw.get("state"),
            "startsAt": raw.get("activeAt"),
            "description": description,
            "summary": ann.get("summary"),
            "labels": labels,
            "annotations": ann,
            "value": _format_value(raw.get("value")),
        }

    def _resolved_alerts(self, q: MetricsQuery, now: datetime) -> list[Alert]:
        end = utc(q.end) or now
        start = utc(q.start) or end - DEFAULT_LOOKBACK
        data = self._api(
            "/api/v1/query_range",
            {
                "query": 'ALERTS{alertstate="firing"}',
                "start": f"{start.timestamp():.3f}",
                "end": f"{end.timestamp():.3f}",
                "step": step_for(start, end),
            },
        )
        resolved: list[Alert] = []
        for s in data.get("result", []) if isinstance(data, dict) else []:
            metric = {k: v for k, v in s.get("metric", {}).items() if k not in ("__name__", "alertstate")}
            values = s.get("values") or []
            if not values:
                continue
            first = iso(parse_timestamp(float(values[0][0])))
            last = iso(parse_timestamp(float(values[-1][0])))
            resolved.append(
                {
                    "alertname": metric.get("alertname", ""),
                    "service": metric.get("service") or metric.get("job"),
                    "severity": metric.get("severity"),
                    "status": "resolved",
                    "startsAt": first,
                    "endsAt": last,
                    "description": f"{metric.get('alertname', 'alert')} {render_labels(metric, skip=('alertname',))} "
                    f"was firing from {first} to {last}",
                    "labels": metric,
                    "annotations": {},
                    "value": None,
                }
            )
        return resolved

    def _promql(self, q: MetricsQuery, now: datetime) -> tuple[list[Series], Literal["instant", "range"]]:
        kind: Literal["instant", "range"]
        if q.start or q.end:
            end = utc(q.end) or now
            start = utc(q.start) or end - DEFAULT_LOOKBACK
            data = self._api(
                "/api/v1/query_range",
                {
                    "query": q.promql,
                    "start": f"{start.timestamp():.3f}",
                    "end": f"{end.timestamp():.3f}",
                    "step": step_for(start, end),
                },
            )
            kind = "range"
        else:
            data = self._api("/api/v1/query", {"query": q.promql, "time": f"{now.timestamp():.3f}"})
            kind = "instant"
        if not isinstance(data, dict):
            raise BackendError(f"prometheus: unexpected query reply {str(data)[:200]}")
        rtype, result = data.get("resultType"), data.get("result")
        if rtype in ("scalar", "string"):
            result = [{"metric": {}, "value": result}]
        series: list[Series] = []
        for s in result or []:
            metric = dict(s.get("metric") or {})
            values = s.get("values") if "values" in s else [s.get("value")]
            values = [[float(t), str(v)] for t, v in (values or []) if t is not None]
            series.append({"metric": metric, "values": values, "description": _describe(metric, values)})
        return series, kind


def _describe(metric: dict[str, str], values: list[list[Any]]) -> str:
    name = series_name(metric) or "value"
    if not values:
        return f"{name}: no points"
    last_t, last_v = values[-1]
    at = iso(parse_timestamp(last_t))
    if len(values) == 1:
        return f"{name} = {_format_value(last_v)} at {at}"
    nums = [float(v) for _, v in values if _finite(v)]
    first_at = iso(parse_timestamp(values[0][0]))
    span = f"{len(values)} points from {first_at} to {at}"
    if not nums:
        return f"{name}: {span}"
    return (
        f"{name}: {span}; min {_format_value(min(nums))}, max {_format_value(max(nums))}, "
        f"last {_format_value(last_v)}"
    )


def _finite(v: Any) -> bool:
    try:
        return math.isfinite(float(v))
    except (TypeError, ValueError):
        return False
