"""The eval fixture suite: readable YAML cases that script a misbehaving LLM and state expectations.

Each fixture names an incident and a question, optionally scripts stage outputs (the `scripted`
provider fills in the rest offline), and lists what must hold: parse status, failed rules,
claim verifications, verdict, each asked (service, symptom) pair's coverage, how the answer's
first sentence opens, strings that must not reach the user. Sessions are stored like
any other, so every result links to its trace.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Required

import yaml
from pydantic import JsonValue, TypeAdapter, ValidationError

# pydantic validates a fixture against these on load; on Python 3.11 only typing_extensions'
# TypedDict carries what it needs for that.
from typing_extensions import TypedDict

from pipeline.core.config import Settings
from pipeline.core.contracts import Verdict
from pipeline.core.errors import ConfigError, WorkbenchError
from pipeline.gatekeeper import RuleSet
from pipeline.runs.session import SessionFailed, SessionResult, run_session
from pipeline.store import Store
from pipeline.text.primitives import normalize
from pipeline.tools.incidents import world_by_id


class Expectation(TypedDict, total=False):
    """What must hold of a fixture's session (each key checked only when given)."""

    parse_status: str
    gatekeeper_status: str | list[str]
    failed_rules: list[str]
    rules_not_failed: list[str]
    claim_verifications: dict[str, str | list[str]]  # claim id -> the verification(s) allowed
    verdict: Verdict
    verdict_in: list[Verdict]
    verdict_not: Verdict
    max_groundedness: float
    composer_guard: str
    coverage: dict[str, str]  # "service/symptom" ("*" for no service) -> status
    form: dict[str, str | bool | None]  # FormCoverage field -> value
    lead_starts_with: str
    lead_contains: list[str]
    answer_must_not_contain: list[str]
    root_cause_kept_to_hypotheses: bool


class Fixture(TypedDict, total=False):
    """One data/fixtures/*.yaml case; `name` defaults to the file's stem."""

    name: Required[str]
    question: Required[str]
    description: str
    description_zh: str
    incident: str | None
    config: dict[str, JsonValue]  # settings overrides, merged one section deep
    script: dict[str, JsonValue]  # scripted stage outputs (pipeline/llm/scripted.py)
    expect: Expectation


_FIXTURE = TypeAdapter(Fixture)


@dataclass
class EvalResult:
    name: str
    description: str
    passed: bool
    failures: list[str] = field(default_factory=list)
    session_id: str | None = None
    verdict: Verdict | None = None
    expected: Expectation = field(default_factory=Expectation)
    description_zh: str = ""  # the fixture's `description_zh:`; runs stored before it have none

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def described(result: Mapping[str, Any], lang: str) -> str:
    """A stored result's fixture description in `lang`: the Chinese one where the fixture gave it."""
    return str((lang == "zh" and result.get("description_zh")) or result.get("description") or "")


