"""The eval fixture suite: readable YAML cases that script a misbehaving LLM and state expectations.

Each fixture names an incident and a question, optionally scripts stage outputs (the `scripted`
provider fills in the rest offline), and lists what must hold: parse status, failed rules,
claim verifications, verdict, each asked (service, symptom) pair's coverage, how the answer's
first sentence opens, strings that must not reach the user. Sessions are stored like
any other, so every result links to its trace.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
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
from pipeline.core.messages import Message, msg, render
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
    failures: list[str] = field(default_factory=list)  # in English, as the CLI and runs before messages had them
    # The same failures as messages (code, params): shown in the reader's language, the expectation
    # they check beside them (`failure_lines`).
    failure_msgs: list[Message] = field(default_factory=list)
    session_id: str | None = None
    verdict: Verdict | None = None
    expected: Expectation = field(default_factory=Expectation)
    description_zh: str = ""  # the fixture's `description_zh:`; runs stored before it have none

    def as_dict(self) -> StoredResult:
        return StoredResult(name=self.name, description=self.description, passed=self.passed,
                            failures=list(self.failures), failure_msgs=[m.model_dump() for m in self.failure_msgs],
                            session_id=self.session_id, verdict=self.verdict, expected=self.expected,
                            description_zh=self.description_zh)

    @classmethod
    def from_stored(cls, result: StoredResult) -> EvalResult:
        """A result as a job row kept it, back as a result (a run stored before failure messages has none)."""
        return cls(name=result["name"], description=result.get("description", ""),
                   passed=bool(result.get("passed")), failures=list(result.get("failures") or []),
                   failure_msgs=[Message.model_validate(m) for m in result.get("failure_msgs") or []],
                   session_id=result.get("session_id"), verdict=result.get("verdict"),
                   expected=result.get("expected") or Expectation(), description_zh=result.get("description_zh", ""))


class StoredResult(TypedDict, total=False):
    """A fixture's result as an eval run's job row keeps it (`EvalResult.as_dict`). A run stored
    before a key existed lacks it: failure messages, the Chinese description."""

    name: Required[str]
    description: str
    passed: bool
    failures: list[str]
    failure_msgs: list[dict[str, Any]]  # Message.model_dump(), read back by failure_lines
    session_id: str | None
    verdict: Verdict | None
    expected: Expectation
    description_zh: str


def failure_lines(result: StoredResult, lang: str) -> list[str]:
    """A stored result's failures in `lang`, each followed by the fixture's `expect:` key it checks
    ("判定为 PASS，预期为 REJECT (verdict)"); a run stored before failures had messages shows them as written."""
    texts: list[str] = list(result.get("failures") or [])
    msgs = [Message.model_validate(m) for m in result.get("failure_msgs") or []]
    if len(msgs) != len(texts):
        return texts
    return [f"{render(m, lang)} ({m.code.split('.')[2]})" for m in msgs]


def described(result: StoredResult, lang: str) -> str:
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


def _ids(value: object) -> str:
    """An expectation's or an outcome's value as a message parameter: a list as "a, b", none as "-"."""
    values = value if isinstance(value, list) else [value]
    return ", ".join(str(v) for v in values if v is not None) or "-"


def _check(expect: Expectation, result: SessionResult, settings: Settings, world_id: str) -> list[Message]:
    """The failed expectations, each a message whose code names the `expect:` key it checks."""
    ev = result.evaluation
    fails: list[Message] = []
    claims = {c.key: c for c in ev.output.claim_objects()} if ev.output is not None else {}

    def want(cond: bool, message: Message) -> None:
        if not cond:
            fails.append(message)

    if "parse_status" in expect:
        want(ev.parse_status.status == expect["parse_status"],
             msg("eval.fail.parse_status", said=ev.parse_status.status, wanted=_ids(expect["parse_status"])))
    if "gatekeeper_status" in expect:
        allowed = expect["gatekeeper_status"]
        allowed = allowed if isinstance(allowed, list) else [allowed]
        want(ev.gatekeeper_result.status in allowed,
             msg("eval.fail.gatekeeper_status", said=ev.gatekeeper_result.status, wanted=_ids(allowed)))
    for rule in expect.get("failed_rules", []):
        want(rule in ev.gatekeeper_result.failed_rules,
             msg("eval.fail.failed_rules", rule=rule, failed=_ids(ev.gatekeeper_result.failed_rules)))
    for rule in expect.get("rules_not_failed", []):
        want(rule not in ev.gatekeeper_result.failed_rules, msg("eval.fail.rules_not_failed", rule=rule))
    checks = {c.claim_id: c.verification for c in ev.verifier_output.claim_checks}
    for claim_id, allowed in (expect.get("claim_verifications") or {}).items():
        allowed = allowed if isinstance(allowed, list) else [allowed]
        want(checks.get(claim_id) in allowed,
             msg("eval.fail.claim_verifications", claim=claim_id, said=_ids(checks.get(claim_id)), wanted=_ids(allowed)))
    verdict = _ids(result.verdict)
    if "verdict" in expect:
        want(result.verdict == expect["verdict"], msg("eval.fail.verdict", said=verdict, wanted=_ids(expect["verdict"])))
    if "verdict_in" in expect:
        want(result.verdict in expect["verdict_in"],
             msg("eval.fail.verdict_in", said=verdict, wanted=_ids(expect["verdict_in"])))
    if "verdict_not" in expect:
        want(result.verdict != expect["verdict_not"], msg("eval.fail.verdict_not", said=verdict))
    if "max_groundedness" in expect:
        want(ev.verifier_output.groundedness_score <= expect["max_groundedness"],
             msg("eval.fail.max_groundedness", score=ev.verifier_output.groundedness_score,
                 limit=expect["max_groundedness"]))
    if "composer_guard" in expect:
        want(ev.composer_guard.status == expect["composer_guard"],
             msg("eval.fail.composer_guard", said=ev.composer_guard.status, wanted=_ids(expect["composer_guard"])))
    # Law 8: each asked (service, symptom) pair's coverage ("order-service/memory: healthy"; "*"
    # for a question naming no service), and how the answer's first sentence opens and what it says.
    got = {f"{c.service or '*'}/{c.symptom}": c.status for c in ev.round_audit.question_coverage}
    for pair, status in (expect.get("coverage") or {}).items():
        want(got.get(pair) == status,
             msg("eval.fail.coverage", pair=pair, said=got[pair], wanted=status) if pair in got
             else msg("eval.fail.coverage.not_asked", pair=pair, wanted=status))
    # The form row: whether the question was answered in its form, and a yes/no's answer.
    form = ev.round_audit.question_form_coverage
    for key, value in (expect.get("form") or {}).items():
        said = getattr(form, key, None) if form is not None else None
        want(said == value, msg("eval.fail.form", key=key, said=_ids(said), wanted=_ids(value)))
    lead = ev.composer_output.answer_summary
    if "lead_starts_with" in expect:
        want(lead.startswith(expect["lead_starts_with"]),
             msg("eval.fail.lead_starts_with", lead=lead[:160], text=expect["lead_starts_with"]))
    for text in expect.get("lead_contains", []):
        want(text in lead, msg("eval.fail.lead_contains", lead=lead[:160], text=text))
    answer = normalize(result.final_answer)
    for text in expect.get("answer_must_not_contain", []):
        want(normalize(text) not in answer, msg("eval.fail.answer_must_not_contain", text=text))
    if expect.get("root_cause_kept_to_hypotheses"):
        truth = world_by_id(settings.incidents_dir, world_id).ground_truth()
        service = truth["root_cause_service"]
        hypotheses = " ".join(h.hypothesis_text for h in ev.composer_input.allowed_hypotheses)
        want(service in hypotheses, msg("eval.fail.root_cause_kept_to_hypotheses", service=service))
        if not truth.get("directly_evidenced"):
            root_claims = [cid for cid, c in claims.items() if c.claim_type == "root_cause"]
            want(not root_claims, msg("eval.fail.root_cause_kept_to_hypotheses.claimed", claims=_ids(root_claims)))
    return fails


def _failed(result: EvalResult, messages: list[Message]) -> EvalResult:
    result.failures = [render(m, "en") for m in messages]
    result.failure_msgs = messages
    result.passed = not messages
    return result


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
        return _failed(result, [msg("eval.fail.session", error=str(exc))])
    except (WorkbenchError, ValueError) as exc:
        return _failed(result, [msg("eval.fail.fixture", error=str(exc))])
    result.session_id, result.verdict = run.session_id, run.verdict
    # Labelled so the fixture's (mostly deliberately bad) sessions stay out of the unreviewed queue,
    # yet remain stored and traceable from the Eval page.
    store.add_review(session_id=run.session_id, label="eval_fixture", reviewer="workbench eval", note=name)
    return _failed(result, _check(expect, run, fixture_settings, fixture.get("incident") or run.world or ""))


def iter_suite(settings: Settings, rules: RuleSet | None, store: Store) -> Iterator[tuple[EvalResult, int]]:
    """Each fixture's result as it is made, with the suite's size: a job reports its progress and
    stops between fixtures when asked."""
    fixtures = load_fixtures(settings.fixtures_dir)
    with tempfile.TemporaryDirectory(prefix="wb-eval-") as tmp:
        for fixture in fixtures:
            yield run_fixture(fixture, settings=settings, store=store, rules=rules, script_dir=Path(tmp)), len(fixtures)


def run_suite(settings: Settings, rules: RuleSet | None = None, store: Store | None = None) -> list[EvalResult]:
    return [result for result, _ in iter_suite(settings, rules, store or Store(settings.db_url))]


def format_table(results: list[EvalResult], lang: str = "en") -> str:
    """The suite's results for a terminal; each failure in `lang` with the expectation it checks."""
    width = max((len(r.name) for r in results), default=10)
    lines = [f"{'fixture':<{width}}  result  verdict     session"]
    for r in results:
        lines.append(f"{r.name:<{width}}  {'pass' if r.passed else 'FAIL':<6}  {r.verdict or '-':<10}  {r.session_id or '-'}")
        lines += [f"{'':<{width}}    - {f}" for f in failure_lines(r.as_dict(), lang)]
    passed = sum(r.passed for r in results)
    lines.append(f"{passed}/{len(results)} fixtures passed")
    return "\n".join(lines)
