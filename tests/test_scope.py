"""Question scope (law 8): asked services known or not, symptoms per service, form, window, language."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pipeline.verdict.scope import asked_pairs, asked_services, read_scope

CATALOGUE = ["payment-service", "user-service", "api-gateway", "orders-db"]
NOW = datetime(2026, 11, 28, 11, 0, tzinfo=UTC)


@pytest.mark.parametrize(("question", "services", "known"), [
    ("user-service 登录失败了吗？", ["user-service"], ["user-service"]),
    ("为什么 billing-service 返回 503？", ["billing-service"], []),
    ("为什么billing-service返回503？", ["billing-service"], []),
    ("kafka-consumer lag is growing and user_svc times out", ["kafka-consumer", "user_svc"], []),
    ("payment API times out, orders-db is slow", ["payment-service", "orders-db"], ["payment-service", "orders-db"]),
    ("支付服务payment超时", ["payment-service"], ["payment-service"]),
])
def test_services_known_or_not(question, services, known):
    scope = read_scope(question, CATALOGUE, NOW)
    assert scope.services == services and scope.known_services == known


@pytest.mark.parametrize("question", ["the read-only replica ran out-of-memory", "an api call failed", "服务超时"])
def test_hyphenated_words_and_bare_kinds_are_not_services(question):
    assert asked_services(question, CATALOGUE) == []


def test_symptom_window_and_language():
    zh = read_scope("最近30分钟 user-service 大量超时", CATALOGUE, NOW)
    assert zh.language == "zh" and zh.symptom == "timeout" and zh.time_window and zh.time_window.text == "最近30分钟"
    assert zh.time_window and zh.time_window.start == datetime(2026, 11, 28, 10, 30, tzinfo=UTC)
    en = read_scope("Why is search-service returning errors?", CATALOGUE, NOW)
    assert en.language == "en" and en.symptom == "errors" and en.time_window is None
    assert read_scope("payment API times out since 10:00", CATALOGUE).time_window is None  # no clock, no window


@pytest.mark.parametrize(("question", "symptoms", "form"), [
    # Users' own phrasing, in en and zh.
    ("Is payment-service leaking memory?", {"payment-service": ["memory"]}, "yes_no"),
    ("payment-service 是不是内存泄漏了？", {"payment-service": ["memory"]}, "yes_no"),
    ("why is the payment API slow", {"payment-service": ["latency"]}, "why"),
    ("支付接口payment超时", {"payment-service": ["timeout"]}, "what"),
    ("user-service 有没有重启过", {"user-service": ["restarts"]}, "yes_no"),
    ("orders-db connection pool exhausted since 10:00, what's going on?", {"orders-db": ["connection_pool"]}, "what"),
    ("kafka-consumer lag is growing", {"kafka-consumer": ["queue_lag"]}, "what"),
    ("Does api-gateway return 502s?", {"api-gateway": ["errors"]}, "yes_no"),
    ("磁盘满了吗", {"": ["disk"]}, "yes_no"),
    # Two services, each asked its own symptom; two symptoms of one service.
    ("Is user-service slow and is payment-service returning 5xx?",
     {"payment-service": ["errors"], "user-service": ["latency"]}, "yes_no"),
    ("Why are user-service and payment-service slow?",
     {"payment-service": ["latency"], "user-service": ["latency"]}, "why"),
    ("payment-service CPU 很高，还 OOM 了，什么原因？", {"payment-service": ["cpu", "memory"]}, "why"),
    # A service asked nothing in particular; a suspected cause is searched, not asked.
    ("what happened to user-service after the deploy", {"user-service": ["any"]}, "what"),
])
def test_symptoms_per_service_and_form(question, symptoms, form):
    scope = read_scope(question, CATALOGUE, NOW)
    assert scope.symptoms == symptoms and scope.form == form
    assert asked_pairs(scope) == [(s, sym) for s, syms in symptoms.items() for sym in syms]


def test_a_scope_stored_before_symptoms_asks_anything_of_each_service():
    from pipeline.core.contracts import QuestionScope

    assert asked_pairs(QuestionScope(services=["a-service"], symptom="超时")) == [("a-service", "any")]
