from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from pipeline.text.timewindow import clock_without_date, parse_time_window

UTC = UTC
CST = timezone(timedelta(hours=8))
NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def at(h: int, m: int = 0, day: int = 28) -> datetime:
    return datetime(2026, 11, day, h, m, tzinfo=UTC)


@pytest.mark.parametrize(
    ("question", "start"),
    [
        ("payment-service 最近30分钟 CPU 为什么高？", at(11, 30)),
        ("近1小时有哪些告警", at(11)),
        ("过去2小时的错误日志", at(10)),
        ("过去两小时的错误日志", at(10)),
        ("最近半小时", at(11, 30)),
        ("最近十五分钟", at(11, 45)),
        ("what failed in the last hour?", at(11)),
        ("errors in the last 45 minutes", at(11, 15)),
        ("past 2h of order-service logs", at(10)),
        ("last 1.5 hours", at(10, 30)),
        ("近3天", at(12, day=25)),
    ],
)
def test_relative_windows_end_now(question: str, start: datetime) -> None:
    assert parse_time_window(question, NOW) == (start, NOW)


@pytest.mark.parametrize(
    ("question", "start"),
    [
        ("what happened since 10:00?", at(10)),
        ("今天10点以来 payment-service 报错", at(10)),
        ("10点半以来", at(10, 30)),
        ("从9点15分开始的超时", at(9, 15)),
        ("since 9:05 am", at(9, 5)),
        ("errors after 11:40", at(11, 40)),
    ],
)
def test_since_a_clock_time(question: str, start: datetime) -> None:
    assert parse_time_window(question, NOW) == (start, NOW)


@pytest.mark.parametrize(
    ("question", "window"),
    [
        ("from 10:00 to 11:30", (at(10), at(11, 30))),
        ("between 10:00 and 11:30 what broke", (at(10), at(11, 30))),
        ("10:00-11:30 的告警", (at(10), at(11, 30))),
        ("从10点到11点半", (at(10), at(11, 30))),
        ("昨天23:00到01:00", (at(23, day=26), at(1, day=27))),
    ],
)
def test_explicit_ranges(question: str, window: tuple[datetime, datetime]) -> None:
    assert parse_time_window(question, NOW) == window


def test_a_clock_time_still_ahead_means_yesterday() -> None:
    assert parse_time_window("since 14:00", NOW) == (at(14, day=27), NOW)
    assert parse_time_window("from 13:00 to 14:00", NOW) == (at(13, day=27), at(14, day=27))


def test_afternoon_words_and_pm() -> None:
    late = datetime(2026, 11, 28, 20, 0, tzinfo=UTC)
    assert parse_time_window("下午3点以来", late) == (at(15), late)
    assert parse_time_window("since 3pm", late) == (at(15), late)


def test_clock_times_are_in_the_callers_zone() -> None:
    now_cst = datetime(2026, 11, 28, 20, 0, tzinfo=CST)  # 12:00 UTC
    assert parse_time_window("今天10点以来", now_cst) == (at(2), at(12))
    assert parse_time_window("since 10:00", NOW, tz=CST) == (at(2), NOW)


def test_whole_days() -> None:
    assert parse_time_window("今天的告警", NOW) == (at(0), NOW)
    assert parse_time_window("what happened yesterday", NOW) == (at(0, day=27), at(0))


def test_naive_now_is_utc() -> None:
    assert parse_time_window("last hour", NOW.replace(tzinfo=None)) == (at(11), NOW)


@pytest.mark.parametrize(
    "question",
    ["payment-service CPU 为什么这么高？", "HTTP 502 from api-gateway", "order 42 failed at checkout", "数据库连接池耗尽怎么办"],
)
def test_no_window(question: str) -> None:
    assert parse_time_window(question, NOW) is None


# A clock time without a date over data from another day: read on the day of the
# latest evidence the question can reach, not today. TODAY is a week after the data's last record.
TODAY = datetime(2026, 12, 5, 15, 0, tzinfo=UTC)
LATEST = at(10, 59)


@pytest.mark.parametrize(
    ("question", "window"),
    [
        ("payment API times out since 10:00", (at(10), TODAY)),
        ("支付接口10点以后一直超时", (at(10), TODAY)),
        ("between 9:30 and 10", (at(9, 30), at(10))),
        ("9点半到10点之间的错误", (at(9, 30), at(10))),
        # Still ahead of the latest record on its day: the day before it, as with `now`.
        ("errors since 11:30", (at(11, 30, day=27), TODAY)),
        # A day word or a relative window keeps to the clock.
        ("errors since today 10:00", (datetime(2026, 12, 5, 10, 0, tzinfo=UTC), TODAY)),
        ("errors in the last hour", (TODAY - timedelta(hours=1), TODAY)),
    ],
)
def test_a_clock_time_without_a_date_is_read_on_the_latest_evidence_day(
        question: str, window: tuple[datetime, datetime]) -> None:
    assert parse_time_window(question, TODAY, anchor=LATEST) == window


def test_which_windows_an_anchor_moves() -> None:
    assert clock_without_date("since 10:00") and clock_without_date("10点以后") and clock_without_date("9:30 to 10")
    assert not clock_without_date("since yesterday 10:00") and not clock_without_date("昨天10点以后")
    assert not clock_without_date("last 30 minutes") and not clock_without_date("why is it slow")


def test_an_anchor_after_now_is_not_used() -> None:
    assert parse_time_window("since 10:00", NOW, anchor=NOW + timedelta(days=2)) == (at(10), NOW)


def test_an_ask_over_logs_from_another_day_reads_since_10_on_their_day(tmp_path, settings, store) -> None:  # noqa: ANN001
    """cpu-saturation's logs as files (2026-11-28, 09:30-11:00), asked "since 10:00" on a later day:
    the window is that day's 10:00, its reason the latest payment-service line, and the logs are found."""
    import json

    from pipeline.core.config import BackendSettings, BackendsSettings
    from pipeline.runs.session import run_session

    world = settings.incidents_dir / "cpu-saturation"
    logs = tmp_path / "logs"
    logs.mkdir()
    for line in (world / "logs.jsonl").read_text(encoding="utf-8").splitlines():
        with (logs / f"{json.loads(line)['service']}.jsonl").open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")
    live = settings.model_copy(update={"backends": BackendsSettings(
        query_logs=BackendSettings(kind="files", path=str(logs)),
        query_metrics=BackendSettings(kind="prometheus", url="http://127.0.0.1:9", timeout_s=1),
        lookup_knowledge=BackendSettings(kind="folder", path=str(world / "knowledge")))})
    result = run_session("payment-service times out since 10:00, what's going on?", settings=live, store=store)
    scope = result.evaluation.composer_input.question_scope
    window = scope.time_window if scope else None
    assert window and window.start == at(10) and window.anchor
    assert window.anchor.service == "payment-service" and window.anchor.at.date() == at(10).date()
    found = [i for i in store.invocations(result.session_id) if i.tool_name == "query_logs" and i.status == "ok"]
    assert found and all(json.loads(i.output)["logs"][0]["timestamp"] >= "2026-11-28T10:00" for i in found)
    assert "request timeout after 3000ms" in result.final_answer
