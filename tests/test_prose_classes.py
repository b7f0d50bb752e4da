"""A foreign agent's prose answer, judged end to end per class of fault (faithful, number or unit
changed, service swapped through its speaker, guess as fact, hedged guess, quoted record), over a
small world of its own: these sentences are not the foreign-answers benchmark's, which stays an
independent yardstick (benchmarks/foreign_answers.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from helpers import VERIFIED, judged_prose, log_output

from pipeline.core.config import Settings
from pipeline.text.primitives import find_entities
from pipeline.text.speaker import speaker, writer

LOGS = [
    ("2026-03-02T08:00:01Z", "ledger-service", "ERROR", "posting batch 77 failed: write timeout after 1500ms"),
    ("2026-03-02T08:00:02Z", "api-gateway", "ERROR",
     "upstream ledger-service returned 503 on POST /api/ledger/post after 1502ms"),
    ("2026-03-02T08:00:03Z", "api-gateway", "ERROR",
     "upstream ledger-service returned 503 on GET /api/ledger/balance after 1499ms"),
    ("2026-03-02T08:00:05Z", "ledger-service", "WARN", "G1 Old gc pause 2.4s, heap after gc 88%"),
    ("2026-03-02T08:00:09Z", "ledger-service", "ERROR",
     "JVM shutting down due to fatal disk error, pod will be restarted"),
    ("2026-03-02T08:00:12Z", "ledger-service", "WARN", "replica lag usually under 1s, now 12.5s"),
    ("2026-03-02T08:00:20Z", "search-service", "WARN", "slow request within SLO: GET /api/search took 900ms"),
    ("2026-03-02T08:00:40Z", "ledger-db", "WARN", "slow query log: Query_time=6.82 Rows_examined=90211"),
    ("2026-03-02T08:00:31Z", "ledger-service", "ERROR",
     "Unhandled exception in PostingJob.run\njava.lang.IllegalStateException: ledger L9 is closed\n"
     "\tat com.acme.ledger.Poster.post(Poster.java:55)"),
    # Records of one kind, with their host: what a count or a list of values is held to.
    *[(f"2026-03-02T08:0{t}Z", "billing-service", "WARN", "invoice export skipped: lock held by another worker", host)
      for t, host in (("1:10", "billing-5f7c-1"), ("1:40", "billing-5f7c-1"), ("2:10", "billing-5f7c-2"),
                      ("2:40", "billing-5f7c-1"))],
    *[(f"2026-03-02T08:0{t}Z", "billing-service", "ERROR", f"reconcile job_id={job} failed: ledger snapshot stale",
       "billing-5f7c-2") for t, job in (("3:05", 4411), ("3:35", 4418), ("4:05", 4425))],
]
ALERTS = [
    {"alertname": "LedgerDiskFull", "service": "ledger-service", "severity": "critical", "status": "firing",
     "startsAt": "2026-03-02T07:58:00Z", "endsAt": None, "description": "磁盘使用率: 91.5%, 最近10分钟次数: 3",
     "labels": {"alertname": "LedgerDiskFull", "service": "ledger-service", "severity": "critical"}},
    {"alertname": "DeploymentFinished", "service": "ledger-service", "severity": "info", "status": "resolved",
     "startsAt": "2026-03-02T07:40:00Z", "endsAt": None, "description": "发布完成: ledger-service, 版本: v3.1.0, 金丝雀: 跳过",
     "labels": {"alertname": "DeploymentFinished", "service": "ledger-service", "severity": "info"}},
]


@dataclass
class Judged:
    claims: list[dict[str, Any]]  # the statements read as claims, as the prose reader wrote them
    checks: list[str]
    hypotheses: list[dict[str, Any]]
    hypothesis_checks: list[str]
    missing_info: list[str]
    failed_rules: list[str]
    recommended_actions: list[str]

    @property
    def flagged(self) -> bool:
        """As the benchmark counts it: a claim not verified, a rule failed, or a guess stated as fact."""
        return (any(c not in VERIFIED for c in self.checks) or bool(self.failed_rules)
                or "overstated_as_fact" in self.hypothesis_checks)


@pytest.fixture
def judge(settings: Settings) -> Any:
    judged = judged_prose(settings, "Why do ledger posts fail?",
                          [("query_logs", log_output(LOGS)),
                           ("query_metrics", json.dumps({"alerts": ALERTS, "total": len(ALERTS)}, ensure_ascii=False))])

    def run(answer: str) -> Judged:
        bundle, ev = judged(answer)
        read = json.loads(bundle.executor_raw_output)
        return Judged(read["claims"], [c.verification for c in ev.verifier_output.claim_checks], read["hypotheses"],
                      [h.verification for h in ev.verifier_output.hypothesis_checks], read["missing_info"],
                      list(ev.gatekeeper_result.failed_rules), [a["action_text"] for a in read["recommended_actions"]])

    return run


# --- faithful ----------------------------------------------------------------------------------


def test_a_paraphrase_in_other_units_is_kept(judge: Any) -> None:
    assert not judge("ledger-service failed to post batch 77 after a write timeout of 1.5 s.").flagged


def test_a_speaker_who_wrote_the_record_is_kept(judge: Any) -> None:
    assert not judge("api-gateway logged that upstream ledger-service returned 503 on POST /api/ledger/post.").flagged


def test_an_english_statement_binds_to_a_chinese_record_through_synonyms(judge: Any) -> None:
    judged = judge("ledger-service v3.1.0 was deployed with the canary skipped.")
    assert judged.checks == ["direct_observation"]
    assert "DeploymentFinished" in judged.claims[0]["evidence_bindings"][0]["evidence_excerpt"]


def test_a_markdown_answer_is_read_by_its_statements_not_its_labels(judge: Any) -> None:
    """Labels and headings ("**TL;DR**", "Short answer:", "**Timeline (UTC)**") are layout; a
    timeline's "08:00:01:" is a clock time; "503s" are responses; a range over records holds."""
    answer = ("**TL;DR** ledger-service cannot post batch 77.\n"
              "**Timeline (UTC)**\n"
              "- 08:00:01: ledger-service posting batch 77 failed with a write timeout after 1500ms\n"
              "- 08:00:02: api-gateway got ledger-service 503s on POST /api/ledger/post\n"
              "Short answer: G1 Old gc pauses of about 2-3 s on ledger-service.")
    judged = judge(answer)
    assert not judged.flagged, list(zip([c["claim_text"] for c in judged.claims], judged.checks, strict=False))


