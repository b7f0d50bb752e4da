"""Small builders shared by the engine tests (not fixtures: plain functions)."""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.core.config import Settings


def require(condition: bool, what: str) -> None:
    """Outside CI a missing server skips; under CI=true it fails, so a green run means it really ran."""
    if condition:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} is required in CI but missing")
    pytest.skip(f"{what} not available")


@contextmanager
def postgres_schema(prefix: str = "t") -> Iterator[str]:
    """A fresh schema on the test PostgreSQL (DATABASE_URL_TEST), as a database URL; dropped after."""
    url = os.environ.get("DATABASE_URL_TEST")
    require(bool(url), "PostgreSQL (DATABASE_URL_TEST)")
    assert url
    from sqlalchemy import create_engine, text

    schema = f"{prefix}_{uuid.uuid4().hex[:10]}"
    admin = create_engine(url)
    with admin.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    try:
        yield f"{url}?options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as conn:
            conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


def queue_count(store: Any, q: Any) -> int:
    """How many sessions the review queue holds, counted over its own query: the oracle for
    queue_stats' grouped total."""
    from sqlalchemy import func, select

    from pipeline.runs.review_queue import queue_query

    with store.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(queue_query(store, q).subquery())).scalar_one())


def tally_holds(store: Any) -> bool:
    """Whether the review queue's tally (migration 0019) equals a GROUP BY over the session rows."""
    from pipeline.store.tally import grouped_sessions, tally_rows

    with store.engine.connect() as conn:
        grouped = {tuple(r[:-1]): r[-1] for r in conn.execute(grouped_sessions(conn.dialect.name))}
        return bool(grouped) and tally_rows(conn) == grouped


def yaml_of_rules(rules: Any) -> tuple[str, str]:
    """A RuleSet as (index.yaml, metadata.yaml) text, for tests that edit or print rules as YAML."""
    index, meta = rules.documents()
    def dump(doc: dict[str, Any]) -> str:
        return str(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False, width=100))
    return dump(index), dump(meta)


def rules_without(src: Path, dst: Path, rule_id: str) -> Path:
    """A copy of the rules directory `src` at `dst` with one rule switched off (in YAML only)."""
    import shutil

    shutil.copytree(src, dst)
    index = yaml.safe_load((dst / "index.yaml").read_text(encoding="utf-8"))
    for rule in index["rules"]:
        if rule["id"] == rule_id:
            rule["enabled"] = False
    (dst / "index.yaml").write_text(yaml.safe_dump(index, allow_unicode=True), encoding="utf-8")
    return dst


def scripted(settings: Settings, tmp_path: Path, script: dict[str, Any], **overrides: Any) -> Settings:
    """Settings for the scripted provider replaying `script` (stages not scripted run offline)."""
    path = tmp_path / "script.yaml"
    path.write_text(yaml.safe_dump(script, allow_unicode=True), encoding="utf-8")
    data = settings.model_dump() | {"provider": "scripted", "scripted_fixture": str(path)}
    for key, value in overrides.items():
        data[key] = {**data[key], **value} if isinstance(value, dict) else value
    return Settings.model_validate(data)


CPU_ALERT = "CPU使用率过高: 92.0%, 进程: java (PID: 1), 线程数: 245"
CPU_QUESTION = "payment API times out since 10:00, what's going on?"


def diagnosis_json(*claims: dict[str, Any], **extra: Any) -> str:
    import json

    body = {"answer_version": "executor_evidence_v2", "claims": list(claims), **extra}
    # A quoted "{inv:TOOL:N}" placeholder becomes the invocation's number when replayed.
    return json.dumps(body, ensure_ascii=False)


def cpu_claim(claim_id: str = "claim-1", inv: str = "{inv:query_metrics:0}", excerpt: str = CPU_ALERT,
              tool: str = "query_metrics", claim_type: str = "symptom", text: str | None = None) -> dict[str, Any]:
    return {
        "claim_id": claim_id, "claim_type": claim_type, "support_level": "direct",
        "claim_text": text or "payment-service CPU usage is 92.0% with 245 threads.",
        "evidence_bindings": [{"source_type": "tool_trace", "tool_name": tool,
                               "source_invocation_ids": [inv], "evidence_excerpt": excerpt}],
    }


