"""A suspect that is neither a service nor a change ("a DNS outage", "the preload job"), and a suspect the
asker says is not the cause ("so X isn't behind Y, right?"): each is judged by what the records say of it."""

from __future__ import annotations

import pytest
from helpers import asked

from pipeline.core.config import Settings
from pipeline.store import Store
from pipeline.verdict.scope import read_scope

POOL_WORLD = ["order-service", "orders-db", "api-gateway", "user-service", "notification-service"]


def test_a_thing_blamed_is_read_as_the_suspect_and_its_words_are_no_symptom_asked() -> None:
    scope = read_scope("could a DNS outage be what broke the order history calls?", POOL_WORLD)
    assert scope.proposition is not None
    assert (scope.proposition.kind, scope.proposition.subject_kind) == ("cause", "thing")
    assert "dns" not in {s for symptoms in scope.symptoms.values() for s in symptoms}


def test_a_thing_no_record_names_is_not_the_cause_when_the_evidence_gives_one(settings: Settings, store: Store) -> None:
    form, summary, _ = asked("could a DNS outage be what broke the order history calls?", "db-pool-exhaustion",
                             settings, store)
    assert (form.status, form.answer) == ("answered", "no")
    assert summary.startswith("No, the evidence points to another cause")


def test_a_doing_that_acts_where_the_cause_lies_before_it_shows_is_the_cause_through_it(settings: Settings,
                                                                                       store: Store) -> None:
    """The export feature's switch is an INFO line on order-service from 08:10, before the pool's first timeout."""
    form, summary, _ = asked("was the order-history-export feature responsible for the pool running out?",
                             "db-pool-exhaustion", settings, store)
    assert (form.status, form.answer) == ("answered", "yes")
    assert "order-history-export" in summary


@pytest.mark.parametrize(("question", "opening"), [
    ("so the preload job isn't behind the redis-cart memory squeeze, right?", "No, through another component"),
    ("购物车接口超时，应该不是闪购预热任务引起的吧", "不是，经由另一个组件"),
])
def test_a_suspect_said_not_to_be_the_cause_is_answered_no_when_it_is(question: str, opening: str, settings: Settings,
                                                                       store: Store) -> None:
    scope = read_scope(question, ["redis-cart", "cart-service", "promotion-service"])
    assert scope.proposition is not None and scope.proposition.denied
    form, summary, _ = asked(question, "redis-latency", settings, store)
    assert form.answer == "no"
    assert summary.startswith(opening)


def test_a_suspect_asked_with_a_negation_is_put_forward_not_denied() -> None:
    scope = read_scope("isn't the preload job behind the redis-cart memory squeeze?", ["redis-cart", "promotion-service"])
    assert scope.proposition is not None and not scope.proposition.denied


def test_a_clause_saying_its_subject_cannot_be_what_does_it_denies_that_suspect() -> None:
    scope = read_scope("the backlog was there before the nightly reindex, so the reindex can't be what's clogging "
                       "the ledger - agree?", ["ledger-service"])
    assert scope.form == "yes_no" and scope.proposition is not None
    assert (scope.proposition.subject_kind, scope.proposition.words, scope.proposition.denied) == ("thing", ["reindex"],
                                                                                                   True)


def test_a_thing_is_found_inside_a_camel_case_name(settings: Settings, store: Store) -> None:
    """The inventory's stock sync runs as fullStockSync, before the heap fills: said not to be it, it is."""
    form, summary, _ = asked("the stock sync can't be what's filling the inventory heap - agree?", "jvm-oom",
                             settings, store)
    assert form.answer == "no"
    assert summary.startswith("No, through another component")


@pytest.mark.parametrize(("question", "denied"), [
    ("the checkout slowness isn't down to redis, right?", True),
    ("isn't the checkout slowness down to redis?", False),
])
def test_a_service_cut_to_one_word_of_its_name_is_the_suspect(question: str, denied: bool) -> None:
    scope = read_scope(question, ["checkout-service", "redis-sessions"])
    assert scope.proposition is not None
    assert (scope.proposition.kind, scope.proposition.subject, scope.proposition.denied) == ("cause", "redis-sessions",
                                                                                             denied)
