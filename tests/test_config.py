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
