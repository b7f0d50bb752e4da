"""Engine messages (pipeline/core/messages.py): every code speaks zh and en, and every producer raises
it with exactly the parameters its templates name, checked over the source of every producer."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pipeline.core.contracts import GatekeeperError, RoundAudit
from pipeline.core.messages import CATALOGUE, Message, msg, placeholders, render
from pipeline.text.primitives import detect_language

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("code", sorted(CATALOGUE))
def test_every_code_has_both_languages_with_the_same_placeholders(code: str):
    entry = CATALOGUE[code]
    assert set(entry) == {"en", "zh"} and all(entry.values())
    assert placeholders(entry["en"]) == placeholders(entry["zh"])
    # A zh template is Chinese prose around its parameters, not English left in place.
    assert detect_language(entry["zh"].format(**dict.fromkeys(placeholders(entry["zh"]), 0))) == "zh"


def _codes(node: ast.expr) -> list[str] | None:
    """The code(s) a msg() call's first argument can be: a literal, or a conditional of literals."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        a, b = _codes(node.body), _codes(node.orelse)
        return a + b if a is not None and b is not None else None
    return None


def _dict_keys(function: ast.AST, name: str) -> set[str] | None:
    """Keys of the dict literal assigned to `name` in `function` (for msg(..., **name))."""
    for node in ast.walk(function):
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
        if isinstance(target, ast.Name) and target.id == name and isinstance(node.value, ast.Dict):  # type: ignore[union-attr]
            return {k.value for k in node.value.keys if isinstance(k, ast.Constant)}  # type: ignore[union-attr]
    return None


def _raised() -> list[tuple[str, str, set[str] | None]]:
    """(where, code, parameter names) of every msg() call under pipeline/."""
    found = []
    for path in sorted((ROOT / "pipeline").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
        for function in functions:
            for call in ast.walk(function):
                if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "msg"):
                    continue
                where = f"{path.relative_to(ROOT)}:{call.lineno}"
                codes = _codes(call.args[0]) if call.args else None
                assert codes is not None, f"{where}: msg() needs a literal code so this test can check it"
                names: set[str] | None = set()
                for kw in call.keywords:
                    if kw.arg is not None:
                        names.add(kw.arg)  # type: ignore[union-attr]
                    else:
                        spread = _dict_keys(function, kw.value.id) if isinstance(kw.value, ast.Name) else None
                        names = None if spread is None or names is None else names | spread
                found += [(where, code, names) for code in codes]
    return found


def test_every_producer_raises_a_catalogued_code_with_its_parameters():
    raised = _raised()
    assert len(raised) > 60  # the gatekeeper, the policy, the composer filter and guard, coverage
    wrong = [(where, code, sorted(names or ()), sorted(placeholders(CATALOGUE[code]["en"])))
             for where, code, names in raised
             if code not in CATALOGUE or names != placeholders(CATALOGUE[code]["en"])]
    assert wrong == []


def test_digest_reference_problems_are_the_claim_ones_naming_the_digest():
    for code in [c for c in CATALOGUE if c.startswith("gk.ref.")]:
        twin = code.replace("gk.ref.", "gk.digest_ref.")
        assert placeholders(CATALOGUE[twin]["en"]) == placeholders(CATALOGUE[code]["en"]) | {"digest"}


def test_render_keeps_quoted_evidence_verbatim_and_joins_parts_in_the_readers_punctuation():
    m = msg("gk.similarity_invocation", score=0.123, bound_name="warnThreshold", bound=0.3, invocation=394)
    m.then.append(msg("gk.invented_words_also", count=1, tolerated=0, words='"线程数"'))
    assert render(m, "en") == ('excerpt similarity 0.12 < warnThreshold 0.3 against invocation 394; it holds 1 word(s) '
                               'that the cited output has nowhere (invented content, 0 tolerated): "线程数"')
    zh = render(m, "zh")
    assert zh.startswith("摘录与调用 394 的相似度 0.12 低于 warnThreshold 0.3；") and zh.endswith('"线程数"')
    # A code this version lacks (a newer writer) shows as code and parameters, not an exception.
    assert render(Message(code="gk.future", params={"x": 1}), "zh") == "gk.future {'x': 1}"


def test_stored_records_without_codes_still_validate():
    old = GatekeeperError.model_validate({"rule_id": "r", "target": "claims[0]", "message": "text"})
    assert old.msg is None
    ev = RoundAudit.model_validate({
        "verdict": "PASS", "groundedness_score": 1.0, "executor_output_parse_status": {"status": "valid"},
        "gatekeeper_result": {}, "verdict_guard_reasons": ["older reason"]})
    assert ev.verdict_reasons == []


def test_workbench_show_speaks_the_readers_language(settings, store, capsys: pytest.CaptureFixture[str]):
    """A REJECT session of a misbehaving model (fixture 07): its gatekeeper findings, verdict
    reasons and filter reasons come out of `workbench show --lang zh` in Chinese, with the rule
    ids and quoted evidence verbatim, and in English with --lang en."""
    from pipeline.frontends.cli import main
    from pipeline.runs.demo import demo_runs, run_demo
    from pipeline.runs.record import read_session

    run = [r for r in demo_runs(settings, "zh") if r[2] and r[2]["name"].startswith("07-")]
    (sid,) = run_demo(settings, store, runs=run, language="zh")
    ev = read_session(store, sid).evaluation
    assert ev is not None and ev.verdict == "REJECT"
    assert ev.verdict_reasons and all(e.msg for e in ev.gatekeeper_result.errors)
    assert all(f.msg for f in ev.composer_filtered) and all(c.msg for c in ev.question_coverage)
    # The stored English text is the en rendering, so older readers see the same sentences.
    assert ev.verdict_guard_reasons == [render(m, "en") for m in ev.verdict_reasons]

    assert main(["show", sid, "--lang", "zh"]) == 0
    zh = capsys.readouterr().out
    assert main(["show", sid, "--lang", "en"]) == 0
    en = capsys.readouterr().out
    assert "守门规则 evidence.digest_ref 未通过" in zh and "证据绑定没有 digest_id" in zh
    assert "gatekeeper rule evidence.digest_ref failed" in en and "gatekeeper rule" not in zh
    for e in ev.gatekeeper_result.errors:
        assert render(e.msg, "zh") in zh and e.message in en  # type: ignore[arg-type]