def test_a_range_no_record_falls_in_is_caught(judge: Any) -> None:
    assert judge("ledger-service G1 Old gc pauses of 5-8 s.").flagged
    assert judge("ledger-service failed to post batch 77 after a write timeout of 1-1.2 s.").flagged


def test_each_clause_of_a_quoting_sentence_meets_its_own_record(judge: Any) -> None:
    """A quote binds only the clause holding it: the clause after it names another writer and
    meets that writer's record, faithful or swapped."""
    said = "ledger-service logged `posting batch 77 failed`, and api-gateway returned 503 on POST /api/ledger/post"
    judged = judge(said + ".")
    assert not judged.flagged, list(zip([c["claim_text"] for c in judged.claims], judged.checks, strict=False))
    assert len(judged.claims) == 2
    assert judge(said.replace("api-gateway", "search-service") + ".").flagged


def test_an_interval_is_held_to_the_gap_between_two_records(judge: Any) -> None:
    """"about 1 s after" is reckoned from 08:00:01 and 08:00:02, not read off a record: set against
    the 1502ms the line holds, it conflicted. One no gap bears out is not kept."""
    said = "api-gateway returned 503 on POST /api/ledger/post at 08:00:02, about {} s after posting batch 77 failed at 08:00:01."
    judged = judge(said.format("1"))
    assert not judged.flagged, list(zip([c["claim_text"] for c in judged.claims], judged.checks, strict=False))
    assert judge(said.format("45")).flagged


def test_a_clause_mark_inside_a_quote_splits_nothing(judge: Any) -> None:
    """The quote's ":" is the record's: the sentence still splits at its own comma, so the fact after
    the quote is met by its own record (bound to the quote's alone, 91.5% was missing)."""
    said = "ledger-service logged `posting batch 77 failed: write timeout after 1500ms`, and LedgerDiskFull reads {}% disk."
    judged = judge(said.format("91.5"))
    assert len(judged.claims) == 2 and not judged.flagged, list(zip([c["claim_text"] for c in judged.claims],
                                                                      judged.checks, strict=False))
    assert judge(said.format("93.5")).flagged


def test_the_writer_of_a_quoted_later_line_is_its_records(judge: Any) -> None:
    """A stack's later line names no service; the record's first line does, and a quote of the later
    line is set against that writer."""
    quote = "`java.lang.IllegalStateException: ledger L9 is closed`"
    assert not judge(f"ledger-service threw {quote}.").flagged
    assert judge(f"search-service threw {quote}.").flagged


def test_sizes_compare_across_units_and_a_status_plural_is_no_duration() -> None:
    assert {(e.kind, e.value) for e in find_entities("heap 97% of 4 GB")} == {("percentage", "97"), ("quantity", "4096mb")}
    assert [(e.kind, e.value) for e in find_entities("maxmemory=4096MB")] == [("quantity", "4096mb")]
    assert [(e.kind, e.value) for e in find_entities("order-service 500s at the gateway")][-1] == ("http_status", "500")


# --- number or unit changed --------------------------------------------------------------------


def test_a_changed_number_is_caught(judge: Any) -> None:
    assert "contradicted" in judge("ledger-service failed to post batch 77 after a write timeout of 2500ms.").checks


def test_a_changed_unit_is_caught(judge: Any) -> None:
    assert "contradicted" in judge("ledger-service failed to post batch 77 after a write timeout of 1500 s.").checks


def test_a_number_with_its_unit_is_one_quantity_not_an_id() -> None:
    assert [(e.kind, e.value) for e in find_entities("结算请求 2 秒超时")] == [("quantity", "2s")]
    assert [(e.kind, e.value) for e in find_entities("请求号: 2 失败")] == [("identifier", "2")]


def test_a_count_in_a_clause_too_short_to_stand_alone_is_still_judged(judge: Any) -> None:
    assert judge("LedgerDiskFull 告警 91.5%，最近 10 分钟 4 次。").flagged
    assert not judge("LedgerDiskFull 告警 91.5%，最近 10 分钟 3 次。").flagged


# --- counts and lists over many records --------------------------------------------------------


@pytest.mark.parametrize(("said", "kept"), [
    ("billing-service logged `invoice export skipped: lock held by another worker` 4 times.", True),
    ("billing-service logged `invoice export skipped: lock held by another worker` 5 times.", False),
    ("billing-service logged four `invoice export skipped: lock held by another worker` warnings.", True),
    ("billing-service logged six `invoice export skipped: lock held by another worker` warnings.", False),
    ("`invoice export skipped: lock held by another worker` 共 4 条。", True),
    ("`invoice export skipped: lock held by another worker` 共 7 条。", False),
])
def test_a_count_of_records_is_held_to_how_many_records_hold_the_quote(judge: Any, said: str, kept: bool) -> None:
    """No one record holds "4": the count is an aggregate, true when that many records hold the quote."""
    judged = judge(said)
    assert judged.flagged != kept, list(zip([c["claim_text"] for c in judged.claims], judged.checks, strict=False))


