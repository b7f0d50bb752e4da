"""The real-model benchmark's arithmetic (benchmarks/bench_real_model.py) on llm_call rows made here:
which questions it asks in what order, how it counts re-asks, parse-valid replies and latency, and
how it tallies sessions. No model is asked."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from pipeline.core.config import load_settings
from pipeline.tools.incidents import load_worlds

_BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_real_model.py"
_spec = importlib.util.spec_from_file_location("bench_real_model", _BENCH)
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def _call(stage: str, status: str, attempt: int = 1, *, latency_ms: float = 1000.0, finish: str | None = "stop",
          tokens: tuple[int, int] = (100, 10), round_: int = 1) -> dict[str, Any]:
    replied = status != "n/a"
    return {"stage": stage, "round": round_, "parse_status": status, "attempt": attempt,
            "latency_ms": latency_ms, "finish_reason": finish if replied else None,
            "prompt_tokens": tokens[0] if replied else 0, "completion_tokens": tokens[1] if replied else 0,
            "json_mode": "json_schema" if replied and stage != "collector" else None}


def test_every_bundled_question_is_asked_once_spread_over_the_worlds_first() -> None:
    worlds = list(load_worlds(load_settings().incidents_dir))
    order = bench.question_order(worlds, ["en", "zh"])

    every = {(w.id, "en", q) for w in worlds for q in w.questions_en} | {(w.id, "zh", q) for w in worlds for q in w.questions_zh}
    assert len(order) == len(every) and set(order) == every
    # The first questions asked are each world's first English one, then its first Chinese one.
    assert order[:len(worlds)] == [(w.id, "en", w.questions_en[0]) for w in worlds]
    assert order[len(worlds):2 * len(worlds)] == [(w.id, "zh", w.questions_zh[0]) for w in worlds]
    assert [q for _, lang, q in bench.question_order(worlds, ["en"])] == [
        q for _, lang, q in order if lang == "en"]


def test_re_asks_count_an_unusable_reply_answered_by_the_next_attempt_of_the_same_call() -> None:
    rows = [
        _call("planner", "malformed", 1, finish="length"), _call("planner", "valid", 2),   # cut, re-asked once
        _call("collector", "valid", 1), _call("collector", "valid", 1),                    # two tool-loop steps
        _call("digest", "n/a", 1), _call("digest", "malformed", 2), _call("digest", "valid", 3),  # retry, re-ask
        _call("diagnosis", "missing", 1),                                                  # the last word: no re-ask
        _call("verifier", "malformed", 1, round_=1), _call("verifier", "valid", 1, round_=2),  # another round's call
    ]
    assert bench.reasks(rows) == 2


def test_stage_figures_per_stage_over_sessions() -> None:
    first = [_call("planner", "malformed", 1, latency_ms=4000, finish="length", tokens=(900, 512)),
             _call("planner", "valid", 2, latency_ms=2000), _call("digest", "n/a", 1, latency_ms=60000)]
    second = [_call("planner", "valid", 1, latency_ms=1000), _call("digest", "valid", 2, latency_ms=3000)]

    figures = bench.stage_figures([first, second])

    planner = figures["planner"]
    assert (planner["sessions"], planner["replies"], planner["valid"], planner["reasks"], planner["cut"]) == (2, 3, 2, 1, 1)
    assert (planner["prompt_tokens"], planner["completion_tokens"]) == (1100, 532)
    assert (planner["latency_p50_s"], planner["latency_p90_s"]) == (2.0, 4.0)
    digest = figures["digest"]
    # A transport failure is no reply: it counts apart and its wait is not a reply latency.
    assert (digest["replies"], digest["valid"], digest["transport_failures"], digest["reasks"]) == (1, 1, 1, 0)
    assert digest["latency_p90_s"] == 3.0
    assert planner["json_modes"] == ["json_schema"]


def test_percentile_is_a_measured_value_by_nearest_rank() -> None:
    values = [float(v) for v in range(1, 11)]
    assert bench.percentile(values, 0.9) == 9.0
    assert bench.percentile(values, 0.5) == 5.0
    assert bench.percentile([7.0], 0.9) == 7.0


def test_session_outcomes_and_the_side_by_side_report() -> None:
    def session(verdict: str, **kw: Any) -> dict[str, Any]:
        return {"verdict": verdict, "wall_s": kw.get("wall", 10.0), "failed_at": kw.get("at", ""),
                "templated": kw.get("templated"), "scope_plan": kw.get("scope", False),
                "diagnosis_parse": kw.get("parse", "valid" if verdict != "FAILED" else None)}

    schema = [session("REJECT", templated=True), session("PASS", wall=30.0), session("FAILED", at="digest")]
    prompt = [session("LOW_CONFID", parse="malformed", scope=True), session("LOW_CONFID", parse="malformed"),
              session("FAILED", at="planner")]
    out = bench.session_outcomes(schema)
    assert out["verdicts"] == {"PASS": 1, "LOW_CONFID": 0, "REJECT": 1}
    assert (out["failed"], out["failed_at"], out["fixed_template"], out["wall_p50_s"]) == (1, {"digest": 1}, 1, 10.0)
    assert bench.session_outcomes(prompt)["diagnosis_unparsed"] == 2

    results = [bench.summarize("json_schema", schema, [[_call("planner", "valid"), _call("composer", "valid")]]),
               bench.summarize("prompt", prompt, [[_call("planner", "malformed"), _call("planner", "valid", 2)]])]
    text = bench.report(results)
    assert "| json_schema | 3 | 1 | 0 | 1 | 1 (1 at digest) | 1 | 0 | 0 |" in text
    assert "| prompt | 3 | 0 | 2 | 0 | 1 (1 at planner) | 0 | 1 | 2 |" in text
    assert "| planner | prompt | 1/2 (50%) | 1 |" in text
    assert "| composer | prompt | not reached |" in text
