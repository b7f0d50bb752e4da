"""The workbench in a real browser: headless Debian Chromium against `streamlit run app.py`.

Screenshots of every page go to tests/screenshots/ (gitignored) for a person to look at.
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers import require

try:
    from playwright import sync_api
except ImportError:  # the fixture turns this into a skip, or a failure under CI
    sync_api = None

from pipeline.core.config import ROOT, load_settings
from pipeline.core.messages import tr
from pipeline.eval import history
from pipeline.eval.demo import demo_runs, run_demo
from pipeline.eval.runner import EvalResult
from pipeline.store import Store
from pipeline.store.record import read_session

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SHOTS = ROOT / "tests" / "screenshots"
WAIT_MS = 60_000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Servers a test stopped itself: a page still open on one retries it, and those refused
# connections are the test's teardown, not the page's errors.
_STOPPED: set[str] = set()


@contextlib.contextmanager
def _streamlit(home: Path, *, prefix: tuple[str, ...] = (), log_dir: Path | None = None) -> Iterator[str]:
    """A streamlit server on a free port with its own workbench home, started under `prefix`
    (a command that runs the rest) and logging to `log_dir` (the home by default); yields its base URL."""
    require(Path(CHROMIUM).exists() or bool(shutil.which("chromium")), "Chromium (/usr/bin/chromium)")
    port = _free_port()
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "WORKBENCH_PROVIDER", "WORKBENCH_MODEL")}
    env.update(WORKBENCH_HOME=str(home), WORKBENCH_CONFIG=str(home / "no-config.yaml"))
    log_file = (log_dir or home) / "streamlit.log"
    with open(log_file, "wb") as log:
        proc = subprocess.Popen(
            [*prefix, sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port), "--server.address",
             "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as resp:
                        if resp.status == 200:
                            break
                except OSError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("streamlit did not start: " + log_file.read_text(errors="replace")[-2000:])
                time.sleep(0.3)
            yield base
        finally:
            _STOPPED.add(base)
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """(base URL, home) of a server shared by the tests that start from an empty store."""
    home = tmp_path_factory.mktemp("browser-home")
    with _streamlit(home) as base:
        yield base, home


@pytest.fixture
def page() -> Iterator:
    require(Path(CHROMIUM).exists() or bool(shutil.which("chromium")), "Chromium (/usr/bin/chromium)")
    require(sync_api is not None, "playwright")
    dialogs: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        pg = browser.new_page(viewport={"width": 1440, "height": 1800})
        pg.set_default_timeout(WAIT_MS)

        def on_dialog(dialog) -> None:  # a dialog means a tool output ran as script
            dialogs.append(dialog.message)
            dialog.dismiss()

        pg.on("dialog", on_dialog)
        # A page that works still must not log errors (usage statistics are off in
        # .streamlit/config.toml, so no telemetry host is looked up).
        console: list[str] = []

        def on_console(msg) -> None:
            # Deep links included: app.py tells the client where the root is, so it probes no
            # /<page>/_stcore/health or host-config (pages/_ui/deep_links.py).
            url = msg.location.get("url", "")
            if "ERR_CONNECTION_REFUSED" in msg.text and any(url.startswith(b) for b in _STOPPED):
                return
            if msg.type == "error":
                console.append(f"{msg.text} {msg.location.get('url', '')}")

        pg.on("console", on_console)
        yield pg
        browser.close()
    assert not dialogs, f"a dialog opened: {dialogs}"
    assert not console, f"browser console errors: {console[:5]}"


def _settled(pg) -> None:
    """Wait until the script run has finished (no running indicator) and the page has painted."""
    pg.wait_for_selector("[data-testid=stAppViewContainer]")
    pg.wait_for_function("() => !document.querySelector('[data-testid=stStatusWidget]')", timeout=WAIT_MS)
    pg.wait_for_timeout(600)


def _shot(pg, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(SHOTS / f"{name}.png"))


def _store(home: Path) -> Store:
    return Store(f"sqlite:///{home / 'workbench.db'}")


def _seed_reviewer_work(home: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """One clean PASS and two weak-model sessions of the sample set, stored in the server's home."""
    monkeypatch.setenv("WORKBENCH_HOME", str(home))
    monkeypatch.setenv("WORKBENCH_CONFIG", str(home / "no-config.yaml"))
    settings = load_settings()
    runs = demo_runs(settings, "en")
    offline = [r for r in runs if r[2] is None][:1]
    weak = [r for r in runs if r[2] and r[2]["name"].startswith(("07-", "14-"))]
    ids = run_demo(settings, _store(home), runs=offline + weak)
    return ids[0], ids[-1]


