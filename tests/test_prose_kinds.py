"""A count of a kind the claim's other facts do not fetch, a name said in the plural, a figure said as a
count: judged end to end over a small world of this file's own (not the foreign-answers benchmark's).
A figure the records bear out is kept; the same sentence with the figure changed is caught."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import log_output, refusals

from pipeline.core.config import Settings

_GC = "GC log: Full GC (Allocation Failure) {}M->{}M(3072M), pause {}s"
_CRASH = "java.lang.OutOfMemoryError: Metaspace at com.acme.mail.TemplateRenderer.compile(TemplateRenderer.java:57)"
LOGS = [
    ("2026-05-02T06:21:30Z", "mail-service", "INFO", "deploy finished: mail-service v3.1.0", "mail-5e1a-2"),
    ("2026-05-02T06:10:00Z", "mail-service", "WARN", _GC.format(2900, 2850, "1.4"), "mail-5e1a-1"),
    ("2026-05-02T06:14:00Z", "mail-service", "WARN", "TemplateCache size=880000 entries (expireAfterWrite not configured)",
     "mail-5e1a-1"),
    ("2026-05-02T06:20:00Z", "mail-service", "WARN", _GC.format(3010, 2990, "2.1"), "mail-5e1a-1"),
    ("2026-05-02T06:22:00Z", "mail-service", "ERROR", _CRASH, "mail-5e1a-1"),
    ("2026-05-02T06:30:00Z", "mail-service", "ERROR", _CRASH, "mail-5e1a-1"),
    ("2026-05-02T06:31:00Z", "mail-service", "WARN", _GC.format(3050, 3020, "1.9"), "mail-5e1a-1"),
    ("2026-05-02T06:40:00Z", "api-gateway", "WARN", "upstream mail-service 503 on POST /api/mail/send after 1800ms",
     "edge-77aa-1"),
]
@pytest.fixture
def refused(settings: Settings) -> Any:
    """The claims of an answer the verifier does not verify, each with its finding."""
    return refusals(settings, "Why does mail sending fail?", [("query_logs", log_output(LOGS))])


# --- a count of another kind than the clause's other facts -------------------------------------------


@pytest.mark.parametrize("answer", [
    "mail-5e1a-1 的 Full GC 最长停顿 2.1s，还 OOM 了 2 次。",
    "mail-5e1a-1 paused 2.1s in a Full GC and went OOM 2 times.",
])
def test_a_count_of_a_kind_the_other_facts_do_not_fetch_is_kept(refused: Any, answer: str) -> None:
    assert refused(answer) == []


@pytest.mark.parametrize("answer", [
    "mail-5e1a-1 的 Full GC 最长停顿 2.1s，还 OOM 了 5 次。",
    "mail-5e1a-1 paused 2.1s in a Full GC and went OOM 4 times.",
])
def test_a_wrong_count_of_that_kind_is_caught(refused: Any, answer: str) -> None:
    assert refused(answer)


# --- a class named in the plural, counted in words -------------------------------------------------------


def test_a_class_named_in_the_plural_and_counted_in_words_is_kept(refused: Any) -> None:
    assert refused("two OutOfMemoryErrors in TemplateRenderer.compile.") == []


def test_the_plural_counted_wrong_in_words_is_caught(refused: Any) -> None:
    assert refused("five OutOfMemoryErrors in TemplateRenderer.compile.")


# --- a figure said as a count, larger than any count of records ----------------------------------------------


def test_a_size_said_as_a_count_is_held_to_the_record_holding_it(refused: Any) -> None:
    assert refused("mail-5e1a-1 的 Full GC 最长停顿 2.1s，TemplateCache 有 880000 条、没配 expireAfterWrite。") == []
    assert refused("mail-5e1a-1 的 Full GC 最长停顿 2.1s，TemplateCache 有 990000 条、没配 expireAfterWrite。")


# --- the first of a kind, dated from the event before it ---------------------------------------------------


def test_the_first_of_a_kind_an_interval_after_the_event_before_is_kept(refused: Any) -> None:
    assert refused("mail-service v3.1.0 finished deploying at 06:21:30; the first OutOfMemoryError came 30 seconds "
                   "later.") == []


def test_the_last_of_a_kind_is_the_latest_record(refused: Any) -> None:
    assert refused("mail-service v3.1.0 finished deploying at 06:21:30; the last OutOfMemoryError came 8 minutes "
                   "later.") == []
    assert refused("mail-service v3.1.0 finished deploying at 06:21:30; the last OutOfMemoryError came 3 minutes "
                   "later.")


def test_the_first_of_a_kind_at_a_wrong_interval_is_caught(refused: Any) -> None:
    assert refused("mail-service v3.1.0 finished deploying at 06:21:30; the first OutOfMemoryError came 4 minutes "
                   "later.")


def test_a_spelled_interval_between_two_times_the_claim_gives_is_reckoned(refused: Any) -> None:
    assert refused("mail-service v3.1.0 finished deploying at 06:21:30, eight minutes before the second "
                   "OutOfMemoryError at 06:30:00.") == []
    assert refused("mail-service v3.1.0 finished deploying at 06:21:30, three minutes before the second "
                   "OutOfMemoryError at 06:30:00.")


# --- a ticket's target ------------------------------------------------------------------------------------


def test_a_tickets_acceptance_criteria_are_no_claim(refused: Any) -> None:
    answer = ("Summary: POST /api/mail/send fails with upstream mail-service 503.\n"
              "Acceptance criteria: no upstream mail-service 503 on POST /api/mail/send for 45 minutes.")
    assert refused(answer) == []
    # the same sentence under no such label is a claim, its span held to the records
    assert refused("Summary: POST /api/mail/send fails with upstream mail-service 503.\n"
                   "Observed: no upstream mail-service 503 on POST /api/mail/send for 45 minutes.")


# --- a range with its unit at both ends ----------------------------------------------------------------------


def test_a_range_with_its_unit_at_both_ends_is_one_range() -> None:
    from pipeline.llm.offline.verifier import _ranged

    evidence = "pause 1.4s\npause 2.1s"
    assert _ranged("pauses of 1300ms-2200ms", "", evidence) == _ranged("pauses of 1300-2200ms", "", evidence)
    assert "1300ms" not in _ranged("pauses of 1300ms 到 2200ms", "", evidence)
    # two units are no one quantity's range: each end is checked as said
    assert "1400ms" in _ranged("pauses of 1400ms-2.1s", "", evidence)


# --- a wait said roughly ------------------------------------------------------------------------------------------


def test_a_records_own_wait_said_roughly_is_kept(refused: Any) -> None:
    assert refused("The gateway got upstream mail-service 503 on POST /api/mail/send about 2 seconds later.") == []
    assert refused("The gateway got upstream mail-service 503 on POST /api/mail/send about 4 seconds later.")


# --- what a search command printed -------------------------------------------------------------------------


def test_a_count_a_search_printed_is_a_count_of_what_it_searched_for(refused: Any) -> None:
    assert refused("$ grep -c 'java.lang.OutOfMemoryError' mail.log\n2\n$ grep -c 'GC log: Full GC' mail.log\n3") == []
    assert refused("$ grep 'java.lang.OutOfMemoryError' mail.log | grep -c mail-5e1a-1\n2") == []
    assert refused("$ grep 'java.lang.OutOfMemoryError' mail.log | awk '{print $2}' | sort | uniq -c\n  2 mail-5e1a-1") == []


@pytest.mark.parametrize("answer", [
    "$ grep -c 'java.lang.OutOfMemoryError' mail.log\n3",  # the Full GC lines' count
    "$ grep -c 'java.lang.OutOfMemoryError' mail.log\n7",
    "$ grep 'java.lang.OutOfMemoryError' mail.log | grep -c mail-5e1a-2\n2",  # another pod
    "$ grep 'java.lang.OutOfMemoryError' mail.log | awk '{print $2}' | sort | uniq -c\n  2 mail-5e1a-2",
])
def test_a_count_a_search_did_not_print_is_caught(refused: Any, answer: str) -> None:
    assert refused(answer)


# --- a list of what the writer looked for and did not find -------------------------------------------------


def test_the_items_under_a_did_not_find_line_are_gaps(refused: Any) -> None:
    assert refused("Things I searched the WARN/ERROR output for and did not find:\n"
                   "- a mail-service rollback or config change\n- any SMTP relay error\n"
                   "What is there: 2 OutOfMemoryError lines on mail-5e1a-1.") == []
    assert refused("以下几样在日志里都没有找到：\n- mail-service 的回滚记录\n- SMTP 中继的报错") == []


def test_the_same_items_under_another_line_are_claims(refused: Any) -> None:
    assert refused("Things I searched the WARN/ERROR output for:\n"
                   "- a mail-service rollback or config change\n- any SMTP relay error")


# --- a word read as an identifier in the claim, as a word in the record -------------------------------------------


def test_a_method_read_as_an_identifier_meets_the_records_word(refused: Any) -> None:
    assert refused("网关的请求 POST /api/mail/send 拿到 upstream mail-service 503。") == []
    assert refused("网关的请求 PATCH /api/mail/send 拿到 upstream mail-service 503。")