@contextmanager
def http_server(app: Any, limits: Any) -> Iterator[str]:
    """`app` (pipeline.frontends.webhook.make_app) served by the real server stack on a free loopback
    port in a thread of this process; yields its base URL, stops it after."""
    import asyncio
    import threading

    from pipeline.frontends.webhook import listen, serve

    sock = listen("127.0.0.1", 0)  # listening already: connections wait in the backlog until serving
    port = sock.getsockname()[1]
    stop = threading.Event()

    async def stopped() -> None:
        while not stop.is_set():
            await asyncio.sleep(0.05)

    thread = threading.Thread(target=serve, args=(app, sock, limits, stopped), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop.set()
        thread.join(timeout=15)


class TcpCut:
    """A TCP forwarder to `target` on a free local port that a test can cut (every connection
    closed, new ones refused) and restore: a database outage without stopping the database."""

    def __init__(self, host: str, port: int):
        import socket
        import threading

        self._socket, self._threading = socket, threading
        self.target = (host, port)
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._open = threading.Event()
        self._open.set()
        self._conns: list[Any] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            if not self._open.is_set():
                client.close()
                continue
            upstream = self._socket.create_connection(self.target)
            with self._lock:
                self._conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                self._threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: Any, dst: Any) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.close()
                except OSError:
                    pass

    def cut(self) -> None:
        self._open.clear()
        with self._lock:
            conns, self._conns = self._conns, []
        for conn in conns:
            try:
                conn.shutdown(self._socket.SHUT_RDWR)
                conn.close()
            except OSError:
                pass

    def restore(self) -> None:
        self._open.set()

    def close(self) -> None:
        self.cut()
        self._server.close()


class OwnPostgres:
    """A throwaway PostgreSQL cluster this test owns, so it may stop and start it (the shared
    server must never be stopped under the other tests). Root runs it as the `postgres` user."""

    def __init__(self) -> None:
        import glob
        import pwd
        import shutil
        import socket

        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl")) or [shutil.which("pg_ctl") or ""]
        require(bool(bins[-1]), "PostgreSQL server binaries (pg_ctl, initdb)")
        self.bin = Path(bins[-1]).parent
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                require(False, "a `postgres` OS user to run a throwaway PostgreSQL as root")
            self.as_user = ["runuser", "-u", "postgres", "--"]
        import tempfile

        # Its own directory under /tmp: pytest's tmp_path is not reachable by the `postgres` user.
        root = Path(tempfile.mkdtemp(prefix="workbench-pg-"))
        root.chmod(0o777)
        self.data = root / "pgdata"
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> None:
        import subprocess

        subprocess.run([*self.as_user, *args], check=True, capture_output=True, timeout=120)

    def init(self) -> None:
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")

    def start(self) -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-w", "-l", str(self.data.parent / "pg.log"),
                  "-o", f"-p {self.port} -k {self.data.parent} -c listen_addresses=127.0.0.1 -c fsync=off", "start")

    def stop(self) -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-w", "-m", "fast", "stop")


@contextmanager
def own_postgres() -> Iterator[OwnPostgres]:
    """A fresh PostgreSQL cluster on a free port, stopped and removed afterwards."""
    import shutil
    import subprocess

    pg = OwnPostgres()
    try:
        pg.init()
        pg.start()
    except (OSError, subprocess.SubprocessError) as exc:
        require(False, f"a throwaway PostgreSQL cluster ({exc})")
    try:
        yield pg
    finally:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            pg.stop()  # the test may have left it stopped
        shutil.rmtree(pg.data.parent, ignore_errors=True)


def stored_sessions(store: Any, count: int) -> list[str]:
    """The store's sessions once `count` are there: the route queues each trace as a job."""
    for _ in range(600):
        if len(ids := store.session_ids()) >= count:
            return ids
        time.sleep(0.1)
    raise AssertionError(f"{count} session(s) were not stored; the store has {store.session_ids()}")


