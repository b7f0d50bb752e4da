"""Secrets never leave in clear (law 9): canaries in every config path, grepped everywhere."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from sqlalchemy import MetaData, select

from pipeline.core.config import Settings
from pipeline.frontends.cli import main
from pipeline.store import Store
from pipeline.text.redact import basic_forms, redact, redact_value, remember
from tests.stub_openai import PipelineModel, StubOpenAI

CANARIES = {
    "yaml_api_key": "sk-canaryYamlKey0123456789abcdef",
    "yaml_bearer": "canary-yaml-bearer-7f3a",
    "yaml_url_pass": "canary-yaml-pass-91c2",
    "env_api_key": "sk-canaryEnvKey0123456789abcdef",
    "env_url_pass": "canary-env-pass-44d1",
    "env_bearer": "canary-env-bearer-5e6f",
    "base_url_pass": "canary-llm-pass-0b9e",
    # The Basic credentials of LOKI_URL as the echoing backend below sends them back.
    **{f"env_basic_{n}": form for n, form in enumerate(basic_forms("loki", "canary-env-pass-44d1"))},
}
QUESTION = "Order 123 payment failed with ERR_TIMEOUT from the gateway, what happened?"


def _leaks(text: str) -> list[str]:
    return [name for name, value in CANARIES.items() if value in text]


@dataclass
class _Echoed:
    port: int = 0
    requests: list[str] = field(default_factory=list)  # the Authorization headers received


@contextmanager
def _echoing_backend() -> Iterator[_Echoed]:
    """A backend that refuses every request and echoes its Authorization header back: bare
    (the base64 alone), as a header line and as a JSON header dump."""
    seen = _Echoed()

    class Echo(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            auth = self.headers.get("Authorization", "")
            seen.requests.append(auth)
            bare = auth.split(" ", 1)[-1]
            body = json.dumps({"status": "error", "errorType": "unauthorized",
                               "error": f"credentials {bare} rejected; Authorization: {auth}; "
                                        + json.dumps({"headers": {"Authorization": [auth]}})}).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    seen.port = server.server_port
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        server.shutdown()
        server.server_close()


def _store_dump(url: str) -> str:
    """Every row of every table, as text."""
    engine = Store(url).engine
    meta = MetaData()
    meta.reflect(engine)
    with engine.connect() as conn:
        return "\n".join(str(row) for table in meta.sorted_tables for row in conn.execute(select(table)))


def test_canaries_in_every_config_path_never_reach_store_prompts_exports_or_output(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    model = PipelineModel()
    with StubOpenAI(responder=model) as stub, _echoing_backend() as echoed:
        host_port = stub.base_url.split("//", 1)[1]
        echo_port = echoed.port
        config = tmp_path / "workbench.yaml"
        config.write_text(yaml.safe_dump({
            "provider": "openai",
            "openai": {"api_key": CANARIES["yaml_api_key"], "model": "stub-model", "max_retries": 0},
            "backends": {"query_metrics": {
                # Port 9 (discard) refuses: the error names the URL, the prompt carries the error.
                "kind": "prometheus", "url": f"http://prom:{CANARIES['yaml_url_pass']}@127.0.0.1:9/",
                "bearer_token": CANARIES["yaml_bearer"], "timeout_s": 2}},
        }), encoding="utf-8")
        monkeypatch.setenv("WORKBENCH_CONFIG", str(config))
        monkeypatch.setenv("OPENAI_API_KEY", CANARIES["env_api_key"])
        monkeypatch.setenv("OPENAI_BASE_URL", f"http://llm:{CANARIES['base_url_pass']}@{host_port}")
        # Basic credentials (from the URL) only go out without a bearer token for the same backend.
        monkeypatch.setenv("LOKI_URL", f"http://loki:{CANARIES['env_url_pass']}@127.0.0.1:{echo_port}")
        monkeypatch.setenv("WORKBENCH_WEBHOOK_TOKEN", CANARIES["env_bearer"])

        # Single shape: the stub's diagnosis binds straight to the tool outputs it was shown.
        code = main(["ask", QUESTION, "--json", "--shape", "single"])
        out, err = capsys.readouterr()
        assert code == 0, err
        sid = json.loads(out)["session_id"]
        assert main(["export", sid]) == 0
        export, export_err = capsys.readouterr()
        main(["doctor"])
        doctor_out, doctor_err = capsys.readouterr()
        main(["show", sid])
        show_out, show_err = capsys.readouterr()
        prompts = json.dumps([r.body for r in stub.requests], ensure_ascii=False)

    from pipeline.core.config import load_settings
    dump = _store_dump(load_settings().db_url)
    # The session really exercised the paths: failed backends, prompts sent, calls stored.
    assert "127.0.0.1:9" in dump
    assert stub.chat_requests and "prometheus" in doctor_out
    assert CANARIES["env_basic_1"] in echoed.requests[0] and "HTTP 401" in dump and "HTTP 401" in doctor_out
    for where, text in (("stdout", out), ("stderr", err), ("export", export), ("export stderr", export_err),
                        ("doctor", doctor_out + doctor_err), ("show", show_out + show_err),
                        ("prompts", prompts), ("store", dump)):
        assert not _leaks(text), f"{where} leaks {_leaks(text)}"


@pytest.mark.parametrize("text, kept", [
    ("GET http://alice:s3cr3t-pw@prom:9090/api/v1/alerts failed", "prom:9090/api/v1/alerts"),
    ("headers: Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig", "headers:"),
    ("https://loki/loki/api/v1/query_range?query=x&api_key=abc123def&limit=5", "limit=5"),
    ('{"token": "tok_9f8e7d6c", "service": "payment-service"}', "payment-service"),
    ("openai said: invalid key sk-proj-abcdefghij0123456789", "openai said: invalid key"),
    ("password=hunter2hunter2 user=bob", "user=bob"),
    # base64("alice:hunterpw"): letters only, yet a user:pass pair.
    ("upstream said: Basic YWxpY2U6aHVudGVycHc rejected", "rejected"),
    ('{"headers": {"Authorization": ["Basic YWxpY2U6aHVudGVycHc="], "Accept": ["*/*"]}}', '"Accept"'),
])
def test_secret_shapes_are_masked_and_the_rest_kept(text: str, kept: str) -> None:
    masked = redact(text)
    assert "***" in masked and kept in masked
    assert not any(s in masked for s in ("s3cr3t-pw", "eyJhbGci", "abc123def", "tok_9f8e", "abcdefghij0123", "hunter2",
                                         "YWxpY2U6"))


def test_ordinary_text_is_left_alone() -> None:
    for text in ("the basic information about bearer tokens", "APNs feedback: invalid device token removed uid=99",
                 "cache hit key=cfg:feature-flags ttl=317s".replace("key=cfg:feature-flags", "hits=3"),
                 "支付接口最近出现超时", "prompt_tokens: 1200"):
        assert redact(text) == text


def test_configured_secrets_are_masked_anywhere_and_in_json_values() -> None:
    remember("zz-remembered-secret-42")
    assert redact("prefix zz-remembered-secret-42suffix") == "prefix ***suffix"
    value = {"arguments": {"api_key": "short", "query": "rate(x[5m])"}, "messages": ["zz-remembered-secret-42"]}
    assert redact_value(value) == {"arguments": {"api_key": "***", "query": "rate(x[5m])"}, "messages": ["***"]}


def test_log_records_are_redacted_message_arguments_and_traceback(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from pipeline.text.redact import RedactingFilter

    remember("zz-log-secret-0042")
    caplog.handler.addFilter(RedactingFilter())
    log = logging.getLogger("pipeline.jobs.test")
    try:
        raise RuntimeError("cannot reach http://u:zz-log-secret-0042@prom:9090")
    except RuntimeError:
        log.exception("job %s failed with key %s", "j-1", "zz-log-secret-0042")
    text = caplog.text
    assert "j-1" in text and "prom:9090" in text and "RuntimeError" in text
    assert "zz-log-secret-0042" not in text


# --- secret by what it is, not by what it looks like ---------------------------

@pytest.fixture(params=["sqlite", "postgresql"])
def cli_store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    """The CLI's store: SQLite in the workbench home, or a fresh PostgreSQL schema."""
    from helpers import postgres_schema

    from pipeline.core.config import load_settings

    if request.param == "sqlite":
        yield Store(load_settings().db_url)
        return
    with postgres_schema("redact") as url:
        monkeypatch.setenv("DATABASE_URL", url)
        store = Store(url)
        yield store
        store.engine.dispose()


