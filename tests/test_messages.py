"""The catalogues (pipeline/core/messages.py, pipeline/core/locale/*/LC_MESSAGES/workbench.po): Babel's
extractor lists every id the code uses, both catalogues hold each in both languages, and a message is
raised with exactly the parameters its template names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from babel.messages.frontend import CommandLineInterface
from babel.messages.pofile import read_po

from pipeline.core.contracts import GatekeeperError, RoundAudit
from pipeline.core.messages import LANGS, LOCALE_DIR, Message, catalogue, msg, placeholders, render, tr
from pipeline.text.primitives import detect_language

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def extracted(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The ids `pybabel extract` finds with the repository's babel.cfg (the command docs/i18n.md gives)."""
    pot = tmp_path_factory.mktemp("pot") / "workbench.pot"
    CommandLineInterface().run(["pybabel", "-q", "extract", "-F", str(ROOT / "babel.cfg"), "--ignore-dirs=.*",
                                "-o", str(pot), str(ROOT)])
    with pot.open("rb") as f:
        return {str(m.id) for m in read_po(f) if m.id}


def _po(lang: str):
    with (LOCALE_DIR / lang / "LC_MESSAGES" / "workbench.po").open("rb") as f:
        return read_po(f, locale=lang)


def test_every_extracted_id_is_in_both_catalogues(extracted: set[str]):
    ids = {i for i in extracted if not i.endswith((".", "_"))}  # a literal ending so is a family's prefix
    assert len(ids) > 150  # engine messages, answer framing, page labels
    for lang in LANGS:
        assert sorted(ids - set(catalogue(lang))) == [], lang


def test_every_catalogued_id_is_used_or_says_why_not(extracted: set[str]):
    """An id the extraction does not list belongs to a family the code reads by prefix, or carries
    a "not in the code:" comment (a message older sessions stored, a twin raised by code change)."""
    families = tuple(i for i in extracted if i.endswith((".", "_")))
    for lang in LANGS:
        unused = [m.id for m in _po(lang) if m.id and m.id not in extracted and not str(m.id).startswith(families)
                  and not any(c.startswith("not in the code:") for c in m.auto_comments)]
        assert unused == [], lang
    en, zh = _po("en"), _po("zh")
    assert [m.id for m in en if m.id] == [m.id for m in zh if m.id]  # the same ids, in the same order
    assert not [m.id for m in zh if m.fuzzy and m.id]


@pytest.mark.parametrize("code", sorted(catalogue("en")))
def test_every_id_has_both_languages_with_the_same_placeholders(code: str):
    en, zh = catalogue("en")[code], catalogue("zh").get(code, "")
    assert en.strip(" ") and zh.strip(" ") and placeholders(en) == placeholders(zh)
    # A zh text is Chinese around its parameters, punctuation alone, or one name kept as written
    # (Composer, verdictImpact): never an English phrase left in place.
    bare = zh.format(**dict.fromkeys(placeholders(zh), 0)).strip()
    assert detect_language(bare) == "zh" or not re.search(r"[A-Za-z]{3,}", bare) or re.fullmatch(r"\w+", bare), bare


def test_a_message_takes_exactly_the_parameters_its_template_names():
    assert msg("gk.field_missing", name="claims").params == {"name": "claims"}
    with pytest.raises(TypeError, match="name"):
        msg("gk.field_missing")
    with pytest.raises(TypeError, match="extra"):
        msg("gk.field_missing", name="claims", extra=1)
    with pytest.raises(KeyError):
        msg("gk.no_such_code")


def test_digest_reference_problems_are_the_claim_ones_naming_the_digest():
    refs = [c for c in catalogue("en") if c.startswith("gk.ref.")]
    assert len(refs) == 5
    for lang in LANGS:
        for code in refs:
            twin = catalogue(lang)[code.replace("gk.ref.", "gk.digest_ref.")]
            assert placeholders(twin) == placeholders(catalogue(lang)[code]) | {"digest"}
            assert twin.endswith(catalogue(lang)[code])


def test_render_keeps_quoted_evidence_verbatim_and_joins_parts_in_the_readers_punctuation():
    first = {"score": 0.123, "bound_name": "warnThreshold", "bound": 0.3, "invocation": 394}
    then = {"count": 1, "tolerated": 0, "words": '"线程数"'}
    m = msg("gk.similarity_invocation", **first)
    m.then.append(msg("gk.invented_words_also", **then))
    for lang, join in (("en", "; "), ("zh", "；")):
        shown = render(m, lang)
        assert shown == tr("gk.similarity_invocation", lang, **first) + join + tr("gk.invented_words_also", lang, **then)
        assert "0.12" in shown and "0.123" not in shown and shown.endswith('"线程数"')
    # A code this version lacks (a newer writer) shows as code and parameters, not an exception.
    assert render(Message(code="gk.future", params={"x": 1}), "zh") == "gk.future {'x': 1}"