def test_a_count_of_a_recorded_kind_and_its_shares_per_host(judge: Any) -> None:
    """Unquoted, the count is of the records of the bound record's shape (the same words at other
    times, from other hosts), and a number after a host is that host's share."""
    said = "billing-service skipped the invoice export {n} times (lock held by another worker), on billing-5f7c-1 ({a})"
    assert not judge(said.format(n=4, a=3) + ".").flagged
    assert judge(said.format(n=4, a=2) + ".").flagged
    assert judge(said.format(n=9, a=3) + ".").flagged


def test_values_listed_from_several_records_of_one_kind(judge: Any) -> None:
    """Each id or time of a list is in a record like the bound one, though no one record holds them all;
    a span's end written as a clause of its own is the span's."""
    assert not judge("Reconcile jobs 4411, 4418 and 4425 failed on a stale ledger snapshot.").flagged
    assert judge("Reconcile jobs 4411, 4418 and 4426 failed on a stale ledger snapshot.").flagged
    assert not judge("billing-service skipped the invoice export (lock held by another worker) at 08:01:10, "
                     "08:01:40 and 08:02:40.").flagged
    assert judge("billing-service skipped the invoice export (lock held by another worker) at 08:01:10, "
                 "08:01:40 and 08:05:40.").flagged
    assert not judge("Reconcile jobs failed on a stale ledger snapshot between 08:03:05 and 08:04:05 UTC.").flagged


# --- service swapped through the speaker -------------------------------------------------------


def test_a_record_retold_in_another_services_voice_is_contradicted(judge: Any) -> None:
    judged = judge("ledger-service logged that upstream api-gateway returned 503 on POST /api/ledger/post after 1502ms.")
    assert judged.checks == ["contradicted"]


def test_a_chinese_speaker_swap_is_contradicted(judge: Any) -> None:
    assert judge("search-service 日志显示 posting batch 77 failed: write timeout after 1500ms。").checks == ["contradicted"]


def test_speaker_and_writer_are_read_from_their_own_places() -> None:
    assert speaker("cart-service's log shows a timeout from pricing-service") == "cart-service"
    assert speaker('the gateway quoted "cart-service logged a retry" verbatim') is None
    assert speaker("pricing-service timed out") is None
    assert speaker("pricing-service 抛出 `NullPointerException`") == "pricing-service"
    assert speaker("checkout-service threw a NullPointerException") == "checkout-service"
    assert writer("2026-03-02T08:00:02Z api-gateway ERROR upstream cart-service error: 502") == "api-gateway"
    assert writer("2026-03-02T08:00:02Z ERROR cart-service retry 2/3") == "cart-service"
    assert writer("alertname=X service=cart-service severity=warning X cart-service p99 2s") == "cart-service"
    assert writer("upstream cart-service error: 502 after 1s") is None


# --- guess as fact and hedged guess ------------------------------------------------------------


def test_a_causative_link_no_record_states_is_caught(judge: Any) -> None:
    assert judge("The 2.4s gc pauses make ledger-service miss its 1500ms write deadline.").checks == ["overstated"]
    assert judge("The 503 errors on POST /api/ledger/post were triggered by the 2.4s gc pause.").checks == ["overstated"]


def test_the_same_link_hedged_is_a_hypothesis_not_a_failed_answer(judge: Any) -> None:
    judged = judge("The 2.4s gc pauses probably make ledger-service miss its 1500ms write deadline.")
    assert (judged.claims, judged.failed_rules) == ([], [])
    assert judged.hypothesis_checks and "overstated_as_fact" not in judged.hypothesis_checks
    assert not judged.flagged


def test_a_hedged_sentence_keeps_its_fact_as_a_claim_and_its_gap_as_missing_info(judge: Any) -> None:
    judged = judge("ledger-service paused 2.4s in gc, which plausibly explains the write timeout, "
                   "though no record ties the two together.")
    assert [c["claim_text"] for c in judged.claims] == ["ledger-service paused 2.4s in gc"]
    assert judged.hypotheses[0]["basis"] == "ledger-service paused 2.4s in gc"
    assert judged.missing_info == ["though no record ties the two together."]
    assert not judged.flagged
    # The fact part is judged like any claim: a changed number in it is still caught.
    assert judge("ledger-service paused 3.4s in gc, which plausibly explains the write timeout.").flagged


# --- quoted records ----------------------------------------------------------------------------


def test_a_quoted_record_saying_due_to_states_no_cause_of_the_writer(judge: Any) -> None:
    judged = judge('ledger-service wrote "JVM shutting down due to fatal disk error, pod will be restarted".')
    assert judged.claims[0]["claim_type"] == "observation"
    assert not judged.flagged


def test_a_speculative_word_inside_a_quoted_record_is_not_the_writers(judge: Any) -> None:
    assert not judge('ledger-service warned "replica lag usually under 1s, now 12.5s".').flagged
    assert "claim.hallucination_phrases" in judge("Replica lag on ledger-service is usually 12.5s.").failed_rules


def test_a_sentence_admitting_a_gap_is_missing_info_not_a_claim(judge: Any) -> None:
    judged = judge("Batch 77 failed on a 1500ms write timeout. No record shows why the disk filled.")
    assert judged.missing_info == ["No record shows why the disk filled."]
    assert [c["claim_text"] for c in judged.claims] == ["Batch 77 failed on a 1500ms write timeout"]
    assert not judged.flagged


@pytest.mark.parametrize("gap", [
    "What filled the disk isn't visible in the error logs.",
    "Which job writes it is not in the WARN/ERROR lines.",
    "The logs don't say.",
    "日志里看不出是谁写满的。",
])
def test_gaps_in_other_words_are_missing_info(judge: Any, gap: str) -> None:
    judged = judge(f"Batch 77 failed on a 1500ms write timeout. {gap}")
    assert [m.rstrip("。") for m in judged.missing_info] == [gap.rstrip("。")] and not judged.flagged


