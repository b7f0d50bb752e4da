"""One reader of a model's reply text, for every stage: reasoning blocks and the code fence around
the JSON come off here, and the one JSON object is read here (or why not is said), so that the
planner, the collector, the executor, the verifier and the composer agree on what a reply held.
"""

from __future__ import annotations

import re
from typing import Any

from pipeline.text.bounds import loads_bounded

# Reasoning models put their chain of thought in one of these blocks before the answer.
_REASONING = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.S | re.I)
# A fence with an optional language tag; the newline after the tag may be missing ("```json{...}```").
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*[ \t]*\n?(.*?)\n?[ \t]*```", re.S)


def strip_wrappers(text: str) -> str:
    """The reply without reasoning blocks and without the code fence around its JSON: a fence that
    opens the reply, or the only fenced block in it ("Here it is: ```json ... ```")."""
    text = _REASONING.sub("", text).strip()
    fenced = _FENCE.search(text)
    if fenced and (text.startswith("```") or text.count("```") == 2):
        return fenced.group(1).strip()
    return text


def read_object(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    """(object, None) or (None, why not); `raw` already stripped of its wrappers."""
    if not raw.strip():
        return None, "empty reply"
    try:
        data = loads_bounded(raw)  # a 100k-deep reply is "not valid JSON", never RecursionError
    except ValueError as exc:
        return None, f"not valid JSON: {exc}"
    if not isinstance(data, dict):
        return None, f"expected one JSON object, got {type(data).__name__}"
    return data, None
