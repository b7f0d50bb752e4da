"""Settings: file, environment and explicit overrides, and clear errors for a bad file."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.core.config import load_settings
from pipeline.core.errors import ConfigError


def test_defaults_are_the_embedded_setup(tmp_path: Path) -> None:
    s = load_settings()
    assert s.provider == "offline" and s.db_url.startswith("sqlite:///") and s.shape == "split"
    assert s.backends.query_logs.kind == "bundled"


def test_file_then_environment_then_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "wb.yaml"
    cfg.write_text("provider: openai\nopenai: {model: file-model, timeout_s: 5}\ndigest: {enabled: false}\n"
                   "backends: {query_metrics: {kind: prometheus, url: http://file:9090}}\n", encoding="utf-8")
    monkeypatch.setenv("OPENAI_MODEL", "env-model")
    monkeypatch.setenv("LOKI_URL", "http://loki:3100")
    monkeypatch.setenv("PROMETHEUS_BEARER_TOKEN", "secret")
    monkeypatch.setenv("DATABASE_URL", "postgresql+psycopg://u:p@db/wb")
    s = load_settings(cfg, retry={"max_rounds": 2})
    assert s.provider == "openai" and s.openai.model == "env-model" and s.openai.timeout_s == 5
    assert s.shape == "single" and s.retry.max_rounds == 2
    assert s.backends.query_logs.kind == "loki" and s.backends.query_logs.url == "http://loki:3100"
    assert s.backends.query_metrics.url == "http://file:9090" and s.backends.query_metrics.bearer_token == "secret"
    assert s.db_url == "postgresql+psycopg://u:p@db/wb"


def test_bad_config_file_names_the_field(tmp_path: Path) -> None:
    cfg = tmp_path / "wb.yaml"
    cfg.write_text("retry: {max_rounds: 9}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="retry.max_rounds"):
        load_settings(cfg)
    cfg.write_text("- just a list\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="mapping"):
        load_settings(cfg)


# Every named variable the README documents: its value, how to read the setting, what it must hold.
NAMED = [
    ("DATABASE_URL", "postgresql+psycopg://u@db/wb", lambda s: s.db_url, "postgresql+psycopg://u@db/wb"),
    ("WORKBENCH_HOME", "/srv/wb", lambda s: str(s.home), "/srv/wb"),
    ("WORKBENCH_PROVIDER", "scripted", lambda s: s.provider, "scripted"),
    ("WORKBENCH_MODEL", "m-1", lambda s: s.model, "m-1"),
    ("OPENAI_BASE_URL", "http://llm:8000/v1", lambda s: s.openai.base_url, "http://llm:8000/v1"),
    ("OPENAI_API_KEY", "sk-x", lambda s: s.openai.api_key, "sk-x"),
    ("OPENAI_MODEL", "qwen", lambda s: s.openai.model, "qwen"),
    ("PROMETHEUS_URL", "http://p:9090", lambda s: (s.backends.query_metrics.kind, s.backends.query_metrics.url),
     ("prometheus", "http://p:9090")),
    ("PROMETHEUS_BEARER_TOKEN", "t1", lambda s: s.backends.query_metrics.bearer_token, "t1"),
    ("LOKI_URL", "http://l:3100", lambda s: (s.backends.query_logs.kind, s.backends.query_logs.url),
     ("loki", "http://l:3100")),
    ("LOKI_BEARER_TOKEN", "t2", lambda s: s.backends.query_logs.bearer_token, "t2"),
    ("WORKBENCH_LOG_DIR", "/var/log/app", lambda s: (s.backends.query_logs.kind, s.backends.query_logs.path),
     ("files", "/var/log/app")),
    ("WORKBENCH_RUNBOOK_DIR", "/srv/rb",
     lambda s: (s.backends.lookup_knowledge.kind, s.backends.lookup_knowledge.path), ("folder", "/srv/rb")),
    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://otel:4318", lambda s: s.telemetry.otlp_endpoint, "http://otel:4318"),
    ("WORKBENCH_NOTIFY_URL", "http://hook", lambda s: s.notify.url, "http://hook"),
]


@pytest.mark.parametrize(("var", "value", "read", "expected"), NAMED, ids=[n[0] for n in NAMED])
def test_each_documented_variable_reaches_its_setting(var: str, value: str, read, expected,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(var, value)
    assert read(load_settings()) == expected


def test_any_key_from_workbench_prefixed_variables_nested_by_double_underscore(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "wb.yaml"
    cfg.write_text("openai: {model: file-model, timeout_s: 5}\n", encoding="utf-8")
    monkeypatch.setenv("WORKBENCH_OPENAI__TIMEOUT_S", "30")
    monkeypatch.setenv("WORKBENCH_UI__EDITORS", '["alice"]')
    monkeypatch.setenv("OPENAI_MODEL", "named-model")
    monkeypatch.setenv("WORKBENCH_OPENAI__MODEL", "prefixed-model")
    s = load_settings(cfg)
    assert (s.openai.timeout_s, s.ui.editors, s.openai.model) == (30.0, ["alice"], "prefixed-model")


def test_an_empty_variable_counts_as_unset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("WORKBENCH_PROVIDER", "WORKBENCH_HOME", "OPENAI_MODEL", "LOKI_URL"):
        monkeypatch.setenv(var, "")
    s = load_settings()
    assert (s.provider, s.openai.model, s.backends.query_logs.kind) == ("offline", "gpt-4o-mini", "bundled")
    assert str(s.home) not in ("", ".")


@pytest.mark.parametrize(("var", "value", "starts"), [
    ("WORKBENCH_RETRY__MAX_ROUNDS", "9", "the environment: retry.max_rounds: "),
    ("WORKBENCH_UI__EDITORS", "alice", "the environment: "),
])
def test_a_bad_prefixed_variable_is_one_line_naming_the_environment(var: str, value: str, starts: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(var, value)
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert str(err.value).startswith(starts) and "\n" not in str(err.value)
