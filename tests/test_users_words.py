"""Users' words for symptoms, end to end: a question in an SRE's own words over a
bundled world is read as its symptom, the tools bring back the evidence that bears on it, and the
coverage row for the asked (service, symptom) says what that evidence shows."""

from __future__ import annotations

import pytest

from pipeline.core.config import Settings
from pipeline.runs.session import run_session
from pipeline.store import Store


@pytest.mark.parametrize(("world", "question", "pair", "status", "quoted"), [
    # A certificate alert that fires at info severity: expiring, shown as it is.
    ("cpu-saturation", "is the api-gateway certificate expired?", ("api-gateway", "tls"), "answered", "证书即将过期"),
    ("gateway-timeout", "user-service 域名解析失败了吗？", ("user-service", "dns"), "answered", "UnknownHostException"),
    ("redis-latency", "promotion-service 的定时任务卡住了吗？", ("promotion-service", "stuck_jobs"), "answered",
     "distributed lock not acquired"),
    # A wrong password is a user's mistake, and logins go on succeeding: no sign of a login failure.
    ("bad-deploy", "users can't log in, is user-service ok?", ("user-service", "auth"), "healthy", "login failed"),
    # "send failed ..., retry succeeded" lost nothing.
    ("db-pool-exhaustion", "notification-service 是不是在丢消息？", ("notification-service", "message_loss"), "healthy",
     "retry succeeded"),
])
def test_a_question_in_users_words_is_answered_from_the_evidence_on_its_symptom(
        world: str, question: str, pair: tuple[str, str], status: str, quoted: str,
        settings: Settings, store: Store) -> None:
    result = run_session(question, settings=settings, store=store, world_id=world)
    rows = {(c.service, c.symptom): c for c in result.evaluation.round_audit.question_coverage}
    assert list(rows) == [pair]
    assert rows[pair].status == status
    # The lead quotes the evidence on its symptom (it may follow the sample-incident notice).
    assert quoted in " ".join(result.final_answer.splitlines()[:2])
