"""A real local model through the openai provider, stage by stage, in two JSON modes side by side.

Asks the bundled questions (every question of every incident world under data/incidents, English
and Chinese) as whole sessions against an OpenAI-compatible endpoint (llama.cpp's server with
Gemma 3 270M in CI: `.ci/llama.sh` starts one), once with `response_format` json_schema and once
with the schema in the prompt only (`openai.json_mode: prompt`, the baseline: what an endpoint
without structured output gets). Each question is asked in every mode before the next question
starts, so a run cut short by --time-budget-s still compares the modes on the same questions.

Reports per stage, from the recorded llm_call rows: replies, parse-valid rate, re-asks, replies cut
at the output cap, transport failures, prompt/completion tokens and reply latency (median, p90);
per mode the sessions' outcomes: verdict counts, sessions failed (and at which stage), answers
that fell back to the fixed template, plans that fell back to the scope plan, wall time.

    python benchmarks/bench_real_model.py --base-url http://127.0.0.1:8080/v1 --model gemma-3-270m \
        [--questions N] [--worlds bad-deploy,...] [--languages en,zh] [--modes json_schema,prompt] \
        [--timeout-s 60] [--time-budget-s S] [--json out.json] \
        [--config workbench.yaml] [--question WORLD:QUESTION ...]

`--config` takes the settings `workbench doctor --write` fitted to the endpoint (first-token wait,
per-stage time budgets and output caps) instead of --timeout-s; `--question` asks the named
questions only (the six of docs/benchmarks.md: why, yes/no and what, in English and Chinese).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.core.config import load_settings  # noqa: E402
from pipeline.core.contracts import VERDICT_ORDER  # noqa: E402
from pipeline.core.errors import WorkbenchError  # noqa: E402
from pipeline.runs.session import run_session  # noqa: E402
from pipeline.store import Store  # noqa: E402
from pipeline.text.primitives import detect_language  # noqa: E402
from pipeline.tools.incidents import World, load_worlds  # noqa: E402
from pipeline.verdict.provider import STAGES  # noqa: E402


def question_order(worlds: list[World], languages: list[str]) -> list[tuple[str, str, str]]:
    """(world id, language, question) for every bundled question, round-robin: the first question
    of each world in each language, then the second, ... so that `--questions N` spreads over the
    worlds instead of exhausting the first one."""
    by_world = {w.id: {"en": w.questions_en, "zh": w.questions_zh} for w in worlds}
    depth = max((len(qs) for w in by_world.values() for qs in w.values()), default=0)
    return [(world_id, lang, qs[lang][i])
            for i in range(depth) for lang in languages for world_id, qs in by_world.items() if i < len(qs[lang])]


def bundled_questions(limit: int | None, only: list[str], languages: list[str]) -> list[tuple[str, str, str]]:
    settings = load_settings()
    worlds = [w for w in load_worlds(settings.incidents_dir) if not only or w.id in only]
    return question_order(worlds, languages)[:limit]


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank percentile (q in 0..1): a value that was measured, never interpolated."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def reasks(rows: list[dict[str, Any]]) -> int:
    """Re-asks among one session's llm_call rows: an unusable reply followed by the next attempt of
    the same logical call (attempts of one call are numbered on; the next call starts at 1)."""
    by_stage: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_stage[(row["stage"], row["round"])].append(row)
    return sum(1 for group in by_stage.values() for a, b in zip(group, group[1:], strict=False)
               if a["parse_status"] in ("malformed", "missing") and b["attempt"] == a["attempt"] + 1)


def stage_figures(sessions_calls: list[list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per stage, from each session's llm_call rows (in id order): what came back and what it cost."""
    out: dict[str, dict[str, Any]] = {}
    by_stage: dict[str, list[list[dict[str, Any]]]] = defaultdict(list)
    for calls in sessions_calls:
        per_session: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for call in calls:
            per_session[call["stage"]].append(call)
        for stage, rows in per_session.items():
            by_stage[stage].append(rows)
    for stage, groups in by_stage.items():
        rows = [r for g in groups for r in g]
        replies = [r for r in rows if r["parse_status"] != "n/a"]
        latencies = [r["latency_ms"] for r in replies]
        out[stage] = {
            "sessions": len(groups),
            "replies": len(replies),
            "valid": sum(r["parse_status"] == "valid" for r in replies),
            "reasks": sum(reasks(g) for g in groups),
            "cut": sum(r.get("finish_reason") == "length" for r in replies),
            "transport_failures": len(rows) - len(replies),
            "prompt_tokens": sum(r["prompt_tokens"] for r in rows),
            "completion_tokens": sum(r["completion_tokens"] for r in rows),
            "seconds": round(sum(r["latency_ms"] for r in rows) / 1000, 1),
            "latency_p50_s": statistics.median(latencies) / 1000 if latencies else None,
            "latency_p90_s": percentile(latencies, 0.9) / 1000 if latencies else None,
            "json_modes": sorted({r["json_mode"] for r in replies if r.get("json_mode")}),
        }
    return out


