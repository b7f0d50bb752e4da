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


@pytest.mark.parametrize(("question", "subject"), [
    ("the login errors have nothing to do with redis, right?", "redis-sessions"),
    ("登录报错跟 redis 没啥关系吧", "redis-sessions"),
    ("redis-sessions 和登录报错无关吧", "redis-sessions"),
    ("the login errors aren't related to the token rotation job, are they?", "the token rotation job"),
])
def test_either_side_of_nothing_to_do_with_may_be_the_suspect_and_it_is_denied(question: str, subject: str) -> None:
    """A name alone is the suspect before a thing, and a thing before a service said with its effect."""
    scope = read_scope(question, ["auth-service", "redis-sessions"])
    assert scope.proposition is not None
    assert (scope.proposition.kind, scope.proposition.subject, scope.proposition.denied) == ("cause", subject, True)


def test_the_incident_itself_is_never_the_suspect_of_an_involvement_denied() -> None:
    scope = read_scope("这次故障和 redis-sessions 扯不上关系吧", ["auth-service", "redis-sessions"])
    assert scope.proposition is not None
    assert (scope.proposition.subject, scope.proposition.target, scope.proposition.denied) == ("redis-sessions", "", True)


@pytest.mark.parametrize(("question", "answer", "opening"), [
    # the pool's own service is where the cause lies: said to take no part, it does
    ("这次事故跟 order-service 应该没关系吧", "no", "不是，order-service 与这次故障有关"),
    # user-service's failed logins are wrong passwords, nothing of the pool
    ("user-service has nothing to do with this outage, right?", "yes", "Yes, nothing in the evidence links user-service"),
])
def test_an_involvement_denied_is_answered_about_the_suspect(question: str, answer: str, opening: str,
                                                             settings: Settings, store: Store) -> None:
    form, summary, _ = asked(question, "db-pool-exhaustion", settings, store)
    assert form.answer == answer
    assert summary.startswith(opening)


def test_asking_whether_there_is_a_link_denies_nothing() -> None:
    scope = read_scope("redis-sessions 跟登录报错到底有没有关系？", ["auth-service", "redis-sessions"])
    assert scope.proposition is not None and not scope.proposition.denied


@pytest.mark.parametrize(("question", "subject", "target", "denied"), [
    # the one that suffers is said first: "is Y hit by X"
    ("ledger-api 500s since noon. is it hit by the inv outage?", "inventory-service", "ledger-api", False),
    # "rule out X as what did Y" asks to agree X did not; a nickname the service reader knows names it
    ("can we rule out the inv heap as what kicked off the ledger-api 500s?", "inventory-service", "ledger-api", True),
])
def test_a_victim_said_first_and_a_suspect_ruled_out_are_read(question: str, subject: str, target: str,
                                                              denied: bool) -> None:
    scope = read_scope(question, ["ledger-api", "inventory-service"])
    assert scope.proposition is not None
    assert (scope.proposition.kind, scope.proposition.subject, scope.proposition.target, scope.proposition.denied) == (
        "cause", subject, target, denied)


def test_a_service_with_no_records_said_to_be_hit_by_the_cause_cannot_be_told(settings: Settings, store: Store) -> None:
    """jvm-oom holds no record of a billing service: whether inventory's outage hurt it, no record says."""
    form, summary, verdict = asked("billing-service stopped invoicing around 14:00. was it hit by the inventory outage?",
                                   "jvm-oom", settings, store)
    assert form.answer == "cannot_tell"
    assert summary.startswith("Cannot tell whether inventory-service caused") and verdict != "PASS"
