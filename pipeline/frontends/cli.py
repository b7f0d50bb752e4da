"""`workbench` / `python -m pipeline`: everything the UI can do, from a shell."""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.core.config import Settings, config_path, load_settings
from pipeline.core.errors import ConfigError, InputError, WorkbenchError, one_line
from pipeline.store import Store
from pipeline.text.bounds import encodable
from pipeline.text.primitives import detect_language
from pipeline.text.redact import safe_url

if TYPE_CHECKING:  # imported where a command needs them: a command loads only its own modules
    from pipeline.eval.history import EvalArgs
    from pipeline.store.schema import JobRow


def _settings(args: argparse.Namespace) -> Settings:
    overrides: dict[str, Any] = {}
    if getattr(args, "provider", None):
        overrides["provider"] = args.provider
    if getattr(args, "model", None):
        overrides["openai"] = {"model": args.model}
    if getattr(args, "shape", None):
        overrides["digest"] = {"enabled": args.shape == "split"}
    if getattr(args, "fixture", None):
        overrides["scripted_fixture"] = args.fixture
    if getattr(args, "rules", None):
        overrides["rules_dir"] = args.rules
    return load_settings(getattr(args, "config", None), **overrides)


def _rules(args: argparse.Namespace, settings: Settings) -> Any:
    """--rules DIR when given, else the rules in force (the workbench's applied version, or rules/)."""
    from pipeline.gatekeeper import load_rules
    from pipeline.runs.rulebook import rules_in_force

    if getattr(args, "rules", None):
        return load_rules(settings.rules_dir)
    return rules_in_force(settings, Store(settings.db_url))[0]


def _lang(args: argparse.Namespace, settings: Settings) -> str:
    """The reader's language: --lang, else a locale that names Chinese or English (LC_ALL,
    LC_MESSAGES, LANG, the first one set, as gettext reads them), else the settings' ui.language."""
    if getattr(args, "lang", None):
        return str(args.lang)
    locale = next((os.environ[k] for k in ("LC_ALL", "LC_MESSAGES", "LANG") if os.environ.get(k)), "")
    if locale.startswith(("zh", "en")):
        return locale[:2]
    return settings.ui.language


