"""Typed tool results: every output is a list of numbered records (docs/spec.md#tool-results).

The stored output keeps the seed's JSON shape (`logs[]`, `alerts[]`, `evidenceBlocks[]` with
`contextPack.packedText`, PromQL `series[]`); everyone who reads an output reads it here, as
records, instead of re-parsing the JSON by key. Records are numbered in output order across the
lists (logs, alerts, series, evidence blocks, then the packed text), so `logs[3]` of a log query
is record 3, and a binding can cite "record 3 of invocation 12" beside its verbatim excerpt.

Each record has a `line`: its values in the tool's own order without the JSON keys, the text a
quote of it is located in. An output that is not a JSON object of a known shape is one record per
line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any, Literal, NotRequired, Required, TypedDict

RecordKind = Literal["log", "alert", "series", "block", "pack", "line"]
# Where each kind's records sit in the seed shape, in numbering order.
_LISTS: tuple[tuple[str, RecordKind], ...] = (("logs", "log"), ("alerts", "alert"), ("series", "series"),
                                               ("evidenceBlocks", "block"))
RECORD_LIST_KEYS = tuple(key for key, _ in _LISTS)
RECORD_KINDS: dict[str, RecordKind] = dict(_LISTS)
# The field that holds a record's prose, by kind.
_TEXT_FIELD = {"log": "message", "alert": "description", "series": "description", "block": "content"}


# --- what a backend returns: the seed's shape, which the store keeps as written ------------------


class LogItem(TypedDict):
    """One logs[] item."""

    timestamp: str | None
    service: str | None
    level: str | None
    message: str
    host: NotRequired[str | None]  # a bundled world's
    labels: NotRequired[dict[str, str]]  # Loki's stream labels; a log file's file and line


class LogsOutput(TypedDict):
    """What query_logs returns."""

    logs: list[LogItem]
    total: int  # lines matched, of which `logs` holds the kept ones
    truncated: bool
    decode_errors: NotRequired[int]
    query: NotRequired[str]  # the LogQL sent
    lines_returned_by_loki: NotRequired[int]
    files: NotRequired[list[str]]  # the log files read
    source: NotRequired[str]


class Series(TypedDict):
    """One series[] item of a PromQL answer."""

    metric: dict[str, str]
    values: list[list[float | str | None]]  # [time, value] pairs (an instant value has no time in a bundled world)
    description: str


class PromQuery(TypedDict):
    promql: str
    type: Literal["instant", "range"]


class Alert(TypedDict, total=False):
    """One alerts[] item: as a bundled world's alerts.json writes it, or as the Prometheus backend
    reads an active alert (then with annotations and value) or a resolved one from ALERTS."""

    alertname: Required[str]
    service: Required[str | None]
    severity: Required[str | None]
    status: Required[str | None]  # firing, pending or resolved
    startsAt: Required[str | None]
    endsAt: str | None
    description: Required[str]
    summary: str | None
    labels: Required[dict[str, str]]
    annotations: dict[str, str]
    value: str | None


class MetricsOutput(TypedDict):
    """What query_metrics returns."""

    alerts: list[Alert]
    total: int
    truncated: NotRequired[bool]
    source: NotRequired[str]
    series: NotRequired[list[Series]]
    series_total: NotRequired[int]
    query: NotRequired[PromQuery]


class EvidenceBlock(TypedDict):
    """One evidenceBlocks[] item: a runbook block."""

    id: str
    title: str
    source: str
    score: float
    relevance: float
    content: str


class ContextPack(TypedDict):
    packedText: str


class KnowledgeOutput(TypedDict):
    """What lookup_knowledge returns."""

    evidenceBlocks: list[EvidenceBlock]
    contextPack: ContextPack
    skipped: list[str]  # runbook files not read, and why


ToolOutput = LogsOutput | MetricsOutput | KnowledgeOutput


def _scalar(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return ""
    return str(value)


def _values(fields: Mapping[str, Any]) -> Iterator[str]:
    """A record's values in order, a nested mapping (alert labels, a series' metric) as k=v pairs."""
    for value in fields.values():
        if isinstance(value, Mapping):
            yield " ".join(f"{k}={_scalar(v)}" for k, v in value.items() if _scalar(v))
        elif not isinstance(value, list):
            yield _scalar(value)


def when(value: Any) -> datetime | None:
    """An ISO timestamp of a record (a trailing Z allowed); None when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