def test_a_reviewer_deep_links_labels_claims_by_keyboard_and_finds_the_queue(
        tmp_path: Path, page, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path
    _, weak = _seed_reviewer_work(home, monkeypatch)
    with _streamlit(home) as base:
        _review_in_a_browser(base, home, weak, page)
        page.goto("about:blank")  # else the page reports the stopped server in its console


def test_every_page_opens_on_a_read_only_store_and_a_refused_write_says_why(
        tmp_path: Path, page, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store whose directory and files are read-only (a mounted backup, a copy for audit)."""
    home = tmp_path / "ro"
    home.mkdir()
    _, weak = _seed_reviewer_work(home, monkeypatch)
    gc.collect()  # the seeding stores' connections close, merging their log into the file
    prefix: tuple[str, ...] = ()
    if os.geteuid() == 0:
        # root ignores file modes; without these capabilities it obeys them like any user.
        require(shutil.which("setpriv") is not None, "setpriv (util-linux)")
        caps = "-dac_override,-dac_read_search,-fowner"
        prefix = ("setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}")
    files = sorted(os.listdir(home))
    for name in files:
        (home / name).chmod(0o444)
    home.chmod(0o555)
    pg = page
    try:
        with _streamlit(home, prefix=prefix, log_dir=tmp_path) as base:
            for path, name in [("/", "ask"), (f"/trace?session={weak}", "trace"), ("/rules", "rules"),
                               ("/sessions", "sessions"), ("/eval", "eval")]:
                pg.goto(base + path)
                pg.get_by_role("heading", name=tr(f"{name}.title", "en")).wait_for()
                _settled(pg)
                _shot(pg, f"read-only-{name}")
                _no_traceback(pg, name)
            # Writes: asking stores a session, a label a review, Apply a rules version.
            pg.goto(base + "/")
            pg.get_by_role("button", name="Why does the payment API time out since 10:00?").click()
            _refused(pg, "read-only-ask-refused")

            pg.goto(f"{base}/trace?session={weak}&reviewer=ann")
            pg.get_by_role("heading", name=tr("trace.title", "en")).wait_for()
            _settled(pg)
            pg.get_by_role("button", name=re.compile(r"^Review the \d+ claims one by one$")).click()
            pg.get_by_text(re.compile(r"^Claim 1 of \d+$")).wait_for()
            pg.get_by_role("heading", name=tr("trace.title", "en")).click()
            pg.keyboard.press("4")
            _refused(pg, "read-only-label-refused")

            pg.goto(base + "/eval")
            pg.get_by_role("button", name=tr("eval.run", "en")).click()
            _refused(pg, "read-only-eval-refused")

            # A read: the impact preview replays the stored sessions.
            pg.goto(base + "/rules")
            pg.get_by_role("heading", name=tr("rules.title", "en")).wait_for()
            _settled(pg)
            pg.get_by_role("button", name=tr("rules.preview", "en")).click()
            pg.get_by_text("Sessions replayed").wait_for()
            _settled(pg)
            _shot(pg, "read-only-rules-preview")
            _no_traceback(pg, "rules preview")
            # A write: a stricter excerpt threshold applied as a new version.
            pg.locator("[data-testid=stExpander] summary", has_text="evidence.excerpt_similarity").click()
            pg.get_by_test_id("stNumberInputStepUp").first.click()
            _settled(pg)
            author = pg.get_by_role("textbox", name=tr("rules.author", "en"))
            author.fill("ann")
            author.press("Enter")
            _settled(pg)
            pg.get_by_role("button", name=tr("rules.apply", "en")).click()
            _refused(pg, "read-only-rules-apply-refused")
            pg.goto("about:blank")
    finally:
        home.chmod(0o755)
        for name in files:
            (home / name).chmod(0o644)
    assert sorted(os.listdir(home)) == files, "the pages wrote beside the database"


def _no_traceback(pg, where: str) -> None:
    body = pg.inner_text("body")
    assert pg.locator("[data-testid=stException]").count() == 0 and "Traceback" not in body, (where, body[:2000])


def _refused(pg, shot: str) -> None:
    """The write refused in one line naming the cause, and nothing else broken."""
    _settled(pg)
    alerts = pg.locator("[data-testid=stAlert] [data-testid=stMarkdownContainer]").filter(
        has_text="attempt to write a readonly database")
    notices = alerts.all_inner_texts()  # the text, without an icon's name
    assert len(notices) == 1 and "\n" not in notices[0].strip(), (shot, notices)
    alerts.first.scroll_into_view_if_needed()
    _shot(pg, shot)
    _no_traceback(pg, shot)


def _review_in_a_browser(base: str, home: Path, weak: str, pg) -> None:
    pg.set_viewport_size({"width": 1280, "height": 1600})
    store = _store(home)
    claims = read_session(store, weak).claims
    assert len(claims) >= 2

    # The very first request of a fresh server is a deep link: the frame (language switch) and the trace.
    pg.goto(f"{base}/trace?session={weak}")
    pg.get_by_role("heading", name=tr("trace.title", "en")).wait_for()
    # The sidebar's widgets may paint after the page body on this first run of a fresh server, and
    # while the handshake's rerun replaces the first run's frame both may be on screen a moment.
    language = pg.locator("[data-testid=stSidebar]").get_by_text("Language")
    language.first.wait_for()
    _settled(pg)
    sync_api.expect(language).to_have_count(1)
    assert f"session={weak}" in pg.url
    _shot(pg, "review-deep-link")

    # The name is asked beside the review panel and kept in the URL.
    name = pg.get_by_label(tr("common.reviewer", "en"))
    name.fill("ann")
    name.press("Enter")
    _settled(pg)
    assert "reviewer=ann" in pg.url
    # The panel is drawn once asked for.
    panel = pg.get_by_text(re.compile(r"^Claim \d+ of \d+$"))
    sync_api.expect(panel).to_have_count(0)
    pg.get_by_role("button", name=re.compile(r"^Review the \d+ claims one by one$")).click()
    sync_api.expect(panel).to_have_text(re.compile(r"^Claim 1 of"))
    # Keys: J next, K previous, 4 labels "hallucination" and moves on.
    pg.get_by_role("heading", name=tr("trace.title", "en")).click()
    pg.keyboard.press("j")
    _settled(pg)
    sync_api.expect(panel).to_have_text(re.compile(r"^Claim 2 of"))
    pg.keyboard.press("k")
    _settled(pg)
    sync_api.expect(panel).to_have_text(re.compile(r"^Claim 1 of"))
    pg.keyboard.press("4")
    _settled(pg)
    sync_api.expect(panel).to_have_text(re.compile(r"^Claim 2 of"))
    reviews = store.reviews(weak)
    assert [(r["label"], r["reviewer"]) for r in reviews] == [("hallucination", "ann")]
    assert "hallucination (ann)" in pg.inner_text("body")
    panel.scroll_into_view_if_needed()
    _shot(pg, "review-keyboard")

    # A reload keeps the name.
    pg.reload()
    pg.get_by_role("heading", name=tr("trace.title", "en")).wait_for()
    _settled(pg)
    sync_api.expect(pg.get_by_label(tr("common.reviewer", "en"))).to_have_value("ann")

    # Sessions: by default the weak-model sessions wait; the clean PASS does not. A row's link opens its trace here.
    pg.goto(f"{base}/sessions")
    pg.get_by_role("heading", name=tr("sessions.title", "en")).wait_for()
    pg.get_by_text(re.compile(r"sessions match")).wait_for()
    _settled(pg)
    assert re.search(r"\b2 sessions match", pg.inner_text("body"))
    _shot(pg, "review-queue-1280")
    pg.get_by_role("tab", name=tr("sessions.charts_tab", "en")).click()
    pg.locator("[data-testid=stVegaLiteChart]").nth(2).wait_for()
    _settled(pg)
    _shot(pg, "review-queue-charts")
    pg.get_by_role("tab", name=tr("sessions.queue_tab", "en")).click()
    pages_before = len(pg.context.pages)
    first = pg.locator("table.wb-queue tbody tr").first
    sid = first.get_attribute("data-session")
    first.locator("td.wb-question a").click()
    pg.get_by_role("heading", name=tr("trace.title", "en")).wait_for()
    _settled(pg)
    assert f"/trace?session={sid}" in pg.url and len(pg.context.pages) == pages_before


def test_ask_trace_rules_sessions_eval_in_a_browser(server: tuple[str, Path], page) -> None:
    base, home = server
    pg = page

    # Ask: a sample question of the cpu-saturation world (its logs hold a <script> probe line).
    pg.goto(base + "/")
    _settled(pg)
    pg.get_by_role("button", name="Why does the payment API time out since 10:00?").click()
    pg.get_by_text("Confirmed facts").wait_for()
    _settled(pg)
    sessions, total = _store(home).list_sessions(limit=1)
    assert total == 1
    session = sessions[0]
    badge = pg.locator("[data-testid=stMarkdownContainer]").filter(has_text=re.compile(f"^{session['verdict']}$"))
    assert badge.count() >= 1
    _shot(pg, "ask")

    # Trace: the link of the answer opens the audit chain with a highlighted match.
    pg.get_by_role("link", name=tr("ask.open_trace", "en")).click()
    pg.get_by_role("heading", name=tr("trace.title", "en")).wait_for()
    _settled(pg)
    assert f"session={session['id']}" in pg.url
    pg.locator("mark.wb-match").first.wait_for()  # drawn by the evidence column, after the heading
    _shot(pg, "trace")

    # The XSS probe: show the output that holds the probe line, search it, see it as text.
    metas = _store(home).invocation_meta(session["id"])
    probe = next(m for m in metas if "user-agent probe" in (_store(home).invocation(m["id"]).output))
    picker = pg.get_by_role("combobox", name="Invocation")
    picker.click()
    picker.fill(f"#{probe['id']} ")
    pg.get_by_role("option", name=re.compile(rf"^#{probe['id']} ")).click()
    _settled(pg)
    search = pg.get_by_label("Search in output")
    search.fill("user-agent probe")
    search.press("Enter")
    _settled(pg)
    shown = pg.locator(".wb-box").filter(has_text="<script>alert(1)</script> user-agent probe")
    assert shown.count() >= 1
    assert pg.locator(".wb-box script").count() == 0 and pg.locator(".wb-box img").count() == 0
    shown.first.scroll_into_view_if_needed()
    _shot(pg, "trace-xss-probe")
    # The executor's raw output is drawn only once its expander is opened.
    raw = pg.get_by_text(tr("trace.executor_raw", "en"))
    raw.scroll_into_view_if_needed()
    assert pg.get_by_text('"answer_version"').count() == 0
    raw.click()
    pg.get_by_text('"answer_version"').first.wait_for()
    _settled(pg)

    # Rules: move the excerpt similarity pass threshold, preview the impact, apply.
    pg.goto(base + "/rules")
    pg.get_by_role("heading", name=tr("rules.title", "en")).wait_for()
    _settled(pg)
    pg.locator("[data-testid=stExpander] summary", has_text="evidence.excerpt_similarity").click()
    box = pg.locator("[data-testid=stNumberInput] input").first
    sync_api.expect(box).to_have_value("0.50")
    _settled(pg)
    metadata = pg.get_by_label("metadata.yaml").last
    box.focus()
    for _ in range(5):
        pg.keyboard.press("ArrowUp")
        pg.wait_for_timeout(150)
    _settled(pg)
    sync_api.expect(metadata).to_have_value(re.compile(r"passThreshold: 0\.55\n"))
    # Before Apply the tuner sees the difference against the rules in force.
    assert "+      passThreshold: 0.55" in pg.inner_text("body")
    pg.get_by_role("button", name=tr("rules.preview", "en")).click()
    pg.get_by_text("Sessions replayed").wait_for()
    _settled(pg)
    apply = pg.get_by_role("button", name=tr("rules.apply", "en"))
    for attempt in range(6):
        # A rerun still in flight can redraw the form and drop what was typed: type until it sticks.
        for label, value in (("Author", "browser-test"), ("Comment", "pass threshold 0.55")):
            if pg.get_by_label(label).input_value() != value:
                pg.get_by_label(label).fill(value)
                pg.get_by_label(label).press("Enter")
                _settled(pg)
        try:
            sync_api.expect(apply).to_be_enabled(timeout=5_000)
            break
        except AssertionError:
            if attempt == 5:
                raise
    apply.click()
    pg.get_by_text("Applied as version 1.").wait_for()
    _settled(pg)
    assert "Editing from: version 1" in pg.inner_text("body")
    active = _store(home).active_rule_version()
    assert active["author"] == "browser-test" and "passThreshold: 0.55" in active["metadata_yaml"]
    _shot(pg, "rules")

    # History: the shipped rules are version 0; roll back to them, the author asked beside the button.
    pg.get_by_role("tab", name="History").click()
    _settled(pg)
    rollback = pg.get_by_role("button", name="Roll back to version 0")
    rollback.scroll_into_view_if_needed()
    _shot(pg, "rules-history")
    sync_api.expect(rollback).to_be_enabled()
    rollback.click()
    pg.get_by_text("Version 0 re-applied as version 2.").wait_for()
    active = _store(home).active_rule_version()
    assert active["id"] == 2 and active["comment"] == "roll back to version 0"

    # Sessions: the queue with every verdict shown.
    pg.goto(base + "/sessions?sessions_reviewed=any&sessions_needs_person=false")
    pg.get_by_role("heading", name=tr("sessions.title", "en")).wait_for()
    pg.get_by_text(re.compile(r"sessions match")).wait_for()
    _settled(pg)
    assert "1 sessions match" in pg.inner_text("body")
    _shot(pg, "sessions")

    # Eval: run the fixture suite under the reviewer's name.
    pg.goto(base + "/eval")
    _settled(pg)
    pg.get_by_label(tr("common.reviewer", "en")).fill("browser-test")
    pg.get_by_label(tr("common.reviewer", "en")).press("Enter")
    _settled(pg)
    pg.get_by_role("button", name=tr("eval.run", "en")).click()
    pg.get_by_text("run by browser-test").wait_for(timeout=240_000)  # 26 fixture sessions on a shared CI core
    _settled(pg)
    _shot(pg, "eval")
    latest = history.list_runs(_store(home))[0]
    assert latest.who == "browser-test" and latest.score == f"{len(latest.results)} / {len(latest.results)}"
    # An earlier run, stored, in which one fixture failed: the comparison puts that fixture first.
    earlier = [{**r, "passed": False, "failures": ["verdict PASS != REJECT"]} if r["name"] == "05-number-swapped"
               else r for r in latest.results]
    history.record_run(_store(home), who="yesterday", rules="v0", started_at=datetime(2026, 1, 1, tzinfo=UTC),
                       results=[EvalResult(**r) for r in earlier])
    pg.reload()
    _settled(pg)
    pg.get_by_text(tr("eval.changed", "en", n=1)).scroll_into_view_if_needed()
    _settled(pg)
    _shot(pg, "eval-compare")


# Markdown and HTML that a browser would fetch from an outside host if rendered: one per field
# that holds text from a model, an endpoint, a bundle or a person.
def _hostile(field: str) -> str:
    return (f"{field} ![{field}](http://evil.test/{field}.png) <img src='http://evil.test/{field}-tag.png'> "
            f":red[{field}] [link](http://evil.test/{field}-link)")


WORD_JOINER = "\u2060"  # what pages/_ui/markup.md puts inside URLs so that none becomes a link


def _seed_hostile_session(home: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    from pipeline.core.contracts import LlmCallRecord
    from pipeline.runs.session import run_session

    monkeypatch.setenv("WORKBENCH_HOME", str(home))
    monkeypatch.setenv("WORKBENCH_CONFIG", str(home / "no-config.yaml"))
    store = _store(home)
    sid = run_session("payment API times out since 10:00, what's going on?", settings=load_settings(),
                      store=store).session_id
    evaluation = store.get_session(sid)["self_evaluation"]
    evaluation["claimed_by_source"] = {"verdict": _hostile("claimed"), "session_id": _hostile("source-id"),
                                       "provider": _hostile("source-provider"), "model": "m", "final_answer": "a",
                                       "signature": {"provenance": "unverified", "reason": _hostile("reason")}}
    store.update_session(sid, question=_hostile("question"), provider=_hostile("provider"), model=_hostile("model"),
                         error=_hostile("error"), status="failed", provenance="unverified",
                         self_evaluation=evaluation)
    store.add_llm_call(sid, LlmCallRecord(stage="verifier", provider=_hostile("llm-provider"), model="m",
                                          error=_hostile("llm-error"), messages=[{"role": _hostile("role"),
                                                                                  "content": "x"}]))
    return sid


def test_stored_and_upstream_text_stays_text_and_fetches_nothing_from_outside(
        tmp_path: Path, page, monkeypatch: pytest.MonkeyPatch) -> None:
    from urllib.parse import quote, urlsplit

    home = tmp_path
    sid = _seed_hostile_session(home, monkeypatch)
    pg = page
    outside: list[str] = []

    def on_request(request) -> None:  # noqa: ANN001 - playwright's Request
        host = urlsplit(request.url).hostname
        if request.url.startswith(("http:", "https:", "ws:", "wss:")) and host != "127.0.0.1":
            outside.append(request.url)

    pg.on("request", on_request)
    pg.route(re.compile(r"^https?://(?!127\.0\.0\.1[:/])"), lambda route: route.abort())
    with _streamlit(home) as base:
        pg.goto(f"{base}/trace?session={sid}")
        pg.get_by_role("heading", name=tr("trace.title", "en")).wait_for()
        _settled(pg)
        _shot(pg, "hostile-trace")
        pg.get_by_text(re.compile(r"^verifier · r1 .*llm-provider")).click()  # its panel draws when opened
        _settled(pg)
        trace_text = pg.inner_text("body").replace(WORD_JOINER, "")
        assert pg.locator("img[src*='evil.test'], a[href*='evil.test']").count() == 0
        _shot(pg, "hostile-trace-llm-call")
        pg.goto(f"{base}/sessions")
        pg.get_by_role("heading", name=tr("sessions.title", "en")).wait_for()
        _settled(pg)
        _shot(pg, "hostile-sessions")  # the table is a canvas: its cells are no DOM text
        pg.goto(f"{base}/trace?session={quote(_hostile('missing'))}")
        pg.get_by_text("No session with id").wait_for()
        _settled(pg)
        missing_text = pg.inner_text("body").replace(WORD_JOINER, "")
        assert pg.locator("img[src*='evil.test'], a[href*='evil.test']").count() == 0
        pg.goto("about:blank")  # before the server stops: nothing left loading from it
    assert outside == []
    # Shown as typed, markup characters and all.
    for field in ("question", "provider", "model", "error", "claimed", "source-id", "reason", "llm-error", "role"):
        assert f"![{field}](http://evil.test/{field}.png)" in trace_text, field
    assert "![missing](http://evil.test/missing.png)" in missing_text