def test_a_heading_and_a_timelines_arrows_are_layout(judge: Any) -> None:
    """"### Findings" states nothing; "08:00:01 X → 08:00:02 Y" is two events, each met by its own
    record, where read whole the quote of the second was set against the first's writer."""
    judged = judge("### Findings\n08:00:01 ledger-service posting batch 77 failed → 08:00:02 api-gateway logs "
                   "`returned 503 on POST /api/ledger/post`")
    assert len(judged.claims) == 2 and not judged.flagged, list(zip([c["claim_text"] for c in judged.claims],
                                                                      judged.checks, strict=False))


def test_a_clause_naming_only_a_pod_is_judged_with_the_fact_it_places(judge: Any) -> None:
    """The pod of "..., fires on pod X" is the alert's: judged apart, "fires on pod X" met any line X
    wrote, and a swapped pod passed."""
    judged = judge("ledger-service's LedgerDiskFull alert (91.5% disk) fires on pod ledger-7c9d-4.")
    assert len(judged.claims) == 1 and judged.claims[0]["claim_text"].endswith("ledger-7c9d-4.")


@pytest.mark.parametrize("guess", ["G1 Old gc 暂停 2.4s，这就是 LedgerDiskFull 告警触发的原因。",
                                   "写超时 1500ms 是被 G1 Old gc 暂停 2.4s 拖慢的。"])
def test_a_link_no_record_states_in_chinese_is_caught(judge: Any, guess: str) -> None:
    assert judge(guess).flagged


def test_a_link_that_seems_is_a_hypothesis(judge: Any) -> None:
    judged = judge("The 2.4s gc pause seems to be what makes batch 77 time out.")
    assert judged.hypotheses and not judged.flagged


def test_a_cause_the_record_states_in_its_own_failed_form_is_kept(judge: Any) -> None:
    judged = judge("Batch 77 failed to post because of a 1500ms write timeout.")
    assert [c["claim_type"] for c in judged.claims] == ["root_cause"]
    assert not judged.flagged


@pytest.mark.parametrize("said", ["Noise check: LedgerDiskFull at 91.5% disk.", "顺带排查：LedgerDiskFull 磁盘 91.5%。"])
def test_a_short_label_of_the_writers_own_is_layout(judge: Any, said: str) -> None:
    """The label's words are not the statement's: left in, they thinned its overlap with the record."""
    judged = judge(said)
    assert [c["claim_text"][:14] for c in judged.claims] == ["LedgerDiskFull"]
    assert judged.checks == ["direct_observation"]


def test_a_label_naming_a_service_is_the_subject_not_layout(judge: Any) -> None:
    assert not judge("ledger-service: G1 Old gc pause 2.4s.").flagged
    assert judge("search-service: G1 Old gc pause 2.4s.").flagged


def test_sibling_instances_written_short_are_the_named_instances(judge: Any) -> None:
    """"billing-5f7c-1 at 08:01:10, -2 at 08:02:10" names billing-5f7c-2; "-3" names a pod no record has."""
    said = "invoice export skipped on billing-5f7c-1 at 08:01:10, -{} at 08:02:10."
    judged = judge(said.format(2))
    assert not judged.flagged, list(zip([c["claim_text"] for c in judged.claims], judged.checks, strict=False))
    assert any("billing-5f7c-2" in c["claim_text"] for c in judged.claims)
    assert judge(said.format(3)).flagged
    assert not judge("billing-5f7c-1/2 both logged invoice export skipped.").flagged


def test_a_clause_dating_the_fact_before_it_is_judged_with_it(judge: Any) -> None:
    """"the first at 08:01:10" and "about 1 s after ..." place the fact before them; apart, neither
    shares a word with a record. An interval no gap bears out is still caught."""
    judged = judge("billing-service logged 4 `invoice export skipped` warnings, the first at 08:01:10.")
    assert not judged.flagged, list(zip([c["claim_text"] for c in judged.claims], judged.checks, strict=False))
    said = "api-gateway returned 503 on POST /api/ledger/post at 08:00:02, about {} s after ledger-service's write timeout."
    assert not judge(said.format(1)).flagged
    assert judge(said.format(600)).flagged


def test_a_parenthesis_bears_out_the_summary_before_it(judge: Any) -> None:
    judged = judge("导出被跳过是两台 pod 都有（billing-5f7c-1/2 都报了 invoice export skipped）。")
    assert not judged.flagged, list(zip([c["claim_text"] for c in judged.claims], judged.checks, strict=False))


def test_a_judgement_by_appearance_is_a_hypothesis(judge: Any) -> None:
    judged = judge("Batch 77 failed on a 1500ms write timeout. The slow search request looks unrelated.")
    assert judged.hypotheses and not judged.flagged


def test_each_time_a_statement_names_is_met_by_a_record_at_that_time(judge: Any) -> None:
    """"... at 08:03 and again at 08:04" cites a record of each minute: a value said at the second
    time is set against its own record, not against the first's."""
    judged = judge("billing-service reconcile failed with a stale ledger snapshot at 08:03, and again at 08:04.")
    bound = [b["evidence_excerpt"] for c in judged.claims for b in c["evidence_bindings"]]
    assert any("08:03:" in b for b in bound) and any("08:04:" in b for b in bound), bound
    assert not judged.flagged


def test_a_full_stop_after_a_capital_or_a_figure_ends_the_sentence(judge: Any) -> None:
    judged = judge("G1 Old gc pause 2.4s at 08:00:05 UTC. LedgerDiskFull reports 91.5% disk.")
    assert len(judged.claims) == 2 and not judged.flagged


def test_a_number_before_a_quote_counts_its_lines(judge: Any) -> None:
    said = 'billing-service wrote {} "invoice export skipped: lock held by another worker".'
    assert not judge(said.format(4)).flagged
    assert judge(said.format(6)).flagged


