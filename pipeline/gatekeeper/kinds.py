"""What a gatekeeper rule kind is, and the one registry of them.

A kind is one class: its id, its defaults (name, description, severity, verdictImpact) and a
nested `Params` model saying which parameters rules/metadata.yaml must give it and of what type.
`@rule_kind` registers it; the rule files loader (rules_schema) validates against the registry,
so adding a kind touches its class and nothing else in code.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, ClassVar, Literal, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, StrictFloat, StrictInt

from pipeline.core.contracts import VerdictImpact

if TYPE_CHECKING:
    from pipeline.gatekeeper.rules import RuleContext, RuleResult
    from pipeline.gatekeeper.rules_schema import RuleSpec

Severity = Literal["error", "warning"]
# Parameter types. The loader checks every Number in [0, 1] and every Count >= 0.
Number = StrictFloat  # strict: "0.5" is refused, 1 is accepted as 1.0
Count = StrictInt  # a length or a number of things


class RuleParams(BaseModel):
    """A kind's parameters. No defaults on purpose: the YAML is their single source."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    def problems(self) -> Iterator[tuple[str, str]]:
        """(parameter, problem) for what the field types cannot say, e.g. two thresholds out of order."""
        return iter(())


class RuleKind:
    """Base of every rule kind; subclasses set the class attributes and implement `validate`."""

    id: ClassVar[str]
    name: ClassVar[str]
    description: ClassVar[str]  # English; index.yaml's description replaces it
    severity: ClassVar[Severity]
    verdict_impact: ClassVar[VerdictImpact]
    Params: ClassVar[type[RuleParams]] = RuleParams  # a kind without parameters keeps the empty model
    # Whether the rule ties a claim to the tool's own output (the cited call exists, the quote is
    # in it): with one of these off or warn-only, a forged quote passes, and verdicts are "ungated".
    gates_evidence: ClassVar[bool] = False

    def validate(self, context: RuleContext, metadata: RuleSpec) -> RuleResult:
        raise NotImplementedError


K = TypeVar("K", bound=type[RuleKind])
RULES: dict[str, RuleKind] = {}


def rule_kind(cls: K) -> K:
    """Register a kind under its id. A wrong declaration is a programming error, raised at import."""
    for attr in ("id", "name", "description", "severity", "verdict_impact"):
        if not isinstance(getattr(cls, attr, None), str):
            raise TypeError(f"rule kind {cls.__name__} must declare {attr} as a string")
    if cls.severity not in get_args(Severity) or cls.verdict_impact not in get_args(VerdictImpact):
        raise TypeError(f"rule kind {cls.__name__}: unknown severity or verdict_impact")
    if cls.severity == "warning" and cls.verdict_impact != "warn_only":
        raise TypeError(f"rule kind {cls.__name__}: a warning severity needs verdict_impact warn_only")
    if not issubclass(cls.Params, RuleParams):
        raise TypeError(f"rule kind {cls.__name__}: Params must derive from RuleParams")
    if cls.id in RULES:
        raise TypeError(f"rule kind id {cls.id!r} is registered twice ({type(RULES[cls.id]).__name__}, {cls.__name__})")
    RULES[cls.id] = cls()
    return cls


P = TypeVar("P", bound=RuleParams)


def params_of(spec: RuleSpec, model: type[P]) -> P:
    """A rule's parameters as its kind's model (the loader built them from that model)."""
    params = spec.params
    if not isinstance(params, model):
        raise TypeError(f"rule {spec.id} carries {type(params).__name__}, not {model.__qualname__}")
    return params
