"""The eval fixture suite (data/fixtures/) runs in CI: every expectation must hold."""

from __future__ import annotations

from pipeline.core.config import Settings
from pipeline.eval.runner import failure_lines, format_table, load_fixtures, run_suite
from pipeline.store import SessionFilter, Store


def test_fixture_suite_passes(settings: Settings, store: Store) -> None:
    results = run_suite(settings, store=store)
    assert len(results) == len(load_fixtures(settings.fixtures_dir)) >= 20
    assert all(r.passed for r in results), format_table(results)
    # Every result links to a stored session (the Eval page links to its trace), labelled as a
    # fixture so it does not crowd the reviewers' queue of unreviewed LOW_CONFID / REJECT sessions.
    assert all(r.session_id and store.get_session(r.session_id) for r in results)
    assert store.reviews(results[0].session_id)[0]["label"] == "eval_fixture"
    assert store.list_sessions(SessionFilter(verdicts=["LOW_CONFID", "REJECT"], reviewed=False))[1] == 0


def test_a_failing_expectation_is_reported(settings: Settings, store: Store, tmp_path) -> None:
    (tmp_path / "wrong.yaml").write_text(
        "incident: cpu-saturation\nquestion: payment API times out since 10:00, what's going on?\n"
        "expect: {verdict: REJECT, answer_must_not_contain: [payment-service],\n"
        "         coverage: {payment-service/memory: healthy}, lead_starts_with: 'Yes'}\n", encoding="utf-8")
    results = run_suite(settings.model_copy(update={"fixtures_dir": tmp_path}), store=store)
    assert not results[0].passed
    assert any("verdict" in f for f in results[0].failures)
    assert any("payment-service" in f for f in results[0].failures)
    assert any(f.startswith("coverage payment-service/memory is not asked") for f in results[0].failures)
    assert any(f.startswith("lead “Most likely cause") for f in results[0].failures)
    # In Chinese on the Eval page and `workbench eval --lang zh`, each with the `expect:` key it checks.
    zh = failure_lines(results[0].as_dict(), "zh")
    assert "问题没有问及 payment-service/memory，预期其覆盖状态为健康 (coverage)" in zh
    assert any(line.startswith("判定为 ") and line.endswith("预期为 REJECT (verdict)") for line in zh), zh
    assert "    - 问题没有问及 payment-service/memory" in format_table(results, "zh")
    # A run stored before failures had messages shows them as they were written.
    assert failure_lines({"failures": ["verdict PASS != REJECT"]}, "zh") == ["verdict PASS != REJECT"]
