"""`workbench check`: re-run the deterministic half of the pipeline on a session bundle.

No tool is called and nothing is stored. The bundle's own verifier/composer outputs are used
when present (so a team checks what its agent really said); missing parts are computed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pipeline.bundles.session_bundle import SessionBundle
from pipeline.core.config import Settings
from pipeline.core.contracts import LlmCallRecord, ToolArguments
from pipeline.gatekeeper import RuleSet
from pipeline.runs.judge import Evaluation, evaluate
from pipeline.text.primitives import detect_language
from pipeline.verdict.context import StageContext
from pipeline.verdict.provider import Provider
from pipeline.verdict.scope import read_scope


def _no_tools(tool_name: str, arguments: ToolArguments) -> Any:
    raise RuntimeError("check calls no tool")


def check_bundle(bundle: SessionBundle, *, settings: Settings, rules: RuleSet, provider: Provider,
                 record: Callable[[LlmCallRecord], None] | None = None) -> Evaluation:
    """`record` receives the LLM calls the check makes (an import stores them, law 6)."""
    by_id = {inv.id: inv for inv in bundle.tool_invocations}
    question = bundle.session.question
    # The question's scope, as a session reads it: coverage of every asked service decides PASS
    # (law 8) for a checked bundle too. The services its tool calls queried are the known ones.
    queried = sorted({str(inv.arguments["service"]) for inv in bundle.tool_invocations if inv.arguments.get("service")})
    ctx = StageContext(settings=settings, session_id=bundle.session.id, language=detect_language(question),
                       record=record or (lambda rec: None), run_tool=_no_tools, services=queried,
                       scope=read_scope(question, queried))
    composer_raw = bundle.composer_output
    if isinstance(composer_raw, dict):
        composer_raw = json.dumps(composer_raw, ensure_ascii=False)
    return evaluate(
        ctx=ctx, provider=provider, settings=settings, rules=rules, question=question,
        raw_output=bundle.executor_raw_output, invocations=bundle.tool_invocations, lookup_invocation=by_id.get,
        digests=bundle.evidence_digests if bundle.session.shape == "split" else None,
        given_verifier_output=bundle.verifier_output, given_composer_raw=composer_raw,
    )


def check_report(ev: Evaluation) -> dict[str, Any]:
    return {
        "executor_output_parse_status": ev.parse_status.model_dump(),
        "gatekeeper_result": ev.gatekeeper_result.model_dump(),
        "verifier_output": ev.verifier_output.model_dump(),
        "verifier_evaluation": ev.round_audit.model_dump(mode="json"),
        "composer_input": ev.composer_input.model_dump(),
        "composer_output": ev.composer_output.model_dump(),
        "final_answer": ev.final_answer,
    }