def _print_json(data: Any) -> None:
    print(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def cmd_ask(args: argparse.Namespace) -> int:
    from pipeline.core.events import SessionEvent, StreamProgress, ToolCalled
    from pipeline.frontends.views.ask import progress_text
    from pipeline.runs.session import run_session

    settings = _settings(args)
    store = Store(settings.db_url)

    def progress(event: SessionEvent) -> None:
        if not args.json and isinstance(event, ToolCalled):
            print(f"  tool #{event.id} {event.tool} -> {event.status} ({event.latency_ms} ms)", file=sys.stderr)
        elif not args.json and isinstance(event, StreamProgress):
            print(f"  {progress_text(event, _lang(args, settings))}", file=sys.stderr)

    result = run_session(args.question, settings=settings, store=store, world_id=args.world, on_event=progress)
    sample = _sample(settings, result.world, detect_language(args.question))
    if args.json:
        from pipeline.frontends.views.trace import form_view

        out = result.evaluation.composer_output
        scope = result.evaluation.composer_input.question_scope
        window = scope.time_window if scope else None
        form = form_view(scope, result.evaluation.round_audit)
        _print_json({"session_id": result.session_id, "verdict": result.verdict, "ungated": bool(result.ungated_by),
                     "final_answer": result.final_answer, "lead": out.answer_summary if out else "",
                     **(form.as_json() if form else {"question_form": None}),
                     "sample_incident": sample,
                     # The window the evidence was read in, and the record a dateless clock time was read against.
                     "time_window": window.model_dump(mode="json") if window else None,
                     "verifier_evaluation": result.evaluation.round_audit.model_dump(mode="json")})
    else:
        from pipeline.store.record import verdict_marks

        # The answer first; the verdict line and where the evidence came from after it.
        marks = verdict_marks(ungated=bool(result.ungated_by), provenance=None)
        print(result.final_answer)
        print(f"\n[{' '.join([result.verdict, *marks])}] session {result.session_id}")
        if sample:
            print(sample["notice"])
    return 0


def _sample(settings: Settings, world_id: str | None, lang: str) -> dict[str, str] | None:
    """The bundled sample incident a session was answered from (None: the configured backends)."""
    from pipeline.core.messages import render
    from pipeline.tools.incidents import sample_notice, world_by_id

    if not world_id:
        return None
    world = world_by_id(settings.incidents_dir, world_id)
    return {"id": world.id, "start": world.start, "end": world.end, "notice": render(sample_notice(world), lang)}


def cmd_show(args: argparse.Namespace) -> int:
    from pipeline.frontends.report import render_trace

    settings = _settings(args)
    print(render_trace(Store(settings.db_url), args.session_id, _lang(args, settings)))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from pipeline.bundles.provenance import NoSigningKey, signing_key
    from pipeline.bundles.session_bundle import export_bundle

    if getattr(args, "otlp", False):
        return _export_otlp(_settings(args), args.session_id)
    settings = _settings(args)
    try:
        key = signing_key(settings)
    except NoSigningKey as exc:
        key = None  # a read-only home still exports; the importer sees an unsigned bundle
        print(f"workbench: exported unsigned: {exc}", file=sys.stderr)
    _print_json(export_bundle(Store(settings.db_url), args.session_id, key=key))
    return 0


def cmd_keys(args: argparse.Namespace) -> int:
    from pipeline.bundles.provenance import key_path, public_key_text, signing_key

    settings = _settings(args)
    print(public_key_text(signing_key(settings).public_key()))
    print(f"private key: {key_path(settings)}; another workbench trusts this one's bundles by listing the line "
          "above under provenance.trusted_keys", file=sys.stderr)
    return 0


def _export_otlp(settings: Settings, session_id: str) -> int:
    from pipeline.telemetry.tracing import export_session

    if not settings.telemetry.otlp_endpoint:
        raise ConfigError("no OTLP endpoint: set OTEL_EXPORTER_OTLP_ENDPOINT or telemetry.otlp_endpoint "
                          "in workbench.yaml")
    if not export_session(settings, Store(settings.db_url), session_id, flush=True):
        raise ConfigError(f"the OTLP collector at {safe_url(settings.telemetry.otlp_endpoint)} did not take the trace")
    print(f"session {session_id} sent as a trace to {safe_url(settings.telemetry.otlp_endpoint)}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from pipeline.bundles.importer import import_bundle
    from pipeline.bundles.session_bundle import load_bundle
    from pipeline.llm import make_provider

    settings = _settings(args)
    bundle = load_bundle(Path(args.file), max_bytes=settings.budget.max_bundle_bytes)
    result = import_bundle(Store(settings.db_url), bundle, settings=settings, rules=_rules(args, settings),
                           provider=make_provider(settings))
    from pipeline.store.record import verdict_text

    renumbered = sum(1 for old, new in result.id_map.items() if old != new)
    print(f"imported as session {result.session_id} ({len(result.id_map)} invocations, {renumbered} renumbered; "
          f"source id {bundle.session.id!r})")
    claimed = f"; the source claimed {result.claimed_verdict}" if result.claimed_verdict else ""
    print(f"re-verified: {verdict_text(result.verdict, ['ungated'] if result.ungated_by else [])}{claimed}")
    sig = result.signature
    print(f"provenance: {sig.provenance} ({sig.reason}"
          + (f"; key {sig.key})" if sig.key else ")")
          + ("; held in the review queue" if sig.provenance == "unverified" else ""))
    if result.ungated_by:
        print(f"ungated: judged with {', '.join(result.ungated_by)} off, warn-only or unable to fail", file=sys.stderr)
    if result.capped:
        print(f"outputs of invocations {result.capped} cut to budget.max_stored_output_bytes", file=sys.stderr)
    return 0


def cmd_import_trace(args: argparse.Namespace) -> int:
    from pipeline.bundles.session_bundle import read_bundle_bytes
    from pipeline.bundles.trace_import import read_trace
    from pipeline.bundles.trace_session import import_trace, imported_as
    from pipeline.llm import make_provider
    from pipeline.store.record import verdict_text

    settings = _settings(args)
    data = read_bundle_bytes(Path(args.file), settings.budget.max_bundle_bytes)
    trace = read_trace(data.decode("utf-8", "replace"), settings.budget.max_bundle_bytes,
                       settings.budget.max_stored_output_bytes)
    store = Store(settings.db_url)
    if (earlier := imported_as(store, trace.trace_id)) is not None:
        print(f"trace {trace.trace_id} was imported already, as session {earlier}")
        return 0
    result = import_trace(store, trace, settings=settings, rules=_rules(args, settings),
                          provider=make_provider(settings))
    print(f"imported trace {trace.trace_id} from {trace.service_name} as session {result.session_id} "
          f"({len(trace.tool_calls)} tool calls)")
    print(f"judged: {verdict_text(result.verdict, ['ungated'] if result.ungated_by else [])}; "
          f"provenance: {result.signature.reason}; held in the review queue")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from pipeline.bundles.check import check_bundle, check_report
    from pipeline.bundles.provenance import check_signature, trusted_keys
    from pipeline.bundles.session_bundle import load_bundle
    from pipeline.llm import make_provider

    settings = _settings(args)
    bundle = load_bundle(Path(args.file), max_bytes=settings.budget.max_bundle_bytes)
    rules = _rules(args, settings)
    ev = check_bundle(bundle, settings=settings, rules=rules, provider=make_provider(settings))
    ungated = rules.ungated_by(gatekeeper_enabled=settings.gatekeeper.enabled)
    sig = check_signature(bundle.document, trusted_keys(settings))
    if args.json:
        _print_json({**check_report(ev), "ungated_by": ungated,
                     "provenance": {"status": sig.provenance, "reason": sig.reason, "key": sig.key}})
    else:
        g = ev.gatekeeper_result
        print(f"parse: {ev.parse_status.status}  gatekeeper: {g.status} {g.failed_rules}  verdict: {ev.verdict}"
              + (f" (ungated: {', '.join(ungated)} off, warn-only or unable to fail)" if ungated else ""))
        print(f"provenance: {sig.provenance} ({sig.reason})")
        for e in g.errors:
            print(f"  {e.rule_id} @ {e.target}: {e.message}")
        print(ev.final_answer)
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from pipeline.replay.history import GateColumnCache
    from pipeline.runs.rulebook import rules_in_force

    settings = _settings(args)
    rules = _rules(args, settings)
    store = Store(settings.db_url)
    history = GateColumnCache(store, kept=0)  # one replay: nothing is worth keeping
    # Sessions without columnar rows get them under the rules in force, not the candidate's lists.
    history.refresh(rules_in_force(settings, store)[0])
    result = history.replay(rules)
    if args.json:
        _print_json([{**r.__dict__, "result": r.result.model_dump(mode="json")} for r in result.rows(changed_only=True)])
    else:
        print(result.summary())
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    """The suite as an eval job, the Eval page's kind: one history, and a run the shell started can
    be followed and stopped from the page. The embedded queue runs it in this process; with
    PostgreSQL a `workbench worker` does, and --no-wait leaves it there."""
    import getpass

    from pipeline.eval.history import format_history, list_runs
    from pipeline.frontends.jobs_cli import follow_job
    from pipeline.jobs import make_queue, submit_job

    settings = _settings(args)
    store = Store(settings.db_url)
    if args.history:
        runs = list_runs(store)
        if args.json:
            _print_json([{**r.__dict__, "score": r.score} for r in runs])
        else:
            print(format_history(runs))
        return 0
    job_args: EvalArgs = {"who": args.who or getpass.getuser(), "origin": "cli"}
    if args.rules:  # a path the worker can open wherever it runs
        job_args["rules_dir"] = str(Path(settings.rules_dir).resolve())
    queue = make_queue(settings, store)
    try:
        if args.no_wait and queue.owned:
            raise InputError("--no-wait leaves the run to `workbench worker` (a PostgreSQL store); the embedded "
                             "queue runs it in this process, which must then stay until it ends")
        job_id = submit_job(queue, store, "eval", job_args)
        if args.no_wait:
            print(job_id)
            return 0
        where = "running in this process" if queue.owned else "waiting for a `workbench worker` to take it"
        print(f"eval run {job_id} queued, {where}; Ctrl-C stops it after the fixture in hand", file=sys.stderr)
        row = follow_job(store, job_id, _EvalProgress(quiet=args.json))
    finally:
        queue.close()  # the embedded queue: the fixture in hand ends first
    return _eval_ended(args, settings, row)


class _EvalProgress:
    """One stderr line per fixture as the job reports it, and one when a stop was asked."""

    def __init__(self, *, quiet: bool):
        self.quiet, self.printed, self.stopping = quiet, 0, False

    def __call__(self, row: JobRow) -> None:
        results = (row.result or {}).get("results") or []
        for r in results[self.printed:] if not self.quiet else ():
            self.printed += 1
            print(f"[{self.printed}/{row.progress_total}] {r['name']} {'pass' if r['passed'] else 'FAIL'} "
                  f"{r.get('verdict') or '-'}", file=sys.stderr)
        if row.cancel_requested_at and row.status == "running" and not self.stopping:
            self.stopping = True
            print("stopping after the fixture in hand (Ctrl-C again: stop waiting)", file=sys.stderr)


def _eval_ended(args: argparse.Namespace, settings: Settings, row: JobRow) -> int:
    """Print the run as it ended: 0 every fixture passed, 1 some failed, 130 stopped by Ctrl-C."""
    from pipeline.eval.runner import EvalResult, format_table
    from pipeline.frontends.jobs_cli import JobEnded

    job_id, status = row.id, row.status
    if status in ("failed", "interrupted"):
        raise JobEnded(f"eval run {job_id} {status}: {row.error or 'no reason stored'}; "
                       "the sessions it made are kept (`workbench eval --history`)")
    results = [EvalResult.from_stored(r) for r in (row.result or {}).get("results") or []]
    if args.json:
        _print_json([r.as_dict() for r in results])
    elif results or status == "completed":
        print(format_table(results, _lang(args, settings)))
    if status == "completed":
        if not args.json:
            print(f"stored as eval run {job_id}; `workbench eval --history` lists the runs")
        return 0 if all(r.passed for r in results) else 1
    if status == "cancelled":
        print(f"eval run {job_id} cancelled after {len(results)} of {row.progress_total or '?'} fixtures; "
              "its sessions are kept (`workbench eval --history`)", file=sys.stderr)
    else:
        print(f"stopped waiting; eval run {job_id} stops after the fixture in hand "
              "(`workbench eval --history` lists it then)", file=sys.stderr)
    return 130


def cmd_demo(args: argparse.Namespace) -> int:
    from pipeline.eval.demo import run_demo

    settings = _settings(args)
    ids = run_demo(settings, Store(settings.db_url), language=args.language,
                   on_progress=lambda n, total, question: print(f"[{n}/{total}] {question}", file=sys.stderr))
    print(f"stored {len(ids)} sample sessions; `workbench ui` shows them in the review queue")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from pipeline.frontends.doctor import doctor
    from pipeline.frontends.fit import write_fit
    from pipeline.store.engine import display_url
    from pipeline.tools.health import backend_health

    settings = _settings(args)
    ok, lines, found = doctor(settings, measure=not args.quick)
    backends = backend_health(settings)
    print("\n".join([f"database: {display_url(settings.db_url)}", *lines, *backends]))
    if args.write:
        if found is None:
            raise ConfigError("nothing to write: the endpoint's speed was not measured (provider openai, reachable, "
                              "without --quick)")
        # The file the settings were read from: --config when given (load_settings forgets it on return).
        path = Path(args.config) if args.config else config_path()
        write_fit(path, found)
        print(f"wrote openai.timeout_s, openai.stage_timeouts and budget.output_tokens to {path}")
    return 0 if ok and not any("UNREACHABLE" in line for line in backends) else 1


def cmd_simulate(args: argparse.Namespace) -> int:
    from pipeline.frontends.simulate import serve_metrics
    from pipeline.tools.incidents import world_by_id

    settings = _settings(args)
    world = world_by_id(settings.incidents_dir, args.incident)
    server = serve_metrics(world.path, args.port)
    print(f"serving metrics of {world.id} on http://127.0.0.1:{args.port}/metrics (Ctrl-C to stop)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        server.shutdown()
    return 0


def cmd_ui(args: argparse.Namespace) -> int:
    import os

    from pipeline.core.resources import resource_dir

    ui_dir = resource_dir("ui")
    # Streamlit reads .streamlit/config.toml from its working directory; the packaged UI ships one.
    # exec, not a child process: a signal to `workbench ui` must reach the server itself.
    os.chdir(ui_dir)
    command = [sys.executable, "-m", "streamlit", "run", str(ui_dir / "app.py"),
               "--server.port", str(args.port), "--server.address", args.host]
    os.execv(sys.executable, command)


def cmd_db(args: argparse.Namespace) -> int:
    from pipeline.store.engine import display_url
    from pipeline.store.migrate import upgrade_database

    url = _settings(args).db_url
    print(f"{display_url(url)}: schema at revision {upgrade_database(url)} (head)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="workbench", description="Evidence Workbench: evidence-checked incident diagnosis")
    p.add_argument("--config", help="settings file (default: workbench.yaml, or $WORKBENCH_CONFIG)")
    sub = p.add_subparsers(dest="command", required=True)

    ask = sub.add_parser("ask", help="run a diagnosis session")
    ask.add_argument("question", type=encodable, help="the diagnosis question, Chinese or English")
    ask.add_argument("--json", action="store_true", help="print the session result as JSON")
    ask.add_argument("--provider", choices=["offline", "openai", "scripted"],
                     help="LLM provider for this session (default: settings, offline)")
    ask.add_argument("--model", help="model name for the openai provider (default: settings)")
    ask.add_argument("--fixture", help="stage outputs to replay with --provider scripted")
    ask.add_argument("--shape", choices=["split", "single"],
                     help="split: Collector -> Digest -> Diagnosis; single: the Executor reads raw outputs")
    ask.add_argument("--world", help="bundled incident world (default: routed from the question)")
    ask.set_defaults(func=cmd_ask)

    for name, func, helptext in (("show", cmd_show, "the audit chain as text"),
                                 ("export", cmd_export, "the session bundle as JSON")):
        sp = sub.add_parser(name, help=helptext)
        sp.add_argument("session_id", type=encodable, help="a session id (see `workbench sessions`)")
        sp.set_defaults(func=func)
        if name == "show":
            sp.add_argument("--lang", choices=["en", "zh"],
                            help="language of the statuses and the engine's messages (default: $LANG if it names "
                                 "zh or en, else ui.language)")
        else:
            sp.add_argument("--otlp", action="store_true",
                            help="send the session as an OpenTelemetry trace to the configured OTLP endpoint instead")

    imp = sub.add_parser("import", help="store a session bundle")
    imp.add_argument("file", help="a session bundle (JSON); it is re-verified, its own verdict kept only as claimed")
    imp.set_defaults(func=cmd_import)

    itr = sub.add_parser("import-trace", help="store a foreign agent's OpenInference trace (OTLP/JSON) as a session")
    itr.add_argument("file", help="a trace file: OTLP/JSON (camelCase or snake_case) or a Phoenix span export")
    itr.set_defaults(func=cmd_import_trace)
    chk = sub.add_parser("check", help="parse, gatekeeper, verifier and composer on a bundle; stores nothing")
    chk.add_argument("file", help="a session bundle (JSON)")
    chk.add_argument("--rules", help="rules directory (index.yaml + metadata.yaml)")
    chk.add_argument("--json", action="store_true", help="print the check report as JSON")
    chk.set_defaults(func=cmd_check)

    rep = sub.add_parser("replay", help="what the rules in DIR would change over all stored sessions")
    rep.add_argument("--rules", help="candidate rules directory")
    rep.add_argument("--json", action="store_true", help="print every changed session as JSON")
    rep.set_defaults(func=cmd_replay)

    ev = sub.add_parser("eval", help="run the eval fixture suite as a job and follow it (Ctrl-C stops it)")
    ev.add_argument("--rules", help="rules directory")
    ev.add_argument("--json", action="store_true", help="print the results as JSON")
    ev.add_argument("--history", action="store_true", help="list the stored eval runs instead of running")
    ev.add_argument("--who", help="who ran it, kept with the run (default: the login name)")
    ev.add_argument("--no-wait", action="store_true",
                    help="print the run's job id and leave it to `workbench worker` (PostgreSQL store)")
    ev.add_argument("--lang", choices=["en", "zh"],
                    help="language of the failure reasons (default: $LANG if it names zh or en, else ui.language)")
    ev.set_defaults(func=cmd_eval)

    demo = sub.add_parser("demo", help="store the sample set: sessions of every verdict with claims to review")
    demo.add_argument("--language", choices=["en", "zh"], default="en", help="language of the sample questions")
    demo.set_defaults(func=cmd_demo)

    keys = sub.add_parser("keys", help="print the public key export signs bundles with (made on first use)")
    keys.set_defaults(func=cmd_keys)

    doc = sub.add_parser("doctor", help="check the LLM endpoint and the evidence backends")
    doc.add_argument("--quick", action="store_true", help="skip measuring the endpoint's speed")
    doc.add_argument("--write", action="store_true",
                     help="write the settings that fit the measured speed to the settings file")
    doc.set_defaults(func=cmd_doctor)

    sim = sub.add_parser("simulate", help="expose a bundled incident's metrics for Prometheus to scrape")
    sim.add_argument("incident", help="a bundled incident id, e.g. cpu-saturation")
    sim.add_argument("--port", type=int, default=9464, help="port of the /metrics endpoint (default 9464)")
    sim.set_defaults(func=cmd_simulate)

    ui = sub.add_parser("ui", help="start the Streamlit workbench (the packaged app)")
    ui.add_argument("--port", type=int, default=8501, help="port to serve on (default 8501)")
    ui.add_argument("--host", default="localhost", help="address to bind (default localhost)")
    ui.set_defaults(func=cmd_ui)

    db = sub.add_parser("db", help="database schema (every start upgrades it too)")
    db.add_argument("action", choices=["upgrade"], help="upgrade: apply pending migrations under the lock")
    db.set_defaults(func=cmd_db)

    from pipeline.frontends.jobs_cli import register as register_job_commands

    register_job_commands(sub)  # worker, webhook, metrics, sessions, rerun
    from pipeline.frontends.rules_cli import register as register_rules_commands

    register_rules_commands(sub)  # rules apply | history | diff | rollback
    return p


def _tolerant_streams() -> None:
    """A question or a log line may hold lone surrogates (undecodable argv bytes, JSON "\\udcff"
    escapes); printing them must show an escape, not raise UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    _tolerant_streams()
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except BrokenPipeError:
        # The reader stopped reading (`workbench ask ... | head -1`); what ran is stored. Output
        # still buffered for the closed pipe must not raise again at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except WorkbenchError as exc:
        # Expected failures (docs: pipeline/core/errors.py) are one line and exit 2; anything else
        # is a bug and keeps its traceback.
        print(f"workbench: {one_line(exc)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
