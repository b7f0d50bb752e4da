"""Prompt tokens per stage and per session with the `openai` provider, against the local stub.

For every bundled incident (the first zh and the first en question of data/incidents/*/questions.yaml)
and both shapes (split: Collector -> Digest -> Diagnosis; single: the Executor reads tool output),
a whole session runs through OpenAIProvider's prompt builders against the stub endpoint, which
records every request; tokens are the budget module's estimate of what was sent (messages plus
tool schemas). Baseline: the same session with cutting switched off (budgets set out of reach).
Last, one session whose log backend returns a 10 MB output: the largest prompt must stay within
settings.budget.prompt_tokens.

    python benchmarks/bench_prompt_tokens.py
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

import pipeline.runs.session as session_mod  # noqa: E402
from pipeline.core.config import load_settings  # noqa: E402
from pipeline.llm.budget import estimate_messages_tokens  # noqa: E402
from pipeline.llm.openai_provider import OpenAIProvider  # noqa: E402
from pipeline.store import Store  # noqa: E402
from tests.stub_openai import PipelineModel, StubOpenAI  # noqa: E402

UNBOUNDED = 10**12
STAGES = ("planner", "collector", "digest", "diagnosis", "verifier", "composer")


def _run(question: str, world: str, shape: str, cut: bool, home: Path) -> list[tuple[str, int]]:
    """(stage, prompt tokens) for every request the session sent."""
    model = PipelineModel()
    budget = {} if cut else {"prompt_tokens": UNBOUNDED, "per_tool_tokens": UNBOUNDED}
    with StubOpenAI(responder=model) as stub:
        settings = load_settings(provider="openai", home=home, digest={"enabled": shape == "split"}, budget=budget,
                                 openai={"base_url": stub.base_url, "model": "stub-model", "max_retries": 0})
        session_mod.run_session(question, settings=settings, store=Store(settings.db_url), world_id=world,
                                provider=OpenAIProvider(settings, sleep=lambda s: None))
        sent = [estimate_messages_tokens(r.messages, r.body.get("tools")) for r in stub.chat_requests]
    return list(zip(model.stages, sent, strict=True))  # one stage per request


def _questions() -> list[tuple[str, str, str]]:
    out = []
    for path in sorted((ROOT / "data" / "incidents").glob("*/questions.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for lang in ("zh", "en"):
            if data.get(lang):
                out.append((path.parent.name, lang, data[lang][0]))
    return out


class _HugeLogs:
    """A log backend whose every answer is ~10 MB (a chatty service at DEBUG level)."""

    def __init__(self, inner: Any):
        self.inner = inner

    def query_logs(self, q: Any) -> dict[str, Any]:
        real = self.inner.query_logs(q).get("logs", [])
        noise = [{"ts": "2026-11-21T14:00:00Z", "service": "api-gateway", "level": "DEBUG",
                  "message": f"GET /actuator/prometheus 200 {i % 9}ms conn={i}"} for i in range(120_000)]
        return {"logs": noise[:60_000] + real + noise[60_000:]}


def _huge_session(home: Path) -> tuple[int, int, int]:
    """(largest prompt with cutting, largest prompt without, budget) for a session over 10 MB of logs."""
    original = session_mod.build_toolbox

    def huge_toolbox(settings: Any, world_dir: Any) -> Any:
        box = original(settings, world_dir)
        box.backends["query_logs"] = _HugeLogs(box.backends["query_logs"])
        return box

    session_mod.build_toolbox = huge_toolbox
    try:
        question = "Order 123 payment failed with ERR_TIMEOUT from the gateway, what happened?"
        settings = load_settings(budget={"max_stored_output_bytes": 64 * 1024 * 1024})
        largest = {}
        for cut in (True, False):
            sizes = [t for _, t in _run(question, "gateway-timeout", "single", cut, home / f"huge-{cut}")]
            largest[cut] = max(sizes)
        return largest[True], largest[False], settings.budget.prompt_tokens
    finally:
        session_mod.build_toolbox = original


def main() -> None:
    home = Path(tempfile.mkdtemp(prefix="bench-prompt-"))
    os.environ["WORKBENCH_CONFIG"] = str(home / "none.yaml")
    per_stage: dict[tuple[str, str, bool], list[int]] = defaultdict(list)
    sessions: dict[tuple[str, bool], list[int]] = defaultdict(list)
    largest: dict[tuple[str, bool], int] = defaultdict(int)
    rows = []
    for world, lang, question in _questions():
        for shape in ("split", "single"):
            totals = {}
            for cut in (True, False):
                sent = _run(question, world, shape, cut, home / f"{world}-{lang}-{shape}-{cut}")
                stage_sum: dict[str, int] = defaultdict(int)
                for stage, tokens in sent:
                    stage_sum[stage] += tokens
                    largest[(shape, cut)] = max(largest[(shape, cut)], tokens)
                for stage, tokens in stage_sum.items():
                    per_stage[(shape, stage, cut)].append(tokens)
                totals[cut] = sum(stage_sum.values())
                sessions[(shape, cut)].append(totals[cut])
            rows.append((world, lang, shape, totals[True], totals[False]))

    print("Prompt tokens per session (estimate of what was sent; naive = same prompts without cutting)")
    print(f"{'incident':<22}{'lang':<6}{'shape':<8}{'budgeted':>10}{'naive':>10}{'ratio':>8}")
    for world, lang, shape, cut, naive in rows:
        print(f"{world:<22}{lang:<6}{shape:<8}{cut:>10,}{naive:>10,}{cut / naive:>8.2f}")

    print("\nMean prompt tokens per stage per session")
    print(f"{'stage':<12}" + "".join(f"{f'{s} budgeted':>18}{f'{s} naive':>14}" for s in ("split", "single")))
    for stage in STAGES:
        cells = []
        for shape in ("split", "single"):
            cut = per_stage.get((shape, stage, True))
            naive = per_stage.get((shape, stage, False))
            cells.append(f"{statistics.mean(cut):>18,.0f}{statistics.mean(naive):>14,.0f}" if cut and naive
                         else f"{'-':>18}{'-':>14}")
        print(f"{stage:<12}" + "".join(cells))

    print("\nPer session, all incidents")
    print(f"{'shape':<8}{'mean budgeted':>15}{'mean naive':>12}{'ratio':>8}{'largest prompt':>16}{'naive largest':>15}")
    for shape in ("split", "single"):
        cut, naive = statistics.mean(sessions[(shape, True)]), statistics.mean(sessions[(shape, False)])
        print(f"{shape:<8}{cut:>15,.0f}{naive:>12,.0f}{cut / naive:>8.2f}{largest[(shape, True)]:>16,}"
              f"{largest[(shape, False)]:>15,}")

    big, big_naive, budget = _huge_session(home)
    verdict = "within" if big <= budget else "OVER"
    print(f"\n10 MB log output (single shape): largest prompt {big:,} tokens vs budget {budget:,} ({verdict}); "
          f"naive largest {big_naive:,} ({big_naive / big:,.0f}x)")
    print(json.dumps({"largest_prompt_10mb": big, "budget": budget, "naive_largest_10mb": big_naive}))


if __name__ == "__main__":
    main()