def load_fixtures(fixtures_dir: Path) -> list[Fixture]:
    fixtures = []
    for path in sorted(fixtures_dir.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if not isinstance(data, dict) or not isinstance(data.get("question"), str):
            raise ConfigError(f"{path}: an eval fixture is a mapping with at least a `question:`")
        data.setdefault("name", path.stem)
        try:
            fixtures.append(_FIXTURE.validate_python(data))
        except ValidationError as exc:
            first = exc.errors()[0]
            raise ConfigError(f"{path}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from exc
    return fixtures


def _settings_for(base: Settings, fixture: Fixture, script_dir: Path) -> Settings:
    data = base.model_dump()
    for key, value in (fixture.get("config") or {}).items():
        data[key] = {**data[key], **value} if isinstance(value, dict) and isinstance(data.get(key), dict) else value
    if fixture.get("script"):
        path = script_dir / f"{fixture['name']}.yaml"
        path.write_text(yaml.safe_dump(fixture["script"], allow_unicode=True), encoding="utf-8")
        data.update(provider="scripted", scripted_fixture=str(path))
    return Settings.model_validate(data)


def _check(expect: Expectation, result: SessionResult, settings: Settings, world_id: str) -> list[str]:
    ev = result.evaluation
    fails: list[str] = []
    claims = {c.key: c for c in ev.output.claim_objects()} if ev.output is not None else {}

    def want(cond: bool, message: str) -> None:
        if not cond:
            fails.append(message)

    if "parse_status" in expect:
        want(ev.parse_status.status == expect["parse_status"],
             f"parse_status {ev.parse_status.status} != {expect['parse_status']}")
    if "gatekeeper_status" in expect:
        allowed = expect["gatekeeper_status"]
        allowed = allowed if isinstance(allowed, list) else [allowed]
        want(ev.gatekeeper_result.status in allowed, f"gatekeeper_status {ev.gatekeeper_result.status} not in {allowed}")
    for rule in expect.get("failed_rules", []):
        want(rule in ev.gatekeeper_result.failed_rules, f"rule {rule} did not fail ({ev.gatekeeper_result.failed_rules})")
    for rule in expect.get("rules_not_failed", []):
        want(rule not in ev.gatekeeper_result.failed_rules, f"rule {rule} failed but must not")
    checks = {c.claim_id: c.verification for c in ev.verifier_output.claim_checks}
    for claim_id, allowed in (expect.get("claim_verifications") or {}).items():
        allowed = allowed if isinstance(allowed, list) else [allowed]
        want(checks.get(claim_id) in allowed, f"{claim_id} verified {checks.get(claim_id)}, expected one of {allowed}")
    if "verdict" in expect:
        want(result.verdict == expect["verdict"], f"verdict {result.verdict} != {expect['verdict']}")
    if "verdict_in" in expect:
        want(result.verdict in expect["verdict_in"], f"verdict {result.verdict} not in {expect['verdict_in']}")
    if "verdict_not" in expect:
        want(result.verdict != expect["verdict_not"], f"verdict must not be {expect['verdict_not']}")
    if "max_groundedness" in expect:
        want(ev.verifier_output.groundedness_score <= expect["max_groundedness"],
             f"groundedness {ev.verifier_output.groundedness_score} > {expect['max_groundedness']}")
    if "composer_guard" in expect:
        want(ev.composer_guard.status == expect["composer_guard"],
             f"composer guard {ev.composer_guard.status} != {expect['composer_guard']}")
    # Law 8: each asked (service, symptom) pair's coverage ("order-service/memory: healthy"; "*"
    # for a question naming no service), and how the answer's first sentence opens and what it says.
    got = {f"{c.service or '*'}/{c.symptom}": c.status for c in ev.round_audit.question_coverage}
    for pair, status in (expect.get("coverage") or {}).items():
        want(got.get(pair) == status, f"coverage {pair} is {got.get(pair, 'not asked')}, expected {status} ({got})")
    # The form row: whether the question was answered in its form, and a yes/no's answer.
    form = ev.round_audit.question_form_coverage
    for key, value in (expect.get("form") or {}).items():
        said = getattr(form, key, None) if form is not None else None
        want(said == value, f"form {key} is {said}, expected {value}")
    lead = ev.composer_output.answer_summary
    if "lead_starts_with" in expect:
        want(lead.startswith(expect["lead_starts_with"]), f"lead “{lead[:160]}” does not start with "
                                                             f"“{expect['lead_starts_with']}”")
    for text in expect.get("lead_contains", []):
        want(text in lead, f"lead “{lead[:160]}” does not say “{text}”")
    answer = normalize(result.final_answer)
    for text in expect.get("answer_must_not_contain", []):
        want(normalize(text) not in answer, f"final answer contains forbidden “{text}”")
    if expect.get("root_cause_kept_to_hypotheses"):
        truth = world_by_id(settings.incidents_dir, world_id).ground_truth()
        service = truth["root_cause_service"]
        hypotheses = " ".join(h.hypothesis_text for h in ev.composer_input.allowed_hypotheses)
        want(service in hypotheses, f"no allowed hypothesis names the root-cause service {service}")
        if not truth.get("directly_evidenced"):
            root_claims = [cid for cid, c in claims.items() if c.claim_type == "root_cause"]
            want(not root_claims, f"root cause stated as claim(s) {root_claims} though not directly evidenced")
    return fails


def run_fixture(fixture: Fixture, *, settings: Settings, store: Store, rules: RuleSet | None,
                script_dir: Path) -> EvalResult:
    name = fixture["name"]
    expect = fixture.get("expect") or {}
    result = EvalResult(name=name, description=fixture.get("description", ""), passed=False, expected=expect,
                        description_zh=fixture.get("description_zh", ""))
    try:
        fixture_settings = _settings_for(settings, fixture, script_dir)
        run = run_session(fixture["question"], settings=fixture_settings, store=store,
                          world_id=fixture.get("incident"), rules=rules)
    except SessionFailed as exc:
        result.session_id = exc.session_id
        result.failures = [f"session failed: {exc}"]
        return result
    except (WorkbenchError, ValueError) as exc:
        result.failures = [f"fixture cannot run: {exc}"]
        return result
    result.session_id, result.verdict = run.session_id, run.verdict
    # Labelled so the fixture's (mostly deliberately bad) sessions stay out of the unreviewed queue,
    # yet remain stored and traceable from the Eval page.
    store.add_review(session_id=run.session_id, label="eval_fixture", reviewer="workbench eval", note=name)
    result.failures = _check(expect, run, fixture_settings, fixture.get("incident") or run.world or "")
    result.passed = not result.failures
    return result


def iter_suite(settings: Settings, rules: RuleSet | None, store: Store) -> Iterator[tuple[EvalResult, int]]:
    """Each fixture's result as it is made, with the suite's size: a job reports its progress and
    stops between fixtures when asked."""
    fixtures = load_fixtures(settings.fixtures_dir)
    with tempfile.TemporaryDirectory(prefix="wb-eval-") as tmp:
        for fixture in fixtures:
            yield run_fixture(fixture, settings=settings, store=store, rules=rules, script_dir=Path(tmp)), len(fixtures)


def run_suite(settings: Settings, rules: RuleSet | None = None, store: Store | None = None) -> list[EvalResult]:
    return [result for result, _ in iter_suite(settings, rules, store or Store(settings.db_url))]


def format_table(results: list[EvalResult]) -> str:
    width = max((len(r.name) for r in results), default=10)
    lines = [f"{'fixture':<{width}}  result  verdict     session"]
    for r in results:
        lines.append(f"{r.name:<{width}}  {'pass' if r.passed else 'FAIL':<6}  {r.verdict or '-':<10}  {r.session_id or '-'}")
        lines += [f"{'':<{width}}    - {f}" for f in r.failures]
    passed = sum(r.passed for r in results)
    lines.append(f"{passed}/{len(results)} fixtures passed")
    return "\n".join(lines)
