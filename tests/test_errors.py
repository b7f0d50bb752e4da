"""Errors that explain: each user mistake from the "Foundations" issue ends in one line on stderr
and exit code 2 (never a traceback), and leaves no session row `running`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pipeline.core.config import ROOT, load_settings
from pipeline.core.errors import ConfigError, InputError, NotFound, RulesError, StoreError, WorkbenchError
from pipeline.frontends.cli import main
from pipeline.store import Store
from tests.stub_openai import PipelineModel, StubOpenAI, StubReply, chat_body

QUESTION = "payment-service times out since 10:00"
DEEP = '{"a": ' * 100_000 + "1" + "}" * 100_000


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The one line a refused command prints, after checking the exit code and the line's shape."""
    code, _, err = _cli(capsys, *argv)
    assert code == 2
    assert "Traceback" not in err
    # Tool progress lines may come first; the error is the last line and the only other one.
    lines = [line for line in err.strip().splitlines() if not line.lstrip().startswith("tool #")]
    assert len(lines) == 1 and lines[0].startswith("workbench: "), err
    return lines[0].removeprefix("workbench: ")


def _statuses() -> list[str]:
    rows, _ = Store(load_settings().db_url).list_sessions(limit=100)
    return [r["status"] for r in rows]


def test_error_classes_share_one_base() -> None:
    from pipeline.core.errors import BundleError, LlmCallError, StageFailure
    from pipeline.llm.prompts import PromptError
    from pipeline.runs.session import SessionFailed
    from pipeline.store import StaleRuleVersion
    from pipeline.tools.http import BackendError

    for cls in (BundleError, LlmCallError, PromptError, StageFailure, SessionFailed, StaleRuleVersion,
                BackendError, RulesError, NotFound, ConfigError, StoreError, InputError):
        assert issubclass(cls, WorkbenchError), cls
    assert not issubclass(NotFound, KeyError)


def test_many_rule_problems_still_print_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = "ruleMetadata:\n" + "".join(f"  rule.{i}: {{}}\n" for i in range(12))
    line = _refused(capsys, "replay", "--rules", str(_rules_dir(tmp_path, bad.encode())))
    # Each shipped rule lacks its metadata and each of the 12 is unlisted: far more than five lines.
    from pipeline.gatekeeper import load_rules

    problems = len(load_rules(ROOT / "rules").rules) + 12
    assert line.count("; ") == 5 and line.endswith(f"; and {problems - 5} more")


def test_ask_unknown_world(capsys: pytest.CaptureFixture[str]) -> None:
    line = _refused(capsys, "ask", "--world", "nope", QUESTION)
    assert line.startswith("no bundled incident world 'nope' in ") and "known: " in line and "gateway-timeout" in line
    assert _statuses() == []


def test_simulate_unknown_world(capsys: pytest.CaptureFixture[str]) -> None:
    line = _refused(capsys, "simulate", "nope")
    assert line.startswith("no bundled incident world 'nope'")


