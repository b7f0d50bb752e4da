"""The evidence tools, one `ToolSpec` each: both spellings, argument model, backends.

The model sees camelCase names (queryLogs, queryMetrics, lookupKnowledge); storage and
contracts use snake_case (query_logs, query_metrics, lookup_knowledge). `TOOLS` is the only place
that maps them (docs/spec.md#tool-results). Adding a tool is one spec here; adding a backend kind is its module,
a `BackendKind` member (config) and one factory line in the spec that may use it.
"""

from __future__ import annotations

import contextlib
import functools
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field, create_model

from pipeline.core.config import BackendKind, BackendSettings, Settings
from pipeline.core.contracts import EvidenceTime, ToolArguments
from pipeline.core.errors import ConfigError
from pipeline.tools.queries import (
    EvidenceClock,
    KnowledgeBackend,
    KnowledgeQuery,
    LogQuery,
    LogsBackend,
    MetricsBackend,
    MetricsQuery,
    ToolArgs,
)
from pipeline.tools.results import ToolOutput, ToolResult, from_data

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionToolParam


@dataclass(frozen=True)
class ToolEnv:
    """What a backend factory may read besides its own section of the settings."""

    settings: Settings
    world_dir: Path | None  # the routed bundled incident world (None: no world matched)


Backend = LogsBackend | MetricsBackend | KnowledgeBackend
BackendFactory = Callable[[BackendSettings, ToolEnv], Backend]


@dataclass(frozen=True)
class ToolSpec:
    name: str  # the persisted spelling: storage, contracts, rules
    model_name: str  # what the model is offered and calls
    description: str
    args: type[ToolArgs]
    backends: Mapping[BackendKind, BackendFactory]

    def schema(self) -> ChatCompletionToolParam:
        """OpenAI tool-calling schema under the model-facing name."""
        return {"type": "function", "function": {"name": self.model_name, "description": self.description,
                                                 "parameters": self.args.model_json_schema()}}


# Backend factories import their module when used: a session on the embedded data never loads
# the HTTP clients.
def _bundled_logs(cfg: BackendSettings, env: ToolEnv) -> LogsBackend:
    from pipeline.tools.bundled import BundledLogs

    return BundledLogs(env.world_dir, cfg.limit)


def _loki(cfg: BackendSettings, env: ToolEnv) -> LogsBackend:
    from pipeline.tools.loki import LokiLogs

    return LokiLogs(cfg)


def _log_files(cfg: BackendSettings, env: ToolEnv) -> LogsBackend:
    from pipeline.tools.logfiles import LogFiles

    return LogFiles(cfg)


def _bundled_metrics(cfg: BackendSettings, env: ToolEnv) -> MetricsBackend:
    from pipeline.tools.bundled import BundledMetrics

    return BundledMetrics(env.world_dir)


def _prometheus(cfg: BackendSettings, env: ToolEnv) -> MetricsBackend:
    from pipeline.tools.prometheus import PrometheusMetrics

    return PrometheusMetrics(cfg)


def _runbooks(folder: Path, cfg: BackendSettings) -> KnowledgeBackend:
    from pipeline.tools.knowledge import KnowledgeBase

    return KnowledgeBase.from_folder(folder, min_relevance=cfg.min_relevance)


def _bundled_runbooks(cfg: BackendSettings, env: ToolEnv) -> KnowledgeBackend:
    return _runbooks(env.world_dir / "knowledge" if env.world_dir else env.settings.incidents_dir, cfg)


def _runbook_folder(cfg: BackendSettings, env: ToolEnv) -> KnowledgeBackend:
    if not cfg.path:
        raise ConfigError("backends.lookup_knowledge: kind 'folder' needs a path (or set WORKBENCH_RUNBOOK_DIR)")
    return _runbooks(Path(cfg.path).expanduser(), cfg)