def test_stored_records_without_codes_still_validate():
    old = GatekeeperError.model_validate({"rule_id": "r", "target": "claims[0]", "message": "text"})
    assert old.msg is None
    ev = RoundAudit.model_validate({
        "verdict": "PASS", "groundedness_score": 1.0, "executor_output_parse_status": {"status": "valid"},
        "gatekeeper_result": {}, "verdict_guard_reasons": ["older reason"]})
    assert ev.verdict_reasons == []


def test_workbench_show_speaks_the_readers_language(settings, store, capsys: pytest.CaptureFixture[str]):
    """A REJECT session of a misbehaving model (fixture 07): its gatekeeper findings, verdict
    reasons and filter reasons come out of `workbench show --lang zh` in Chinese, with the rule
    ids and quoted evidence verbatim, and in English with --lang en."""
    from pipeline.eval.demo import demo_runs, run_demo
    from pipeline.frontends.cli import main
    from pipeline.store.record import read_session

    run = [r for r in demo_runs(settings, "zh") if r[2] and r[2]["name"].startswith("07-")]
    (sid,) = run_demo(settings, store, runs=run, language="zh")
    ev = read_session(store, sid).evaluation
    assert ev is not None and ev.verdict == "REJECT"
    assert ev.verdict_reasons and all(e.msg for e in ev.gatekeeper_result.errors)
    assert all(f.msg for f in ev.composer_filtered) and all(c.msg for c in ev.question_coverage)
    # The stored English text is the en rendering, so older readers see the same sentences.
    assert ev.verdict_guard_reasons == [render(m, "en") for m in ev.verdict_reasons]

    assert main(["show", sid, "--lang", "zh"]) == 0
    zh = capsys.readouterr().out
    assert main(["show", sid, "--lang", "en"]) == 0
    en = capsys.readouterr().out
    failed = msg("policy.rule_failed", rule="evidence.digest_ref", impact="reject_on_fail")
    assert render(failed, "zh") in zh and render(failed, "en") in en and render(failed, "en") not in zh
    assert render(msg("gk.no_digest_id"), "zh") in zh
    for m in ev.verdict_reasons:
        assert render(m, "zh") in zh and render(m, "en") in en
    for e in ev.gatekeeper_result.errors:
        assert render(e.msg, "zh") in zh and e.message in en  # type: ignore[arg-type]


def test_every_failure_signature_speaks_both_languages():
    """The offline engine's signatures read their hypothesis, needed evidence and action by category."""
    from pipeline.llm.offline.signatures import SIGNATURES

    for lang in LANGS:
        for sig in SIGNATURES:
            ids = [f"offline.signature.{sig.category}.{part}" for part in
                   ("hypothesis", "action", *(f"needed.{i}" for i in range(sig.needed)))]
            assert [placeholders(catalogue(lang)[i]) <= {"service"} for i in ids] == [True] * len(ids)
        assert len([i for i in catalogue(lang) if i.startswith("offline.signature.")]) == sum(
            2 + sig.needed for sig in SIGNATURES)


def test_a_verdict_reason_reads_for_its_reader_with_the_rule_id_as_a_detail(settings, store):
    """A real session asked about a service no backend holds data for: its LOW_CONFID says first,
    in both languages, that no evidence was found for that service and what to do, naming the
    calls that came back empty; the failed schema rule and the coverage status stay details (ids
    in brackets), and nothing reads like "Gatekeeper status is fail". A rule id the catalogue does
    not know (a rule added as data) still reads as a sentence."""
    from pipeline.runs.session import run_session
    from pipeline.store.record import read_session

    for question, lang, lead in (
            ("Is the ledger-service leaking memory since 09:00?", "en", "No evidence was found for ledger-service: "),
            ("ledger-service 从 09:00 起是不是内存泄漏？", "zh", "没有找到 ledger-service 的任何证据：")):
        ev = read_session(store, run_session(question, settings=settings, store=store).session_id).evaluation
        assert ev is not None and ev.verdict == "LOW_CONFID" and ev.gatekeeper_result.failed_rules == ["schema.executor_v2"]
        shown = [render(m, lang) for m in ev.verdict_reasons]
        assert shown[0].startswith(lead), shown
        assert ("widen the time window" in shown[0]) if lang == "en" else ("放宽时间窗口" in shown[0])
        assert re.search(r"#\d+", shown[0]) and ("(coverage no_data)" in shown[0] or "（覆盖状态 无数据）" in shown[0])
        schema = next(t for t in shown if "schema.executor_v2" in t)
        assert not schema.startswith(("No evidence", "没有找到"))  # the rule says what it checks, the gap says what is missing
        assert not any("status is" in t or "yes_no" in t for t in shown), shown
    custom = render(msg("policy.rule_failed", rule="team.custom_rule", impact="warn_only"), "zh")
    assert custom.startswith("一项自动证据检查没有通过") and "team.custom_rule" in custom