def test_misspelt_settings_key_names_key_and_file(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "workbench.yaml"
    cfg.write_text("provider: offline\nopenai:\n  modle: gpt-4o\n", encoding="utf-8")
    monkeypatch.setenv("WORKBENCH_CONFIG", str(cfg))
    line = _refused(capsys, "ask", QUESTION)
    assert line == f"{cfg}: openai.modle: unknown key; did you mean 'model'?"


def test_settings_file_named_but_missing(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "wrokbench.yaml"
    assert _refused(capsys, "--config", str(missing), "ask", QUESTION) == f"{missing}: no such settings file"


def test_bad_value_from_the_environment_says_so(capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_PROVIDER", "gpt")
    line = _refused(capsys, "ask", QUESTION)
    assert line.startswith("the environment: provider: ") and "(got 'gpt')" in line


def test_postgresql_url_without_the_driver(capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # None in sys.modules makes `import psycopg` fail as if the [postgres] extra were missing.
    monkeypatch.setitem(sys.modules, "psycopg", None)
    monkeypatch.setenv("DATABASE_URL", "postgresql://wb:s3cret@127.0.0.1:1/wb")
    line = _refused(capsys, "ask", QUESTION)
    assert "driver" in line and "psycopg" in line and "[postgres]" in line
    assert "s3cret" not in line


def test_runbook_dir_pointing_nowhere_stores_nothing(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "no-runbooks"
    monkeypatch.setenv("WORKBENCH_RUNBOOK_DIR", str(missing))
    line = _refused(capsys, "ask", QUESTION)
    assert line.startswith("evidence backends cannot be set up: ") and str(missing) in line
    assert "WORKBENCH_RUNBOOK_DIR" in line
    assert _statuses() == []


def test_crash_after_the_row_exists_marks_it_failed_at_its_stage(capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.core.errors import StageFailure
    from pipeline.llm.offline.provider import OfflineProvider

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise StageFailure("diagnosis", "endpoint went away")

    monkeypatch.setattr(OfflineProvider, "diagnose", broken)
    line = _refused(capsys, "ask", "--world", "gateway-timeout", QUESTION)
    assert line.startswith("session s-") and "failed at diagnosis: diagnosis: endpoint went away" in line
    row = Store(load_settings().db_url).get_session(line.split()[1])
    assert (row["status"], row["stage"]) == ("failed", "diagnosis")
    assert _statuses() == ["failed"]


# Root writes into read-only directories, so under root (CI) only the under_a_file case can fail the
# write; it takes the same path through the store's refusal.
_UNWRITABLE = ["under_a_file"] + ([] if os.geteuid() == 0 else ["read_only_dir"])


@pytest.mark.parametrize("how", _UNWRITABLE)
def test_home_that_cannot_be_written(how: str, capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    if how == "under_a_file":
        (tmp_path / "plain-file").write_text("", encoding="utf-8")
        home = tmp_path / "plain-file" / "home"
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        home = locked / "home"
    monkeypatch.setenv("WORKBENCH_HOME", str(home))
    line = _refused(capsys, "ask", QUESTION)
    assert str(home) in line and ("cannot" in line)


def _rules_dir(tmp_path: Path, metadata: bytes) -> Path:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "index.yaml").write_bytes((ROOT / "rules" / "index.yaml").read_bytes())
    (rules / "metadata.yaml").write_bytes(metadata)
    return rules


def test_non_utf8_rules_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    text = (ROOT / "rules" / "metadata.yaml").read_text(encoding="utf-8")
    rules = _rules_dir(tmp_path, text.encode("gb18030"))
    line = _refused(capsys, "replay", "--rules", str(rules))
    assert line.startswith("metadata.yaml: file: not UTF-8 text (byte 0x")


def test_5000_deep_rules_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rules = _rules_dir(tmp_path, b"ruleMetadata: " + b"[" * 5000 + b"]" * 5000 + b"\n")
    line = _refused(capsys, "replay", "--rules", str(rules))
    assert line.startswith("metadata.yaml: line 1, column ") and line.endswith("nested deeper than 32 levels")


class _DeepDiagnosis(PipelineModel):
    """The pipeline model, except that its diagnosis is JSON nested 100,000 levels deep."""

    def diagnosis(self, messages: list[dict[str, Any]]) -> StubReply:
        # 800,000 characters in chunks of 4 cost the SDK minutes of chunk parsing; what is tested is
        # the reply's depth, not its chunking.
        return StubReply(body=chat_body(DEEP), chunk_chars=8192)


def test_100k_deep_llm_reply_is_malformed_and_recorded(capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    with StubOpenAI(responder=_DeepDiagnosis()) as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("OPENAI_MODEL", "stub-model")
        code, out, err = _cli(capsys, "ask", "--provider", "openai", "--world", "gateway-timeout", QUESTION)
    assert code == 0 and "Traceback" not in err
    assert "\n[LOW_CONFID] session " in out  # the verdict line after the answer
    store = Store(load_settings().db_url)
    sid = out.split("\n[LOW_CONFID] session ")[1].split()[0]
    assert store.get_session(sid)["status"] == "completed"
    diagnosis = [c for c in store.llm_calls(sid) if c["stage"] == "diagnosis"]
    assert diagnosis and all(c["parse_status"] == "malformed" for c in diagnosis)
    assert all("nested deeper than" in c["error"] for c in diagnosis)
    assert diagnosis[0]["raw_response"] == DEEP  # recorded whole: the audit shows what came back
    code, out, err = _cli(capsys, "show", sid)
    assert code == 0 and "Traceback" not in err


@pytest.mark.slow
def test_lone_surrogate_in_a_question(tmp_path: Path) -> None:
    # Bytes that are not UTF-8 reach Python as lone surrogates (surrogateescape); a real
    # process, so argv decoding and the standard streams are the genuine ones.
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    ask = subprocess.run([sys.executable, "-m", "pipeline", "ask", b"payment-service \xff times out"],
                         capture_output=True, env=env, cwd=tmp_path, timeout=300)
    assert ask.returncode == 0, ask.stderr.decode(errors="replace")
    assert b"Traceback" not in ask.stderr
    sid = ask.stdout.split(b"] session ")[1].split()[0].decode()  # the verdict line after the answer
    assert Store(load_settings().db_url).get_session(sid)["question"] == "payment-service \ufffd times out"
    show = subprocess.run([sys.executable, "-m", "pipeline", "show", b"s-\xff"], capture_output=True, env=env,
                          cwd=tmp_path, timeout=300)
    assert show.returncode == 2 and b"Traceback" not in show.stderr
    assert show.stderr.startswith(b"workbench: ") and show.stderr.count(b"\n") == 1


def test_printing_a_lone_surrogate_escapes_it(capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import pipeline.frontends.cli as cli

    def say(args: Any) -> int:
        print("log line \udcff")
        raise InputError("bad \udcff input")

    monkeypatch.setattr(cli, "cmd_doctor", say)
    code, out, err = _cli(capsys, "doctor")
    assert code == 2 and out == "log line \\udcff\n" and err == "workbench: bad \\udcff input\n"


def test_ui_shows_a_workbench_error_in_a_message_box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The frame fails before any page can draw: app.py's run_app turns it into st.error.
    from streamlit.testing.v1 import AppTest

    cfg = tmp_path / "workbench.yaml"
    cfg.write_text("openai:\n  modle: gpt-4o\n", encoding="utf-8")
    monkeypatch.setenv("WORKBENCH_CONFIG", str(cfg))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    assert not at.exception, at.exception
    # The box holds the message as Markdown source with every markup character escaped (stored
    # text is shown as typed); the reader sees it with the escapes undone.
    shown = [re.sub(r"\\(.)", r"\1", e.value) for e in at.error]
    assert shown == [f"{cfg}: openai.modle: unknown key; did you mean 'model'?"]
