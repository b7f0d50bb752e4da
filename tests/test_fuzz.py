"""Random JSON at the three readers of outside JSON: the executor-output reader, the
collector's tool-argument reader and bundle import. Whatever arrives, the reader refuses it with
the project's own error (or parse status) and a message, or stores it so that every read path
(the session record, export) reads it back; never an unexpected exception, never a poisoned row.

Deterministic (derandomize) and small, so the fast lane stays fast; the same examples every run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import CPU_QUESTION, cpu_claim, diagnosis_json, scripted
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from pipeline.core.config import Settings
from pipeline.core.errors import WorkbenchError
from pipeline.store import Store

FUZZ = settings(derandomize=True, database=None, deadline=None, max_examples=150,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large, HealthCheck.large_base_example])


class Raw:
    """A JSON token written as is: what json.dumps cannot write (1e999, a 5000-digit integer) or
    what a reader must survive (deep nesting)."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return f"Raw({self.text[:40]!r})"


NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(),
    st.sampled_from([2**63 - 1, 2**63, -(2**63) - 1, 2**64, 10**30]),
    st.sampled_from(["1e999", "-1e999", "1e-999", "-0", "NaN", "Infinity", "-Infinity", "9" * 5000,
                     "1" + "0" * 400, "0." + "0" * 400 + "1"]).map(Raw),
)
# Control characters, lone surrogates (JSON "\ud800" escapes) and every other plane.
TEXT = st.text(st.characters(codec=None, categories=["Cs", "Cc", "Cf", "Zs", "L", "N", "P", "S"]), max_size=30)
LONG = st.integers(10_000, 200_000).map(lambda n: "x" * n)
DEEP = st.integers(90, 3000).flatmap(lambda n: st.sampled_from(
    [Raw("[" * n + "]" * n), Raw('{"a":' * n + "1" + "}" * n)]))
NASTY = st.sampled_from(["\ud800", "payment\udfff-service", "a\x00b", "\x1b[31m", "\u202e", "\r\n", "\ufeff"])
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, TEXT, NASTY, LONG, DEEP)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
                      max_leaves=12)


def dump(value: Any, *, ascii_only: bool = True) -> str:
    """`value` as JSON text, Raw tokens as they are, NaN and Infinity as Python writes them."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k, ensure_ascii=ascii_only)}: {dump(v, ascii_only=ascii_only)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(dump(v, ascii_only=ascii_only) for v in value) + "]"
    return json.dumps(value, ensure_ascii=ascii_only)


def _replaced(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    """`doc` (plain JSON) with the item at `path` replaced by `value` (added when missing)."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        return {**doc, head: _replaced(doc.get(head), rest, value)}
    if isinstance(doc, list) and isinstance(head, int) and head < len(doc):
        return [*doc[:head], _replaced(doc[head], rest, value), *doc[head + 1:]]
    return value


def _planted(base: dict[str, Any], paths: list[tuple[Any, ...]]) -> st.SearchStrategy[str]:
    """A well-formed document with one random value planted at one of `paths`, as JSON text
    (lone surrogates escaped or raw), or a random value on its own."""
    planted = st.builds(_replaced, st.just(base), st.sampled_from(paths), VALUES)
    return st.builds(lambda v, a: dump(v, ascii_only=a), planted | VALUES, st.booleans())


