"""Size and depth bounds shared by every path that stores or reads outside text."""

from __future__ import annotations

import json
import re
from typing import Any

# JSON nested deeper than this is refused before any recursive code (pydantic, json.dumps, the
# id remapping) walks it: legitimate bundles and tool arguments nest a handful of levels.
MAX_JSON_DEPTH = 100
# Undecodable argv bytes (surrogateescape) and JSON "\ud800" escapes give lone surrogates,
# which neither a database driver nor a UTF-8 stream can encode.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def encodable(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD, so it can be stored and printed."""
    return _LONE_SURROGATE.sub("\ufffd", text)


def cap_text(text: str, max_bytes: int) -> tuple[str, int]:
    """`text` cut to at most `max_bytes` UTF-8 bytes (never inside a character) and the bytes cut."""
    encoded = text.encode("utf-8", "surrogatepass")
    if len(encoded) <= max_bytes:
        return text, 0
    kept = encoded[:max_bytes].decode("utf-8", "ignore")
    return kept, len(encoded) - len(kept.encode("utf-8", "surrogatepass"))


def too_deep(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether a decoded JSON value nests deeper than `limit`; iterative, so it cannot recurse out."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, (dict, list)):
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


class JsonTooDeep(ValueError):
    """JSON nested beyond MAX_JSON_DEPTH: a ValueError, so every "not valid JSON" path handles it."""


def loads_bounded(text: str | bytes, limit: int = MAX_JSON_DEPTH) -> Any:
    """json.loads for text from outside (LLM replies, tool-call arguments): a 100k-deep reply
    raises JsonTooDeep instead of RecursionError, and nothing deeper than `limit` gets through
    to the recursive code after it."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise JsonTooDeep(f"JSON nested deeper than {limit} levels") from None
    if too_deep(value, limit):
        raise JsonTooDeep(f"JSON nested deeper than {limit} levels")
    return value
