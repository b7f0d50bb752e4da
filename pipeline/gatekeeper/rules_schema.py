"""The two rule files (docs/spec.md#rules-as-data): index.yaml lists rules, metadata.yaml tunes them.

Every threshold, list and switch lives in these files; each rule kind's `Params` model
(pipeline/gatekeeper/rules.py) only says which keys it accepts and of what type (no defaults,
so the YAML is the single source). Name, description, severity and verdictImpact fall back to
the kind's own when a file leaves them out. Loading is all-or-nothing: any problem raises
RulesError with every message as "file: field: problem", and the caller keeps the RuleSet it
already had.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TypedDict, cast, get_args

from pydantic import ValidationError

from pipeline.core import safeyaml
from pipeline.core.contracts import VerdictImpact
from pipeline.core.errors import QUOTE_CHARS, RulesError, quote
from pipeline.gatekeeper.kinds import ParamValue, RuleKind, RuleParams, RuleSpec, Severity
from pipeline.gatekeeper.rules import RULES  # importing the kinds' module is what registers them

INDEX_FILE = "index.yaml"
# The shipped files are ~5 KB; a limit far above any hand-tuned file keeps a pasted or
# generated monster from being parsed at all.
MAX_RULES_FILE_BYTES = 256 * 1024
METADATA_FILE = "metadata.yaml"
_IMPACTS: tuple[str, ...] = get_args(VerdictImpact)
_SEVERITIES: tuple[str, ...] = get_args(Severity)


class IndexEntry(TypedDict):
    id: str
    name: str
    description: str
    enabled: bool


class IndexDocument(TypedDict):
    """index.yaml: which rules run."""

    rules: list[IndexEntry]


class MetadataEntry(TypedDict, total=False):
    severity: str
    verdictImpact: str
    description: str  # why the rule is tuned this way
    params: dict[str, ParamValue]  # the kind's Params as written


class MetadataDocument(TypedDict):
    """metadata.yaml: each rule's severity, verdict impact and parameters."""

    ruleMetadata: dict[str, MetadataEntry]


@dataclass(frozen=True)
class RuleSet:
    rules: tuple[RuleSpec, ...]
    _by_id: dict[str, RuleSpec] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {r.id: r for r in self.rules})

    def get(self, rule_id: str) -> RuleSpec | None:
        return self._by_id.get(rule_id)

    def impact(self, rule_id: str) -> VerdictImpact | None:
        spec = self._by_id.get(rule_id)
        return spec.verdict_impact if spec else None

    @cached_property
    def entity_rules(self) -> frozenset[str]:
        """The rules whose kind is an entity rule (its `entity_rule`): what the verdict policy reads
        a hit of as external_unknown."""
        return frozenset(r.id for r in self.rules if RULES[r.id].entity_rule)

    def enabled(self) -> list[RuleSpec]:
        return [r for r in self.rules if r.enabled]

    def ungated_by(self, *, gatekeeper_enabled: bool = True) -> list[str]:
        """What lets a forged quote through under these rules: "gatekeeper" when it is switched
        off, else the evidence rules (their kind's `gates_evidence`) that are off, warn-only or
        unable to fail (their kind's `neutered_by`, named after the rule id). Empty: verdicts
        under these rules are gated. Sessions record it; the Rules page and `rules apply` warn
        before such a version goes into force."""
        if not gatekeeper_enabled:
            return ["gatekeeper"]
        out = []
        for r in self.rules:
            kind = RULES[r.id]
            if not kind.gates_evidence:
                continue
            neutered = kind.neutered_by(r)
            if not r.enabled or r.downgraded:
                out.append(r.id)
            elif neutered:
                out.append(f"{r.id} ({', '.join(neutered)})")
        return out

    def with_rule(
        self,
        rule_id: str,
        *,
        enabled: bool | None = None,
        severity: str | None = None,
        verdict_impact: str | None = None,
        params: dict[str, ParamValue] | None = None,
    ) -> RuleSet:
        """A copy with one rule changed, validated like the files (raises RulesError)."""
        spec = self._by_id.get(rule_id)
        if spec is None:
            raise RulesError([f"{INDEX_FILE}: rules: unknown rule id {quote(rule_id)}"])
        index, meta = self.documents()
        for entry in index["rules"]:
            if entry["id"] == rule_id and enabled is not None:
                entry["enabled"] = enabled
        rule_meta = meta["ruleMetadata"][rule_id]
        if severity is not None:
            rule_meta["severity"] = severity
        if verdict_impact is not None:
            rule_meta["verdictImpact"] = verdict_impact
        if params:
            rule_meta["params"] = {**rule_meta.get("params", {}), **params}
        return _build(index, meta)

    def with_params(self, rule_id: str, **params: ParamValue) -> RuleSet:
        return self.with_rule(rule_id, params=params)

    def documents(self) -> tuple[IndexDocument, MetadataDocument]:
        """The rule set as the (index.yaml, metadata.yaml) documents it is loaded from."""
        index: IndexDocument = {
            "rules": [
                {"id": r.id, "name": r.name, "description": r.description, "enabled": r.enabled} for r in self.rules
            ]
        }
        meta: MetadataDocument = {"ruleMetadata": {}}
        for r in self.rules:
            entry: MetadataEntry = {"severity": r.severity, "verdictImpact": r.verdict_impact}
            if r.note:
                entry["description"] = r.note
            params = r.params.model_dump()
            if params:
                entry["params"] = params
            meta["ruleMetadata"][r.id] = entry
        return index, meta


