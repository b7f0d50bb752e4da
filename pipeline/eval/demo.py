"""The sample set: stored sessions a new reviewer can audit after one click.

`workbench demo` and the Sessions page's empty-store button run it. The bundled sample
questions mostly PASS, so on their own they leave the review queue empty; the scripted
weak-model runs of the eval fixtures (fabricated ids, swapped services, guesses written as
facts) add LOW_CONFID and REJECT sessions whose claims have real findings. Unlike eval runs
they are not labelled `eval_fixture`, so they wait in the queue like any other session.

No two sessions ask the same question: the questions come from data/demo.yaml, one per form
and world, the worlds taking the forms in turn, and a scripted run whose fixture question was
asked already takes its world's next unasked phrasing. The Ask page offers the same questions.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from pipeline.core.config import Settings
from pipeline.core.resources import resource_dir
from pipeline.eval.runner import Fixture, load_fixtures
from pipeline.runs.session import SessionFailed, run_session
from pipeline.store import Store
from pipeline.text.primitives import detect_language
from pipeline.tools.incidents import load_worlds

OnProgress = Callable[[int, int, str], None]
Run = tuple[str, str | None, Fixture | None]  # question, incident, scripted fixture (None: offline)


def _scripted(base: Settings, fixture: Fixture, script_dir: Path) -> Settings:
    """The fixture's misbehaving model: its scripted stage outputs, the offline engine for the rest."""
    path = script_dir / f"{fixture['name']}.yaml"
    path.write_text(yaml.safe_dump(fixture["script"], allow_unicode=True), encoding="utf-8")
    return base.model_copy(update={"provider": "scripted", "scripted_fixture": str(path)})


# The question forms the sample set shows, in the order the worlds take them.
FORMS = ("why", "yes_no", "what", "how_long", "since_when")


@dataclass(frozen=True)
class SampleQuestion:
    world: str
    form: str  # one of FORMS; "" for a further phrasing
    question: str


@lru_cache(maxsize=1)
def _bank() -> dict[str, dict[str, dict[str, str | list[str]]]]:
    """data/demo.yaml's worlds: world -> language -> a form's question, or "more": further phrasings."""
    data = yaml.safe_load((resource_dir("data") / "demo.yaml").read_text(encoding="utf-8")) or {}
    return dict(data.get("worlds") or {})


def sample_questions(world: str, language: str, *, more: bool = False) -> list[SampleQuestion]:
    """The world's sample questions in `language`, one per form (FORMS order); with `more`, then
    its further phrasings. A world data/demo.yaml does not hold has none."""
    entry = (_bank().get(world) or {}).get(language) or {}
    out = [SampleQuestion(world, form, str(entry[form])) for form in FORMS if entry.get(form)]
    return out + [SampleQuestion(world, "", str(q)) for q in entry.get("more") or []] if more else out


def demo_runs(settings: Settings, language: str) -> list[Run]:
    """Every session of the sample set, each asking its own question."""
    runs: list[Run] = []
    asked: set[str] = set()

    def unasked(world: str | None, *preferred: str) -> str | None:
        candidates = [*preferred, *(s.question for s in sample_questions(world or "", language, more=True))]
        return next((q for q in candidates if q and q not in asked), None)

    for n, world in enumerate(load_worlds(settings.incidents_dir)):
        own = {s.form: s.question for s in sample_questions(world.id, language)}
        first = (world.questions_zh if language == "zh" else world.questions_en)[:1]
        question = unasked(world.id, own.get(FORMS[n % len(FORMS)], ""), *first)
        if question:
            runs.append((question, world.id, None))
            asked.add(question)
    for fixture in load_fixtures(settings.fixtures_dir):
        if fixture.get("script"):
            # The fixture's own question when it is in the demo's language and not asked yet.
            given = fixture["question"] if detect_language(fixture["question"]) == language else ""
            question = unasked(fixture.get("incident"), given) or fixture["question"]
            runs.append((question, fixture.get("incident"), fixture))
            asked.add(question)
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
