"""What every stage is handed, whichever provider runs it: the neutral ground between stages
and providers.

Stages (pipeline.stages) and providers (pipeline.llm, the offline engine included) both import
this module and never each other's internals, so dependencies flow one way (tests/test_architecture.py keeps it so).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from pipeline.core.config import Settings
from pipeline.core.contracts import LlmCallRecord, QuestionScope, ToolArguments, ToolInvocation
from pipeline.core.events import StreamProgress

RunTool = Callable[[str, ToolArguments], ToolInvocation]
OnProgress = Callable[[StreamProgress], None]


def _no_progress(progress: StreamProgress) -> None:
    return None


@dataclass
class StageContext:
    settings: Settings
    session_id: str
    language: str
    record: Callable[[LlmCallRecord], None]
    run_tool: RunTool
    services: list[str] = field(default_factory=list)
    round: int = 1
    # "Now" for relative time windows: the incident's end for a bundled world, else the clock.
    now: datetime | None = None
    # What the question asks about (services, symptom, window); every stage and prompt gets it.
    scope: QuestionScope | None = None
    # time.monotonic() at the first LLM request of each (stage, round): the start of the stage's
    # wall-time bound (openai.stage_timeout_s), shared by all the calls the stage makes.
    stage_started: dict[tuple[str, int], float] = field(default_factory=dict)
    progress: OnProgress = _no_progress
    # Set once the collector's model was made to call a tool and answered without one: later
    # rounds of the session run the plan's calls instead of asking it again.
    tools_refused: bool = False
