"""Settings that fit the model: the endpoint's measured speed turned into stage bounds (`workbench doctor`).

A default that suits a hosted model (a 2,048-token diagnosis cap, 60 s to the first token) does
not suit Gemma 3 270M on two busy cores, which reads a prompt at tens of tokens a second and writes
a few. Two requests measure the endpoint as it is now (prompt reading; generation, streamed), and
each stage gets a share of the session's time, an output cap it can write in half of it (so a
re-ask still fits) and a first-token wait that covers reading its prompt. The stage times add up
to the session's bound even when the endpoint is too slow for the smallest caps: a stage that runs
out of its time takes its code fallback (docs/architecture.md#providers), so the session ends with
a slower honest answer, never after the bound.
"""

from __future__ import annotations

import math
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import yaml

from pipeline.core.config import Settings
from pipeline.llm.budget import estimate_messages_tokens

# The prompt sizes a stage sends in the bundled worlds (benchmarks/bench_real_model.py, prompt
# tokens per reply, rounded up) and the share of a session's time each stage gets.
STAGE_PROMPT_TOKENS = {"planner": 1200, "collector": 2500, "digest": 3500, "diagnosis": 2500, "verifier": 2500,
                       "composer": 1500}
STAGE_SHARE = {"planner": 0.12, "collector": 0.12, "digest": 0.22, "diagnosis": 0.24, "verifier": 0.15,
               "composer": 0.15}
# Below these an answer no longer fits at all: a cap is never cut under them.
MIN_OUTPUT_TOKENS = {"planner": 160, "collector": 96, "digest": 256, "diagnosis": 384, "verifier": 256,
                     "composer": 192}
SESSION_TARGET_S = 360.0
PROMPT_PROBE_WORDS = 600
GENERATION_PROBE_TOKENS = 48


@dataclass
class Speed:
    prompt_tps: float
    generation_tps: float


@dataclass
class Fit:
    timeout_s: float
    stage_timeouts: dict[str, float]
    output_tokens: dict[str, int]

    def as_settings(self) -> dict[str, Any]:
        return {"openai": {"timeout_s": self.timeout_s, "stage_timeouts": self.stage_timeouts},
                "budget": {"output_tokens": self.output_tokens}}


def measure_speed(client: openai.OpenAI, model: str) -> Speed:
    """Prompt reading (a ~1,000-token prompt, one token out) and generation (a streamed count)."""
    # A fresh nonce first: a server's prompt cache would otherwise read the prompt for free.
    filler = f"{uuid.uuid4().hex} " + " ".join(f"item{i}" for i in range(PROMPT_PROBE_WORDS))
    messages: list[Any] = [{"role": "user", "content": f"{filler}\nReply with the word ok."}]
    started = time.perf_counter()
    reply = client.chat.completions.create(model=model, messages=messages, max_tokens=1)
    read_s = time.perf_counter() - started
    prompt_tokens = reply.usage.prompt_tokens if reply.usage and reply.usage.prompt_tokens else \
        estimate_messages_tokens(messages)
    stream = client.chat.completions.create(
        model=model, max_tokens=GENERATION_PROBE_TOKENS, stream=True,
        messages=[{"role": "user", "content": f"{uuid.uuid4().hex[:8]} Count from 1 to 100, one number a line."}])
    stamps: list[float] = []
    with stream:
        for chunk in stream:
            if any(c.delta.content for c in chunk.choices):
                stamps.append(time.perf_counter())
    # From the first token to the last: the prompt's reading is not generation.
    span = stamps[-1] - stamps[0] if len(stamps) > 1 else 0.0
    return Speed(prompt_tps=prompt_tokens / max(read_s, 1e-3),
                 generation_tps=(len(stamps) - 1) / span if span > 0 else 0.0)


def fit(speed: Speed, settings: Settings, session_s: float = SESSION_TARGET_S) -> Fit:
    """Per stage: its share of `session_s`; the cap it can write in half of that after reading its
    prompt (never above the configured cap, never under the minimum); the first-token wait."""
    # The session's bound holds: a stage is not given more time when even its minimum cap does
    # not fit; it is cut at its share and its fallback answers.
    caps: dict[str, int] = {}
    budgets: dict[str, float] = {}
    reads = []
    for stage, share in STAGE_SHARE.items():
        budget_s = share * session_s
        read_s = min(STAGE_PROMPT_TOKENS[stage], settings.budget.prompt_tokens) / max(speed.prompt_tps, 1e-3)
        writable = int((budget_s / 2 - read_s) * speed.generation_tps)
        configured = getattr(settings.budget.output_tokens, stage)
        caps[stage] = max(MIN_OUTPUT_TOKENS[stage], min(configured, writable))
        budgets[stage] = float(math.ceil(budget_s))
        reads.append(read_s)
    # The first token comes after the prompt is read: twice the longest read, at least 30 s.
    timeout_s = float(min(600, max(30, math.ceil(2 * max(reads)))))
    return Fit(timeout_s=timeout_s, stage_timeouts=budgets, output_tokens=caps)


def write_fit(path: Path, found: Fit) -> None:
    """Merge the fitted keys into the settings file (other keys kept; YAML comments are not)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else {}
    data = data if isinstance(data, dict) else {}
    for section, values in found.as_settings().items():
        merged = data.setdefault(section, {})
        for key, value in values.items():
            if isinstance(value, dict) and isinstance(merged.get(key), dict):
                merged[key].update(value)
            else:
                merged[key] = value
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
