"""Size and depth bounds shared by every path that stores or reads outside text."""

from __future__ import annotations

import json
import math
import re
from typing import Any

# JSON nested deeper than this is refused before any recursive code (pydantic, json.dumps, the
# id remapping) walks it: legitimate bundles and tool arguments nest a handful of levels.
MAX_JSON_DEPTH = 100
# The widest integer both backends store (SQLite INTEGER, PostgreSQL bigint).
INT64 = 2**63 - 1
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


class JsonNumberRefused(ValueError):
    """A number no store keeps: NaN, an infinity, a float beyond its range (1e999), an integer
    beyond 64 bits. JSON has no NaN or Infinity, but Python reads and writes them, SQLite's JSON
    functions then fail on the row and PostgreSQL refuses it, so they are refused where outside
    text is read, and `storable` stands in for them where a value must be kept."""


def _refuse_constant(name: str) -> Any:
    raise JsonNumberRefused(f"{name} is not a number JSON allows")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonNumberRefused(f"{text[:30]} is beyond the range of a number")
    return value


def int64(text: str) -> int:
    """A JSON integer token read, refused beyond 64 bits; a long one before int() reads it (past
    4300 digits int() raises a ValueError whose advice is for programmers)."""
    if len(text.lstrip("-")) > len(str(INT64)) or abs(value := int(text)) > INT64:
        raise JsonNumberRefused(f"integer {text[:30]}... is beyond 64 bits")
    return value


def unstorable(data: Any) -> str | None:
    """Where a decoded JSON value holds a number no backend stores (JsonNumberRefused), as
    "path: what"; None when it holds none. Iterative, like too_deep."""
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return f"{path or 'value'}: {item} is not a number JSON allows"
        if isinstance(item, int) and not isinstance(item, bool) and abs(item) > INT64:
            return f"{path or 'value'}: integer {str(item)[:30]}... is beyond 64 bits"
        if isinstance(item, dict):
            stack.extend((v, f"{path}.{str(k)[:40]}" if path else str(k)[:40]) for k, v in item.items())
        elif isinstance(item, (list, tuple)):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(item))
    return None


def storable(data: Any) -> Any:
    """`data` with each number no backend stores written as its text ("nan", "inf"), so what a
    model sent can be kept and shown beside the refusal."""
    if isinstance(data, float) and not math.isfinite(data):
        return str(data)
    if isinstance(data, int) and not isinstance(data, bool) and abs(data) > INT64:
        return str(data)[:40]
    if isinstance(data, dict):
        return {k: storable(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [storable(v) for v in data]
    return data


def strict_loads(text: str | bytes) -> Any:
    """json.loads refusing what no store keeps (JsonNumberRefused)."""
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=int64)


def loads_bounded(text: str | bytes, limit: int = MAX_JSON_DEPTH) -> Any:
    """json.loads for text from outside (LLM replies, tool-call arguments): a 100k-deep reply
    raises JsonTooDeep instead of RecursionError, nothing deeper than `limit` gets through
    to the recursive code after it, and a number no store keeps raises JsonNumberRefused."""
    try:
        value = strict_loads(text)
    except RecursionError:
        raise JsonTooDeep(f"JSON nested deeper than {limit} levels") from None
    if too_deep(value, limit):
        raise JsonTooDeep(f"JSON nested deeper than {limit} levels")
    return value
