"""Editing one field of the rule files in place: comments, key order and layout kept, so a change
diffs as the lines it touched."""

from __future__ import annotations

import io
import itertools
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from pipeline.gatekeeper.rules_schema import INDEX_FILE, METADATA_FILE, parse_rules_yaml


def set_rule_field(
    index_yaml: str, metadata_yaml: str, rule_id: str, field_name: str, value: Any
) -> tuple[str, str]:
    """The two rule files with one field of one rule changed, unvalidated (the editor shows the
    errors); every other line as its author wrote it, comments included, so the change diffs as
    the lines it touched.

    `field_name` is "enabled", "severity", "verdictImpact" or "params.<name>".
    """
    # The guarded reader first (size, anchors and aliases, depth, duplicate keys): a bomb pasted
    # into the editor is refused, never expanded by the round trip; refused text is left as typed.
    refused: list[str] = []
    index = parse_rules_yaml(INDEX_FILE, index_yaml, refused)
    meta = parse_rules_yaml(METADATA_FILE, metadata_yaml, refused)
    if refused or not isinstance(index, dict) or not isinstance(meta, dict):
        return index_yaml, metadata_yaml
    if field_name == "enabled":
        doc = _round_trip(index_yaml)
        for entry in doc.get("rules") or []:
            if isinstance(entry, dict) and entry.get("id") == rule_id:
                _assign(entry, "enabled", value)
        return _emit(doc, index_yaml), metadata_yaml
    doc = _round_trip(metadata_yaml)
    entry = _child(_child(doc, "ruleMetadata"), rule_id)
    if field_name.startswith("params."):
        _assign(_child(entry, "params"), field_name.removeprefix("params."), value)
    else:
        _assign(entry, field_name, value)
    return index_yaml, _emit(doc, metadata_yaml)


def _yaml(text: str) -> YAML:
    """A round-trip reader and writer set to the text's own indentation: mappings by the first
    nested key's step, block sequences by how far the first dash sits under its key."""
    mapping, offset = 2, 2
    lines = [(len(line) - len(line.lstrip(" ")), line.strip()) for line in text.splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    for (indent, line), (below, nxt) in itertools.pairwise(lines):
        if line.endswith(":") and below > indent and not nxt.startswith("- "):
            mapping = below - indent
            break
    for (indent, line), (below, nxt) in itertools.pairwise(lines):
        if line.endswith(":") and nxt.startswith("- "):
            offset = below - indent
            break
    rt = YAML(typ="rt")
    rt.preserve_quotes = True
    rt.width = 4096  # never re-wrap a long line the author kept on one
    rt.indent(mapping=mapping, sequence=offset + 2, offset=offset)
    return rt


def _round_trip(text: str) -> Any:
    return _yaml(text).load(text)


def _emit(doc: Any, like: str) -> str:
    out = io.StringIO()
    _yaml(like).dump(doc, out)
    return out.getvalue()


def _child(mapping: Any, key: str) -> Any:
    if not isinstance(mapping.get(key), dict):
        mapping[key] = CommentedMap()
    return mapping[key]


def _assign(mapping: Any, key: str, value: Any) -> None:
    """Set one value; a list keeps its flow or block style and the comments of its items."""
    old = mapping.get(key)
    if isinstance(old, CommentedSeq) and isinstance(value, list):
        old[:] = value
    elif isinstance(old, bool) != isinstance(value, bool) or old != value:
        mapping[key] = value
