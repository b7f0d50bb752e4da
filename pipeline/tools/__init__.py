"""Tool backends: the factory that wires one session's ToolBox from settings."""

from __future__ import annotations

from pathlib import Path

from pipeline.config import BackendSettings, Settings
from pipeline.tools.bundled import BundledLogs, BundledMetrics
from pipeline.tools.registry import ToolBox


def _path(cfg: BackendSettings) -> Path:
    if not cfg.path:
        raise ValueError(f"backend kind {cfg.kind!r} needs a path")
    return Path(cfg.path).expanduser()


def build_toolbox(settings: Settings, world_dir: Path | None) -> ToolBox:
    """Backends by kind; `bundled` reads the routed incident world (None: no world matched)."""
    from pipeline.tools.knowledge import KnowledgeBase

    b = settings.backends
    if b.query_logs.kind == "bundled":
        logs = BundledLogs(world_dir, b.query_logs.limit)
    elif b.query_logs.kind == "loki":
        from pipeline.tools.loki import LokiLogs

        logs = LokiLogs(b.query_logs)
    elif b.query_logs.kind == "files":
        from pipeline.tools.logfiles import LogFiles

        logs = LogFiles(b.query_logs)
    else:
        raise ValueError(f"unknown query_logs backend {b.query_logs.kind!r}")

    if b.query_metrics.kind == "bundled":
        metrics = BundledMetrics(world_dir)
    elif b.query_metrics.kind == "prometheus":
        from pipeline.tools.prometheus import PrometheusMetrics

        metrics = PrometheusMetrics(b.query_metrics)
    else:
        raise ValueError(f"unknown query_metrics backend {b.query_metrics.kind!r}")

    if b.lookup_knowledge.kind == "bundled":
        folder = world_dir / "knowledge" if world_dir else settings.incidents_dir
        knowledge = KnowledgeBase.from_folder(folder)
    elif b.lookup_knowledge.kind == "folder":
        knowledge = KnowledgeBase.from_folder(_path(b.lookup_knowledge))
    else:
        raise ValueError(f"unknown lookup_knowledge backend {b.lookup_knowledge.kind!r}")
    return ToolBox(logs=logs, metrics=metrics, knowledge=knowledge)