def load_rules(rules_dir: Path) -> RuleSet:
    rules_dir = Path(rules_dir)
    texts: dict[str, str] = {}
    errors: list[str] = []
    for name in (INDEX_FILE, METADATA_FILE):
        text = _read_text(rules_dir / name, errors)
        if text is not None:
            texts[name] = text
    if errors:
        raise RulesError(errors)
    return load_rules_from_text(texts[INDEX_FILE], texts[METADATA_FILE])


def _read_text(path: Path, errors: list[str]) -> str | None:
    """The file as UTF-8 text, read no further than the size cap."""
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_RULES_FILE_BYTES + 1)
    except OSError as exc:
        errors.append(f"{path.name}: file: cannot read {path} ({exc.strerror or exc})")
        return None
    if len(data) > MAX_RULES_FILE_BYTES:
        errors.append(f"{path.name}: file: larger than the {MAX_RULES_FILE_BYTES}-byte limit for a rule file")
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        errors.append(f"{path.name}: file: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
                      "save it as UTF-8")
        return None


def load_rules_from_text(index_yaml: str, metadata_yaml: str) -> RuleSet:
    """Both rule files from text (the Rules page's editor and stored rule versions come here too)."""
    errors: list[str] = []
    index = parse_rules_yaml(INDEX_FILE, index_yaml, errors)
    meta = parse_rules_yaml(METADATA_FILE, metadata_yaml, errors)
    if errors:
        raise RulesError(errors)
    return _build(index, meta)


def parse_rules_yaml(name: str, text: str, errors: list[str]) -> Any:
    """One rule file's document, or None with "file: where: problem" appended to `errors`."""
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > MAX_RULES_FILE_BYTES:
        errors.append(f"{name}: file: {size} bytes exceeds the {MAX_RULES_FILE_BYTES}-byte limit for a rule file")
        return None
    try:
        return safeyaml.load(text)
    except safeyaml.YamlProblem as exc:
        errors.append(f"{name}: {exc}")
        return None


def _build(index: Any, meta: Any) -> RuleSet:
    errors: list[str] = []
    entries = _index_entries(index, errors)
    metadata = _metadata_entries(meta, errors)
    specs: list[RuleSpec] = []
    seen: set[str] = set()
    for pos, entry in entries:
        where = f"{INDEX_FILE}: rules[{pos}]"
        rule_id = entry.get("id")
        if not isinstance(rule_id, str) or not rule_id:
            errors.append(f"{where}.id: missing or not a string")
            continue
        if rule_id in seen:
            errors.append(f"{where}.id: duplicate rule id {quote(rule_id)}")
            continue
        seen.add(rule_id)
        kind = RULES.get(rule_id)
        if kind is None:
            known = ", ".join(RULES)
            errors.append(f"{where}.id: unknown rule id {quote(rule_id)} (no implementation; known: {known})")
            continue
        for key in entry:
            if key not in ("id", "name", "description", "enabled"):
                errors.append(f"{where}.{_key(key)}: unknown field")
        for key in ("name", "description"):
            if not isinstance(entry.get(key, ""), str):
                errors.append(f"{where}.{key}: must be a string")
        enabled = entry.get("enabled", True)
        if not isinstance(enabled, bool):
            errors.append(f"{where}.enabled: must be true or false, got {quote(enabled)}")
        spec = _spec(kind, entry, metadata.get(rule_id), errors)
        if spec is not None:
            specs.append(spec)
    for rule_id in metadata:
        if rule_id not in seen:
            errors.append(f"{METADATA_FILE}: ruleMetadata.{_key(rule_id)}: not listed in {INDEX_FILE}")
    if errors:
        raise RulesError(errors)
    return RuleSet(tuple(specs))


