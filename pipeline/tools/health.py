"""One line per configured evidence backend for `workbench doctor`: what it is and whether it answers."""

from __future__ import annotations

from pathlib import Path

from pipeline.core.config import BackendSettings, Settings
from pipeline.core.errors import BackendError
from pipeline.text.redact import redact
from pipeline.tools.http import http_get
from pipeline.tools.knowledge import KnowledgeBase

# Readiness endpoints: cheap, no query cost on the server.
_READY_PATH = {"prometheus": "/-/ready", "loki": "/ready"}
# The doctor should answer promptly even when a backend's query timeout is generous.
_DOCTOR_TIMEOUT_S = 5.0


def backend_health(settings: Settings) -> list[str]:
    # Redacted: a backend URL may carry user:pass@ and doctor output is pasted into tickets.
    return [
        redact(f"{tool}: {_check(getattr(settings.backends, tool), settings)}")
        for tool in ("query_logs", "query_metrics", "lookup_knowledge")
    ]


def _check(cfg: BackendSettings, settings: Settings) -> str:
    if cfg.kind == "bundled":
        root = Path(settings.incidents_dir)
        worlds = [p for p in root.iterdir() if (p / "world.yaml").exists()] if root.is_dir() else []
        state = f"ok: {len(worlds)} incident world(s)" if worlds else "MISSING: no incident worlds"
        return f"bundled {root} — {state}"
    if cfg.kind in _READY_PATH:
        probe = cfg.model_copy(update={"timeout_s": min(cfg.timeout_s, _DOCTOR_TIMEOUT_S)})
        try:
            http_get(probe, _READY_PATH[cfg.kind], what=cfg.kind, max_bytes=64 * 1024)
        except BackendError as exc:
            return f"{cfg.kind} {cfg.url} — UNREACHABLE: {exc}"
        return f"{cfg.kind} {cfg.url} — reachable"
    if cfg.kind == "files":
        root = Path(cfg.path or "")
        if not cfg.path or not root.is_dir():
            return f"files {cfg.path} — MISSING: not a folder"
        count = sum(1 for p in root.rglob("*") if p.is_file() and p.suffix in (".log", ".jsonl"))
        return f"files {root} — " + (f"ok: {count} log file(s)" if count else "EMPTY: no *.log or *.jsonl files")
    if cfg.kind == "folder":
        try:
            kb = KnowledgeBase.from_folder(cfg.path or "")
        except FileNotFoundError as exc:
            return f"folder {cfg.path} — MISSING: {exc}"
        files = {b.source for b in kb.blocks}
        line = f"folder {cfg.path} — ok: {len(files)} runbook file(s), {len(kb.blocks)} block(s)"
        return line + (f"; skipped {len(kb.skipped)}: {'; '.join(kb.skipped)}" if kb.skipped else "")
    return f"{cfg.kind} — UNKNOWN backend kind"
