"""Parse-only boundary (docs/spec.md#parse-status): raw executor text -> parse status + the typed output.

Schema validity is not judged here; that is the gatekeeper's `schema.executor_v2`. The JSON
object is read into `ExecutorOutput` once, leniently, so every later stage reads typed fields.
"""

from __future__ import annotations

import json

from pipeline.core.contracts import ExecutorOutput, ParseStatus
from pipeline.text.bounds import loads_bounded
from pipeline.text.echoes import PromptExample
from pipeline.text.replies import strip_wrappers


def parse_executor_output(
    raw: str | None, example: PromptExample | None = None
) -> tuple[ParseStatus, ExecutorOutput | None]:
    """The parse status and the read output; an output repeating the prompt's `example` is
    malformed however well it parses (law 12)."""
    text = strip_wrappers(raw or "")
    if not text:
        return ParseStatus(status="missing", detail="executor returned no output"), None
    if text[0] not in "{[":
        return ParseStatus(status="missing", detail="executor output is not JSON"), None
    try:
        data = loads_bounded(text)
    except json.JSONDecodeError as exc:
        return ParseStatus(status="malformed", detail=f"JSON parse error: {exc.msg} at line {exc.lineno} "
                                                       f"column {exc.colno}"), None
    except ValueError as exc:  # JsonTooDeep, JsonNumberRefused, an integer too long to read
        return ParseStatus(status="malformed", detail=str(exc)), None
    if not isinstance(data, dict):
        return ParseStatus(status="malformed", detail=f"executor output is a JSON {type(data).__name__}, "
                                                       "not an object"), None
    echo = example.echo_in(data) if example is not None else None
    if echo is not None:
        return ParseStatus(status="malformed", detail=f"executor output repeats the prompt's example: {echo}"), None
    return ParseStatus(status="valid", detail="parsed executor evidence contract"), ExecutorOutput.read(data)
