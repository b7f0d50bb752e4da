"""The three evidence tools: their two spellings, argument models, and backend protocols.

The model sees camelCase names (queryLogs, queryPrometheusAlerts, lookupKnowledge); storage and
contracts use snake_case (query_logs, query_metrics, lookup_knowledge). This table is the only
place that maps them (seed 003 §2).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

MODEL_NAMES: dict[str, str] = {
    "query_logs": "queryLogs",
    "query_metrics": "queryPrometheusAlerts",
    "lookup_knowledge": "lookupKnowledge",
}
PERSISTED_NAMES: dict[str, str] = {v: k for k, v in MODEL_NAMES.items()}


def persisted_name(name: str) -> str | None:
    """Either spelling -> the persisted one; None for a tool that does not exist."""
    if name in MODEL_NAMES:
        return name
    return PERSISTED_NAMES.get(name)


def model_name(name: str) -> str:
    return MODEL_NAMES[persisted_name(name) or name]


class _Args(BaseModel):
    model_config = ConfigDict(extra="ignore")


class LogQuery(_Args):
    service: str | None = None
    level: str | None = Field(default=None, description="minimum level: DEBUG, INFO, WARN or ERROR")
    keywords: list[str] = Field(default_factory=list, description="any of these words (case-insensitive)")
    start: datetime | None = None
    end: datetime | None = None
    limit: int = Field(default=200, ge=1, le=5000)


class MetricsQuery(_Args):
    service: str | None = None
    status: str = Field(default="all", description="firing, resolved or all")
    alertname: str | None = None
    promql: str | None = Field(default=None, description="optional PromQL instant/range query")
    start: datetime | None = None
    end: datetime | None = None


class KnowledgeQuery(_Args):
    query: str
    top_k: int = Field(default=3, ge=1, le=20)


ARG_MODELS: dict[str, type[_Args]] = {
    "query_logs": LogQuery,
    "query_metrics": MetricsQuery,
    "lookup_knowledge": KnowledgeQuery,
}

DESCRIPTIONS: dict[str, str] = {
    "query_logs": "Search service logs. Returns logs[] with timestamp, service, level, message.",
    "query_metrics": "List Prometheus alerts (firing/resolved) and optional PromQL results. "
    "Returns alerts[] with alertname, service, status, description.",
    "lookup_knowledge": "Search runbooks. Returns evidenceBlocks[] (id, title, source, score, content) "
    "and contextPack.packedText.",
}


def tool_schemas() -> list[dict[str, Any]]:
    """OpenAI tool-calling schemas under the model-facing names."""
    return [
        {
            "type": "function",
            "function": {
                "name": MODEL_NAMES[name],
                "description": DESCRIPTIONS[name],
                "parameters": model.model_json_schema(),
            },
        }
        for name, model in ARG_MODELS.items()
    ]


class LogsBackend(Protocol):
    def query_logs(self, q: LogQuery) -> dict[str, Any]: ...


class MetricsBackend(Protocol):
    def query_metrics(self, q: MetricsQuery) -> dict[str, Any]: ...


class KnowledgeBackend(Protocol):
    def lookup_knowledge(self, q: KnowledgeQuery) -> dict[str, Any]: ...


class NoData(Exception):
    """A backend answered, but with nothing: stored as status `no_data`, not as success."""


@dataclass
class ToolBox:
    """The backends one session's tools run against."""

    logs: LogsBackend
    metrics: MetricsBackend
    knowledge: KnowledgeBackend

    def call(self, tool_name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        name = persisted_name(tool_name)
        if name is None:
            raise ValueError(f"unknown tool {tool_name!r}")
        args = ARG_MODELS[name].model_validate(arguments)
        if name == "query_logs":
            return self.logs.query_logs(args)  # type: ignore[arg-type]
        if name == "query_metrics":
            return self.metrics.query_metrics(args)  # type: ignore[arg-type]
        return self.knowledge.lookup_knowledge(args)  # type: ignore[arg-type]
