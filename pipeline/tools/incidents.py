"""The bundled incident worlds under data/incidents/: their services, questions and files.

Each world is a small self-contained environment (logs, alerts, runbooks). A question is
routed to the world whose services and user-facing keywords it names; the diagnosis itself
never reads ground_truth.yaml (only eval does).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Required, TypedDict

import yaml

from pipeline.core.errors import NotFound, quote
from pipeline.core.messages import Message, msg


class GroundTruth(TypedDict, total=False):
    """A world's ground_truth.yaml: what really happened, for eval to hold answers against."""

    root_cause_service: Required[str]
    root_cause_zh: str
    root_cause_en: str
    category: str
    key_evidence: list[str]
    directly_evidenced: bool  # the root cause is stated by a record, not only inferred
    expected_services: list[str]


@dataclass(frozen=True)
class World:
    id: str
    path: Path
    title_zh: str
    title_en: str
    services: tuple[str, ...]
    keywords: tuple[str, ...]
    start: str
    end: str
    questions_zh: tuple[str, ...] = field(default=())
    questions_en: tuple[str, ...] = field(default=())

    def ground_truth(self) -> GroundTruth:
        truth: GroundTruth = yaml.safe_load((self.path / "ground_truth.yaml").read_text(encoding="utf-8"))
        return truth


def _load_world(path: Path) -> World:
    meta = yaml.safe_load((path / "world.yaml").read_text(encoding="utf-8")) or {}
    questions_file = path / "questions.yaml"
    questions = yaml.safe_load(questions_file.read_text(encoding="utf-8")) if questions_file.exists() else {}
    questions = questions or {}
    return World(
        id=str(meta.get("id", path.name)),
        path=path,
        title_zh=str(meta.get("title_zh", path.name)),
        title_en=str(meta.get("title_en", path.name)),
        services=tuple(meta.get("services", [])),
        keywords=tuple(str(k) for k in meta.get("keywords", [])),
        start=str(meta.get("start", "")),
        end=str(meta.get("end", "")),
        questions_zh=tuple(questions.get("zh", [])),
        questions_en=tuple(questions.get("en", [])),
    )


@lru_cache(maxsize=8)
def load_worlds(incidents_dir: Path) -> tuple[World, ...]:
    if not incidents_dir.is_dir():
        return ()
    return tuple(
        _load_world(p) for p in sorted(incidents_dir.iterdir()) if (p / "world.yaml").is_file()
    )


def recording_window(world: World) -> str:
    """The world's recorded time span, e.g. "2026-11-28 09:30-11:00 UTC"."""
    start, end = (datetime.fromisoformat(t.replace("Z", "+00:00")).astimezone(UTC) for t in (world.start, world.end))
    tail = f"{end:%H:%M}" if end.date() == start.date() else f"{end:%Y-%m-%d %H:%M}"
    return f"{start:%Y-%m-%d %H:%M}-{tail} UTC"


def sample_notice(world: World) -> Message:
    """Says that an answer came from a bundled recording, so nobody reads it as a diagnosis of their
    own systems (the CLI, the JSON and the Ask page show it)."""
    return msg("sample.answered_from", world=world.id, window=recording_window(world))


def world_by_id(incidents_dir: Path, world_id: str) -> World:
    for world in load_worlds(incidents_dir):
        if world.id == world_id:
            return world
    known = ", ".join(w.id for w in load_worlds(incidents_dir)) or "none"
    raise NotFound(f"no bundled incident world {quote(world_id)} in {incidents_dir} (known: {known})")


def catalogue(incidents_dir: Path) -> list[str]:
    """Every service some bundled world holds: the services the bundled backends know."""
    return sorted({s for w in load_worlds(incidents_dir) for s in w.services})