@dataclass(frozen=True)
class ToolRecord:
    """One numbered record of a tool output, with the item as the tool wrote it."""

    number: int
    kind: RecordKind
    fields: Mapping[str, Any] = field(default_factory=dict)
    raw_text: str = ""  # a `pack` or `line` record's text

    def get(self, key: str) -> str:
        return _scalar(self.fields.get(key))

    @property
    def text(self) -> str:
        """The record's prose: a log message, an alert's or series' description, a block's content."""
        name = _TEXT_FIELD.get(self.kind)
        return self.get(name) if name else self.raw_text

    @property
    def line(self) -> str:
        """The record as a quote of it is read: its values in order, keys left out, the prose field
        last (fields the tool wrote after it, such as a log's host, come first), so a quote running
        on into the next record leaves this one at its end. A runbook block is its title and
        content (id, source and scores are the index's, not the text's)."""
        if self.kind in ("pack", "line"):
            return self.raw_text
        if self.kind == "block":
            return f"{self.get('title')}\n{self.get('content')}".strip()
        name = _TEXT_FIELD[self.kind]
        keys = list(self.fields)
        if name in keys:
            at = keys.index(name)
            keys = keys[at + 1 :] + keys[:at] + [name]
        return " ".join(v for v in _values({k: self.fields[k] for k in keys}) if v)

    @property
    def service(self) -> str:
        labels = self.fields.get("labels")
        fallback = labels.get("service") if isinstance(labels, Mapping) else None
        return _scalar(self.fields.get("service") or fallback)

    @property
    def level(self) -> str:
        return self.get("level").upper()

    @property
    def severity(self) -> str:
        labels = self.fields.get("labels")
        fallback = labels.get("severity") if isinstance(labels, Mapping) else None
        return _scalar(self.fields.get("severity") or fallback).lower()

    @property
    def status(self) -> str:
        return self.get("status").lower()

    @property
    def at(self) -> datetime | None:
        return when(self.fields.get("timestamp") or self.fields.get("ts") or self.fields.get("startsAt"))

    @property
    def until(self) -> datetime | None:
        """An alert's end (None while it fires); a log line's own instant."""
        return when(self.fields.get("endsAt")) if self.kind == "alert" else self.at

    def number_value(self, key: str) -> float | None:
        value = self.fields.get(key)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class ToolResult:
    """A tool output as numbered records; `data` is the parsed JSON object (None for text)."""

    records: tuple[ToolRecord, ...]
    data: Mapping[str, Any] | None = None

    @property
    def structured(self) -> bool:
        """Whether the output is a JSON object of the seed's shape (its records are items, not lines)."""
        if self.data is None:
            return False
        return any(isinstance(self.data.get(k), list) for k in RECORD_LIST_KEYS) \
            or isinstance(self.data.get("contextPack"), Mapping)

    def of_kind(self, *kinds: RecordKind) -> list[ToolRecord]:
        return [r for r in self.records if r.kind in kinds]

    def record(self, number: int) -> ToolRecord | None:
        return self.records[number] if 0 <= number < len(self.records) else None

    def meta(self) -> dict[str, Any]:
        """The output's fields that are not records (total, truncated, source, query ...)."""
        if self.data is None:
            return {}
        return {k: v for k, v in self.data.items() if k not in RECORD_LIST_KEYS and k != "contextPack"}

    def to_json(self) -> str:
        """The stored form: the tool's JSON as it returned it (the seed's shape)."""
        return json.dumps(self.data, ensure_ascii=False, default=str)

    def numbered(self) -> str:
        """The output as a prompt shows it: its other fields as one JSON line, then each record on
        a line of its own after its number ("#3 {...}"), the number a citation names."""
        meta = self.meta()
        lines = [json.dumps(meta, ensure_ascii=False, default=str)] if meta else []
        for r in self.records:
            body = r.raw_text if r.kind == "line" else json.dumps(
                {"packedText": r.raw_text} if r.kind == "pack" else dict(r.fields), ensure_ascii=False, default=str)
            lines.append(f"#{r.number} {body}")
        return "\n".join(lines)

    def quotable(self) -> tuple[str, list[int]]:
        """(text, record starts): every record's line, one after another, separated by a newline;
        starts[i] is where record i begins. Quotes are located in this text."""
        starts, parts, at = [], [], 0
        for r in self.records:
            line = r.line
            starts.append(at)
            parts.append(line)
            at += len(line) + 1
        return "\n".join(parts), starts


def from_data(data: Any) -> ToolResult:
    """The records of a parsed tool result (what a tool returns, or its stored JSON parsed)."""
    if not isinstance(data, Mapping):
        text = json.dumps(data, ensure_ascii=False, indent=1, default=str)
        return _lines(text)
    records: list[ToolRecord] = []
    for key, kind in _LISTS:
        items = data.get(key)
        if isinstance(items, list):
            base = len(records)
            records.extend(ToolRecord(base + i, kind, item if isinstance(item, Mapping) else {"value": item})
                           for i, item in enumerate(items))
    pack = data.get("contextPack")
    if isinstance(pack, Mapping) and isinstance(pack.get("packedText"), str):
        records.append(ToolRecord(len(records), "pack", raw_text=pack["packedText"]))
    if not records and not any(isinstance(data.get(k), list) for k in RECORD_LIST_KEYS):
        # A JSON object of no known shape (an error, a backend's own reply): its lines are its records.
        return ToolResult(_lines(json.dumps(data, ensure_ascii=False, indent=1, default=str)).records, data)
    return ToolResult(tuple(records), data)


def _lines(text: str) -> ToolResult:
    return ToolResult(tuple(ToolRecord(n, "line", raw_text=line) for n, line in enumerate(text.split("\n"))))


def parse_result(output: str) -> ToolResult:
    """The records of a stored output."""
    stripped = output.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            return from_data(json.loads(output))
        except ValueError:
            pass
    return _lines(output)


@lru_cache(maxsize=8)
def read_result(output: str) -> ToolResult:
    """The records of a stored output, cached: a session's consumers read the same few outputs."""
    return parse_result(output)
