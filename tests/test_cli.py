"""Every CLI command, through `python -m pipeline` and the `main` entry point."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.frontends.cli import main

QUESTION = "payment API times out since 10:00, what's going on?"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def ask_json(capsys: pytest.CaptureFixture[str], question: str = QUESTION) -> dict:
    code, out, _ = run(capsys, "ask", question, "--json")
    assert code == 0
    return json.loads(out)


@pytest.mark.slow  # starts a process
def test_python_dash_m_and_console_script_entry(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "pipeline", "--help"], capture_output=True, text=True, check=True)
    for command in ("ask", "show", "export", "import", "check", "replay", "eval", "doctor", "simulate"):
        assert command in proc.stdout


def test_ask_prints_answer_verdict_and_session(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "ask", "支付接口最近出现超时，帮我排查")
    assert code == 0
    # The answer first; the verdict line and the sample notice after it.
    answer, verdict, notice = out.rstrip("\n").rsplit("\n", 2)
    assert answer and not answer.startswith("[") and verdict.startswith("[") and " session s-" in verdict
    assert "cpu-saturation" in notice


def test_ask_json_shape(capsys: pytest.CaptureFixture[str]) -> None:
    data = ask_json(capsys)
    assert set(data) == {"session_id", "verdict", "ungated", "final_answer", "lead", "sample_incident",
                         "time_window", "verifier_evaluation", "question_form", "proposition", "form_coverage", "decided_by"}
    # "since 10:00" with no date: read on the day of the latest record of the asked service.
    assert data["time_window"]["start"] == "2026-11-28T10:00:00Z" and data["time_window"]["text"] == "since 10:00"
    assert data["time_window"]["anchor"]["service"] == "payment-service"
    # The question's form and the coverage row that decided whether it was answered.
    row, decided = data["form_coverage"], data["decided_by"]
    assert data["question_form"] == row["form"] and row["status"] in ("answered", "not_answered")
    assert (decided["service"], decided["symptom"]) == (row["service"], row["symptom"])
    assert data["lead"] and data["final_answer"].startswith(data["lead"])  # the JSON leads as the CLI does
    assert data["verifier_evaluation"]["gatekeeper_result"]["status"] in ("pass", "warn", "fail")
    assert data["verifier_evaluation"]["facts_checked"]


def test_ask_empty_question_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "ask", "  ")
    assert code == 2 and "empty" in err


def test_show_renders_the_audit_chain(capsys: pytest.CaptureFixture[str]) -> None:
    sid = ask_json(capsys)["session_id"]
    code, out, _ = run(capsys, "show", sid)
    assert code == 0
    for heading in ("final answer", "composer input", "verifier", "gatekeeper", "tool invocations", "llm calls"):
        assert heading in out
    assert run(capsys, "show", "s-nope")[0] == 2


def test_show_speaks_the_readers_language(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Statuses in words with their ids beside them: from --lang, else a locale naming zh or en,
    else the settings' ui.language."""
    sid = ask_json(capsys)["session_id"]
    monkeypatch.delenv("LC_ALL", raising=False)
    monkeypatch.delenv("LC_MESSAGES", raising=False)
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    out = run(capsys, "show", sid)[1]
    assert f"session {sid}  (已完成 (completed)," in out and "-> 正常 (ok)" in out
    assert f"session {sid}  (completed," in run(capsys, "show", sid, "--lang", "en")[1]
    monkeypatch.setenv("LANG", "C.UTF-8")  # names no language: the settings decide
    monkeypatch.setenv("WORKBENCH_UI__LANGUAGE", "zh")
    assert "(已完成 (completed)," in run(capsys, "show", sid)[1]


