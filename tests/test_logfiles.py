from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline.core.config import BackendSettings
from pipeline.tools import logfiles
from pipeline.tools.logfiles import LogFiles, iter_lines, parse_line, parse_timestamp, service_of_file
from pipeline.tools.queries import LogQuery, NoData


def utc(h: int, m: int, s: int = 0) -> datetime:
    return datetime(2026, 11, 28, h, m, s, tzinfo=UTC)


@pytest.fixture()
def log_dir(tmp_path: Path) -> Path:
    (tmp_path / "payment-service.log").write_text(
        "2026-11-28T10:00:01Z INFO started payment worker\n"
        "2026-11-28T10:02:13Z ERROR CPU使用率过高: 92.0%, 进程: java (PID: 1), 线程数: 245\n"
        "\tat com.example.Pay.run(Pay.java:42)\n"
        "2026-11-28 10:05:00,250 WARN slow response 5300ms from /pay\n"
        "2026-11-28T10:20:00+08:00 ERROR timezone offset line\n",
        encoding="utf-8",
    )
    rows = [
        {"ts": "2026-11-28T10:03:00Z", "level": "error", "message": "HikariPool-1 - Connection is not available", "service": "order-service"},
        {"ts": 1795860300000, "level": "info", "msg": "order 42 created", "service": "order-service"},
        {"timestamp": "2026-11-28T10:04:00Z", "level": "warning", "message": "payment callback slow", "service": "payment-service"},
    ]
    (tmp_path / "mixed.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    (tmp_path / "order-service.2026-11-28.log").write_bytes(
        b"2026-11-28T10:06:00Z ERROR bad bytes \xff\xfe in order payload\n2026-11-28T10:07:00Z INFO ok\n"
    )
    return tmp_path


def run(folder: Path, limit: int = 500, **kw) -> dict:
    return LogFiles(BackendSettings(kind="files", path=str(folder), limit=limit)).query_logs(LogQuery(**kw))


def test_line_shapes_are_detected_per_line() -> None:
    text = parse_line("2026-11-28T10:02:13Z ERROR CPU使用率过高: 92.0%")
    assert (text.timestamp, text.level, text.message) == (utc(10, 2, 13), "ERROR", "CPU使用率过高: 92.0%")
    js = parse_line('{"ts": "2026-11-28T10:03:00Z", "level": "warning", "msg": "slow", "service": "a"}')
    assert (js.timestamp, js.level, js.service, js.message) == (utc(10, 3), "WARN", "a", "slow")
    other = parse_line("\tat com.example.Pay.run(Pay.java:42)")
    assert other.timestamp is None and other.level is None and "Pay.java:42" in other.message


def test_epoch_and_offset_timestamps() -> None:
    assert parse_timestamp(1795860300) == parse_timestamp(1795860300000) == parse_timestamp("1795860300000000000")
    assert parse_timestamp("2026-11-28T18:00:00+08:00") == utc(10, 0)
    assert parse_timestamp("2026-11-28 10:00:00,5") == utc(10, 0).replace(microsecond=500000)


def test_service_from_file_name() -> None:
    assert service_of_file(Path("payment-service.log")) == "payment-service"
    assert service_of_file(Path("payment-service.1.log")) == "payment-service"
    assert service_of_file(Path("order-service-2026-11-28.jsonl")) == "order-service"
    assert service_of_file(Path("api-v2.log")) == "api-v2"


def test_all_lines_in_time_order(log_dir: Path) -> None:
    out = run(log_dir)
    stamps = [parse_timestamp(e["timestamp"]) for e in out["logs"] if e["timestamp"]]
    assert stamps == sorted(stamps)
    assert out["total"] == len(out["logs"]) == 10
    assert out["truncated"] is False


def test_service_filter_includes_lines_of_mixed_files(log_dir: Path) -> None:
    out = run(log_dir, service="payment-service")
    msgs = [e["message"] for e in out["logs"]]
    assert "payment callback slow" in msgs
    assert all(e["service"] == "payment-service" for e in out["logs"])
    assert not any("HikariPool" in m for m in msgs)


def test_minimum_level(log_dir: Path) -> None:
    out = run(log_dir, level="WARN")
    assert {e["level"] for e in out["logs"]} == {"WARN", "ERROR"}
    assert len(run(log_dir, level="ERROR")["logs"]) == 4


def test_keywords_are_case_insensitive_any_of_and_chinese(log_dir: Path) -> None:
    out = run(log_dir, keywords=["hikaripool", "线程数"])
    assert [e["service"] for e in out["logs"]] == ["payment-service", "order-service"]
    line = out["logs"][0]
    assert line["message"] == "CPU使用率过高: 92.0%, 进程: java (PID: 1), 线程数: 245"
    assert line["labels"] == {"file": "payment-service.log", "line": "2"}


def test_time_window(log_dir: Path) -> None:
    out = run(log_dir, start=utc(10, 2), end=utc(10, 5))
    assert [e["timestamp"] for e in out["logs"]] == [
        "2026-11-28T10:02:13Z", "2026-11-28T10:03:00Z", "2026-11-28T10:04:00Z", "2026-11-28T10:05:00Z",
    ]
    # Bounds are inclusive (the epoch-ms line is exactly 10:05:00); 10:05:00.250 is after the end.
    # The +08:00 line is 02:20 UTC, before the window.
    assert not any("timezone" in e["message"] for e in out["logs"])


def test_invalid_utf8_is_replaced_and_counted(log_dir: Path) -> None:
    out = run(log_dir, keywords=["bad bytes"])
    assert out["decode_errors"] == 2  # \xff and \xfe: two invalid sequences
    assert "\ufffd" in out["logs"][0]["message"]


def test_limit_keeps_the_newest_and_reports_the_total(log_dir: Path) -> None:
    out = run(log_dir, limit=3)
    assert out["truncated"] is True and out["total"] == 10
    assert [e["timestamp"] for e in out["logs"]] == [
        "2026-11-28T10:05:00.250Z", "2026-11-28T10:06:00Z", "2026-11-28T10:07:00Z",
    ]
    # The query's own limit applies when it is below the configured cap.
    assert len(run(log_dir, limit=500, **{"keywords": ["error"]})["logs"]) == 4


def test_no_match_is_no_data_and_missing_folder_is_an_error(log_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(NoData):
        run(log_dir, keywords=["no-such-thing"])
    with pytest.raises(NoData):
        run(log_dir, service="inventory-service")
    with pytest.raises(FileNotFoundError):
        run(tmp_path / "missing")


def test_streaming_across_blocks_and_cut_of_a_giant_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logfiles, "_BLOCK", 64)
    monkeypatch.setattr(logfiles, "MAX_LINE", 100)
    lines = [f"2026-11-28T10:00:{i:02d}Z INFO line {i} needle={i % 7 == 0}".encode() for i in range(60)]
    lines.insert(30, b"2026-11-28T10:00:30Z ERROR " + b"x" * 500 + b" needle=True tail")
    path = tmp_path / "svc.log"
    path.write_bytes(b"\n".join(lines))  # no final newline: the last line still counts
    every = list(iter_lines(path, None))
    assert [n for n, _ in every] == list(range(1, 62))
    assert every[30][1].startswith(b"2026-11-28T10:00:30Z ERROR") and len(every[30][1]) == 100
    assert every[-1][1].endswith(b"needle=False")
    hits = list(iter_lines(path, logfiles.needles(["Needle=TRUE"])))
    assert [n for n, _ in hits] == [1, 8, 15, 22, 29, 37, 44, 51, 58]
    for n, raw in hits:
        assert raw == every[n - 1][1]
