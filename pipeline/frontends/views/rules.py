"""Rules page read model: how to edit each rule, the version history, what a candidate changes."""

from __future__ import annotations

import difflib
import typing
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import numpy as np

from pipeline.core.contracts import GatekeeperResult, VerdictImpact
from pipeline.core.errors import RulesError
from pipeline.core.messages import family, lang_of
from pipeline.gatekeeper.kinds import RULES, ActsOn, RuleSpec, Severity
from pipeline.gatekeeper.rules_schema import RuleSet
from pipeline.replay.columns import HistoryArrays
from pipeline.runs.rulebook import parsed_rules
from pipeline.store import Store


def in_language(text: str, lang: str) -> str:
    """One half of a bilingual "中文 / English" text from rules/index.yaml; other text unchanged."""
    zh, sep, en = text.partition(" / ")
    if not sep:
        return text
    return zh if lang == "zh" else en


def rule_name(spec: RuleSpec, lang: str) -> str:
    """What a rule is called: its Chinese name from the catalogue, else the name its YAML gives."""
    return family("rule_name.", lang).get(spec.id, spec.name) if lang_of(lang) == "zh" else spec.name


VERDICT_IMPACTS: tuple[str, ...] = typing.get_args(VerdictImpact)
SEVERITIES: tuple[str, ...] = typing.get_args(Severity)


@dataclass
class ParamField:
    name: str
    kind: Literal["number", "count", "bool", "text_list", "choice_list", "choice"]  # number: a ratio in [0, 1]
    value: Any
    options: tuple[str, ...] = ()
    acts_on: ActsOn | None = None  # what the value is compared with (RuleKind.acts_on)


def _literal_options(annotation: Any) -> tuple[str, ...]:
    return tuple(str(a) for a in typing.get_args(annotation)) if typing.get_origin(annotation) is Literal else ()


def param_fields(spec: RuleSpec) -> list[ParamField]:
    """How to edit each parameter of a rule, read from the rule kind's parameter model."""
    model = type(spec.params)
    values = spec.params.model_dump()
    kind = RULES.get(spec.id)
    targets = kind.acts_on if kind is not None else {}
    out = []
    for name, info in model.model_fields.items():
        ann = info.annotation
        value = values.get(name)
        if typing.get_origin(ann) is list:
            (item,) = typing.get_args(ann)
            options = _literal_options(item)
            out.append(ParamField(name, "choice_list" if options else "text_list", value, options))
        elif _literal_options(ann):
            out.append(ParamField(name, "choice", value, _literal_options(ann)))
        elif isinstance(value, bool):
            out.append(ParamField(name, "bool", value))
        elif ann is int:
            out.append(ParamField(name, "count", value))
        else:
            out.append(ParamField(name, "number", value))
        out[-1].acts_on = targets.get(name)
    return out


def digest_scores_judged(spec: RuleSpec, arrays: HistoryArrays | None) -> int | None:
    """How many stored bindings have a digest score that a "digest_scores" threshold of `spec`
    compares (compareAgainst's digest sources); 0 when compareAgainst lists none; None while the
    history is not loaded (a preview loads it)."""
    sources = getattr(spec.params, "compareAgainst", None) or []
    columns = {"digest.source_quote": "b_quote", "digest.summary": "b_summary"}
    compared = [columns[c] for c in sources if c in columns]
    if not compared:
        return 0
    if arrays is None:
        return None
    scored = np.zeros(len(arrays.b_score), dtype=bool)
    for name in compared:
        scored |= ~np.isnan(getattr(arrays, name))
    return int(scored.sum())


@dataclass
class RuleVersionView:
    """One entry of the rules history; version 0 is the rules/ directory the package ships."""

    id: int
    created_at: datetime | None
    author: str
    comment: str
    active: bool
    parent_id: int | None
    yaml: tuple[str, str]  # (index.yaml, metadata.yaml)


def rule_history(store: Store, shipped: tuple[str, str], shipped_at: datetime | None = None) -> list[RuleVersionView]:
    """Applied versions newest first, then version 0: in force until the first Apply, and a
    rollback target like any other, dated by its files (`shipped_at`, rulebook.rules_dir_time)."""
    versions = [RuleVersionView(v["id"], v["created_at"], v["author"], v["comment"], bool(v["active"]),
                                v["parent_id"] if v["parent_id"] is not None else 0,
                                (v["index_yaml"], v["metadata_yaml"])) for v in store.rule_versions()]
    in_force = not any(v.active for v in versions)
    return [*versions, RuleVersionView(0, shipped_at, "shipped", "rules/ directory", in_force, None, shipped)]


def changed_rules(old: RuleSet, new: RuleSet) -> set[str]:
    """Ids of rules whose switch, impact, severity or parameters differ between two rule sets."""
    before = {r.id: r for r in old.rules}
    return {r.id for r in new.rules if before.get(r.id) != r} | {rid for rid in before if new.get(rid) is None}


def responsible_rules(listed: list[str], result: GatekeeperResult, edited: set[str]) -> list[str]:
    """The replay's own list, else the edited rules among those the replayed result names:
    an impact change moves a verdict without changing which rules fail."""
    if listed:
        return listed
    named = {*result.failed_rules, *result.warnings, *(e.rule_id for e in result.errors)}
    return sorted(named & edited)


def yaml_diff(old: tuple[str, str], new: tuple[str, str], old_name: str, new_name: str) -> str:
    """Unified diff of two (index.yaml, metadata.yaml) pairs."""
    parts: list[str] = []
    for fname, a, b in (("index.yaml", old[0], new[0]), ("metadata.yaml", old[1], new[1])):
        parts.extend(difflib.unified_diff(
            a.splitlines(keepends=True), b.splitlines(keepends=True),
            fromfile=f"{old_name}/{fname}", tofile=f"{new_name}/{fname}",
        ))
    return "".join(parts)


def check_rules(index_yaml: str, metadata_yaml: str) -> tuple[RuleSet | None, list[str]]:
    """The candidate as a RuleSet, or None and every "file: field: problem" message."""
    try:
        return parsed_rules(index_yaml, metadata_yaml), []
    except RulesError as exc:
        return None, list(exc.messages)