@pytest.mark.parametrize(("share", "kept"), [("75%", True), ("约 75%", True), ("60%", False)])
def test_an_instances_share_of_a_count_is_reckoned_from_the_tally(judge: Any, share: str, kept: bool) -> None:
    judged = judge(f"invoice export skipped 共 4 条：billing-5f7c-1 3 条，占 {share}，billing-5f7c-2 1 条。")
    assert judged.flagged is not kept, list(zip([c["claim_text"] for c in judged.claims], judged.checks, strict=False))


def test_a_key_value_list_of_an_alert_is_judged_field_by_field(judge: Any) -> None:
    judged = judge("alert: LedgerDiskFull\nservice: ledger-service\nseverity: critical\n描述: 磁盘使用率 91.5%")
    assert not judged.flagged, list(zip([c["claim_text"] for c in judged.claims], judged.checks, strict=False))


def test_a_clause_saying_everywhere_places_the_fact_before_it(judge: Any) -> None:
    judged = judge("invoice export skipped at 08:01:10 with a lock held by another worker, from all the billing pods.")
    assert not judged.flagged, list(zip([c["claim_text"] for c in judged.claims], judged.checks, strict=False))


def test_a_figure_without_a_unit_takes_the_claims_unit(judge: Any) -> None:
    """"Query_time=6.82" is 6.82 s to the writer who says so; another figure is still caught."""
    assert not judge("ledger-db 慢查询 Query_time 6.82 秒，扫描 90211 行。").flagged
    assert judge("ledger-db 慢查询 Query_time 9.82 秒，扫描 90211 行。").flagged


def test_a_range_over_times_without_a_unit_reads_them_in_its_own(judge: Any) -> None:
    assert not judge("ledger-db 慢查询 Query_time 6-7 秒。").flagged
    assert judge("ledger-db 慢查询 Query_time 8-9 秒。").flagged


def test_each_with_a_duration_may_say_how_long_each_took(judge: Any) -> None:
    assert not judge("ledger-service posting failed with write timeouts, each ~1.5 s.").flagged


def test_a_dotted_names_tail_finds_the_stack_line_that_holds_it(judge: Any) -> None:
    judged = judge("PostingJob 的异常是在 Poster.post 里抛的。")
    assert "Poster.post" in judged.claims[0]["evidence_bindings"][0]["evidence_excerpt"] and not judged.flagged


def test_a_quoted_question_and_a_chinese_question_state_nothing(judge: Any) -> None:
    judged = judge("> 是 search-service 写的 posting batch 77 failed 吗\n不是，是 ledger-service：posting batch 77 failed。")
    assert len(judged.claims) == 1 and "search-service" not in judged.claims[0]["claim_text"] and not judged.flagged


def test_a_markdown_tables_row_is_one_statement_under_its_header(judge: Any) -> None:
    """The header and the rule are layout; a row's time and pod are one event's, so a swapped pod is
    set against the record of that time."""
    table = "| time | pod | event |\n|---|---|---|\n| 08:04:05 | {} | reconcile job_id=4425 failed |"
    judged = judge(table.format("billing-5f7c-2"))
    assert len(judged.claims) == 1 and not judged.flagged, judged.claims
    assert judge(table.format("billing-5f7c-1")).flagged


def test_a_service_said_not_to_have_written_a_record_is_no_swap(judge: Any) -> None:
    assert not judge("没有一条 posting batch 77 failed 的日志来自 search-service。").flagged
    assert judge("posting batch 77 failed 的日志来自 search-service。").flagged


@pytest.mark.parametrize(("said", "kept"), [("08:02:00 到 08:03:00 之间 billing-service 有 2 条 invoice export skipped", True),
                                            ("08:02:00 到 08:03:00 之间 billing-service 有 6 条 invoice export skipped", False),
                                            ("billing-service 从 08:02:00 起有 2 条 invoice export skipped", True)])
def test_a_count_over_the_span_the_claims_times_bound(judge: Any, said: str, kept: bool) -> None:
    judged = judge(said + "。")
    assert judged.flagged is not kept, list(zip([c["claim_text"] for c in judged.claims], judged.checks, strict=False))


@pytest.mark.parametrize("guess", ["Not certain, but the 2.4s gc pause is what makes batch 77 time out.",
                                   "倾向于认为 G1 Old gc 暂停 2.4s 就是 batch 77 写超时的原因。"])
def test_hedges_in_other_words_keep_a_guess_a_hypothesis(judge: Any, guess: str) -> None:
    judged = judge(guess)
    assert judged.hypotheses and not judged.flagged


def test_a_cause_said_as_brought_about_is_a_link_no_record_states(judge: Any) -> None:
    assert judge("batch 77 的写超时就是 G1 Old gc 暂停 2.4s 带来的。").flagged


def test_a_chinese_writer_that_logged_a_record_is_its_speaker(judge: Any) -> None:
    assert judge("search-service 记了 `posting batch 77 failed: write timeout after 1500ms`。").flagged
    assert not judge("ledger-service 记了 `posting batch 77 failed: write timeout after 1500ms`。").flagged


@pytest.mark.parametrize("said", ["> batch 77 的写超时就是 G1 Old gc 暂停 2.4s 带来的。", "batch 77 的写超时就是 G1 Old gc 暂停 2.4s 带来的吧。"])
def test_a_callout_or_a_soft_tag_does_not_hide_a_claim(judge: Any, said: str) -> None:
    assert judge(said).flagged


def test_a_part_saying_the_records_lack_something_is_a_gap_beside_the_facts(judge: Any) -> None:
    judged = judge("There is no data on ledger traffic, so the failure ratio can't be rebuilt; "
                   "posting batch 77 failed with a write timeout after 1500ms.")
    assert len(judged.claims) == 1 and len(judged.missing_info) == 1 and not judged.flagged
    assert judge("batch 77 为什么写超时，日志里看不到。").missing_info == ["batch 77 为什么写超时 日志里看不到"]


