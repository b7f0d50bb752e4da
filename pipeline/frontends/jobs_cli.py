"""The job and server subcommands of `workbench`: worker, webhook, metrics, sessions, rerun (registered by\npipeline/cli.py);
and following a job from the shell (`workbench eval`)."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from pipeline.core.config import Settings, load_settings
from pipeline.core.errors import ConfigError, StoreError, WorkbenchError
from pipeline.store import Store
from pipeline.store.schema import JobRow
from pipeline.text.redact import redact_logs

VERDICTS = ("PASS", "LOW_CONFID", "REJECT")


def _settings(args: argparse.Namespace) -> Settings:
    return load_settings(getattr(args, "config", None))


def _log_to_stderr() -> None:
    """The long-running commands' logging: one line per record on stderr, every record (ours and
    the HTTP clients') redacted before it is written."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    redact_logs()


def cmd_worker(args: argparse.Namespace) -> int:
    from pipeline.jobs import pg_module

    settings = _settings(args)
    store = Store(settings.db_url)
    if store.engine.dialect.name != "postgresql":
        raise ConfigError("`workbench worker` serves the PostgreSQL queue (set DATABASE_URL); with SQLite the app "
                          "and `workbench ask` run sessions in-process")
    _log_to_stderr()
    pg_module().run_worker(settings, store, args.concurrency or settings.jobs.concurrency)
    return 0


def cmd_webhook(args: argparse.Namespace) -> int:
    from pipeline.frontends.webhook import Receiver, check_exposure, listen, make_app, serve
    from pipeline.jobs import make_queue
    from pipeline.telemetry.metrics import Metrics

    token = os.environ.get("WORKBENCH_WEBHOOK_TOKEN")
    warning = check_exposure(args.host, token, args.insecure_no_auth)
    settings = _settings(args)
    store = Store(settings.db_url)
    queue = make_queue(settings, store)
    _log_to_stderr()
    sock = listen(args.host, args.port)
    app = make_app(store, Metrics(store), settings.webhook, Receiver(settings, store, queue, token))
    if warning:
        print(warning, file=sys.stderr, flush=True)
    print(f"receiving Alertmanager webhooks on http://{_address(sock)}/alertmanager and OTLP traces on "
          f"http://{_address(sock)}/v1/traces (metrics at /metrics)", file=sys.stderr, flush=True)
    try:
        serve(app, sock, settings.webhook)
    except KeyboardInterrupt:
        pass
    finally:
        queue.close()  # the in-process pool finishes the sessions it holds
    return 0


def cmd_metrics(args: argparse.Namespace) -> int:
    from pipeline.frontends.webhook import listen, make_app, serve
    from pipeline.telemetry.metrics import Metrics

    settings = _settings(args)
    store = Store(settings.db_url)
    _log_to_stderr()
    sock = listen(args.host, args.port)
    app = make_app(store, Metrics(store), settings.webhook)
    print(f"serving Prometheus metrics on http://{_address(sock)}/metrics", file=sys.stderr, flush=True)
    try:
        serve(app, sock, settings.webhook)
    except KeyboardInterrupt:
        pass
    return 0


def _address(sock: Any) -> str:
    host, port = sock.getsockname()[:2]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def cmd_sessions(args: argparse.Namespace) -> int:
    from pipeline.store.lease import reap
    from pipeline.store.listing import session_count, session_list
    from pipeline.store.record import verdict_marks

    settings = _settings(args)
    store = Store(settings.db_url)
    # A listing never shows a session whose worker died as running (a read-only store: as stored).
    with contextlib.suppress(StoreError):
        reap(store, settings.jobs.lease_s)
    if args.format == "csv":
        from pipeline.runs.review_queue import QueueFilter, export_csv
        from pipeline.store import SessionFilter

        everything = QueueFilter(SessionFilter(verdicts=[args.verdict] if args.verdict else [],
                                               statuses=[args.status] if args.status else []),
                                 needs_person=False, include_eval=True, reviewed=None)
        sys.stdout.buffer.write(export_csv(store, everything, limit=args.limit))
        sys.stdout.flush()
        return 0
    limit = args.limit or 20
    rows = session_list(store, verdict=args.verdict, status=args.status, limit=limit)
    if args.json or args.format == "json":
        print(json.dumps(rows, ensure_ascii=False, indent=2, default=str))
        return 0
    if not rows:
        print("no sessions" + (" match" if args.verdict or args.status else " yet: `workbench ask QUESTION` runs one"))
        return 0
    print(f"{'ID':<14}  {'CREATED (UTC)':<19}  {'STATUS':<11} {'VERDICT':<16} {'AT ASK':<10} {'TRIGGER':<12} QUESTION")
    for r in rows:
        trigger = r["trigger"]["kind"] if r["trigger"] else "manual"
        question = r["question"] if len(r["question"]) <= 70 else r["question"][:69] + "…"
        verdict = " ".join([r["verdict"] or "-", *verdict_marks(ungated=r["ungated"], provenance=r["provenance"])])
        # The verdict at ask only where applied rules changed it since.
        at_ask = r["verdict_at_ask"] if r["verdict_at_ask"] != r["verdict"] else ""
        print(f"{r['id']:<14}  {r['created_at']:%Y-%m-%d %H:%M:%S}  {r['status']:<11} {verdict:<16} {at_ask or '':<10} "
              f"{trigger:<12} {question}")
    more = session_count(store, verdict=args.verdict, status=args.status) - len(rows)
    if more > 0:
        print(f"{more} more: use --limit {len(rows) + more} to list them all")
    return 0