@contextmanager
def trace_collector(settings: Any, store: Any, token: str) -> Iterator[str]:
    """The webhook app with its /v1/traces route served on a free port, its jobs run in-process."""
    from pipeline.frontends.webhook import Receiver, make_app
    from pipeline.jobs.local import LocalQueue
    from pipeline.telemetry.metrics import Metrics

    queue = LocalQueue(settings, store)
    app = make_app(store, Metrics(store), settings.webhook, Receiver(settings, store, queue, token))
    try:
        with http_server(app, settings.webhook) as url:
            yield url
    finally:
        queue.close()


def _attr(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def log_output(logs: list[tuple[str, ...]]) -> str:
    """A query_logs output of (timestamp, service, level, message[, host]) rows."""
    return json.dumps({"logs": [{"timestamp": t, "service": s, "level": lv, "message": m, **({"host": h[0]} if h else {})}
                                for t, s, lv, m, *h in logs], "total": len(logs), "truncated": False}, ensure_ascii=False)


def agent_trace(question: str, answer: str, tools: list[tuple[str, str]]) -> str:
    """An OTLP/JSON trace as an agent exports it: the question and the answer on its root span, each
    (tool name, output) on a span of its own under it."""
    root = {"traceId": "ab" * 16, "spanId": "01" * 8, "name": "agent", "startTimeUnixNano": "1", "endTimeUnixNano": "9",
            "attributes": [_attr("openinference.span.kind", "AGENT"), _attr("input.value", question),
                           _attr("output.value", answer)]}
    spans = [{"traceId": "ab" * 16, "spanId": f"{i:016x}", "parentSpanId": root["spanId"], "name": name,
              "startTimeUnixNano": str(2 * i), "endTimeUnixNano": str(2 * i + 1),
              "attributes": [_attr("openinference.span.kind", "TOOL"), _attr("tool.name", name),
                             _attr("tool.parameters", "{}"), _attr("output.value", output)]}
             for i, (name, output) in enumerate(tools, start=2)]
    return json.dumps({"resourceSpans": [{"resource": {"attributes": [_attr("service.name", "other-agent")]},
                                          "scopeSpans": [{"spans": [root, *spans]}]}]}, ensure_ascii=False)


def judged_prose(settings: Settings, question: str, tools: list[tuple[str, str]]) -> Callable[[str], tuple[Any, Any]]:
    """A function judging a prose answer to `question` over `tools` end to end, as an imported trace is:
    it gives the bundle and its evaluation."""
    from pipeline.bundles.check import check_bundle
    from pipeline.bundles.trace_import import read_trace
    from pipeline.bundles.trace_session import trace_bundle
    from pipeline.gatekeeper import load_rules
    from pipeline.llm import make_provider

    rules, provider = load_rules(settings.rules_dir), make_provider(settings)

    def run(answer: str) -> tuple[Any, Any]:
        bundle, form = trace_bundle(read_trace(agent_trace(question, answer, tools), 10**7, 10**6))
        assert form == "prose"
        return bundle, check_bundle(bundle, settings=settings, rules=rules, provider=provider)

    return run


VERIFIED = frozenset({"direct_observation", "reasonable_inference"})


def refusals(settings: Settings, question: str, tools: list[tuple[str, str]]) -> Callable[[str], list[str]]:
    """A function giving the claims of a prose answer the verifier does not verify, each with its finding."""
    judge = judged_prose(settings, question, tools)

    def run(answer: str) -> list[str]:
        _, ev = judge(answer)
        return [f"{c.claim_id} {c.verification}: {c.detail}" for c in ev.verifier_output.claim_checks
                if c.verification not in VERIFIED]

    return run


def asked(question: str, world: str, settings: Settings, store: Any) -> tuple[Any, str, str]:
    """A question run end to end on a bundled world: its form row, the answer's first paragraph, the verdict."""
    from pipeline.runs.session import run_session

    result = run_session(question, settings=settings, store=store, world_id=world)
    form = result.evaluation.round_audit.question_form_coverage
    assert form is not None
    return form, result.evaluation.composer_output.answer_summary, result.verdict