def session_outcomes(sessions: list[dict[str, Any]]) -> dict[str, Any]:
    """Per mode: how the sessions ended and what the person asking was shown."""
    done = [s for s in sessions if s["verdict"] != "FAILED"]
    walls = [s["wall_s"] for s in sessions]
    return {
        "sessions": len(sessions),
        "verdicts": {v: sum(s["verdict"] == v for s in done) for v in VERDICT_ORDER},
        "failed": len(sessions) - len(done),
        "failed_at": dict(Counter(s["failed_at"] for s in sessions if s["verdict"] == "FAILED")),
        "fixed_template": sum(bool(s["templated"]) for s in done),
        "scope_plan": sum(bool(s["scope_plan"]) for s in sessions),
        "diagnosis_unparsed": sum(s["diagnosis_parse"] not in ("valid", None) for s in done),
        "wall_p50_s": statistics.median(walls) if walls else None,
        "wall_total_s": sum(walls),
    }


def run_one(mode: str, world_id: str, question: str, settings: Any, store: Store) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    started = time.perf_counter()
    failed_at = ""
    try:
        result = run_session(question, settings=settings, store=store, world_id=world_id)
        sid, verdict, error = result.session_id, result.verdict, ""
        templated: bool | None = result.evaluation.composer_guard.used_template
        diagnosis_parse: str | None = result.evaluation.parse_status.status
    except WorkbenchError as exc:
        sid, verdict, error, templated, diagnosis_parse = str(getattr(exc, "session_id", "")), "FAILED", str(exc), None, None
        failed_at = str(getattr(exc, "stage", "") or "before the session row")
    wall = time.perf_counter() - started
    rows = store.llm_calls(sid) if sid else []
    plan = (store.get_session(sid) or {}).get("planner_plan") if sid else None
    session = {"world": world_id, "question": question, "verdict": verdict, "wall_s": round(wall, 1),
               "error": error[:300], "failed_at": failed_at, "llm_calls": len(rows), "templated": templated,
               "scope_plan": isinstance(plan, dict) and plan.get("skill") == "scope_plan",
               "diagnosis_parse": diagnosis_parse}
    print(f"  {mode:11} {world_id:20} {verdict:10} {wall:7.1f} s  {len(rows)} llm_call rows"
          + (f"  ({error[:120]})" if error else ""), flush=True)
    return session, rows


def summarize(mode: str, sessions: list[dict[str, Any]], calls: list[list[dict[str, Any]]]) -> dict[str, Any]:
    return {"mode": mode, "sessions": sessions, "outcomes": session_outcomes(sessions), "stages": stage_figures(calls)}


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


def _stage_row(stage: str, mode: str, f: dict[str, Any] | None) -> str:
    if f is None:
        return f"| {stage} | {mode} | not reached | | | | | | | |"
    rate = f"{f['valid']}/{f['replies']} ({100 * f['valid'] / f['replies']:.0f}%)" if f["replies"] else "-"
    return (f"| {stage} | {mode} | {rate} | {f['reasks']} | {f['cut']} | {f['transport_failures']} | "
            f"{f['prompt_tokens']:,} / {f['completion_tokens']:,} | {f['seconds']:,.0f} s | {_s(f['latency_p50_s'])} | "
            f"{_s(f['latency_p90_s'])} |")


