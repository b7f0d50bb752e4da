"""The sample set shows the range of questions: `workbench demo` and the Ask page
ask distinct questions, every question form over every bundled world, in the language chosen."""

from __future__ import annotations

import pytest

from pipeline.core.config import Settings
from pipeline.eval.demo import FORMS, demo_runs, sample_questions
from pipeline.frontends.views.ask import samples
from pipeline.text.primitives import detect_language
from pipeline.tools.incidents import load_worlds
from pipeline.verdict.scope import read_scope


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_demo_asks_distinct_questions_of_every_form_and_world(settings: Settings, language: str) -> None:
    worlds = {w.id for w in load_worlds(settings.incidents_dir)}
    runs = demo_runs(settings, language)
    questions = [question for question, _, _ in runs]
    assert len(set(questions)) == len(questions), questions
    assert {world for _, world, fixture in runs if fixture is None} == worlds
    assert {world for _, world, _ in runs} == worlds
    forms = {s.form for w in worlds for s in sample_questions(w, language) if s.question in questions}
    assert forms == set(FORMS)
    assert {detect_language(q) for q in questions} == {language}


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_ask_page_offers_one_question_per_form_for_each_world_about_that_world(
        settings: Settings, language: str) -> None:
    offered: list[str] = []
    for world in load_worlds(settings.incidents_dir):
        mine = samples(world, language)
        assert [s.form for s in sample_questions(world.id, language)] == list(FORMS)
        for question in mine:
            scope = read_scope(question, world.services)
            # Each names a service of its world or a symptom: none asks about nothing.
            assert set(scope.known_services) <= set(world.services) and (scope.known_services or scope.symptoms)
        offered += mine
    assert len(set(offered)) == len(offered)
