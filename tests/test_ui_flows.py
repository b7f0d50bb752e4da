"""Flows of the workbench at human speed in headless Debian Chromium (see test_ui_browser.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_ui_browser import WAIT_MS, _seed_reviewer_work, _settled, _shot, _streamlit, page, sync_api  # noqa: F401 (fixture)

from pipeline.core.messages import tr

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with _streamlit(tmp_path_factory.mktemp("flows-home")) as url:
        yield url


def _diff_shows(pg, line: str) -> None:
    pg.wait_for_function("line => document.body.innerText.includes(line)", arg=line, timeout=WAIT_MS)


def test_threshold_inputs_keep_every_step_at_human_speed(base: str, page) -> None:  # noqa: F811
    pg = page
    pg.goto(base + "/rules")
    pg.get_by_role("heading", name=tr("rules.title", "en")).wait_for()
    _settled(pg)
    pg.locator("[data-testid=stExpander] summary", has_text="evidence.excerpt_similarity").click()
    box = pg.locator("[data-testid=stNumberInput] input").first
    sync_api.expect(box).to_have_value("0.50", timeout=WAIT_MS)
    _settled(pg)
    box.focus()
    for _ in range(10):
        pg.keyboard.press("ArrowUp")
        pg.wait_for_timeout(150)
    sync_api.expect(box).to_have_value("0.60", timeout=WAIT_MS)
    _diff_shows(pg, "+      passThreshold: 0.6\n")
    plus = pg.get_by_test_id("stNumberInputStepUp").first
    for _ in range(5):
        plus.click()
        pg.wait_for_timeout(150)
    sync_api.expect(box).to_have_value("0.65", timeout=WAIT_MS)
    # The candidate rules took the last value, not one a lost step left behind.
    _diff_shows(pg, "+      passThreshold: 0.65\n")
    _settled(pg)
    _shot(pg, "rules-threshold-steps")


def test_ask_scrolls_to_the_progress_and_the_answer_and_keeps_the_question(base: str, page) -> None:  # noqa: F811
    pg = page
    pg.set_viewport_size({"width": 1280, "height": 800})
    pg.goto(base + "/")
    _settled(pg)
    question = "checkout p99 latency spiked after the 14:00 deploy, why?"
    box = pg.get_by_role("textbox", name="Question")
    box.fill(question)
    pg.get_by_role("button", name="Ask", exact=True).click()
    answer = pg.locator("#wb-answer")
    answer.wait_for(state="attached", timeout=WAIT_MS)
    _settled(pg)
    # The answer's top is in the viewport, not below the fold of an 800 px window.
    pg.wait_for_function("() => { const r = document.getElementById('wb-answer').getBoundingClientRect();"
                         " return r.top >= 0 && r.top < window.innerHeight; }", timeout=WAIT_MS)
    _shot(pg, "ask-scrolled-to-answer")
    assert "session=" in pg.url
    pg.reload()
    _settled(pg)
    sync_api.expect(pg.get_by_role("textbox", name="Question")).to_have_value(question, timeout=WAIT_MS)
    _shot(pg, "ask-after-reload")


def test_sessions_show_all_clears_every_filter_and_the_queue_fits_1280(
        tmp_path: Path, page, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    _seed_reviewer_work(tmp_path, monkeypatch)
    pg = page
    pg.set_viewport_size({"width": 1280, "height": 1000})
    with _streamlit(tmp_path) as url:
        pg.goto(url + "/sessions?sessions_text=no-such-question&sessions_service=nowhere")
        pg.get_by_role("button", name=tr("sessions.show_all", "en")).wait_for(timeout=WAIT_MS)
        _settled(pg)
        pg.get_by_role("button", name=tr("sessions.show_all", "en")).click()
        pg.locator("table.wb-queue").wait_for(timeout=WAIT_MS)
        _settled(pg)
        assert "sessions_text" not in pg.url and "sessions_service" not in pg.url
        sync_api.expect(pg.get_by_role("textbox", name=tr("sessions.text", "en"))).to_have_value("")
        # The queue's columns end inside the main column, and no cell is cut: nothing hidden at 1280 px.
        table = pg.locator("table.wb-queue").bounding_box()
        main = pg.get_by_test_id("stMainBlockContainer").bounding_box()
        assert table and main and table["x"] + table["width"] <= main["x"] + main["width"] + 1
        assert pg.evaluate("() => [...document.querySelectorAll('table.wb-queue td')]"
                           ".every(td => td.scrollWidth <= td.clientWidth + 1)")
        _shot(pg, "sessions-show-all")


def test_a_reviewer_name_typed_once_is_remembered_by_the_browser(
        tmp_path: Path, page, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    _, weak = _seed_reviewer_work(tmp_path, monkeypatch)
    pg = page
    with _streamlit(tmp_path) as url:
        pg.goto(f"{url}/trace?session={weak}")
        pg.get_by_role("heading", name=tr("trace.title", "en")).wait_for()
        _settled(pg)
        name = pg.get_by_label(tr("common.reviewer", "en"))
        # Quotes, a semicolon and markup in it: kept whole, and nothing of it runs.
        ann = "Ann O'Neil; \"<b>x</b>\" 安"
        name.fill(ann)
        name.press("Enter")
        _settled(pg)
        assert "reviewer=Ann" in pg.url
        # A fresh load (a new session, as a new tab gets) of a link that carries no name: the
        # browser still knows it.
        pg.goto(f"{url}/eval")
        _settled(pg)
        sync_api.expect(pg.get_by_label(tr("common.reviewer", "en"))).to_have_value(ann, timeout=WAIT_MS)
        _shot(pg, "reviewer-remembered")


def test_eval_tables_fit_1280(tmp_path: Path, page) -> None:  # noqa: F811
    from datetime import UTC, datetime

    from pipeline.eval import history
    from pipeline.eval.runner import EvalResult
    from pipeline.store import Store

    store = Store(f"sqlite:///{tmp_path / 'workbench.db'}")
    for day, passed in ((1, False), (2, True)):
        history.record_run(store, who="tuner", rules="v0", started_at=datetime(2026, 1, day, tzinfo=UTC), results=[
            EvalResult(name=f"{i:02d}-a-long-fixture-name-of-the-suite", description="what the fixture checks " * 3,
                       passed=passed or i, failures=[] if passed or i else ["verdict PASS != REJECT"] * 3,
                       verdict="REJECT", expected={"verdict": "REJECT", "failed_rules": ["evidence.excerpt_similarity"]})
            for i in range(4)])
    pg = page
    pg.set_viewport_size({"width": 1280, "height": 1400})
    with _streamlit(tmp_path) as url:
        pg.goto(url + "/eval")
        pg.locator("table.wb-diff").wait_for(timeout=WAIT_MS)
        _settled(pg)
        main = pg.get_by_test_id("stMainBlockContainer").bounding_box()
        # Results, history and comparison wrap their cells instead of cutting them: each table ends
        # inside the main column and no cell hides text.
        for css in ("wb-eval", "wb-runs", "wb-diff"):
            box = pg.locator(f"table.{css}").bounding_box()
            assert box and main and box["x"] + box["width"] <= main["x"] + main["width"] + 1, css
            assert pg.locator(f"table.{css} td").evaluate_all(
                "tds => tds.every(td => td.scrollWidth <= td.clientWidth + 1)"), f"a cell of {css} is cut"
        description = pg.locator("table.wb-eval tbody tr").first.locator("td").nth(5)
        assert "what the fixture checks what the fixture checks" in description.inner_text()
        assert pg.get_by_test_id("stDataFrame").count() == 0
        _shot(pg, "eval-tables-1280")


def test_an_eval_run_outlives_navigation_and_a_reload_and_stops_with_its_sessions(tmp_path: Path, page) -> None:  # noqa: F811
    import re

    from pipeline.eval import history
    from pipeline.store import Store

    pg = page
    pg.set_viewport_size({"width": 1280, "height": 800})
    progress = re.compile(r"Fixture \d+ of \d+ done")
    with _streamlit(tmp_path) as url:
        pg.goto(url + "/eval")
        pg.get_by_role("button", name=tr("eval.run", "en")).wait_for(timeout=WAIT_MS)
        _settled(pg)
        # Streamlit 1.67: a click during the first open's second script run starts a new script
        # runner while the old one finishes, and the old one's end drops the fragments the new one
        # registered, the progress poll among them (the run goes on; the page shows it on its next
        # run). A person does not click that fast; the test waits as they would.
        pg.wait_for_timeout(2000)
        pg.get_by_role("button", name=tr("eval.run", "en")).click()
        pg.get_by_text(progress).wait_for(timeout=WAIT_MS)
        _shot(pg, "eval-running")
        # Another page, then the Eval page opened anew (a new browser session, as a reload is):
        # the run went on meanwhile and the page finds it.
        pg.goto(url + "/sessions")
        pg.get_by_role("heading", name=tr("sessions.title", "en")).wait_for(timeout=WAIT_MS)
        pg.goto(url + "/eval")
        pg.get_by_text(progress).wait_for(timeout=WAIT_MS)
        assert "unnamed, from the Eval page" in pg.inner_text("body")
        _shot(pg, "eval-found-after-navigation")
        pg.get_by_role("button", name=tr("eval.cancel", "en")).click()
        pg.get_by_text(re.compile(r"cancelled after \d+ of \d+ fixtures")).first.wait_for(timeout=WAIT_MS)
        _settled(pg)
        _shot(pg, "eval-cancelled")
    store = Store(f"sqlite:///{tmp_path / 'workbench.db'}")
    (run,) = history.list_runs(store)
    assert run.status == "cancelled" and 0 < len(run.results) < (run.total or 0)
    assert all(store.get_session(r["session_id"]) for r in run.results if r["session_id"])
