"""Question scope (law 8): asked services known or not, symptom, window, language."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pipeline.scope import asked_services, read_scope

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
    assert zh.language == "zh" and zh.symptom == "超时" and zh.time_window and zh.time_window.text == "最近30分钟"
    assert zh.time_window and zh.time_window.start == datetime(2026, 11, 28, 10, 30, tzinfo=UTC)
    en = read_scope("Why is search-service returning errors?", CATALOGUE, NOW)
    assert en.language == "en" and en.symptom == "error" and en.time_window is None
    assert read_scope("payment API times out since 10:00", CATALOGUE).time_window is None  # no clock, no window
