"""Numbers a faithful writer derives from the records, judged end to end over a small world of its
own (these sentences are not the foreign-answers benchmark's, which stays an independent yardstick):
a count split by pod or route, a sum or share worked out, an interval between two records. Each
derived number is kept when the records bear it out and caught when they do not."""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers import judged_prose, log_output, refusals

from pipeline.core.config import Settings

_LABEL = "label print failed: carrier api timeout after 800ms"
LOGS = [
    ("2026-04-09T09:02:00Z", "shipping-service", "ERROR", "carrier-sync job failed: auth token expired", "ship-2b9d-3"),
    # label timeouts: ship-2b9d-1 five, ship-2b9d-2 three, ship-2b9d-3 one (nine in all)
    *[(f"2026-04-09T09:{m}Z", "shipping-service", "ERROR", _LABEL, host)
      for m, host in (("10:00", "ship-2b9d-1"), ("11:00", "ship-2b9d-2"), ("12:00", "ship-2b9d-1"),
                      ("13:00", "ship-2b9d-1"), ("14:00", "ship-2b9d-2"), ("15:00", "ship-2b9d-3"),
                      ("16:00", "ship-2b9d-1"), ("17:00", "ship-2b9d-2"), ("18:00", "ship-2b9d-1"))],
    # the gateway's 504s: four on POST /api/ship/label, two on GET /api/ship/track
    *[(f"2026-04-09T09:{m}Z", "api-gateway", "WARN", f"upstream shipping-service 504 on {route} after 0.8s", host)
      for m, route, host in (("10:01", "POST /api/ship/label", "edge-41c0-1"), ("11:01", "POST /api/ship/label", "edge-41c0-2"),
                             ("12:01", "GET /api/ship/track", "edge-41c0-1"), ("13:01", "POST /api/ship/label", "edge-41c0-1"),
                             ("14:01", "GET /api/ship/track", "edge-41c0-2"), ("16:01", "POST /api/ship/label", "edge-41c0-1"))],
    # a store the service itself names
    *[(f"2026-04-09T09:{m}Z", "shipping-service", "WARN", "rate cache miss, rebuilding from Postgres took 412ms", "ship-2b9d-2")
      for m in ("11:30", "14:30")],
]
QUESTION = "Why do shipping labels fail?"


@pytest.fixture
def refused(settings: Settings) -> Any:
    """The claims of an answer the verifier does not verify, each with its finding."""
    return refusals(settings, QUESTION, [("query_logs", log_output(LOGS))])


# --- a count split by pod or route, or in a table -------------------------------------------------


@pytest.mark.parametrize("answer", [
    "ship-2b9d-1 logged 5 of the label print timeouts after 800ms.",
    "Label print timeouts after 800ms: 3 on ship-2b9d-2.",
    "Label print timeouts after 800ms by pod: ship-2b9d-1 5, ship-2b9d-2 3.",
    "The gateway logged 4 upstream shipping-service 504s on POST /api/ship/label.",
    "The gateway logged 2 upstream shipping-service 504s on GET /api/ship/track.",
    "shipping-service logged 9 label print failures after the carrier api timeout.",
])
def test_a_count_of_records_split_by_pod_or_route_is_kept(refused: Any, answer: str) -> None:
    assert refused(answer) == []


@pytest.mark.parametrize("answer", [
    "ship-2b9d-1 logged 6 of the label print timeouts after 800ms.",  # off by one
    "ship-2b9d-1 logged 3 of the label print timeouts after 800ms.",  # ship-2b9d-2's count
    "Label print timeouts after 800ms by pod: ship-2b9d-1 3, ship-2b9d-2 5.",  # the pods' counts swapped
    "The gateway logged 2 upstream shipping-service 504s on POST /api/ship/label.",  # the other route's count
    "shipping-service logged 11 label print failures after the carrier api timeout.",
])
def test_a_count_the_records_do_not_bear_out_is_caught(refused: Any, answer: str) -> None:
    assert refused(answer)


# --- a sum or a share worked out --------------------------------------------------------------------


@pytest.mark.parametrize("answer", [
    "Label print timeouts after 800ms on the three pods: 5+3+1=9.",
    "ship-2b9d-1 has 5/9=56% of the label print timeouts after 800ms.",
    "ship-2b9d-1 logged 5 of the 9 label print timeouts after 800ms, about 56%.",
])
def test_a_sum_or_share_of_recorded_counts_is_kept(refused: Any, answer: str) -> None:
    assert refused(answer) == []


@pytest.mark.parametrize("answer", [
    "Label print timeouts after 800ms on the three pods: 5+3+1=10.",  # the sum is wrong
    "Label print timeouts after 800ms on the three pods: 5+3+2=10.",  # a term no pod has
    "ship-2b9d-1 has 5/9=60% of the label print timeouts after 800ms.",  # the share is wrong
    "ship-2b9d-1 logged 5 of the 9 label print timeouts after 800ms, about 45%.",
])
def test_a_wrong_sum_or_share_is_caught(refused: Any, answer: str) -> None:
    assert refused(answer)


