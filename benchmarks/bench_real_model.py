"""A real local model through the openai provider, stage by stage, in two JSON modes side by side.

Runs bundled questions as whole sessions against an OpenAI-compatible endpoint (llama.cpp's
server with Gemma 3 270M in CI: `.ci/llama.sh` starts one) once with `response_format`
json_schema and once with the schema in the prompt only (the baseline: what an endpoint without
structured output gets), and reports per stage, from the recorded llm_call rows:
replies, parse-valid rate, re-asks, replies cut at the output cap, transport failures,
prompt/completion tokens and latency; per session the verdict, the wall time and whether the
answer shown is the fixed template.

    python benchmarks/bench_real_model.py --base-url http://127.0.0.1:8080/v1 --model gemma-3-270m \
        [--questions 2] [--worlds bad-deploy,...] [--modes json_schema,prompt] [--timeout-s 60] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.core.config import load_settings  # noqa: E402
from pipeline.core.errors import WorkbenchError  # noqa: E402
from pipeline.llm.provider import STAGES  # noqa: E402
from pipeline.runs.session import run_session  # noqa: E402
from pipeline.store import Store  # noqa: E402
from pipeline.tools.incidents import load_worlds  # noqa: E402


def bundled_questions(limit: int, only: list[str]) -> list[tuple[str, str]]:
    """(world id, question): the first English question of each world (of `only`, if named), `limit` of them."""
    settings = load_settings()
    worlds = [w for w in load_worlds(settings.incidents_dir) if w.questions_en and (not only or w.id in only)]
    return [(w.id, w.questions_en[0]) for w in worlds][:limit]


def stage_figures(calls: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per stage, from llm_call rows in order: what came back and what it cost."""
    out: dict[str, dict[str, Any]] = {}
    by_stage: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for call in calls:
        by_stage[call["stage"]].append(call)
    for stage, rows in by_stage.items():
        replies = [r for r in rows if r["parse_status"] != "n/a"]
        # A re-ask: an unusable reply followed by the next attempt of the same call.
        reasks = sum(1 for a, b in zip(rows, rows[1:], strict=False)
                     if a["parse_status"] in ("malformed", "missing") and b["attempt"] == a["attempt"] + 1
                     and b["round"] == a["round"])
        latencies = [r["latency_ms"] for r in replies]
        out[stage] = {
            "replies": len(replies),
            "valid": sum(r["parse_status"] == "valid" for r in replies),
            "reasks": reasks,
            "cut": sum(r.get("finish_reason") == "length" for r in replies),
            "transport_failures": len(rows) - len(replies),
            "prompt_tokens": sum(r["prompt_tokens"] for r in rows),
            "completion_tokens": sum(r["completion_tokens"] for r in rows),
            "latency_ms": latencies,
            "json_modes": sorted({r["json_mode"] for r in replies if r.get("json_mode")}),
        }
    return out


def run_mode(mode: str, questions: list[tuple[str, str]], args: argparse.Namespace, home: Path) -> dict[str, Any]:
    # A request may take timeout_s; a stage three of them (a retry and a re-ask).
    settings = load_settings(provider="openai", home=home / mode, openai={
        "base_url": args.base_url, "model": args.model, "json_mode": mode,
        "timeout_s": args.timeout_s, "stage_timeout_s": 3 * args.timeout_s})
    settings.home.mkdir(parents=True, exist_ok=True)
    store = Store(settings.db_url)
    sessions = []
    calls: list[dict[str, Any]] = []
    for world_id, question in questions:
        started = time.perf_counter()
        try:
            result = run_session(question, settings=settings, store=store, world_id=world_id)
            sid, verdict, error = result.session_id, result.verdict, ""
            templated: bool | None = result.evaluation.composer_guard.used_template
        except WorkbenchError as exc:
            sid, verdict, error, templated = str(getattr(exc, "session_id", "")), "FAILED", str(exc), None
        wall = time.perf_counter() - started
        rows = store.llm_calls(sid) if sid else []
        calls += rows
        sessions.append({"world": world_id, "verdict": verdict, "wall_s": round(wall, 1), "error": error[:300],
                         "llm_calls": len(rows), "templated": templated})
        print(f"  {mode:11} {world_id:20} {verdict:10} {wall:7.1f} s  {len(rows)} llm_call rows"
              + (f"  ({error[:120]})" if error else ""), flush=True)
    return {"mode": mode, "sessions": sessions, "stages": stage_figures(calls)}


def _row(stage: str, f: dict[str, Any]) -> str:
    lat = f["latency_ms"]
    p50 = statistics.median(lat) / 1000 if lat else 0.0
    rate = f"{f['valid']}/{f['replies']} ({100 * f['valid'] / f['replies']:.0f}%)" if f["replies"] else "-"
    return (f"| {stage} | {rate} | {f['reasks']} | {f['cut']} | {f['transport_failures']} | "
            f"{f['prompt_tokens']:,} / {f['completion_tokens']:,} | {p50:.1f} s / {sum(lat) / 1000:.0f} s |")


def report(results: list[dict[str, Any]]) -> str:
    lines = []
    for res in results:
        done = [s for s in res["sessions"] if s["verdict"] != "FAILED"]
        verdicts = ", ".join(f"{s['world']} {s['verdict']} ({s['wall_s']} s)" for s in res["sessions"])
        lines += [f"### JSON mode: {res['mode']}", "",
                  f"Sessions completed {len(done)}/{len(res['sessions'])}: {verdicts}", "",
                  "| stage | parse-valid | re-asks | cut at cap | transport failures | tokens in / out | "
                  "latency p50 / total |", "|---|---|---|---|---|---|---|"]
        lines += [_row(stage, res["stages"][stage]) for stage in STAGES if stage in res["stages"]]
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--questions", type=int, default=6, help="how many bundled questions (one per world)")
    parser.add_argument("--worlds", default="", help="comma-separated world ids (default: every world)")
    parser.add_argument("--modes", default="json_schema,prompt")
    parser.add_argument("--timeout-s", type=float, default=60.0, help="openai.timeout_s (a loaded machine needs more)")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()
    questions = bundled_questions(args.questions, [w for w in args.worlds.split(",") if w])
    with tempfile.TemporaryDirectory() as tmp:
        results = [run_mode(mode, questions, args, Path(tmp))
                   for mode in args.modes.split(",")]
    print(report(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
