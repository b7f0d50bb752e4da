"""What a tool is asked and what a backend answers to: the argument models and backend protocols.

Each backend module implements one protocol here and reads its query model; the registry
(pipeline.tools.registry) maps tools to backends and imports both, so no backend needs the registry.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from pipeline.core.contracts import EvidenceTime
from pipeline.tools.results import KnowledgeOutput, LogsOutput, MetricsOutput


class ToolArgs(BaseModel):
    model_config = ConfigDict(extra="ignore")


class LogQuery(ToolArgs):
    service: str | None = None
    level: str | None = Field(default=None, description="minimum level: DEBUG, INFO, WARN or ERROR")
    keywords: list[str] = Field(default_factory=list, description="any of these words (case-insensitive)")
    start: datetime | None = None
    end: datetime | None = None
    limit: int = Field(default=200, ge=1, le=5000)


class MetricsQuery(ToolArgs):
    service: str | None = None
    status: str = Field(default="all", description="firing, resolved or all")
    alertname: str | None = None
    promql: str | None = Field(default=None, description="optional PromQL instant/range query")
    start: datetime | None = None
    end: datetime | None = None


class KnowledgeQuery(ToolArgs):
    query: str
    top_k: int = Field(default=3, ge=1, le=20)


class NoData(Exception):
    """A backend answered, but with nothing: stored as status `no_data`, not as success."""


class LogsBackend(Protocol):
    def query_logs(self, q: LogQuery) -> LogsOutput: ...


class MetricsBackend(Protocol):
    def query_metrics(self, q: MetricsQuery) -> MetricsOutput: ...


class KnowledgeBackend(Protocol):
    def lookup_knowledge(self, q: KnowledgeQuery) -> KnowledgeOutput: ...


@runtime_checkable
class EvidenceClock(Protocol):
    """A backend that can tell its latest record of some services (all, when none is named)."""

    def latest_evidence(self, services: Sequence[str]) -> EvidenceTime | None: ...
