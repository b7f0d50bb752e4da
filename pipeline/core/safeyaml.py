"""YAML that a person or a page hands us (rule files, workbench.yaml), read defensively.

`yaml.safe_load` stops code execution but not the other hostile shapes: a 4 KB alias bomb
("billion laughs") expands to gigabytes, a few thousand nested brackets recurse the composer
into RecursionError, and a duplicate key silently keeps the last value. This loader refuses
anchors and aliases (our files never need them), caps nesting depth and refuses duplicate keys,
each with the line and column; the caller caps the text's size and names the file.

Booleans are YAML 1.2's: only true/false (any case). YAML 1.1 also read on/off/yes/no as
booleans, so `negationOutcome: off`, written as the error message suggests, arrived as False.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node

from pipeline.core.errors import quote

# Rule files nest about five levels (ruleMetadata -> id -> params -> list -> item); configs
# fewer. The cap leaves room for hand-written structure and stops far below Python's recursion limit.
MAX_DEPTH = 32


class YamlProblem(ValueError):
    """Why and where a YAML text was refused, as "line L, column C: problem"."""


class _Refused(yaml.MarkedYAMLError):
    """Valid YAML that this loader will not accept (its `problem` is the whole message)."""


class _Loader(yaml.SafeLoader):
    """The pure-Python loader: its composer is where anchors, aliases and depth are visible."""

    yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise _Refused(problem="anchors and aliases (&name, *name) are not allowed here",
                           problem_mark=event.start_mark)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _Refused(problem=f"nested deeper than {MAX_DEPTH} levels", problem_mark=event.start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # "<<:" merges; SafeConstructor flattens it, later keys win by design
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:
                continue  # an unhashable key: SafeConstructor reports it below
            if first is not None:
                raise _Refused(problem=f"duplicate key {quote(key)} (first set on line {first})",
                               problem_mark=key_node.start_mark)
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


_Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                              list("tTfF"))


def load(text: str) -> Any:
    """The document in `text`, or YamlProblem saying where and why it was refused."""
    try:
        loader = _Loader(text)  # the reader checks every character here
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "document"
        problem = exc.problem or quote(str(exc))
        if not isinstance(exc, _Refused):
            problem = f"YAML syntax error: {problem}"
        raise YamlProblem(f"{where}: {problem}") from None
    except yaml.reader.ReaderError as exc:
        raise YamlProblem(f"character {exc.position + 1}: unacceptable character #x{exc.character:04x} "
                          "(control characters are not allowed in YAML)") from None
    except yaml.YAMLError as exc:
        raise YamlProblem(f"document: YAML error: {quote(str(exc))}") from None