def _ask(capsys: pytest.CaptureFixture[str], question: str) -> str:
    code = main(["ask", question, "--json", "--shape", "single"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return str(json.loads(out)["session_id"])


def test_a_user_name_alone_is_no_secret_and_payment_service_stays_readable(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, cli_store: Store) -> None:
    from pipeline.text.redact import url_secrets

    # A database whose user is named like a service, with no password in the URL (peer or .pgpass).
    monkeypatch.setenv("AUDIT_DATABASE_URL", "postgresql://payment@db.internal/audit")
    assert url_secrets("postgresql://payment@db.internal/audit") == []
    assert url_secrets("https://payment@hooks.example/x") == []  # a name, not a token
    assert "ghp_Zx81kq0Lm2Nn3Oo4Pp5Qq6" in url_secrets("https://ghp_Zx81kq0Lm2Nn3Oo4Pp5Qq6@git.example/")
    sid = _ask(capsys, "payment API times out since 10:00, what's going on?")
    outputs = " ".join(inv.output for inv in cli_store.invocations(sid))
    row = cli_store.get_session(sid)
    assert row is not None and "payment-service" in outputs and "***-service" not in outputs + str(row["final_answer"])
    assert redact("postgresql://payment@db.internal/audit") == "postgresql://***@db.internal/audit"


def test_a_configured_token_typed_into_a_question_or_note_is_masked_everywhere(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, cli_store: Store) -> None:
    from pipeline.core.config import load_settings
    from pipeline.store.record import read_session

    token = "canary-typed-token-6d2e90"
    monkeypatch.setenv("LOKI_BEARER_TOKEN", token)
    load_settings()  # remembers the configured secrets, as every command does
    sid = _ask(capsys, f"payment API times out since 10:00 after I rotated {token}, what's going on?")
    cli_store.add_review(session_id=sid, label=f"bad {token}", reviewer="rev", note=f"pasted {token} by mistake")
    assert main(["show", sid]) == 0
    shown = capsys.readouterr()
    # The question, audit, events and reviews as stored; `show`; the trace's attributes read the record.
    dump = _store_dump(cli_store.url)
    record = read_session(cli_store, sid)
    assert "rotated ***" in dump and "rotated ***" in record.question and "pasted *** by mistake" in dump
    for where, text in (("store", dump), ("show", shown.out + shown.err), ("question", record.question)):
        assert token not in text, where


def test_the_otlp_endpoint_is_logged_without_its_userinfo(settings: Settings, store: Store,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    import logging
    import socket

    from pipeline.core.config import TelemetrySettings
    from pipeline.runs.session import run_session
    from pipeline.telemetry.tracing import export_session

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed
    endpoint = f"http://otel:canary-otlp-pass-3b7f@127.0.0.1:{port}"
    traced = settings.model_copy(update={"telemetry": TelemetrySettings(otlp_endpoint=endpoint, timeout_s=0.5)})
    caplog.set_level(logging.WARNING)
    result = run_session("payment API times out since 10:00", settings=traced, store=store)
    assert not export_session(traced, store, result.session_id, flush=True)
    said = " ".join(r.getMessage() for r in caplog.records if r.name == "pipeline.telemetry.tracing")
    assert f"http://127.0.0.1:{port}/v1/traces" in said and "canary-otlp-pass" not in said and "otel:" not in said


def test_the_http_clients_own_log_of_a_notify_post_cuts_the_secret_path() -> None:
    """httpx logs every request's URL at INFO; the worker's and webhook's logging writes it redacted."""
    import io
    import logging
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from pipeline.core.config import NotifySettings
    from pipeline.telemetry.notify import post
    from pipeline.text.redact import RedactingFilter, path_secrets, redact_logs

    class Ok(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers["content-length"]))
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Ok)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    secret = "Zq81Kx0Lm2Nn3Oo4Pp5Qq6R"
    url = f"http://127.0.0.1:{server.server_port}/services/T0A1/B0C2/{secret}"
    stream, root, httpx_log = io.StringIO(), logging.getLogger(), logging.getLogger("httpx")
    handler, level = logging.StreamHandler(stream), httpx_log.level
    root.addHandler(handler)
    httpx_log.setLevel(logging.INFO)
    try:
        redact_logs()
        post(url, {"text": "hello"}, NotifySettings(url=url))
    finally:
        root.removeHandler(handler)
        httpx_log.setLevel(level)
        server.shutdown()
        server.server_close()
    written = stream.getvalue()
    assert path_secrets(url) == [secret]  # configured as notify.url, it is masked in any text too
    assert any(isinstance(f, RedactingFilter) for f in handler.filters)
    assert "POST http://127.0.0.1" in written and "/services/T0A1/B0C2/***" in written and secret not in written


@pytest.mark.parametrize("url, shown", [
    ("https://user:pw-9c1d2e3f@otel.example:4318/v1/traces", "https://otel.example:4318/v1/traces"),
    ("https://hooks.example/services/T0A1/B0C2/Zq81Kx0Lm2Nn3Oo4Pp5Qq6R", "https://hooks.example/services/T0A1/B0C2/***"),
    ("http://prom:9090/api/v1/query?query=up&api_key=abc123def", "http://prom:9090/api/v1/query?query=up&api_key=***"),
    ("https://8f14e45fceea167a5a36dedd4bea2543@sentry.example/42", "https://sentry.example/42"),
])
def test_urls_are_shown_without_userinfo_or_token_like_path_segments(url: str, shown: str) -> None:
    from pipeline.text.redact import safe_url

    assert safe_url(url) == shown