TOOLS: dict[str, ToolSpec] = {spec.name: spec for spec in (
    ToolSpec(
        name="query_logs", model_name="queryLogs", args=LogQuery,
        description="Search service logs. Returns logs[] with timestamp, service, level, message.",
        backends={BackendKind.BUNDLED: _bundled_logs, BackendKind.LOKI: _loki, BackendKind.FILES: _log_files},
    ),
    ToolSpec(
        name="query_metrics", model_name="queryMetrics", args=MetricsQuery,
        description="List Prometheus alerts (firing/resolved) and optional PromQL results. "
        "Returns alerts[] with alertname, service, status, description.",
        backends={BackendKind.BUNDLED: _bundled_metrics, BackendKind.PROMETHEUS: _prometheus},
    ),
    ToolSpec(
        name="lookup_knowledge", model_name="lookupKnowledge", args=KnowledgeQuery,
        description="Search runbooks. Returns evidenceBlocks[] (id, title, source, score, content) "
        "and contextPack.packedText.",
        backends={BackendKind.BUNDLED: _bundled_runbooks, BackendKind.FOLDER: _runbook_folder},
    ),
)}
# The model-facing name each tool had before it was spelled like its persisted one: sessions stored
# then hold it as model_tool_name and in the executor's bindings, and must keep resolving.
_FORMER_MODEL_NAMES = {"queryPrometheusAlerts": "query_metrics"}
_BY_MODEL_NAME = {spec.model_name: spec for spec in TOOLS.values()} | {
    old: TOOLS[name] for old, name in _FORMER_MODEL_NAMES.items()}


def tool_spec(name: str) -> ToolSpec | None:
    """The spec of a tool by any of its spellings (a former model-facing one included); None for a tool that does not exist."""
    return TOOLS.get(name) or _BY_MODEL_NAME.get(name)


def persisted_name(name: str) -> str | None:
    """Either spelling -> the persisted one; None for a tool that does not exist."""
    spec = tool_spec(name)
    return spec.name if spec else None


def model_name(name: str) -> str:
    spec = tool_spec(name)
    return spec.model_name if spec else name


def tool_schemas() -> list[ChatCompletionToolParam]:
    return [spec.schema() for spec in TOOLS.values()]


def calls_schema(max_calls: int) -> type[BaseModel]:
    """The tool calls as one JSON reply, `{"calls": [{"name", "arguments"}, ...]}`: each call's
    name one tool's model-facing name and its arguments that tool's argument schema. For an
    endpoint that takes a JSON Schema as a grammar (llama.cpp), a reply to it is a call by
    construction. The schema only: the calls it brings are checked as any tool call is."""
    variants = [create_model(f"{spec.model_name}Call",
                             name=(str, Field(json_schema_extra={"enum": [spec.model_name]})),
                             arguments=(spec.args, ...))
                for spec in TOOLS.values()]
    call = functools.reduce(operator.or_, variants)
    # `call` is a union built from TOOLS at run time, a type mypy cannot see.
    return create_model("ToolCalls", calls=(list[call], Field(min_length=1, max_length=max_calls)))  # type: ignore[valid-type]


class ToolBox:
    """The backends one session's tools run against, by persisted tool name."""

    def __init__(self, backends: dict[str, Backend]):
        self.backends = backends

    def call(self, tool_name: str, arguments: ToolArguments) -> ToolResult:
        """The tool's result as numbered records; `to_json()` is what the store keeps."""
        spec = tool_spec(tool_name)
        if spec is None:
            raise ValueError(f"unknown tool {tool_name!r}")
        # A backend answers a tool by its method of the tool's persisted name (queries.py's protocols).
        answer: Callable[[ToolArgs], ToolOutput] = getattr(self.backends[spec.name], spec.name)
        return from_data(answer(spec.args.model_validate(arguments)))

    def latest_evidence(self, services: Sequence[str]) -> EvidenceTime | None:
        """The latest log line or alert of `services` that any backend able to tell holds: what
        a clock time without a date is read against. A backend that cannot tell (or fails to:
        the tools report that themselves when called) is passed over."""
        found: list[EvidenceTime] = []
        for backend in self.backends.values():
            if isinstance(backend, EvidenceClock):
                with contextlib.suppress(Exception):
                    found += [t for t in [backend.latest_evidence(services)] if t is not None]
        return max(found, key=lambda t: t.at, default=None)


def build_toolbox(settings: Settings, world_dir: Path | None) -> ToolBox:
    """Each tool's backend by its configured kind; `bundled` reads the routed incident world
    (None: no world matched). A kind the tool has no backend for is a ConfigError."""
    built = {}
    for spec in TOOLS.values():
        cfg: BackendSettings = getattr(settings.backends, spec.name)
        factory = spec.backends.get(cfg.kind)
        if factory is None:
            raise ConfigError(f"backends.{spec.name}.kind: {cfg.kind!s} is not a backend of {spec.name} "
                              f"(choose one of: {', '.join(sorted(spec.backends))})")
        built[spec.name] = factory(cfg, ToolEnv(settings=settings, world_dir=world_dir))
    return ToolBox(built)
