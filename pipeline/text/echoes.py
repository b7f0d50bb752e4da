"""Prompt echoes: a reply that repeats its prompt's own example instead of the data (law 12).

A small model copies the example a prompt ends with: a plan for service "...", a claim citing the
example's invocation id, the example's hypothesis shown as the likely cause. Such a reply parses
and validates, so it is told apart here. The example values are read from the prompt file itself
(its closing JSON object), so a reworded example needs no code change: a leaf of the example whose
value the prompt's prose never uses, and that reads as a sentence or a slot rather than a token of the
contract, is example data; a reply holding it under the same key repeats the example. A value that is a placeholder by its form ("...", "<service>", "xxx") is never
data, whatever the prompt says.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

# A whole value that only stands for one: an ellipsis, a run of x's, or <slots> with at most id
# punctuation around them ("<service>", "digest-<invocation_id>-1"); a log line holding "<init>"
# among other text is data.
_PLACEHOLDER = re.compile(r"\.{2,}|…+|x{3,}|(?:[\w#.-]*<[^<>]{1,80}>)+[\w#.-]*", re.I)
# An example string that reads as a sentence (a claim, a hypothesis), not a token of the contract
# such as "claim-1" or "query_logs", which the prompt's prose may not spell out.
_SENTENCE_CHARS = 12


def is_placeholder(value: str) -> bool:
    return bool(_PLACEHOLDER.fullmatch(value.strip()))


def _leaves(value: Any, key: str = "") -> Iterator[tuple[str, Any]]:
    """(the nearest object key, value) for every scalar, list items under their list's key."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, str(k))
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item, key)
    else:
        yield key, value


def _example_data(value: str) -> bool:
    sentence = len(value) >= _SENTENCE_CHARS and (" " in value or not value.isascii())
    return sentence or is_placeholder(value)


@dataclass(frozen=True)
class PromptExample:
    """The example values of one prompt: (key, value) pairs that only the example uses."""

    pairs: frozenset[tuple[str, str]] = frozenset()

    @classmethod
    def of(cls, prompt_text: str) -> PromptExample:
        start = prompt_text.rstrip().rfind("\n{")
        try:
            example = json.loads(prompt_text[start:]) if start >= 0 else None
        except ValueError:
            return cls()
        prose = prompt_text[:start]
        pairs = set()
        for key, value in _leaves(example):
            if isinstance(value, str) and value.strip() not in prose and _example_data(value.strip()):
                pairs.add((key, value.strip()))
            elif isinstance(value, int) and not isinstance(value, bool) and key.endswith("_ids"):
                # An id the example cites (an invocation): the prose's digits say nothing of it.
                pairs.add((key, str(value)))
        return cls(frozenset(pairs))

    def echo_in(self, data: Any) -> str | None:
        """Why `data` repeats the example (the first value that does), or None."""
        for key, value in _leaves(data):
            if isinstance(value, str) and is_placeholder(value):
                return f"{key} is the placeholder {value!r}, not a value from the question or the evidence"
            shown = value.strip() if isinstance(value, str) else str(value) if isinstance(value, int) else None
            if shown is not None and (key, shown) in self.pairs:
                return f"{key} {value!r} is copied from the prompt's example, not from the question or the evidence"
        return None
