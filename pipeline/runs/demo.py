"""The sample set: stored sessions a new reviewer can audit after one click.

`workbench demo` and the Sessions page's empty-store button run it. The bundled sample
questions mostly PASS, so on their own they leave the review queue empty; the scripted
weak-model runs of the eval fixtures (fabricated ids, swapped services, guesses written as
facts) add LOW_CONFID and REJECT sessions whose claims have real findings. Unlike eval runs
they are not labelled `eval_fixture`, so they wait in the queue like any other session.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from pipeline.core.config import Settings
from pipeline.eval.runner import load_fixtures
from pipeline.runs.session import SessionFailed, run_session
from pipeline.store import Store
from pipeline.tools.incidents import load_worlds

OnProgress = Callable[[int, int, str], None]
Run = tuple[str, str | None, dict[str, Any] | None]  # question, incident, scripted fixture (None: offline)


def _scripted(base: Settings, fixture: dict[str, Any], script_dir: Path) -> Settings:
    """The fixture's misbehaving model: its scripted stage outputs, the offline engine for the rest."""
    path = script_dir / f"{fixture['name']}.yaml"
    path.write_text(yaml.safe_dump(fixture["script"], allow_unicode=True), encoding="utf-8")
    return base.model_copy(update={"provider": "scripted", "scripted_fixture": str(path)})


def demo_runs(settings: Settings, language: str) -> list[Run]:
    """Every session of the sample set."""
    runs: list[Run] = []
    for world in load_worlds(settings.incidents_dir):
        questions = world.questions_zh if language == "zh" else world.questions_en
        runs += [(questions[0], world.id, None)] if questions else []
    runs += [(f["question"], f.get("incident"), f) for f in load_fixtures(settings.fixtures_dir) if f.get("script")]
    return runs


def run_demo(settings: Settings, store: Store, *, language: str = "en", runs: list[Run] | None = None,
             on_progress: OnProgress | None = None) -> list[str]:
    """Run the sample set (or `runs`, a part of it); returns the stored session ids, failed
    sessions included: they are findings too."""
    runs = demo_runs(settings, language) if runs is None else runs
    ids: list[str] = []
    with tempfile.TemporaryDirectory(prefix="wb-demo-") as tmp:
        for n, (question, incident, fixture) in enumerate(runs, 1):
            run_settings = _scripted(settings, fixture, Path(tmp)) if fixture else settings
            try:
                ids.append(run_session(question, settings=run_settings, store=store, world_id=incident).session_id)
            except SessionFailed as exc:
                ids.append(exc.session_id)
            if on_progress:
                on_progress(n, len(runs), question)
    return ids