def test_a_status_of_the_work_and_a_title_line_state_nothing(judge: Any) -> None:
    for answer in ("Status: investigating.\nledger-service posting batch 77 failed after 1500ms.",
                   "事故复盘（初稿）\nledger-service 的 posting batch 77 写超时 1500ms。"):
        judged = judge(answer)
        assert len(judged.claims) == 1 and not judged.flagged, judged.claims


def test_a_clause_opening_on_its_verb_is_read_with_its_subject(judge: Any) -> None:
    judged = judge("Beside it, the 2.4s gc pause (08:00:05) is a single ledger-service line.")
    assert [c["claim_text"].startswith("is") for c in judged.claims] == [False], judged.claims


def test_a_label_says_what_the_lines_it_leads_are(judge: Any) -> None:
    """The agent's thought and confidence state nothing about the system; what a "Next steps"
    heading or a "建议：" label leads is to be done, and what "待查：" leads is not known; a guess
    under a recommendation label is still a guess."""
    judged = judge("Thought: both tools answered, enough to go on.\n"
                   "Final Answer: ledger-service posting batch 77 failed after 1500ms.\n"
                   "Confidence: high\n\n"
                   "Next steps\n- move ledger-service back to v3.0\n- 给 ledger 盘扩容\n\n"
                   "待查：是哪个任务在写满磁盘\n"
                   "建议：先清理 ledger 磁盘；G1 Old gc 暂停 2.4s 可能也有影响，但没有记录直接这么写。")
    assert [c["claim_text"] for c in judged.claims] == ["ledger-service posting batch 77 failed 1500ms."]
    assert len(judged.missing_info) >= 2 and len(judged.hypotheses) == 1 and not judged.flagged


def test_a_denial_about_one_writer_is_not_met_by_anothers_record(judge: Any) -> None:
    assert not judge("The gateway's 503 on POST /api/ledger/post came from upstream, not from an error "
                     "search-service returned.").flagged


@pytest.mark.parametrize(("period", "kept"), [("30", True), ("50", False)])
def test_a_period_over_a_counted_series_is_its_span_over_the_gaps(judge: Any, period: str, kept: bool) -> None:
    judged = judge(f"reconcile job failures 08:03:05 到 08:04:05 共 3 次，约每 {period} 秒一次。")
    assert judged.flagged is not kept, list(zip([c["claim_text"] for c in judged.claims], judged.checks, strict=False))


def test_an_interval_from_the_time_of_the_part_before_is_judged_with_it(judge: Any) -> None:
    """"..., and X at T2, N minutes later" reckons N from T1 in the part before; a span in two units
    or with a half is one figure, and a span said of its own ends is no record's duration."""
    assert not judge("invoice export skipped first at 08:01:10, and reconcile job_id=4411 failed at 08:03:05, "
                     "1 minute 55 seconds later.").flagged
    assert judge("invoice export skipped first at 08:01:10, and reconcile job_id=4411 failed at 08:03:05, "
                 "4 minutes 55 seconds later.").flagged
    said = "reconcile jobs failed with a stale ledger snapshot from 08:03:05 to 08:04:05, a span of {}."
    assert not judge(said.format("1 minute")).flagged
    assert judge(said.format("3 minutes")).flagged


@pytest.mark.parametrize(("said", "kept"), [("query_logs returned 16 lines, 8 of them ERROR.", True),
                                            ("query_logs returned 16 lines, 9 of them ERROR.", False),
                                            ("Of the 16 lines, 4 (25%) are `invoice export skipped` warnings.", True),
                                            ("Of the 16 lines, 4 (40%) are `invoice export skipped` warnings.", False)])
def test_a_count_or_share_of_the_whole_output_is_reckoned_from_it(judge: Any, said: str, kept: bool) -> None:
    judged = judge(said)
    assert judged.flagged is not kept, list(zip([c["claim_text"] for c in judged.claims], judged.checks, strict=False))


@pytest.mark.parametrize(("count", "kept"), [("2", True), ("5", False)])
def test_a_count_over_routes_of_one_record_shape_is_borne_out(judge: Any, count: str, kept: bool) -> None:
    judged = judge(f"api-gateway logged {count} upstream ledger-service 503s.")
    assert judged.flagged is not kept, list(zip([c["claim_text"] for c in judged.claims], judged.checks, strict=False))


@pytest.mark.parametrize(("times", "kept"), [("four", True), ("six", False)])
def test_a_statement_about_the_one_before_is_judged_on_its_records(judge: Any, times: str, kept: bool) -> None:
    judged = judge("billing-service logged `invoice export skipped: lock held by another worker`. "
                   f"That warning repeats {times} times, the last at 08:02:40.")
    assert judged.flagged is not kept, list(zip([c["claim_text"] for c in judged.claims], judged.checks, strict=False))


def test_a_count_after_a_label_colon_and_a_short_sibling_at_a_sentence_end_are_read(judge: Any) -> None:
    assert not judge("billing 侧的锁冲突：4 次 invoice export skipped。").flagged
    assert not judge("invoice export skipped on billing-5f7c-1 and -2.").flagged


def test_a_pod_said_at_a_time_meets_the_record_of_that_time(judge: Any) -> None:
    """The 08:02:10 skip was billing-5f7c-2's: said of -1 at that time, it meets -2's record and
    conflicts, rather than binding to some other record of -1."""
    assert not judge("08:02:10 billing-5f7c-2 报了 invoice export skipped。").flagged
    assert judge("08:02:10 billing-5f7c-1 报了 invoice export skipped。").flagged


def test_a_causative_let_states_a_link(judge: Any) -> None:
    assert judge("G1 Old gc 暂停 2.4s 让 batch 77 写超时了。").flagged


