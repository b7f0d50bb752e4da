"""The `scripted` provider: replays stage outputs from a fixture file (eval fixtures, tests).

Fixture (YAML or JSON), every key optional; a stage without one runs on `fallback` (the offline
provider), so a fixture scripts only the stages it is about:

```yaml
planner: {skill: latency_diagnosis, services: [payment-service], tool_calls: [...]}
digest:                      # a list, or {digests: [...]}
  - {digest_id: digest-1, source_invocation_ids: ["{inv:query_logs:0}"], tool: query_logs,
     summary: ..., source_quote: ...}
diagnosis: |                 # a raw string is replayed byte for byte (malformed JSON too);
  {"answer_version": "executor_evidence_v2", "claims": [...
   "source_invocation_ids": [{inv:query_logs:0}] ...}
verifier: {verdict: PASS, groundedness_score: 1.0, claim_checks: [...]}
composer: {answer_summary: ..., user_facing_answer: ...}   # or a raw string
```
A dict for `diagnosis` / `composer` is dumped to JSON.

Placeholders, so a fixture can cite the ids a live session gave its invocations (ids are global).
They resolve against the invocations the stage is handed: all of the session's for diagnosis,
the current round's for digest.
- `{inv:TOOL:N}`: id of the N-th (0-based, by id) invocation of TOOL; TOOL in either spelling
  (`query_logs` or `queryLogs`).
- `{inv:N}`: id of the N-th invocation, any tool.
- `{inv:foreign}`: an id outside this session: the id just below this session's first one (ids
  grow globally, so that is another session's when one exists), else one far above its last.
A YAML/JSON string that is exactly one placeholder becomes a number; inside a longer string, or
unquoted in a raw diagnosis string, the placeholder is replaced by the number's digits.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from pipeline.core.config import Settings
from pipeline.core.config_file import read_mapping
from pipeline.core.contracts import (
    CollectionSummary,
    ComposerInput,
    EvidenceDigest,
    LlmCallRecord,
    PlannerPlan,
    RetryContext,
    ToolInvocation,
    VerifierOutput,
)
from pipeline.core.errors import StageFailure
from pipeline.tools.registry import persisted_name
from pipeline.verdict.payload import VerifierPayload
from pipeline.verdict.provider import Provider, StageContext

PLACEHOLDER = re.compile(r"\{inv:([^{}]+)\}")
_QUOTED_PLACEHOLDER = re.compile(r'"\{inv:([^{}"]+)\}"')
FOREIGN_OFFSET = 1_000_000


def resolve_placeholder(spec: str, invocations: list[ToolInvocation]) -> int:
    ordered = sorted(invocations, key=lambda i: i.id)
    if spec == "foreign":
        if ordered and ordered[0].id > 1:
            return ordered[0].id - 1
        return (ordered[-1].id if ordered else 0) + FOREIGN_OFFSET
    tool, _, index = spec.rpartition(":")
    if not index.isdigit():
        raise StageFailure("scripted", f"placeholder {{inv:{spec}}}: expected {{inv:TOOL:N}}, {{inv:N}} or {{inv:foreign}}")
    pool = ordered
    if tool:
        name = persisted_name(tool)
        if name is None:
            raise StageFailure("scripted", f"placeholder {{inv:{spec}}}: unknown tool {tool!r}")
        pool = [i for i in ordered if i.tool_name == name]
    n = int(index)
    if n >= len(pool):
        raise StageFailure("scripted", f"placeholder {{inv:{spec}}}: the session has only {len(pool)} such invocation(s)")
    return pool[n].id


def substitute_text(text: str, invocations: list[ToolInvocation]) -> str:
    text = _QUOTED_PLACEHOLDER.sub(lambda m: str(resolve_placeholder(m.group(1), invocations)), text)
    return PLACEHOLDER.sub(lambda m: str(resolve_placeholder(m.group(1), invocations)), text)


def substitute(value: Any, invocations: list[ToolInvocation]) -> Any:
    if isinstance(value, str):
        whole = PLACEHOLDER.fullmatch(value)
        if whole:
            return resolve_placeholder(whole.group(1), invocations)
        return PLACEHOLDER.sub(lambda m: str(resolve_placeholder(m.group(1), invocations)), value)
    if isinstance(value, list):
        return [substitute(v, invocations) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, invocations) for k, v in value.items()}
    return value


def load_fixture(path: Path) -> dict[str, Any]:
    return read_mapping(Path(path), what="the scripted fixture", top="a mapping of stage -> output")


class ScriptedProvider:
    name = "scripted"

    def __init__(self, settings: Settings, fixture_path: Path, fallback: Provider):
        self.settings = settings
        self.fixture_path = Path(fixture_path)
        self.fixture = load_fixture(self.fixture_path)
        self.fallback = fallback

    def model_for(self, stage: str) -> str:
        return f"scripted:{self.fixture_path.name}" if stage in self.fixture else self.fallback.model_for(stage)

    def _record(self, ctx: StageContext, stage: str, raw: str, started: float) -> None:
        ctx.record(LlmCallRecord(
            stage=stage, round=ctx.round, provider=self.name, model=self.model_for(stage),
            prompt_file=str(self.fixture_path), prompt_version="fixture",
            messages=[{"role": "user", "content": f"scripted output of stage {stage}"}],
            raw_response=raw, parse_status="valid", latency_ms=(time.perf_counter() - started) * 1000,
        ))

    def plan(self, ctx: StageContext, question: str) -> PlannerPlan:
        if "planner" not in self.fixture:
            return self.fallback.plan(ctx, question)
        started = time.perf_counter()
        plan = PlannerPlan.model_validate(self.fixture["planner"])
        self._record(ctx, "planner", json.dumps(self.fixture["planner"], ensure_ascii=False), started)
        return plan

    def collect(
        self, ctx: StageContext, question: str, plan: PlannerPlan, retry_context: RetryContext | None
    ) -> CollectionSummary:
        # Tools really run: the fallback collector executes the (possibly scripted) plan.
        return self.fallback.collect(ctx, question, plan, retry_context)

    def digest(self, ctx: StageContext, question: str, invocations: list[ToolInvocation]) -> list[EvidenceDigest]:
        if "digest" not in self.fixture:
            return self.fallback.digest(ctx, question, invocations)
        started = time.perf_counter()
        scripted = self.fixture["digest"]
        items = scripted.get("digests", []) if isinstance(scripted, dict) else scripted
        resolved = substitute(items, invocations)
        self._record(ctx, "digest", json.dumps({"digests": resolved}, ensure_ascii=False), started)
        return [EvidenceDigest.model_validate(d) for d in resolved]

    def diagnose(
        self, ctx: StageContext, question: str, plan: PlannerPlan, digests: list[EvidenceDigest] | None,
        invocations: list[ToolInvocation], retry_context: RetryContext | None,
    ) -> str:
        if "diagnosis" not in self.fixture:
            return self.fallback.diagnose(ctx, question, plan, digests, invocations, retry_context)
        started = time.perf_counter()
        scripted = self.fixture["diagnosis"]
        if isinstance(scripted, str):
            raw = substitute_text(scripted, invocations)
        else:
            raw = json.dumps(substitute(scripted, invocations), ensure_ascii=False)
        self._record(ctx, "diagnosis", raw, started)
        return raw

    def verify(self, ctx: StageContext, payload: VerifierPayload) -> VerifierOutput:
        if "verifier" not in self.fixture:
            return self.fallback.verify(ctx, payload)
        started = time.perf_counter()
        out = VerifierOutput.model_validate(self.fixture["verifier"])
        self._record(ctx, "verifier", out.model_dump_json(), started)
        return out

    def compose(self, ctx: StageContext, composer_input: ComposerInput) -> str:
        if "composer" not in self.fixture:
            return self.fallback.compose(ctx, composer_input)
        started = time.perf_counter()
        scripted = self.fixture["composer"]
        raw = scripted if isinstance(scripted, str) else json.dumps(scripted, ensure_ascii=False)
        self._record(ctx, "composer", raw, started)
        return raw