def report(results: list[dict[str, Any]]) -> str:
    """Markdown: the sessions' outcomes per mode, then each stage with the modes side by side."""
    lines = ["| JSON mode | sessions | " + " | ".join(VERDICT_ORDER) + " | failed | fixed template shown | "
             "scope plan | diagnosis unparsed | wall p50 / total |",
             "|---|---|" + "---|" * len(VERDICT_ORDER) + "---|---|---|---|---|"]
    for res in results:
        o = res["outcomes"]
        failed = str(o["failed"]) + (" (" + ", ".join(f"{n} at {s}" for s, n in sorted(o["failed_at"].items())) + ")"
                                     if o["failed_at"] else "")
        lines.append(f"| {res['mode']} | {o['sessions']} | " + " | ".join(str(o["verdicts"][v]) for v in VERDICT_ORDER)
                     + f" | {failed} | {o['fixed_template']} | {o['scope_plan']} | {o['diagnosis_unparsed']} | "
                     f"{_s(o['wall_p50_s'])} / {o['wall_total_s']:,.0f} s |")
    lines += ["", "| stage | JSON mode | parse-valid | re-asks | cut at cap | transport failures | "
              "tokens in / out | seconds | latency p50 | latency p90 |", "|---|---|---|---|---|---|---|---|---|---|"]
    for stage in STAGES:
        if any(stage in res["stages"] for res in results):
            lines += [_stage_row(stage, res["mode"], res["stages"].get(stage)) for res in results]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--questions", type=int, default=None, help="ask only the first N (default: all)")
    parser.add_argument("--worlds", default="", help="comma-separated world ids (default: every world)")
    parser.add_argument("--languages", default="en,zh")
    parser.add_argument("--modes", default="json_schema,prompt")
    parser.add_argument("--timeout-s", type=float, default=60.0, help="openai.timeout_s (a loaded machine needs more)")
    parser.add_argument("--time-budget-s", type=float, default=None,
                        help="start no further question after this many seconds (the one under way finishes)")
    parser.add_argument("--json", help="write the figures to this file (rewritten after every session)")
    parser.add_argument("--config", type=Path, help="settings fitted by `workbench doctor --write`")
    parser.add_argument("--question", action="append", default=[], help="WORLD:QUESTION, repeatable")
    args = parser.parse_args()
    questions = [(w, detect_language(q), q) for w, q in (item.split(":", 1) for item in args.question)] or \
        bundled_questions(args.questions, [w for w in args.worlds.split(",") if w],
                          [lang for lang in args.languages.split(",") if lang])
    fitted = yaml.safe_load(args.config.read_text(encoding="utf-8")) if args.config else {}
    modes = [m for m in args.modes.split(",") if m]
    began = time.perf_counter()
    load_before = os.getloadavg()
    sessions: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
    calls: dict[str, list[list[dict[str, Any]]]] = {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as tmp:
        stores = {}
        setups = {}
        for mode in modes:
            # A request may take timeout_s; a stage three of them (a retry and a re-ask).
            timing = fitted.get("openai") or {"timeout_s": args.timeout_s, "stage_timeout_s": 3 * args.timeout_s}
            settings = load_settings(provider="openai", home=Path(tmp) / mode, budget=fitted.get("budget"), openai={
                **timing, "base_url": args.base_url, "model": args.model, "json_mode": mode})
            settings.home.mkdir(parents=True, exist_ok=True)
            setups[mode], stores[mode] = settings, Store(settings.db_url)
        for n, (world_id, lang, question) in enumerate(questions, 1):
            if args.time_budget_s is not None and time.perf_counter() - began > args.time_budget_s:
                print(f"time budget spent: asked {n - 1} of {len(questions)} questions", flush=True)
                break
            print(f"[{n}/{len(questions)}] {world_id} ({lang}): {question}", flush=True)
            for mode in modes:
                session, rows = run_one(mode, world_id, question, setups[mode], stores[mode])
                session["language"], session["load1"] = lang, round(os.getloadavg()[0], 1)
                sessions[mode].append(session)
                calls[mode].append(rows)
            results = [summarize(m, sessions[m], calls[m]) for m in modes]
            if args.json:
                meta = {"questions_asked": n, "questions_bundled": len(questions), "model": args.model,
                        "load_before": load_before, "load_now": os.getloadavg(),
                        "elapsed_s": round(time.perf_counter() - began)}
                Path(args.json).write_text(json.dumps({"meta": meta, "results": results}, indent=1, ensure_ascii=False),
                                           encoding="utf-8")
    results = [summarize(m, sessions[m], calls[m]) for m in modes]
    print(report(results))
    print(f"load average before {load_before}, after {os.getloadavg()}; {time.perf_counter() - began:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
