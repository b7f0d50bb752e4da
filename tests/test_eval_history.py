"""Eval runs kept and compared: the store, `workbench eval --history`, and the Eval page."""

from __future__ import annotations

import json
import re
import shutil
import threading
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from pipeline.core.config import ROOT
from pipeline.core.contracts import Verdict
from pipeline.core.messages import tr
from pipeline.eval import history, runner
from pipeline.eval.runner import EvalResult
from pipeline.frontends.cli import main
from pipeline.store import Store

FIXTURES = ("01-fabricated-invocation-id", "05-number-swapped")


@pytest.fixture
def two_fixtures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A suite of two real fixtures, so a run through the page or the CLI takes seconds."""
    suite = tmp_path / "fixtures"
    suite.mkdir()
    for name in FIXTURES:
        shutil.copy(ROOT / "data" / "fixtures" / f"{name}.yaml", suite / f"{name}.yaml")
    config = tmp_path / "config.yaml"
    config.write_text(f"fixtures_dir: {suite}\n", encoding="utf-8")
    monkeypatch.setenv("WORKBENCH_CONFIG", str(config))
    return suite


def _result(name: str, passed: bool, verdict: Verdict = "REJECT", failures: tuple[str, ...] = ()) -> EvalResult:
    return EvalResult(name=name, description="", passed=passed, failures=list(failures), verdict=verdict)


def test_runs_are_stored_listed_newest_first_and_compared_changes_first(any_store: Store) -> None:
    first = history.record_run(any_store, who="alice", rules="v0", results=[
        _result("a-steady", True), _result("b-flips", True), _result("c-dropped", True)])
    second = history.record_run(any_store, who="bob", rules="candidate 1a2b3c4d5e", results=[
        _result("a-steady", True), _result("b-flips", False, "PASS", ("verdict PASS != REJECT",)),
        _result("d-new", True)])
    runs = history.list_runs(any_store)
    assert [r.id for r in runs] == [second, first]
    assert (runs[0].who, runs[0].rules, runs[0].score) == ("bob", "candidate 1a2b3c4d5e", "2 / 3")
    by_id = {r.id: r for r in runs}
    changes = history.compare(by_id[first], by_id[second])
    assert [(c.name, c.changed) for c in changes] == [
        ("b-flips", True), ("c-dropped", True), ("d-new", True), ("a-steady", False)]
    assert changes[1].after is None and changes[2].before is None


def test_cli_records_who_and_rules_and_lists_history(two_fixtures: Path, store: Store,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--history"]) == 0
    assert "no eval runs stored yet" in capsys.readouterr().out
    main(["eval", "--who", "carol"])
    assert "stored as eval run j-" in capsys.readouterr().out
    assert main(["eval", "--history", "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)
    assert (run["who"], run["rules"]) == ("carol", "rules/ directory")
    assert sorted(r["name"] for r in run["results"]) == sorted(FIXTURES)
    assert run["score"] == f"{sum(r['passed'] for r in run['results'])} / 2"


def _app() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page("pages/eval.py")
    at.query_params["reviewer"] = "dana"
    at.run()
    assert not at.exception, at.exception
    return at


def _finished(at: AppTest, store: Store) -> None:
    """Wait for the queued run to end, then rerun the page as its one-second poll would."""
    for _ in range(600):
        if not history.active_runs(store):
            break
        time.sleep(0.1)
    at.run()
    assert not at.exception, at.exception


def test_page_keeps_runs_and_compares_a_candidate_with_the_rules_in_force(two_fixtures: Path, store: Store) -> None:
    at = _app()
    at.button(key="eval_run").click().run()
    assert not at.exception, at.exception
    _finished(at, store)
    # Turning off the invocation-reference rule lets the fabricated invocation id through: that
    # fixture's result must change between the two runs, and the other must not.
    at.switch_page("pages/rules.py")
    at.session_state["rules_panel_evidence.invocation_ref"] = True  # a rule's inputs draw in its open panel
    at.session_state["rules_opened"] = "evidence.invocation_ref"
    at.run()
    next(t for t in at.toggle if t.key.endswith("evidence.invocation_ref_enabled")).set_value(False).run()
    at.switch_page("pages/eval.py").run()
    at.radio(key="eval_rules").set_value("candidate").run()
    at.button(key="eval_run").click().run()
    assert not at.exception, at.exception
    _finished(at, store)

    runs = history.list_runs(store)
    assert [r.who for r in runs] == ["dana", "dana"]
    assert runs[0].rules.startswith("candidate ") and runs[1].rules == "rules/ directory"
    assert at.selectbox(key="eval_shown").value == runs[0].id  # the new run is the one shown
    shown = next(h.value for h in at.get("html") if "wb-eval" in h.value)  # results: a table that wraps
    row = next(r for r in shown.split("<tr>") if f">{FIXTURES[0]}</a>" in r)
    assert "evidence.invocation_ref" in row and f"session={runs[0].results[0]['session_id']}" in shown
    assert not at.dataframe  # every table is HTML that wraps: no grid, no Arrow code in the browser
    past = next(h.value for h in at.get("html") if "wb-runs" in h.value)
    assert re.findall(r"<td>(j-[0-9a-f]+)</td>", past) == [runs[0].id, runs[1].id]
    diff = next(h.value for h in at.get("html") if "wb-diff" in h.value)
    rows = re.findall(r"<tr><td>([^<]+)</td><td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td>", diff)
    assert [(name, changed) for name, changed, _, _ in rows] == [(FIXTURES[0], "≠"), (FIXTURES[1], "")]
    assert rows[0][2].startswith("pass") and rows[0][3].startswith("fail")
    assert tr("eval.changed", "en", n=1) in [c.value for c in at.caption]

    # Results outlive the browser session: a fresh one shows the latest run from the store.
    fresh = _app()
    assert fresh.selectbox(key="eval_shown").value == runs[0].id
    assert fresh.metric[0].value == runs[0].score


def test_a_run_outlives_the_page_that_started_it_and_is_stopped_from_another(
        two_fixtures: Path, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copy(ROOT / "data" / "fixtures" / "06-service-swapped.yaml", two_fixtures)
    go_on = threading.Event()
    real = runner.iter_suite

    def held(*args, **kwargs):  # type: ignore[no-untyped-def]
        for n, item in enumerate(real(*args, **kwargs)):  # a slow model: the run waits after its first fixture
            yield item
            if n == 0:
                go_on.wait(60)

    monkeypatch.setattr(runner, "iter_suite", held)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page("pages/eval.py").run()  # nobody typed a name
    at.button(key="eval_run").click().run()
    assert not at.exception, at.exception
    try:
        for _ in range(600):
            if [r.done for r in history.active_runs(store)] == [1]:
                break
            time.sleep(0.1)
        # Another browser session (a reload, another tab) finds the run, n of N, and may stop it.
        other = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
        other.switch_page("pages/eval.py").run()
        (bar,) = other.get("progress")
        text = bar.proto.text.replace("\\", "")  # markdown-escaped
        assert text == tr("eval.progress", "en", n=1, total=3, who="unnamed, from the Eval page") + f" · {FIXTURES[0]}"
        assert not [b for b in other.button if b.key == "eval_run"]  # one run at a time
        (job,) = history.active_runs(store)
        other.button(key=f"eval_cancel_{job.id}").click().run()
        assert tr("eval.stopping", "en") in [c.value for c in other.caption]
    finally:
        go_on.set()
    _finished(at, store)
    (run,) = history.list_runs(store)
    assert (run.status, len(run.results), run.total) == ("cancelled", 2, 3)
    assert at.selectbox(key="eval_shown").value == run.id  # the page that started it shows it
    warning = tr("eval.status.cancelled", "en", n=2, total=3)
    assert warning in [w.value for w in at.warning]
    assert "unnamed, from the Eval page" in at.selectbox(key="eval_shown").options[0]
    shown = next(h.value for h in at.get("html") if "wb-eval" in h.value)
    assert all(f"session={r['session_id']}" in shown for r in run.results)