@pytest.mark.parametrize("answer", [
    "I lean towards the disk filling as the deciding factor for batch 77.",
    "G1 Old gc pause 2.4s on ledger-service. Neither link is stated in a log line; search-service doesn't log "
    "which ledger it called.",
    "posting batch 77 failed with a write timeout after 1500ms. I can't confirm from these records that the disk is why.",
    "reconcile job_id=4411 failed at 08:03:05，最后一条 08:04:05。",
    "billing-service 对账失败：08:03:05 job_id=4411，一共 3 笔。",
    "LedgerDiskFull fired at 07:58, and posting batch 77 failed at 08:00:01, a couple of minutes later.",
])
def test_a_writers_weighing_gaps_and_trailing_times_are_read_as_such(judge: Any, answer: str) -> None:
    judged = judge(answer)
    assert not judged.flagged, list(zip([c["claim_text"] for c in judged.claims], judged.checks, strict=False))


# --- the writer's own questions, answers, gaps, commands and headers ---------------------------


@pytest.mark.parametrize(("answer", "planted"), [
    ("Q: Is it the disk or the JVM?\nA: ledger-service logged a G1 Old gc pause of 2.4s at 08:00:05.\n"
     "Q: What did the gateway see?\nA: upstream ledger-service returned 503 on POST /api/ledger/post.",
     ("2.4s", "4.2s")),
    ("排查链：\n1. 为什么 batch 77 写不进去？ledger-service 写超时 1500ms。\n2. 为什么会写超时？LedgerDiskFull 磁盘 91.5%。",
     ("91.5%", "95.1%")),
    ("What does search-service have to do with it? It logged a slow request within SLO: GET /api/search took 900ms.",
     ("900ms", "1900ms")),
])
def test_a_question_the_writer_asks_states_nothing_its_answer_does(judge: Any, answer: str,
                                                                   planted: tuple[str, str]) -> None:
    """The splitter drops the question mark, so "Q: Is it the disk or the JVM" was a claim no record
    holds; the answer after a question is still judged."""
    judged = judge(answer)
    assert not judged.flagged, list(zip([c["claim_text"] for c in judged.claims], judged.checks, strict=False))
    assert not any(c["claim_text"].startswith(("Is it", "What", "为什么")) for c in judged.claims)
    assert judge(answer.replace(*planted)).flagged


@pytest.mark.parametrize(("answer", "planted"), [
    ("问：batch 77 是 search-service 写失败的吗？\n答：不是。\n答：是 ledger-service 写超时 1500ms。", ("1500ms", "2500ms")),
    ("Q: Is the disk alert still firing?\nA: Yes.\nA: LedgerDiskFull reads 91.5% disk.", ("91.5%", "81.5%")),
])
def test_a_bare_yes_or_no_states_nothing_the_words_after_it_do(judge: Any, answer: str, planted: tuple[str, str]) -> None:
    judged = judge(answer)
    assert not judged.flagged, list(zip([c["claim_text"] for c in judged.claims], judged.checks, strict=False))
    assert not [c for c in judged.claims if c["claim_text"].strip("。.") in ("不是", "Yes")]
    assert judge(answer.replace(*planted)).flagged


GAPS_AND_STATUS = ("Update on ledger posting.\n"
                   "- LedgerDiskFull reads 91.5% disk; what filled it isn't in these lines.\n"
                   "- Which job writes the disk isn't logged, and the records don't tie the gc pause to the timeouts.\n"
                   "- None of these is confirmed by a ledger record; the disk theory is to be confirmed by a du run.\n"
                   "- Ruled out for now: search-service (a slow request within SLO, GET /api/search took 900ms).\n"
                   "- 为什么磁盘会写满？记录里没有，需要问存储组。\n"
                   "- 为什么 gc 会停这么久，记录里也没有。\n"
                   "- Next update in 15 minutes. Acking. Will update the ledger channel.\n"
                   "- 下次更新：15 分钟后。")


@pytest.mark.parametrize("planted", [("91.5%", "95.1%"), ("900ms", "1900ms")])
def test_what_the_writer_says_of_its_own_knowledge_and_work_is_no_claim(judge: Any, planted: tuple[str, str]) -> None:
    """A gap ("isn't logged", "记录里没有"), a check still to come ("to be confirmed by") and the status of
    the work ("Next update in 15 minutes") name nothing a record could hold; a fact beside them is judged."""
    judged = judge(GAPS_AND_STATUS)
    assert not judged.flagged, list(zip([c["claim_text"] for c in judged.claims], judged.checks, strict=False))
    assert len(judged.missing_info) >= 5 and judged.recommended_actions == ["需要问存储组"]
    assert judge(GAPS_AND_STATUS.replace(*planted)).flagged


TRANSCRIPT = ("$ grep -c 'invoice export skipped' billing.log\n"
              "4\n"
              "$ grep 'G1 Old gc pause' ledger.log | awk '{print $5}'\n"
              "2.4s\n"
              "`grep -c 'ledger snapshot stale' billing.log`\n"
              "billing-service logged 3 reconcile failures on a stale ledger snapshot.")


@pytest.mark.parametrize("planted", [("2.4s", "3.4s"), ("logged 3", "logged 5")])
def test_a_command_the_writer_ran_is_no_claim_what_it_printed_is(judge: Any, planted: tuple[str, str]) -> None:
    """"$ grep ... | awk ..." is the writer's process: judged as a statement it met no record ("0, 9 not in
    the evidence" of a grep pattern). The lines it printed, and the sentence after it, are judged."""
    judged = judge(TRANSCRIPT)
    assert not judged.flagged, list(zip([c["claim_text"] for c in judged.claims], judged.checks, strict=False))
    assert not any("grep" in c["claim_text"] for c in judged.claims)
    assert judge(TRANSCRIPT.replace(*planted)).flagged