def cmd_rerun(args: argparse.Namespace) -> int:
    from pipeline.jobs import make_queue, submit_rerun

    settings = _settings(args)
    store = Store(settings.db_url)
    queue = make_queue(settings, store)
    try:
        sid = submit_rerun(queue, store, args.session_id)
    finally:
        queue.close()  # in-process: waits for the session; PostgreSQL: a worker runs it
    row = store.get_session(sid)
    verdict = row["verdict"] if row else None
    print(f"session {sid} ({row['status'] if row else None}{', ' + verdict if verdict else ''}) "
          f"runs {args.session_id} again")
    return 0


class JobEnded(WorkbenchError):
    """A followed job failed, or was interrupted (its process died); the row keeps what it made."""


FOLLOW_POLL_S = 0.5


def follow_job(store: Store, job_id: str, on_change: Callable[[JobRow], None], *,
               poll_s: float = FOLLOW_POLL_S) -> JobRow:
    """Wait for the job `job_id` to end and return its row; `on_change(row)` whenever it moved.

    Ctrl-C asks the job to stop (pipeline/jobs/records.py: it ends `cancelled` after the step in
    hand, keeping what it made) and goes on waiting for that; a second Ctrl-C stops waiting. The
    signal only counts: a KeyboardInterrupt raised inside a database call could leave the store's
    connection half-used just when the request to stop must be written."""
    from pipeline.jobs.records import get_job, request_cancel

    presses = 0

    def on_sigint(signum: int, frame: object) -> None:
        nonlocal presses
        presses += 1

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        seen: tuple[Any, ...] = ()
        asked = False
        while True:
            row = get_job(store, job_id)
            now = (row.status, row.progress_done, row.progress_total, row.cancel_requested_at)
            if now != seen:
                seen = now
                on_change(row)
            if row.status not in ("queued", "running") or presses > 1:
                return row
            if presses and not asked:
                asked = True
                request_cancel(store, job_id)
                continue
            time.sleep(poll_s)
    finally:
        signal.signal(signal.SIGINT, previous)


def register(sub: Any) -> None:
    """Add the job subcommands to `workbench`'s subparsers."""
    def add(name: str, func: Callable[[argparse.Namespace], int], helptext: str) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = sub.add_parser(name, help=helptext)
        p.set_defaults(func=func)
        return p

    w = add("worker", cmd_worker, "run queued sessions, eval runs and batch checks (PostgreSQL)")
    w.add_argument("--concurrency", type=int, help="jobs at once (default: jobs.concurrency)")
    h = add("webhook", cmd_webhook, "receive Alertmanager alerts at POST /alertmanager (one session per group) and "
                                       "agents' OTLP traces at POST /v1/traces (one imported session per trace)")
    h.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    h.add_argument("--port", type=int, default=9095, help="port to listen on (default 9095)")
    h.add_argument("--insecure-no-auth", action="store_true",
                   help="accept alerts without WORKBENCH_WEBHOOK_TOKEN on a non-loopback address")
    m = add("metrics", cmd_metrics, "serve Prometheus metrics at GET /metrics where no webhook runs")
    m.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    m.add_argument("--port", type=int, default=9096, help="port to listen on (default 9096)")
    s = add("sessions", cmd_sessions, "list sessions, newest first: id, created, status, verdict (in force, and at ask where it differs), trigger, question")
    s.add_argument("--json", action="store_true", help="one JSON object per session (= --format json)")
    s.add_argument("--format", choices=("table", "json", "csv"), default="table",
                   help="csv: the Sessions page's CSV export, every matching session unless --limit")
    s.add_argument("--verdict", choices=VERDICTS, help="only sessions with this verdict")
    s.add_argument("--status", choices=("queued", "running", "completed", "failed", "interrupted"),
                   help="only sessions in this state")
    s.add_argument("--limit", type=int, help="newest N sessions (default 20; --format csv: all)")
    r = add("rerun", cmd_rerun, "run a failed or interrupted session's question again, as a new session")
    r.add_argument("session_id", help="an interrupted or failed session to run again")
