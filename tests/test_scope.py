"""Question scope (law 8): asked services known or not, symptoms per service, form, window, language."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pipeline.verdict.scope import asked_pairs, asked_services, asked_symptoms, mentions_symptom, read_scope

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


# Users' words for symptoms: what an SRE types, in en and zh, and the one
# symptom it names. A failure word inside a more specific phrase ("登录失败") is that symptom only.
@pytest.mark.parametrize(("question", "symptoms"), [
    ("users can't log in", ["auth"]),
    ("customers cannot sign in since the release", ["auth", "deploy"]),  # a suspected cause, searched
    ("login is broken for everyone", ["auth"]),
    ("the app returns 401 on every call", ["auth"]),
    ("pages load forever", ["latency"]),
    ("the checkout page hangs", ["latency"]),
    ("search takes ages to respond", ["latency"]),
    ("the pod keeps restarting", ["restarts"]),
    ("payment-service is in CrashLoopBackOff", ["restarts"]),
    ("kafka is dropping messages", ["message_loss"]),
    ("messages are being lost between the services", ["message_loss"]),
    ("users don't receive notifications", ["message_loss"]),
    ("jobs stuck", ["stuck_jobs"]),
    ("the nightly export job seems stuck", ["stuck_jobs"]),
    ("the cron job didn't run", ["stuck_jobs"]),
    ("certificate expired", ["tls"]),
    ("SSL errors when calling the bank", ["tls"]),
    ("DNS is flaky", ["dns"]),
    ("services can't resolve the database host", ["dns"]),
    ("UnknownHostException everywhere", ["dns"]),
    ("the site is unresponsive", ["timeout"]),
    ("we see full GC all the time", ["memory"]),
    ("登不上", ["auth"]),
    ("用户登录失败", ["auth"]),
    ("app 一直提示登录过期，被踢出来", ["auth"]),
    ("接口返回 403 没有权限", ["auth"]),
    ("页面一直转圈", ["latency"]),
    ("首页加载很慢", ["latency"]),
    ("页面一直加载不出来", ["latency", "timeout"]),
    ("打不开", ["timeout", "errors"]),
    ("一直重启", ["restarts"]),
    ("pod 起不来", ["restarts"]),
    ("丢消息", ["message_loss"]),
    ("用户收不到推送", ["message_loss"]),
    ("消息丢失了一部分", ["message_loss"]),
    ("任务卡住", ["stuck_jobs"]),
    ("定时任务没跑", ["stuck_jobs"]),
    ("证书过期", ["tls"]),
    ("SSL 握手失败", ["tls"]),
    ("域名解析失败", ["dns"]),
    ("DNS 解析很慢", ["latency", "dns"]),
    ("服务不可用", ["errors"]),
    ("数据库连接池满了", ["connection_pool"]),
    ("消息积压严重", ["queue_lag"]),
    ("服务器磁盘空间不足", ["disk"]),
])
def test_users_words_name_their_symptom(question, symptoms):
    assert asked_symptoms(question) == symptoms


# Words that look like a symptom's and are not: the healthy case, another sense, a service's name.
@pytest.mark.parametrize(("question", "symptoms"), [
    ("connection refused on orders-db", ["errors"]),  # refused, not an exhausted pool
    ("the thread pool is busy", []),
    ("can you help resolve this?", []),
    ("what is in the login page logs", []),
    ("登录页面的日志里有什么", []),
    ("JSON 解析失败", ["errors"]),  # 解析 alone is parsing, not DNS
    ("a message was lost, and checkout returns 500", ["errors", "message_loss"]),
    ("the job ran at 10:00", []),
    ("发布之后怎么样", ["deploy"]),
])
def test_lookalike_words_do_not_name_a_symptom(question, symptoms):
    assert asked_symptoms(question) == symptoms


@pytest.mark.parametrize(("line", "symptom", "about"), [
    ("login failed: wrong password uid=7671258 (attempt 2)", "auth", True),
    ("TLS handshake completed client=10.0.0.1 proto=TLSv1.3", "tls", False),
    ("javax.net.ssl.SSLHandshakeException: PKIX path validation failed: certificate expired", "tls", True),
    ("java.net.UnknownHostException: orders-db.internal", "dns", True),
    ("Kafka producer send failed (NETWORK_EXCEPTION) topic=notify-events, retry succeeded", "message_loss", False),
    ("dropped 312 messages: consumer buffer full, topic=notify-events", "message_loss", True),
    ("coupon-expire-job failed: distributed lock not acquired, will retry next round", "stuck_jobs", True),
    ("Aborted connection 88231 to db: 'orders'", "connection_pool", False),
    ("HikariPool-1 - Connection is not available, request timed out after 30000ms", "connection_pool", True),
    ("JVM exiting due to -XX:+ExitOnOutOfMemoryError, container will be restarted", "restarts", True),
])
def test_evidence_words_of_the_new_symptoms(line, symptom, about):
    assert mentions_symptom(line, symptom) is about