# --- a store the record names --------------------------------------------------------------------


def test_a_store_the_service_names_beside_its_pod_is_no_swapped_service(refused: Any) -> None:
    assert refused("| pod | label print failed (800ms) | rate cache |\n|---|---|---|\n"
                   "| ship-2b9d-2 | 3 | rebuilt from Postgres |") == []


def test_a_store_put_where_the_service_was_is_caught(refused: Any) -> None:
    assert refused("postgres logged label print failed: carrier api timeout after 800ms.")


# --- a count whose kind the clause before names ----------------------------------------------------


def test_a_count_is_bound_to_the_kind_of_records_it_counts(refused: Any) -> None:
    # "ship-2b9d-2 logged 2 times" names no kind of its own: of that pod's records, the rebuilds are the kind
    # with 2, where its first record (a label print timeout, 3 of them) bore out nothing
    assert refused("The rate cache missed and was rebuilt from Postgres; ship-2b9d-2 logged 2 times.") == []


def test_a_count_no_kind_of_the_pods_records_has_is_caught(refused: Any) -> None:
    assert refused("The rate cache missed and was rebuilt from Postgres; ship-2b9d-2 logged 6 times.")


# --- an interval from the event the statement before dated ------------------------------------------


@pytest.mark.parametrize(("answer", "planted"), [
    ("Carrier sync failed on ship-2b9d-3 at 09:02. About 8 minutes later ship-2b9d-1 logged the first label print "
     "timeout after 800ms.", ("8 minutes", "3 minutes")),
    ("carrier-sync 在 09:02 失败。约 8 分钟后 ship-2b9d-1 记下第一条标签打印超时（800ms）。", ("8 分钟", "20 分钟")),
])
def test_an_interval_from_the_event_dated_before_is_reckoned_from_its_record(refused: Any, answer: str,
                                                                             planted: tuple[str, str]) -> None:
    assert refused(answer) == []
    assert refused(answer.replace(*planted))


def test_an_interval_said_plainly_is_held_to_its_own_units_rounding(refused: Any) -> None:
    # 09:02 to 09:10: "about 9 minutes" may be a sixth off, "9 minutes" said plainly may not
    said = ("Carrier sync failed on ship-2b9d-3 at 09:02. {} later ship-2b9d-1 logged the first label print "
            "timeout after 800ms.")
    assert refused(said.format("8 minutes")) == []
    assert refused(said.format("About 9 minutes")) == []
    assert refused(said.format("9 minutes"))


# --- a count held to the tallies, not to a record's date ----------------------------------------------


def test_a_count_is_never_borne_out_by_the_digits_of_a_records_date(refused: Any) -> None:
    # the records are dated 2026-04-09: "4" is in every one of them, and no kind of ship-2b9d-2's has 4
    assert refused("ship-2b9d-2 logged the label print timeout after 800ms 3 times.") == []
    assert refused("ship-2b9d-2 logged the label print timeout after 800ms 4 times.")


# --- a list of counts after a short label ---------------------------------------------------------------


@pytest.mark.parametrize(("answer", "planted"), [
    ("各台的打印超时：ship-2b9d-1 5 次，ship-2b9d-2 3 次。", ("5 次", "6 次")),
    ("各台的打印超时：ship-2b9d-1 5 次，ship-2b9d-2 3 次。", ("3 次", "7 次")),
    ("Print timeouts per pod: ship-2b9d-1 5, ship-2b9d-2 3.", ("ship-2b9d-1 5", "ship-2b9d-1 7")),
])
def test_a_list_of_counts_after_a_short_label_is_claims(refused: Any, answer: str, planted: tuple[str, str]) -> None:
    assert refused(answer) == []
    assert refused(answer.replace(*planted))


def test_a_figure_fetches_no_record_by_the_digits_of_its_timestamp(settings: Settings, refused: Any) -> None:
    # "2" is the minute of the 09:02 carrier-sync record: no figure of it, so that record is not bound
    answer = "The rate cache was rebuilt from Postgres on ship-2b9d-2 in 412ms, 2 times."
    bundle, _ = judged_prose(settings, QUESTION, [("query_logs", log_output(LOGS))])(answer)
    bound = [b["evidence_excerpt"] for c in json.loads(bundle.executor_raw_output)["claims"] for b in c["evidence_bindings"]]
    assert bound and all("rate cache miss" in line for line in bound)
    assert refused(answer) == []
    assert refused(answer.replace("2 times", "9 times"))


# --- a wait the record states, said as "N s later" ---------------------------------------------------


@pytest.mark.parametrize(("answer", "planted"), [
    ("api-gateway 在 0.8s 后拿到 shipping-service 的 504（POST /api/ship/label）。", ("0.8s", "2s")),
    ("The gateway got its upstream shipping-service 504 on GET /api/ship/track 0.8 s later.", ("0.8 s", "3 s")),
])
def test_a_wait_the_record_states_after_is_no_interval_between_records(refused: Any, answer: str,
                                                                      planted: tuple[str, str]) -> None:
    assert refused(answer) == []
    assert refused(answer.replace(*planted))