def test_export_import_check_round_trip(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    sid = ask_json(capsys)["session_id"]
    code, out, _ = run(capsys, "export", sid)
    assert code == 0
    bundle = json.loads(out)
    assert bundle["bundle_version"] == 1 and bundle["tool_invocations"]
    path = tmp_path / "bundle.json"
    path.write_text(out, encoding="utf-8")

    code, out, _ = run(capsys, "check", str(path), "--json")
    assert code == 0
    checked = json.loads(out)
    assert set(checked) >= {"executor_output_parse_status", "gatekeeper_result", "verifier_output",
                            "verifier_evaluation", "composer_input", "composer_output", "final_answer"}
    assert checked["gatekeeper_result"] == bundle["verifier_evaluation"]["gatekeeper_result"]

    # Importing into the same store collides on every invocation id: they must be renumbered.
    code, out, _ = run(capsys, "import", str(path))
    assert code == 0 and "renumbered" in out
    new_sid = out.split("session ")[1].split(" ")[0]
    assert new_sid != sid
    code, out, _ = run(capsys, "export", new_sid)
    reimported = json.loads(out)
    old_ids = {inv["id"] for inv in bundle["tool_invocations"]}
    new_ids = {inv["id"] for inv in reimported["tool_invocations"]}
    assert not old_ids & new_ids
    path2 = tmp_path / "bundle2.json"
    path2.write_text(out, encoding="utf-8")
    code, out, _ = run(capsys, "check", str(path2), "--json")
    again = json.loads(out)
    assert again["gatekeeper_result"]["status"] == checked["gatekeeper_result"]["status"]
    assert again["gatekeeper_result"]["failed_rules"] == checked["gatekeeper_result"]["failed_rules"]
    assert again["verifier_evaluation"]["verdict"] == checked["verifier_evaluation"]["verdict"]


def test_check_bad_bundle_exits_2_naming_the_field(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    sid = ask_json(capsys)["session_id"]
    _, out, _ = run(capsys, "export", sid)
    bundle = json.loads(out)
    bundle["tool_invocations"][0]["id"] = "not-a-number"
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(bundle), encoding="utf-8")
    code, _, err = run(capsys, "check", str(path))
    assert code == 2 and "tool_invocations[0].id" in err
    (tmp_path / "junk.json").write_text("{not json", encoding="utf-8")
    code, _, err = run(capsys, "check", str(tmp_path / "junk.json"))
    assert code == 2 and "not a JSON bundle" in err
    bundle = json.loads(out)
    del bundle["executor_raw_output"]
    path.write_text(json.dumps(bundle), encoding="utf-8")
    code, _, err = run(capsys, "import", str(path))
    assert code == 2 and "executor_raw_output" in err


def test_check_with_other_rules_dir(capsys: pytest.CaptureFixture[str], tmp_path: Path, repo_root: Path) -> None:
    sid = ask_json(capsys)["session_id"]
    _, out, _ = run(capsys, "export", sid)
    path = tmp_path / "b.json"
    path.write_text(out, encoding="utf-8")
    bad_rules = tmp_path / "rules"
    bad_rules.mkdir()
    (bad_rules / "index.yaml").write_text("rules: [", encoding="utf-8")
    (bad_rules / "metadata.yaml").write_text("ruleMetadata: {}", encoding="utf-8")
    code, _, err = run(capsys, "check", str(path), "--rules", str(bad_rules))
    assert code == 2 and "index.yaml" in err


def test_replay_summarises_changes(capsys: pytest.CaptureFixture[str], tmp_path: Path, repo_root: Path) -> None:
    sid = ask_json(capsys)["session_id"]
    assert run(capsys, "replay") == (0, "1 sessions replayed, 0 changed\n", "")
    # Candidate rules that demand every keyword of a claim in its excerpts: the PASS no longer holds.
    strict = tmp_path / "rules"
    shutil.copytree(repo_root / "rules", strict)
    index = (strict / "index.yaml").read_text(encoding="utf-8")
    at = index.index("id: claim.evidence_utilization")
    (strict / "index.yaml").write_text(index[:at] + index[at:].replace("enabled: false", "enabled: true", 1), encoding="utf-8")
    metadata = (strict / "metadata.yaml").read_text(encoding="utf-8")
    at = metadata.index("  claim.evidence_utilization:")
    (strict / "metadata.yaml").write_text(metadata[:at] + metadata[at:].replace("severity: warning", "severity: error", 1)
                                          .replace("verdictImpact: warn_only", "verdictImpact: low_confid_on_fail", 1)
                                          .replace("minKeywordCoverage: 0.5", "minKeywordCoverage: 1.0", 1), encoding="utf-8")
    code, out, _ = run(capsys, "replay", "--rules", str(strict))
    assert (code, out) == (0, "1 sessions replayed, 1 changed; status pass->fail 1; verdict PASS->LOW_CONFID 1\n")
    code, out, _ = run(capsys, "replay", "--rules", str(strict), "--json")
    [row] = json.loads(out)
    assert (row["session_id"], row["old_verdict"], row["projected_verdict"]) == (sid, "PASS", "LOW_CONFID")
    assert row["rules_responsible"] == ["claim.evidence_utilization"]
    assert {e["rule_id"] for e in row["result"]["errors"]} == {"claim.evidence_utilization"}  # JSON, not a repr


def test_doctor_offline(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "doctor")
    lines = out.splitlines()
    assert code == 0
    assert "[ok] provider offline: no LLM endpoint is used" in lines
    # every tool backend is probed, each against the bundled incident worlds
    assert {line.split(":")[0] for line in lines if "bundled" in line} == {"query_logs", "query_metrics", "lookup_knowledge"}
    assert all(line.endswith("incident world(s)") for line in lines if "bundled" in line)


def test_eval_exit_code_follows_expectations(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    (fixtures / "ok.yaml").write_text("incident: cpu-saturation\nquestion: payment API times out, why?\n"
                                      "expect: {verdict_in: [PASS, LOW_CONFID]}\n", encoding="utf-8")
    config = tmp_path / "wb.yaml"
    config.write_text(f"fixtures_dir: {fixtures}\n", encoding="utf-8")
    monkeypatch.setenv("WORKBENCH_CONFIG", str(config))
    code, out, _ = run(capsys, "eval", "--json")
    assert code == 0 and json.loads(out)[0]["passed"] is True
    (fixtures / "bad.yaml").write_text("incident: cpu-saturation\nquestion: payment API times out, why?\n"
                                       "expect: {verdict: REJECT}\n", encoding="utf-8")
    code, out, _ = run(capsys, "eval")
    assert code == 1 and "1/2 fixtures passed" in out


@pytest.mark.slow  # starts a process
def test_simulate_serves_an_incidents_metrics(tmp_path: Path) -> None:
    import socket
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "pipeline", "simulate", "cpu-saturation", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        body = ""
        deadline = time.monotonic() + 60  # a loaded machine starts Python slowly; a dead server ends the wait
        while not body and time.monotonic() < deadline and proc.poll() is None:
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
            except OSError:
                time.sleep(0.2)
        assert 'process_cpu_usage_percent{pod="pay-7d9f-2",service="payment-service"} 92.0' in body
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_eval_rules_option_wins_over_an_applied_version(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch, repo_root: Path) -> None:
    from helpers import rules_without

    from pipeline.core.config import load_settings
    from pipeline.store import Store

    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    (fixtures / "phrase.yaml").write_text(
        "incident: cpu-saturation\nquestion: payment API times out since 10:00, what's going on?\n"
        "config: {digest: {enabled: false}}\n"
        "script:\n  diagnosis: '{\"answer_version\": \"executor_evidence_v2\", \"claims\": [{\"claim_id\": \"claim-1\","
        " \"claim_type\": \"symptom\", \"support_level\": \"direct\", \"claim_text\": \"payment-service CPU is probably"
        " 92.0%.\", \"evidence_bindings\": [{\"tool_name\": \"query_metrics\", \"source_invocation_ids\":"
        " [\"{inv:query_metrics:0}\"], \"evidence_excerpt\": \"CPU使用率过高: 92.0%\"}]}]}'\n"
        "expect: {failed_rules: [claim.hallucination_phrases]}\n", encoding="utf-8")
    config = tmp_path / "wb.yaml"
    config.write_text(f"fixtures_dir: {fixtures}\n", encoding="utf-8")
    monkeypatch.setenv("WORKBENCH_CONFIG", str(config))
    # A version applied in the workbench that switches the phrase rule off...
    relaxed = rules_without(repo_root / "rules", tmp_path / "relaxed", "claim.hallucination_phrases")
    Store(load_settings().db_url).apply_rule_version(
        index_yaml=(relaxed / "index.yaml").read_text(encoding="utf-8"),
        metadata_yaml=(relaxed / "metadata.yaml").read_text(encoding="utf-8"), author="t", comment="", based_on=None)
    assert run(capsys, "eval")[0] == 1
    # ...is overridden by --rules naming the shipped rules.
    assert run(capsys, "eval", "--rules", str(repo_root / "rules"))[0] == 0


def test_every_cli_option_has_help_text():
    import argparse

    from pipeline.frontends.cli import build_parser

    missing: list[str] = []

    def walk(parser: argparse.ArgumentParser, prefix: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, f"{prefix} {name}")
            elif action.dest != "help" and not action.help:
                missing.append(f"{prefix} {'/'.join(action.option_strings) or action.dest}")

    walk(build_parser(), "workbench")
    assert missing == []


def test_an_answer_from_a_bundled_recording_names_the_sample_and_its_window(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = ask_json(capsys)
    assert data["sample_incident"]["id"] == "cpu-saturation"
    assert "cpu-saturation, 2026-11-28 09:30-11:00 UTC" in data["sample_incident"]["notice"]
    _, out, _ = run(capsys, "ask", "支付接口最近出现超时，帮我排查")
    assert out.splitlines()[-1].startswith("本回答依据内置示例事故 cpu-saturation（2026-11-28 09:30-11:00 UTC）")
    # Evidence from one's own backends only (log and runbook folders, a Prometheus) is no sample.
    for folder in ("logs", "runbooks"):
        (tmp_path / folder).mkdir()
    (tmp_path / "logs" / "payment-service.log").write_text(
        "2026-12-01T10:00:01Z ERROR payment-service request timeout after 3000ms\n")
    monkeypatch.setenv("WORKBENCH_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setenv("WORKBENCH_RUNBOOK_DIR", str(tmp_path / "runbooks"))
    monkeypatch.setenv("PROMETHEUS_URL", "http://127.0.0.1:9")  # nothing there: that tool call fails
    data = ask_json(capsys)
    assert data["sample_incident"] is None and "sample incident" not in data["final_answer"]


def test_first_hour_errors_say_what_is_wrong_at_once(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text("\n")
    code, _, err = run(capsys, "check", str(empty))
    assert code == 2 and "is empty" in err and "line 1 column 1" not in err
    # OpenAI's own endpoint without a key: refused before any call or stored session.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    code, _, err = run(capsys, "ask", QUESTION, "--provider", "openai")
    assert code == 2 and "OPENAI_API_KEY" in err
    code, out, _ = run(capsys, "sessions")
    assert "s-" not in out
    code, _, err = run(capsys, "show", "s-nothing")
    assert code == 2 and "`workbench sessions`" in err


def test_doctor_names_the_database_without_its_password(capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _, out, _ = run(capsys, "doctor")
    first = out.splitlines()[0]
    assert first.startswith("database: sqlite:///") and first.endswith("/workbench.db")
    monkeypatch.setenv("DATABASE_URL", "postgresql://ops:hunter2@db.internal:5432/wb")
    _, out, _ = run(capsys, "doctor")
    assert "database: postgresql://ops:***@db.internal:5432/wb" in out and "hunter2" not in out


def test_sessions_prints_a_header_and_says_what_the_limit_left_out(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "sessions")[1].startswith("no sessions yet")
    first, second = ask_json(capsys)["session_id"], ask_json(capsys, "订单服务内存泄漏吗？")["session_id"]
    code, out, _ = run(capsys, "sessions", "--limit", "1")
    header, row, more = out.splitlines()
    assert header.split()[:4] == ["ID", "CREATED", "(UTC)", "STATUS"] and header.endswith("QUESTION")
    assert row.startswith(second) and first not in out
    assert more == "1 more: use --limit 2 to list them all"


@pytest.mark.slow  # starts a process
def test_a_first_ask_on_a_fresh_home_prints_no_warning(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    env.update(WORKBENCH_HOME=str(tmp_path / "fresh"), PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    proc = subprocess.run([sys.executable, "-W", "default", "-m", "pipeline", "ask", QUESTION], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stderr, proc.stderr