@pytest.fixture(params=["sqlite", "postgresql"])
def backend_settings(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Settings whose store is SQLite (the workbench home) or a fresh PostgreSQL schema."""
    from helpers import postgres_schema

    from pipeline.core.config import load_settings

    if request.param == "sqlite":
        yield load_settings()
        return
    with postgres_schema("fuzz") as url:
        monkeypatch.setenv("DATABASE_URL", url)
        yield load_settings()
        Store(url).engine.dispose()


def _read_back(store: Store, sid: str) -> None:
    """Every read of a stored session: the record the pages show, and the export."""
    from pipeline.bundles.session_bundle import export_bundle
    from pipeline.store.record import read_session

    read_session(store, sid)
    json.dumps(export_bundle(store, sid), allow_nan=False)


# --- the executor-output reader -----------------------------------------------------------------

DIAGNOSIS = json.loads(diagnosis_json(cpu_claim(inv="1"), hypotheses=[], missing_info=[], recommended_actions=[]))
CLAIM = ("claims", 0)
BINDING = (*CLAIM, "evidence_bindings", 0)
EXECUTOR_PATHS: list[tuple[Any, ...]] = [
    ("answer_version",), ("claims",), ("hypotheses",), ("missing_info",), ("recommended_actions",), ("confidence",),
    CLAIM, (*CLAIM, "claim_id"), (*CLAIM, "claim_type"), (*CLAIM, "support_level"), (*CLAIM, "claim_text"),
    (*CLAIM, "evidence_bindings"), BINDING, (*BINDING, "source_invocation_ids"), (*BINDING, "source_invocation_ids", 0),
    (*BINDING, "evidence_excerpt"), (*BINDING, "tool_name"), (*BINDING, "records"), (*BINDING, "digest_id"),
]
EXECUTOR_TEXT = _planted(DIAGNOSIS, EXECUTOR_PATHS)


@FUZZ
@given(EXECUTOR_TEXT)
def test_the_executor_reader_gives_a_parse_status_for_any_reply(raw: str) -> None:
    from pipeline.stages.parse import parse_executor_output
    from pipeline.text.bounds import unstorable
    from pipeline.text.replies import read_object

    status, output = parse_executor_output(raw)
    assert status.status in ("valid", "missing", "malformed") and status.detail
    assert (output is not None) == (status.status == "valid")
    event(status.status)
    if output is not None:
        assert unstorable(output.raw) is None
        output.claim_objects()
    data, why = read_object(raw)
    assert (data is None) != (why is None)


@settings(FUZZ, max_examples=12)
@given(raw=EXECUTOR_TEXT)
def test_any_executor_reply_ends_in_a_session_that_reads_back(raw: str, tmp_path_factory: pytest.TempPathFactory,
                                                              backend_settings: Settings) -> None:
    from pipeline.runs.session import run_session

    tmp = tmp_path_factory.mktemp("reply")
    store = Store(backend_settings.db_url)
    script = {"diagnosis": raw.replace('"1"', '"{inv:query_metrics:0}"', 1)}
    result = run_session(CPU_QUESTION, settings=scripted(backend_settings, tmp, script, digest={"enabled": False}), store=store)
    assert result.verdict in ("PASS", "LOW_CONFID", "REJECT")
    _read_back(store, result.session_id)


# --- the tool-argument reader -------------------------------------------------------------------

ARGUMENTS = {"service": "payment-service", "level": "ERROR", "start": "2024-01-01T10:00:00Z",
             "end": "2024-01-01T11:00:00Z", "limit": 50, "keyword": "timeout", "query": "cpu"}
ARGUMENT_TEXT = _planted(ARGUMENTS, [(key,) for key in ARGUMENTS] + [("other",)])


@settings(FUZZ, max_examples=60)
@given(tool=st.sampled_from(["queryLogs", "queryPrometheusAlerts", "lookupKnowledge"]), text=ARGUMENT_TEXT)
def test_any_tool_arguments_are_refused_or_stored_readably(tool: str, text: str, backend_settings: Settings) -> None:
    from pipeline.core.contracts import PlannerPlan
    from pipeline.llm.openai_provider import _ToolLoop
    from pipeline.runs.session import _ToolRunner, route_question
    from pipeline.tools import build_toolbox
    from pipeline.tools.arguments import ArgumentPolicy

    store = Store(backend_settings.db_url)
    world = route_question(backend_settings.incidents_dir, CPU_QUESTION)
    sid = store.create_session(question=CPU_QUESTION, world=None, shape="single", provider="p", model="m")
    runner = _ToolRunner(store, sid, build_toolbox(backend_settings, world.path if world else None), backend_settings,
                         lambda _event: None)

    class Context:
        run_tool = runner

    loop = _ToolLoop(Context(), 2000, ["payment"], ArgumentPolicy(plan=PlannerPlan(skill="diagnose", services=["payment-service"])))
    reply = loop.run({"type": "function", "id": "call-1", "function": {"name": tool, "arguments": text}})
    assert isinstance(reply, str) and reply
    for inv in store.invocations(sid):
        json.dumps(inv.arguments, allow_nan=False)
    _read_back(store, sid)


# --- bundle import --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real session's bundle, made once in a store of its own."""
    from pipeline.bundles.session_bundle import export_bundle
    from pipeline.core.config import load_settings
    from pipeline.runs.session import run_session

    tmp = tmp_path_factory.mktemp("bundle")
    source = load_settings().model_copy(update={"database_url": f"sqlite:///{tmp / 'source.db'}"})
    store = Store(source.db_url)
    reply = diagnosis_json(cpu_claim())
    result = run_session(CPU_QUESTION, settings=scripted(source, tmp, {"diagnosis": reply}, digest={"enabled": False}),
                         store=store)
    return export_bundle(store, result.session_id)


BUNDLE_PATHS: list[tuple[Any, ...]] = [
    (), ("bundle_version",), ("session",), ("session", "id"), ("session", "question"), ("session", "shape"),
    ("session", "provider"), ("session", "created_at"), ("planner_plan",), ("tool_invocations",),
    ("tool_invocations", 0), ("tool_invocations", 0, "id"), ("tool_invocations", 0, "round"),
    ("tool_invocations", 0, "arguments"), ("tool_invocations", 0, "output"), ("tool_invocations", 0, "error"),
    ("tool_invocations", 0, "latency_ms"), ("tool_invocations", 0, "status"), ("tool_invocations", 0, "tool_name"),
    ("evidence_digests",), ("executor_raw_output",), ("verifier_output",), ("composer_output",), ("round_audit",),
    ("final_answer",), ("provenance",), ("verifier_evaluation",),
]


@settings(FUZZ, max_examples=60)
@given(data=st.data())
def test_any_bundle_is_refused_or_imported_readably(data: st.DataObject, exported: dict[str, Any],
                                                   tmp_path_factory: pytest.TempPathFactory,
                                                   backend_settings: Settings) -> None:
    from pipeline.bundles.importer import import_bundle
    from pipeline.bundles.session_bundle import load_bundle
    from pipeline.gatekeeper import load_rules
    from pipeline.llm import make_provider

    text = data.draw(_planted(exported, BUNDLE_PATHS))
    path = tmp_path_factory.mktemp("import") / "bundle.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    store = Store(backend_settings.db_url)
    try:
        bundle = load_bundle(path, max_bytes=backend_settings.budget.max_bundle_bytes)
        result = import_bundle(store, bundle, settings=backend_settings, rules=load_rules(backend_settings.rules_dir),
                               provider=make_provider(backend_settings))
    except WorkbenchError as exc:
        assert str(exc)
        event("refused")
        return
    event("imported")
    _read_back(store, result.session_id)


# --- what the fuzzing found -------------------------------------------------------------------------

def test_a_bundle_integer_of_5000_digits_is_refused_as_beyond_64_bits(backend_settings: Settings,
                                                                      exported: dict[str, Any], tmp_path: Path) -> None:
    """Was a ValueError traceback: Python's int() refuses to read more than 4300 digits."""
    from pipeline.bundles.session_bundle import load_bundle

    path = tmp_path / "bundle.json"
    path.write_text(dump(_replaced(exported, ("tool_invocations", 0, "round"), Raw("9" * 5000))), encoding="utf-8")
    with pytest.raises(WorkbenchError, match="beyond 64 bits"):
        load_bundle(path, max_bytes=backend_settings.budget.max_bundle_bytes)


def test_lone_surrogates_in_a_reply_and_a_bundle_are_stored_as_replacement_characters(
        backend_settings: Settings, exported: dict[str, Any], tmp_path: Path) -> None:
    """Was a UnicodeEncodeError from the driver on both backends: a session failed "at diagnosis",
    an import was a traceback."""
    from pipeline.bundles.importer import import_bundle
    from pipeline.bundles.session_bundle import load_bundle
    from pipeline.gatekeeper import load_rules
    from pipeline.llm import make_provider
    from pipeline.runs.session import run_session

    store = Store(backend_settings.db_url)
    reply = diagnosis_json(cpu_claim(text="payment-service CPU \ud800 is 92.0% with 245 threads."))
    result = run_session(CPU_QUESTION, settings=scripted(backend_settings, tmp_path, {"diagnosis": reply},
                                                         digest={"enabled": False}), store=store)
    calls = store.llm_calls(result.session_id)
    assert any("CPU \ufffd is" in (call["raw_response"] or "") for call in calls)
    path = tmp_path / "bundle.json"
    path.write_text(dump(_replaced(exported, ("session", "question"), "payment \ud800 timeouts")), encoding="utf-8")
    imported = import_bundle(store, load_bundle(path, max_bytes=backend_settings.budget.max_bundle_bytes),
                             settings=backend_settings, rules=load_rules(backend_settings.rules_dir),
                             provider=make_provider(backend_settings))
    row = store.get_session(imported.session_id)
    assert row is not None and row["question"] == "payment \ufffd timeouts"
    for sid in (result.session_id, imported.session_id):
        _read_back(store, sid)