@pytest.mark.parametrize(("answer", "planted"), [
    ("ledger-service paused 2.4s in G1 Old gc, which suggests its heap is too small for the batch.", ("2.4s", "3.4s")),
    ("LedgerDiskFull 告警磁盘使用率 91.5%，batch 77 写超时应该主要是磁盘拖的。", ("91.5%", "95.1%")),
    ("Working theory, unproven: the full disk is what fails batch 77. LedgerDiskFull reads 91.5% disk.", ("91.5%", "93.5%")),
    ("As far as the records show, search-service is a bystander. Its one line is a slow request within SLO, 900ms.",
     ("900ms", "1900ms")),
    ("ledger-service 的 G1 Old gc 暂停了 2.4s，我猜是堆给小了。", ("2.4s", "3.4s")),
    ("LedgerDiskFull reads 91.5% disk. A full disk would explain batch 77, but it's a guess.", ("91.5%", "95.5%")),
    ("LedgerDiskFull reads 91.5% disk. I'd put the disk first and the gc pause second.", ("91.5%", "95.5%")),
    ("LedgerDiskFull 告警磁盘使用率 91.5%。我的判断是磁盘写满拖慢了 batch 77。", ("91.5%", "95.5%")),
    ("Two candidates: the full disk, or the ledger-service heap. LedgerDiskFull reads 91.5% disk.", ("91.5%", "95.5%")),
])
def test_an_inference_said_as_one_is_a_hypothesis(judge: Any, answer: str, planted: tuple[str, str]) -> None:
    """"suggests", "应该主要是 X 拖的", "working theory", "as far as the records show", "我猜" say the writer
    infers: judged as facts, each was a link no record states. The facts it rests on are judged."""
    judged = judge(answer)
    assert judged.hypotheses and not judged.flagged, list(zip([c["claim_text"] for c in judged.claims], judged.checks,
                                                              strict=False))
    assert judge(answer.replace(*planted)).flagged


TICKET = ("Incident update — ledger posts failing\n"
          "Component: ledger-service\n"
          "Owner: ledger on-call\n"
          "Severity: critical (LedgerDiskFull at 91.5%)\n"
          "Description: ledger-service posting batch 77 failed with a write timeout after 1500ms.\n"
          "Candidates:\n"
          "1. ledger-db. Against: its one slow query took 6.82 s, well after the failed post.\n"
          "【值班交接】ledger 写入失败\n"
          "- 负责人：存储组")


@pytest.mark.parametrize("planted", [("91.5%", "97.5%"), ("1500ms", "2500ms"), ("6.82", "9.82")])
def test_a_reports_title_and_fields_naming_its_subject_are_no_claims(judge: Any, planted: tuple[str, str]) -> None:
    """"Incident update — ...", "Component: ledger-service", an owner and a list item that only names a
    candidate name the subject: no record words them. A field whose value holds a fact is judged."""
    judged = judge(TICKET)
    assert not judged.flagged, list(zip([c["claim_text"] for c in judged.claims], judged.checks, strict=False))
    assert not any(c["claim_text"].startswith(("Incident", "Component", "Owner", "ledger-db.")) for c in judged.claims)
    assert judge(TICKET.replace(*planted)).flagged
    # "IC:" leads what a speaker said, not who works on it
    assert not judge("IC: LedgerDiskFull reads 91.5% disk.").flagged and judge("IC: LedgerDiskFull reads 95.5% disk.").flagged


@pytest.mark.parametrize(("answer", "planted"), [
    ("ledger-service posting batch 77 failed after 1500ms. Recommended action: move ledger-service back to v3.0.",
     ("1500ms", "2500ms")),
    ("LedgerDiskFull 告警磁盘使用率 91.5%。待查：是哪个任务在往 ledger 盘里写。", ("91.5%", "95.1%")),
])
def test_a_label_inside_a_line_says_what_its_sentence_is(judge: Any, answer: str, planted: tuple[str, str]) -> None:
    judged = judge(answer)
    assert not judged.flagged, list(zip([c["claim_text"] for c in judged.claims], judged.checks, strict=False))
    assert len(judged.claims) == 1 and len(judged.recommended_actions) + len(judged.missing_info) == 1
    assert judge(answer.replace(*planted)).flagged


@pytest.mark.parametrize(("answer", "planted"), [
    ("I weighed two candidates. LedgerDiskFull reads 91.5% disk.", ("91.5%", "95.5%")),
    ("我先看了告警。LedgerDiskFull 告警磁盘使用率 91.5%，告警没有说明是谁写满的。", ("91.5%", "95.5%")),
    ("ledger-service 写超时 1500ms；那次重试最终成没成功，这些日志里看不到。", ("1500ms", "2500ms")),
])
def test_what_the_writer_did_and_what_it_cannot_tell_are_no_claims(judge: Any, answer: str,
                                                                  planted: tuple[str, str]) -> None:
    judged = judge(answer)
    assert not judged.flagged, list(zip([c["claim_text"] for c in judged.claims], judged.checks, strict=False))
    assert len(judged.claims) == 1
    assert judge(answer.replace(*planted)).flagged


def test_a_part_reading_like_an_action_that_states_a_figure_is_judged(judge: Any) -> None:
    assert judge("ledger-service posting failed, increase of the write timeout to 2500ms.").flagged


@pytest.mark.parametrize("link", ["ledger-service 的堆就是被 G1 Old gc 撑爆的——gc 后堆占 88%。",
                                  "ledger-service 的磁盘就是被 posting batch 77 写满的——磁盘使用率 91.5%。",
                                  "gc 后堆占 88% 是 G1 Old gc 暂停 2.4s 导致的。"])
def test_a_passive_link_between_two_recorded_facts_is_a_link_no_record_states(judge: Any, link: str) -> None:
    # each fact is a record's; that the one did the other to the heap or the disk is the writer's
    assert not judge("ledger-service G1 Old gc 暂停 2.4s，gc 后堆占 88%；磁盘使用率 91.5%。").flagged
    assert judge(link).flagged
