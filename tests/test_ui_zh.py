"""Every page in Chinese: headless Debian Chromium walks Ask, Sessions (queue and charts), Trace (a
REJECT session with claims, a LOW_CONFID asked about a service with no data, and a PASS), Rules (a rule
opened) and Eval (a result grid) with ?lang=zh, sidebar included, and finds no English word outside
the identifiers a page may show. Screenshots go to tests/screenshots/zh-*.png for a person to look at.

What is read: the page's text and its controls' placeholders, after removing what is data rather
than words of the page: pre blocks (raw JSON, prompts), evidence boxes (.wb-box), free text from a
tool or a model (.wb-text), a tool call's arguments and a backend's error (.wb-data), form inputs, and Streamlit's own chrome (its skip link, icon
ligatures, element toolbars). A name shown beside its Chinese label, "通过阈值 (passThreshold)",
"守门（Gatekeeper）规则", is a detail and not read.

What may stay Latin (`english_words`): an identifier (a token holding a digit, "_", ".", "-", "/",
"[" or ":", or camelCase: rule ids, field paths, session and invocation ids, service and metric
names, tool names), an all-capitals token (PASS, LOW_CONFID, CPU, UTC), a word the stored tool
outputs or the questions hold (quoted evidence), a field name of the seed's Executor V2 contract,
and the few words of ALLOWED. A status, form or
kind the catalogue translates ("fail", "no_data", "root_cause", "claim_check") is never an
identifier, whatever its shape.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from test_ui_browser import _settled, _shot, _store, _streamlit, page  # noqa: F401  (page is a fixture)

from pipeline.core import contracts
from pipeline.core.config import load_settings
from pipeline.core.events import StreamProgress
from pipeline.core.messages import family, msg, render, tr
from pipeline.eval import history
from pipeline.eval.demo import demo_runs, run_demo
from pipeline.eval.runner import load_fixtures, run_fixture
from pipeline.frontends.views import ask as ask_view
from pipeline.runs.session import run_session
from pipeline.store.record import read_session
from pipeline.tools.incidents import load_worlds

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# The language switch's other choice, a unit, and the date input's format placeholder.
ALLOWED = frozenset({"English", "ms", "yyyy", "mm", "dd"})
# The seed's Executor V2 field names, as the gatekeeper's findings name them ("claims 为空").
FIELDS = frozenset(name for model in (contracts.ExecutorOutputV2, contracts.Claim, contracts.EvidenceBinding,
                                      contracts.Hypothesis, contracts.RecommendedAction, contracts.EvidenceDigest)
                   for name in model.model_fields)
# Ids a page must show in words: every value the catalogue translates, and the claim check's name.
TRANSLATED = frozenset(k for k, v in family("value.", "zh").items() if v != k) | {"claim_check"}
_WORD = re.compile(r"[A-Za-z][\w.\-/\[\]:#]*[\w\]/]|[A-Za-z]")
_IDENTIFIER = re.compile(r"[\d_.\-/\[:]|[a-z][A-Z]")
# A Latin name in brackets right after Chinese: the key or component shown beside its label.
_DETAIL = re.compile(r"(?<=[\u4e00-\u9fff])\s*[（(][A-Za-z][\w.]*[)）]")

_TEXT_JS = """() => {
  const clone = document.body.cloneNode(true);
  clone.querySelectorAll('pre, script, style, noscript, textarea, input, .wb-box, .wb-text, .wb-data, .wb-question, '
    + '[data-testid=stToast], [data-testid=stSkipToContent], [data-testid=stIconMaterial], '
    + '[data-testid=stElementToolbar], [data-testid=stHeader]').forEach(e => e.remove());
  clone.querySelectorAll('*').forEach(e => e.append(' '));  // cells and spans are words apart
  const placeholders = [...document.querySelectorAll('[placeholder]')].map(e => e.getAttribute('placeholder'));
  return clone.textContent + ' ' + placeholders.join(' ');
}"""


def english_words(text: str, evidence: frozenset[str] = frozenset()) -> list[str]:
    """The Latin words of `text` that are neither identifiers, nor quoted from `evidence` (the
    words of the tool outputs and questions shown), nor ALLOWED: words left untranslated."""
    found = []
    for token in _WORD.findall(_DETAIL.sub(" ", text)):
        bare = token.rstrip(".:")
        if bare in TRANSLATED or not (_IDENTIFIER.search(bare) or bare.isupper() or bare in evidence
                                      or bare in ALLOWED or bare in FIELDS):
            found.append(bare)
    return found


def test_the_check_finds_english_words_and_passes_identifiers():
    assert english_words("判定原因：c1 (root_cause) is contradicted") == ["root_cause", "is", "contradicted"]
    assert english_words("规则 evidence.excerpt_similarity 在 claims[0].evidence_bindings[0] 未通过；"
                         "query_logs #12 PASS LOW_CONFID s-3d45ab17ed9c 12 ms") == []
    assert english_words("通过阈值 (passThreshold) · 守门（Gatekeeper）规则 · 状态 completed · 断言核验 claim_check") == [
        "completed", "claim_check"]
    assert english_words("Gatekeeper 状态 fail") == ["Gatekeeper", "fail"]
    assert english_words("日志：Unhandled exception", frozenset({"Unhandled", "exception"})) == []


@pytest.fixture(scope="module")
def zh_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str], frozenset[str]]]:
    """(base URL, session ids by name, the words of every stored tool output and question). The
    sessions: a PASS, a REJECT with gatekeeper errors and filtered claims, a LOW_CONFID asked about
    a service no backend holds data for; and one eval run of four fixtures."""
    home: Path = tmp_path_factory.mktemp("zh-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WORKBENCH_HOME", str(home))
        mp.setenv("WORKBENCH_CONFIG", str(home / "no-config.yaml"))
        settings = load_settings()
        store = _store(home)
        runs = demo_runs(settings, "zh")
        picked = [r for r in runs if r[2] is None][:1] + [r for r in runs if r[2] and r[2]["name"].startswith("07-")]
        passed, rejected = run_demo(settings, store, runs=picked, language="zh")
        no_data = run_session("ledger-service 从 09:00 起是不是内存泄漏？", settings=settings, store=store).session_id
        fixtures = [f for f in load_fixtures(settings.fixtures_dir) if f["name"].startswith(("05-", "07-", "10-", "13-"))]
        with tempfile.TemporaryDirectory() as tmp:
            results = [run_fixture(f, settings=settings, store=store, rules=None, script_dir=Path(tmp)) for f in fixtures]
        history.record_run(store, who="评审员", rules=history.SHIPPED, results=results, started_at=datetime.now(UTC))
    ids = {"passed": passed, "rejected": rejected, "no_data": no_data}
    sessions = [*ids.values(), *(r.session_id for r in results if r.session_id)]
    texts = [store.invocation(m["id"]).output for sid in sessions for m in store.invocation_meta(sid)]
    texts += [read_session(store, sid).question for sid in sessions]
    worlds = load_worlds(settings.incidents_dir)  # Ask's sample buttons and the incidents they belong to
    texts += [q for world in worlds for q in ask_view.samples(world, "zh")] + [w.title_zh for w in worlds]
    evidence = frozenset(w.rstrip(".:") for t in texts for w in _WORD.findall(t))
    ev = read_session(store, no_data).evaluation
    assert ev is not None and ev.verdict == "LOW_CONFID"
    ids["no_data_reason"] = render(ev.verdict_reasons[0], "zh")
    with _streamlit(home) as base:
        yield base, ids, evidence


def _text(pg) -> str:
    pg.get_by_role("heading").first.wait_for()
    pg.get_by_text("中文", exact=True).wait_for()  # the sidebar's language switch: the frame is drawn
    _settled(pg)
    return pg.evaluate(_TEXT_JS)


def test_every_page_in_chinese_has_no_english_word(zh_server: tuple[str, dict[str, str], frozenset[str]], page) -> None:  # noqa: F811
    base, ids, evidence = zh_server
    pg = page
    found: dict[str, list[str]] = {}
    walk = [
        ("ask", f"/?lang=zh&session={ids['no_data']}"),
        ("ask-live", "/?lang=zh"),
        ("sessions", "/sessions?lang=zh&sessions_reviewed=any&sessions_needs_person=false"),
        ("trace-reject", f"/trace?lang=zh&session={ids['rejected']}"),
        ("trace-no-data", f"/trace?lang=zh&session={ids['no_data']}"),
        ("trace-pass", f"/trace?lang=zh&session={ids['passed']}"),
        ("rules", "/rules?lang=zh"),
        ("eval", "/eval?lang=zh"),
    ]
    pg.set_viewport_size({"width": 1440, "height": 2400})
    texts: dict[str, str] = {}
    for name, path in walk:
        pg.goto(base + path)
        text = ""
        if name == "ask-live":  # asked here: the stage boxes' labels drawn as the session runs, then its answer
            sample = ask_view.samples(load_worlds(load_settings().incidents_dir)[0], "zh")[0]
            pg.get_by_role("button", name=sample).click()
            pg.get_by_text(tr("ask.confirmed", "zh")).first.wait_for()
            _settled(pg)
        if name == "sessions":  # the queue, then the charts in their tab
            pg.locator("table.wb-queue").wait_for()
            text = _text(pg)
            pg.get_by_role("tab", name=tr("sessions.charts_tab", "zh")).click()
            pg.locator("[data-testid=stVegaLiteChart]").first.wait_for()
        if name == "rules":  # a rule's inputs are drawn once its panel opens; then the preview and the history
            pg.locator("[data-testid=stExpander] summary", has_text="evidence.excerpt_similarity").click()
            pg.locator("[data-testid=stNumberInput]").first.wait_for()
            pg.get_by_role("button", name=tr("rules.preview", "zh")).click()
            _settled(pg)
            text = _text(pg)
            _shot(pg, "zh-rules-preview")
            pg.get_by_role("tab", name=tr("rules.history", "zh")).click()
            _settled(pg)
        if name == "eval":
            pg.locator("table.wb-eval").first.wait_for()
        texts[name] = text = text + _text(pg)
        assert "中文" in text and re.search(r"[\u4e00-\u9fff]{4}", text), f"{name} is not in Chinese"
        found[name] = sorted(set(english_words(text, evidence)))
        _shot(pg, f"zh-{name}")
    assert {name: words for name, words in found.items() if words} == {}, {n: w for n, w in found.items() if w}

    # What each page must say, in Chinese: the rule's name and its fields beside their keys, the
    # claims' checks, the fixtures' descriptions, and why the no-data session is LOW_CONFID.
    assert "引文相似度校验 (evidence.excerpt_similarity)" in texts["rules"] and "通过阈值 (passThreshold)" in texts["rules"]
    assert "未通过即低置信" in texts["rules"]
    assert tr("value.unsupported", "zh") in texts["trace-reject"] and "断言核验" in texts["trace-reject"]
    assert "引文改了一个数值" in texts["eval"]
    for name in ("ask", "trace-no-data"):
        assert "没有找到 ledger-service 的任何证据" in texts[name], name
    reason = ids["no_data_reason"]
    assert reason.startswith("没有找到 ledger-service 的任何证据") and reason in pg_text(pg, base, f"/?lang=zh&session={ids['no_data']}")

    # The REJECT session's engine messages (gatekeeper findings, verdict and filter reasons) in Chinese.
    rejected_reason = render(msg("policy.rule_failed", rule="evidence.digest_ref", impact="reject_on_fail"), "zh")
    assert "未通过即拒绝" in rejected_reason
    assert rejected_reason in pg_text(pg, base, f"/trace?lang=zh&session={ids['rejected']}")
    # ?lang=en switches back, and the URL keeps the code.
    pg.goto(base + f"/trace?lang=en&session={ids['no_data']}")
    pg.get_by_role("heading", name=tr("trace.title", "en")).wait_for()
    _settled(pg)
    assert "lang=en" in pg.url and "No evidence was found for ledger-service" in pg.inner_text("body")


def pg_text(pg, base: str, path: str) -> str:
    pg.goto(base + path)
    _text(pg)
    return pg.inner_text("body")


# The Ask page's stage boxes: their labels and captions, without icon ligatures.
_STAGES_JS = """() => [...document.querySelectorAll('[data-testid=stMain] [data-testid=stExpander] summary, '
  + '[data-testid=stMain] [data-testid=stCaptionContainer]')].map(e => {
    const c = e.cloneNode(true);
    c.querySelectorAll('[data-testid*=Icon]').forEach(i => i.remove());
    return c.textContent;
  }).join(' | ')"""


def test_the_stages_read_in_chinese_while_an_english_question_runs(
        zh_server: tuple[str, dict[str, str], frozenset[str]], page) -> None:  # noqa: F811
    """The stage boxes are the page's words, whatever language the question is in: the Collector's
    box read "ran 7 tool calls", its summary written in the question's language. Read at every
    state the browser shows while the session runs, then with the answer."""
    base, _, _ = zh_server
    question = ask_view.samples(load_worlds(load_settings().incidents_dir)[0], "en")[0]
    page.goto(base + "/?lang=zh")
    page.get_by_text("中文", exact=True).wait_for()
    _settled(page)
    page.get_by_role("textbox", name=tr("ask.question", "zh")).fill(question)
    page.get_by_role("button", name=tr("ask.submit", "zh"), exact=True).click()
    states: list[str] = []
    answered = page.get_by_text(tr("ask.confirmed", "zh"))
    while not answered.count():
        shown = page.evaluate(_STAGES_JS)
        if not states or shown != states[-1]:
            states.append(shown)
        page.wait_for_timeout(100)
    _settled(page)
    states.append(page.evaluate(_STAGES_JS))
    _shot(page, "zh-ask-english-question")
    assert tr("stage.collector", "zh") + " · " in states[-1], states[-1]
    assert {s: english_words(s, frozenset(_WORD.findall(question))) for s in states
            if english_words(s, frozenset(_WORD.findall(question)))} == {}
    # A slow model's streaming line, drawn while a stage's reply comes in.
    streaming = ask_view.progress_text(StreamProgress(stage="diagnosis", round=1, attempt=1, tokens=120,
                                                      tokens_per_s=4.5, elapsed_s=26.7, budget_s=180), "zh")
    assert english_words(streaming) == [] and "诊断" in streaming, streaming


def test_a_sample_asked_before_the_first_run_ends_keeps_chinese(tmp_path: Path, page) -> None:  # noqa: F811
    """A fresh server's first run goes on after the Ask page is drawn (it imports what the other
    pages need); a sample asked in that time turned the whole page English (pages/_ui/frame.py,
    LANG_SWITCH). The click goes out as soon as the button is there."""
    sample = ask_view.samples(load_worlds(load_settings().incidents_dir)[0], "zh")[0]
    with _streamlit(tmp_path) as base:
        page.goto(base + "/?lang=zh")
        page.get_by_role("button", name=sample).click()
        page.wait_for_url(re.compile(r"session=s-"))  # the answer is drawn, in whichever language
        _settled(page)
        nav = page.inner_text("[data-testid=stSidebarNav]")
        assert "lang=zh" in page.url and tr("nav.sessions", "zh") in nav and "Sessions" not in nav, (page.url, nav)
        page.get_by_text(tr("ask.confirmed", "zh")).first.wait_for()


def test_a_fresh_server_names_its_pages_in_chinese_from_the_first_paint_and_keeps_chinese_across_navigation(
        tmp_path: Path, page) -> None:  # noqa: F811
    """A pages/ folder once put a fresh server in Streamlit's file-per-page mode: its first paint
    listed the files (app, ask, eval ...) and a click on one opened that page in English (app.py)."""
    labels = [tr(f"nav.{name}", "zh") for name in ("ask", "sessions", "trace", "rules", "eval")]
    with _streamlit(tmp_path) as base:
        page.goto(base + "/?lang=zh")
        nav = page.locator("[data-testid=stSidebarNav]")
        nav.locator("a").first.wait_for()
        first_paint = nav.inner_text()  # at once: the first navigation the browser is sent
        _shot(page, "zh-nav-first-paint")
        assert [line for line in first_paint.split("\n") if line in labels] == labels, first_paint
        _settled(page)
        nav.get_by_role("link", name=tr("nav.rules", "zh")).click()
        page.get_by_role("heading", name=tr("rules.title", "zh")).wait_for()
        _settled(page)
        _shot(page, "zh-nav-clicked")
        assert "lang=zh" in page.url and "/rules" in page.url, page.url
        assert [line for line in nav.inner_text().split("\n") if line in labels] == labels
        page.goto("about:blank")
