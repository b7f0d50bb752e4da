"""Every page in Chinese: headless Debian Chromium walks Ask, Sessions, Trace,
Rules and Eval with ?lang=zh and finds no English sentence outside quoted evidence, code and
identifiers. Screenshots go to tests/screenshots/zh-*.png for a person to look at.

"An English sentence" here: a run of three or more Latin words, one of them a common English
function word ("the", "is", "not" ...), in the page text left after removing what is data, not
prose: code and pre blocks, evidence boxes (.wb-box), free text from a tool or a model (.wb-text),
form inputs, Streamlit's own chrome (its skip link, icon ligatures). A run that a stored tool
output holds verbatim is quoted evidence (a log line inside a claim). Rule ids, tool names and
field names are single tokens and never make such a run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_ui_browser import _settled, _shot, _store, _streamlit, page  # noqa: F401  (page is a fixture)

from pipeline.core.config import load_settings
from pipeline.core.messages import tr
from pipeline.eval.demo import demo_runs, run_demo
from pipeline.store.record import read_session

pytestmark = [pytest.mark.browser, pytest.mark.slow]

COMMON = frozenset(
    "the a an is are was were be been of to in on at for from with by as and or but not no nor this that these those "
    "it its has have had will would can cannot could should may might must than then there here what which who when "
    "where why how all any some only also yet so too very more most less into about after before without".split())
_RUN = re.compile(r"[A-Za-z]+(?:'[a-z]+)?(?:[ ,:;]+[A-Za-z]+(?:'[a-z]+)?){2,}")

# Page text without data: the DOM is cloned and data elements removed before reading it.
_PROSE_JS = """() => {
  const clone = document.body.cloneNode(true);
  clone.querySelectorAll('code, pre, script, style, noscript, textarea, input, .wb-box, .wb-text, .wb-question, '
    + '[data-testid=stDataFrame], [data-testid=stToast], [data-testid=stSkipToContent], '
    + '[data-testid=stIconMaterial]').forEach(e => e.remove());
  return clone.textContent;
}"""


# Words a person reads on a control but that no sentence check sees: button captions, input
# placeholders, expander headers, aria labels of the choices of a segmented control.
_CONTROLS_JS = """() => [
  ...[...document.querySelectorAll('button')].filter(b => !b.closest('[data-testid=stSidebarNav]'))
     .map(b => b.innerText.trim()),
  ...[...document.querySelectorAll('[placeholder]')].map(e => e.getAttribute('placeholder')),
  ...[...document.querySelectorAll('[data-testid=stExpander] summary')].map(s => s.innerText.trim()),
].filter(t => t)"""


def english_controls(texts: list[str], allowed: frozenset[str] = frozenset({"English"})) -> list[str]:
    """Control texts that hold a Latin word of 3+ letters and no Chinese: left untranslated.
    Icon ligatures and shortcut keys are shorter or upper case; ids (rule ids, impacts, versions)
    hold digits, dashes, dots or underscores."""
    out = []
    for text in texts:
        words = [w for w in re.findall(r"[A-Za-z_]{3,}", re.sub(r"\S*[\d_.-]\S*", " ", text))
                 if not w.isupper() and not w.startswith(("keyboard_", "arrow_", "expand_", "chevron_"))]
        if words and not re.search(r"[\u4e00-\u9fff]", text) and text not in allowed:
            out.append(text)
    return out


def english_sentences(text: str, evidence: str = "") -> list[str]:
    """Runs of 3+ Latin words holding a common English word and not quoted from `evidence` (the
    tool outputs shown): prose left untranslated."""
    return [m.group(0) for m in _RUN.finditer(text)
            if any(w.lower() in COMMON for w in re.split(r"[ ,:;]+", m.group(0))) and m.group(0) not in evidence]


def test_the_check_finds_an_english_reason_and_passes_identifiers():
    assert english_sentences("判定原因：c1 (root_cause) is contradicted by its evidence") == [
        "is contradicted by its evidence"]
    assert english_sentences("规则 evidence.excerpt_similarity 在 claims[0].evidence_bindings[0] 未通过；"
                             "query_logs #12 Evidence Workbench PASS LOW_CONFID") == []
    log = "ERROR Unhandled exception in CheckoutController.submit"
    assert english_sentences("日志记录：Unhandled exception in CheckoutController", log) == []


@pytest.fixture(scope="module")
def zh_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str, str]]:
    """(base URL, a PASS session, a REJECT session with gatekeeper errors and filtered claims,
    every tool output and runbook they cite)."""
    home: Path = tmp_path_factory.mktemp("zh-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WORKBENCH_HOME", str(home))
        mp.setenv("WORKBENCH_CONFIG", str(home / "no-config.yaml"))
        settings = load_settings()
        runs = demo_runs(settings, "zh")
        picked = [r for r in runs if r[2] is None][:1] + [r for r in runs if r[2] and r[2]["name"].startswith("07-")]
        passed, rejected = run_demo(settings, _store(home), runs=picked, language="zh")
    record = read_session(_store(home), rejected)
    assert record.verdict == "REJECT" and record.evaluation is not None
    assert record.evaluation.gatekeeper_result.errors and record.evaluation.composer_filtered
    store = _store(home)
    evidence = "\n".join(store.invocation(m["id"]).output for sid in (passed, rejected)
                         for m in store.invocation_meta(sid))
    with _streamlit(home) as base:
        yield base, passed, rejected, evidence


def _prose(pg) -> str:
    pg.get_by_role("heading").first.wait_for()
    pg.get_by_text("中文", exact=True).wait_for()  # the sidebar's language switch: the frame is drawn
    _settled(pg)
    return pg.evaluate(_PROSE_JS)


def test_every_page_in_chinese_has_no_english_sentence(zh_server: tuple[str, str, str, str], page) -> None:  # noqa: F811
    base, passed, rejected, evidence = zh_server
    pg = page
    found: dict[str, list[str]] = {}
    walk = [
        ("ask", f"/?lang=zh&session={passed}"),
        ("sessions", "/sessions?lang=zh&sessions_reviewed=any&sessions_needs_person=false"),
        ("trace-reject", f"/trace?lang=zh&session={rejected}"),
        ("rules", "/rules?lang=zh"),
        ("eval", "/eval?lang=zh"),
    ]
    pg.set_viewport_size({"width": 1440, "height": 2400})
    for name, path in walk:
        pg.goto(base + path)
        if name == "sessions":  # the queue, then the charts in their tab
            pg.locator("table.wb-queue").wait_for()
            text = _prose(pg)
            pg.get_by_role("tab", name=tr("sessions.charts_tab", "zh")).click()
            pg.locator("[data-testid=stVegaLiteChart]").first.wait_for()
        if name == "rules":  # a rule's inputs are drawn once its panel opens
            pg.locator("[data-testid=stExpander] summary", has_text="evidence.excerpt_similarity").click()
            pg.locator("[data-testid=stNumberInput]").first.wait_for()
        text = text + _prose(pg) if name == "sessions" else _prose(pg)
        assert "中文" in text and re.search(r"[\u4e00-\u9fff]{4}", text), f"{name} is not in Chinese"
        found[name] = english_sentences(text, evidence) + english_controls(pg.evaluate(_CONTROLS_JS))
        _shot(pg, f"zh-{name}")
    # The REJECT session's engine messages (gatekeeper findings, verdict and filter reasons) in Chinese.
    pg.goto(base + f"/trace?lang=zh&session={rejected}")
    _prose(pg)
    body = pg.inner_text("body")
    reason = tr("policy.rule_failed", "zh", rule="evidence.digest_ref", impact="reject_on_fail")
    assert reason in body and "证据绑定没有 digest_id" in body
    assert "lang=zh" in pg.url
    # ?lang=en switches back, and the URL keeps the code.
    pg.goto(base + f"/trace?lang=en&session={rejected}")
    pg.get_by_role("heading", name=tr("trace.title", "en")).wait_for()
    _settled(pg)
    assert "lang=en" in pg.url and tr("policy.rule_failed", "en", rule="evidence.digest_ref", impact="\x00").split(" (")[0] in pg.inner_text("body")
    assert {name: hits for name, hits in found.items() if hits} == {}