def _key(key: Any) -> str:
    """A mapping key as it appears in a message path, cut like any quoted value."""
    text = str(key)
    return text if len(text) <= QUOTE_CHARS else quote(text)


def _index_entries(index: Any, errors: list[str]) -> list[tuple[int, dict[str, Any]]]:
    if not isinstance(index, dict) or not isinstance(index.get("rules"), list):
        errors.append(f"{INDEX_FILE}: rules: must be a list of rules")
        return []
    for key in index:
        if key != "rules":
            errors.append(f"{INDEX_FILE}: {_key(key)}: unknown field")
    out = []
    for pos, entry in enumerate(index["rules"]):
        if isinstance(entry, dict):
            out.append((pos, entry))
        else:
            errors.append(f"{INDEX_FILE}: rules[{pos}]: must be a mapping")
    return out


def _metadata_entries(meta: Any, errors: list[str]) -> dict[str, dict[str, Any]]:
    if not isinstance(meta, dict) or not isinstance(meta.get("ruleMetadata"), dict):
        errors.append(f"{METADATA_FILE}: ruleMetadata: must be a mapping of rule id to metadata")
        return {}
    for key in meta:
        if key != "ruleMetadata":
            errors.append(f"{METADATA_FILE}: {_key(key)}: unknown field")
    out: dict[str, dict[str, Any]] = {}
    for rule_id, entry in meta["ruleMetadata"].items():
        if isinstance(entry, dict):
            out[str(rule_id)] = entry
        else:
            errors.append(f"{METADATA_FILE}: ruleMetadata.{_key(rule_id)}: must be a mapping")
    return out


def _spec(kind: RuleKind, entry: dict[str, Any], meta: dict[str, Any] | None, errors: list[str]) -> RuleSpec | None:
    where = f"{METADATA_FILE}: ruleMetadata.{kind.id}"
    if meta is None:
        # Present even when empty: a tuner reads one file to see how every rule is set.
        errors.append(f"{where}: missing (every rule in {INDEX_FILE} has an entry here, {{}} for the kind's defaults)")
        return None
    before = len(errors)
    for key in meta:
        if key not in ("severity", "verdictImpact", "description", "params"):
            errors.append(f"{where}.{_key(key)}: unknown field")
    severity = meta.get("severity", kind.severity)
    if severity not in _SEVERITIES:
        errors.append(f"{where}.severity: {quote(severity)} is not one of {', '.join(_SEVERITIES)}")
    impact = meta.get("verdictImpact", kind.verdict_impact)
    if impact not in _IMPACTS:
        errors.append(f"{where}.verdictImpact: {quote(impact)} is not one of {', '.join(_IMPACTS)}")
    elif severity == "warning" and impact != "warn_only":
        errors.append(f"{where}.severity: warning contradicts verdictImpact {impact} (use error, or warn_only)")
    note = meta.get("description", "")
    if not isinstance(note, str):
        errors.append(f"{where}.description: must be a string")
    raw_params = meta.get("params", {}) or {}
    params = None
    if not isinstance(raw_params, dict):
        errors.append(f"{where}.params: must be a mapping")
    else:
        try:
            params = kind.Params.model_validate(raw_params)
        except ValidationError as exc:
            errors.extend(_param_messages(where, exc))
    if params is not None:
        errors.extend(_param_checks(where, params))
    if len(errors) > before or params is None:
        return None
    return RuleSpec(
        id=kind.id,
        name=entry.get("name", kind.name),
        description=entry.get("description", kind.description),
        enabled=entry.get("enabled", True),
        severity=cast(Severity, severity),  # checked against _SEVERITIES above
        verdict_impact=cast(VerdictImpact, impact),  # checked against _IMPACTS above
        params=params,
        note=note,
    )


def _param_messages(where: str, exc: ValidationError) -> list[str]:
    out = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            problem = "unknown parameter for this rule"
        elif err["type"] == "missing":
            problem = "missing (rules are data: every parameter is set in the YAML)"
        else:
            problem = f"{err['msg']} (got {quote(err.get('input'))})"
        out.append(f"{where}.params.{loc}: {problem}")
    return out


def _param_checks(where: str, params: RuleParams) -> list[str]:
    out = []
    for name, value in params.model_dump().items():
        if isinstance(value, float) and not 0.0 <= value <= 1.0:
            out.append(f"{where}.params.{name}: {value} is outside [0, 1]")
        elif isinstance(value, int) and not isinstance(value, bool) and value < 0:
            out.append(f"{where}.params.{name}: {value} is negative")
    out.extend(f"{where}.params.{name}: {problem}" for name, problem in params.problems())
    return out
