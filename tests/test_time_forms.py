"""How long / since when (law 8 extended, law 12): a time question is answered by the first dated
record of the asked symptom in the asked service, with its time and its words, never by a cause."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline.core.config import BackendSettings, BackendsSettings, Settings
from pipeline.frontends.views.trace import form_view
from pipeline.runs.session import run_session
from pipeline.store import Store
from pipeline.tools.results import read_result
from pipeline.verdict.scope import read_scope

CATALOGUE = ["checkout-service", "pricing-service", "order-service", "payment-service"]


@pytest.mark.parametrize(("question", "form"), [
    ("How long has checkout-service been returning errors?", "how_long"),
    ("For how long has order-service been down?", "how_long"),
    ("checkout-service 一直报错多久了？", "how_long"),
    ("api-gateway 超时持续了多长时间？", "how_long"),
    ("Since when has checkout-service been returning errors?", "since_when"),
    ("when did checkout-service start failing?", "since_when"),
    ("order-service requests take 30 seconds then error out. since when?", "since_when"),
    ("payment-service 从什么时候开始CPU 很高的？", "since_when"),
    ("order-service 是几点开始报错的？", "since_when"),
    # a yes/no with a clock time asks about a window, not for a time
    ("Is checkout-service down since 10:00?", "yes_no"),
    ("checkout-service 从10点开始报错了吗？", "yes_no"),
    ("为什么 checkout-service 从10点开始报错", "why"),
    # how long a request takes is a latency, not how long a fault has lasted
    ("How long does checkout-service take to answer?", "what"),
])
def test_time_forms_are_read_from_an_sres_words(question: str, form: str) -> None:
    assert read_scope(question, CATALOGUE).form == form


# (world, question, when the first record of the symptom was written, how the lead opens)
DATED = [
    ("bad-deploy", "How long has checkout-service been returning errors?", datetime(2026, 11, 26, 16, 20, 48, 164000, UTC),
     "checkout-service has shown errors for about 69 minutes in the records, from 16:20 UTC to 17:29 UTC (first record #"),
    ("bad-deploy", "checkout-service 是几点开始一直报错的？", datetime(2026, 11, 26, 16, 20, 48, 164000, UTC),
     "checkout-service 自 16:20 UTC 起出现报错（首条记录：调用 #"),
    ("gateway-timeout", "since when is api-gateway timing out on /api/order/pay?", datetime(2026, 11, 21, 14, 19, 5, 12000, UTC),
     "api-gateway has shown timeouts since 14:19 UTC (first record #"),
    # a firing alert: seen until the service's latest record (it still fired then)
    ("jvm-oom", "inventory-service 内存占用很高多久了？", datetime(2026, 11, 12, 13, 22, tzinfo=UTC),
     "inventory-service 的内存问题在记录中已持续约 64 分钟，从 13:22 UTC 到 14:25 UTC（首条记录：调用 #"),
    # a question naming no service: the service whose records its verified claims cite
    ("db-pool-exhaustion", "下单失败持续多久了？", datetime(2026, 11, 19, 8, 17, tzinfo=UTC),
     "order-service 的报错在记录中已持续约 73 分钟，从 08:17 UTC 到 09:29 UTC（首条记录：调用 #"),
]


@pytest.mark.parametrize(("world", "question", "since", "opening"), DATED, ids=[d[1] for d in DATED])
def test_a_time_question_is_answered_by_the_first_dated_record(settings: Settings, store: Store, world: str,
                                                               question: str, since: datetime, opening: str) -> None:
    result = run_session(question, settings=settings, store=store, world_id=world)
    audit = result.evaluation.round_audit
    row = audit.question_form_coverage
    lead = result.evaluation.composer_output.answer_summary
    first = row.first if row else None
    assert row is not None and first is not None and (result.verdict, row.status, first.at) == ("PASS", "answered", since)
    assert lead.startswith(opening), lead
    # The record the lead quotes is the one the form row names, in the output the trace shows.
    [inv] = [i for i in store.invocations(result.session_id) if i.id == first.invocation_id]
    record = next(r for r in read_result(inv.output).records if r.number == first.number)
    assert (record.at, record.text, record.service) == (since, first.text, first.service) and first.text in lead
    assert f"#{first.number}" in lead and f"#{first.invocation_id}" in lead
    # No cause stands in for the time.
    assert not lead.startswith(("Most likely cause", "最可能的原因"))
    # Trace and `ask --json` carry the form and the row that decided it.
    view = form_view(result.evaluation.composer_input.question_scope, audit)
    assert view is not None
    shown = view.as_json()
    assert shown["question_form"] == row.form and shown["form_coverage"]["first"]["at"] == since.isoformat().replace("+00:00", "Z")


@pytest.mark.parametrize(("world", "question", "verdict", "opening"), [
    ("bad-deploy", "When did pricing-service start returning errors?", "PASS", "No sign of errors in pricing-service"),
    ("cpu-saturation", "user-service CPU 很高多久了？", "PASS", "没有发现 user-service CPU 饱和 的迹象"),
    ("bad-deploy", "Since when has shipping-service been returning errors?", "LOW_CONFID", "Cannot tell about errors in"),
])
def test_healthy_and_absent_targets_keep_their_leads(settings: Settings, store: Store, world: str, question: str,
                                                     verdict: str, opening: str) -> None:
    result = run_session(question, settings=settings, store=store, world_id=world)
    row = result.evaluation.round_audit.question_form_coverage
    assert row is not None and (row.status == "answered") == (verdict == "PASS") and row.first is None
    assert result.verdict == verdict and result.evaluation.composer_output.answer_summary.startswith(opening)


def test_a_symptom_with_no_dated_record_cannot_say_since_when(tmp_path: Path, settings: Settings, store: Store) -> None:
    """bad-deploy's logs as files with their timestamps removed: the errors show, verified, but
    nothing dates them, so the time question is not answered and the answer says so."""
    world = settings.incidents_dir / "bad-deploy"
    logs = tmp_path / "logs"
    logs.mkdir()
    for line in (world / "logs.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        del row["ts"]
        with (logs / f"{row['service']}.jsonl").open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    undated = settings.model_copy(update={"backends": BackendsSettings(
        query_logs=BackendSettings(kind="files", path=str(logs)),
        query_metrics=BackendSettings(kind="prometheus", url="http://127.0.0.1:9", timeout_s=1),
        lookup_knowledge=BackendSettings(kind="folder", path=str(world / "knowledge")))})
    result = run_session("Since when has checkout-service been returning errors?", settings=undated, store=store)
    audit = result.evaluation.round_audit
    row = audit.question_form_coverage
    assert [(c.service, c.symptom, c.status) for c in audit.question_coverage] == [("checkout-service", "errors", "answered")]
    assert row is not None and (row.status, row.first) == ("not_answered", None)
    assert result.verdict == "LOW_CONFID"
    assert result.evaluation.composer_output.answer_summary.startswith(
        "Cannot tell since when there is errors in checkout-service: what the records show is checkout-service")
