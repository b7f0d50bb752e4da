"""One settings object for the engine, the CLI and the workbench, read by pydantic-settings.

Sources, later wins: built-in defaults -> `workbench.yaml` (or the file named by
WORKBENCH_CONFIG) -> the named environment variables (DATABASE_URL, OPENAI_BASE_URL,
OPENAI_API_KEY, OPENAI_MODEL, PROMETHEUS_URL, LOKI_URL, WORKBENCH_LOG_DIR, WORKBENCH_RUNBOOK_DIR,
PROMETHEUS_BEARER_TOKEN, LOKI_BEARER_TOKEN, OTEL_EXPORTER_OTLP_ENDPOINT, WORKBENCH_NOTIFY_URL)
-> WORKBENCH_<KEY> for any key, `__` between nested keys (WORKBENCH_PROVIDER, WORKBENCH_MODEL,
WORKBENCH_HOME, WORKBENCH_OPENAI__TIMEOUT_S) -> explicit keyword overrides. An empty variable
counts as unset. The embedded default needs none of them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict

try:
    from pydantic_settings import SettingsError
except ImportError:  # pydantic-settings before 2.4 (the floor) keeps it in its sources module
    from pydantic_settings.sources import SettingsError  # type: ignore[attr-defined,no-redef]

from pipeline.core.config_file import read_config_file, settings_error
from pipeline.core.errors import ConfigError
from pipeline.core.resources import SOURCE_ROOT, default_config_file, default_home, resource_dir
from pipeline.text.redact import remember_settings

ROOT = SOURCE_ROOT  # the checkout (tests and scripts read bundled data relative to it)


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Switch(_Section):
    enabled: bool = True


class ComposerSettings(Switch):
    # Facts listed first in the answer; the rest go under "other observations".
    max_key_facts: int = Field(default=4, ge=1, le=20)
    # Composer guard: a sentence's content words must overlap one composer-input item by at
    # least this share, or the sentence is not attributable and the template is used.
    min_sentence_overlap: float = Field(default=0.5, ge=0.0, le=1.0)


class RetrySettings(_Section):
    max_rounds: int = Field(default=1, ge=1, le=3)


class OpenAISettings(_Section):
    base_url: str | None = None
    api_key: str | None = None
    model: str = "gpt-4o-mini"
    # e.g. {"digest": "gpt-4o-mini", "composer": "qwen2.5-7b-instruct"}
    stage_models: dict[str, str] = Field(default_factory=dict)
    # Replies stream: the longest wait for the next token (the first includes reading the prompt).
    # A slow model that keeps generating is not cut by it; `workbench doctor` measures what fits.
    timeout_s: float = 60.0
    # One stage's whole wall time (every request, retry, backoff and re-ask of it): a stalled or
    # rambling endpoint fails the stage at this bound, not after max_retries full timeouts.
    stage_timeout_s: float = Field(default=180.0, gt=0)
    # Per-stage overrides of stage_timeout_s, e.g. {"digest": 90}: `workbench doctor --write`
    # sizes them from the endpoint's measured speed so that a whole session fits its bound.
    stage_timeouts: dict[str, float] = Field(default_factory=dict)
    max_retries: int = Field(default=3, ge=0, le=10)
    reask_attempts: int = Field(default=2, ge=0, le=5)
    # auto: json_schema, stepping down to json_object then the prompt alone when the endpoint
    # refuses one; a named mode is where that negotiation starts.
    json_mode: Literal["auto", "json_schema", "json_object", "prompt"] = "auto"
    collector_max_steps: int = Field(default=6, ge=1, le=20)
    # Price per 1M tokens, for the cost column; 0 means unknown.
    price_prompt_per_m: float = 0.0
    price_completion_per_m: float = 0.0


class OutputTokens(_Section):
    """`max_tokens` sent with every call of each stage: the small models an air-gapped team
    serves ramble past any useful answer unless the request caps them."""

    planner: int = Field(default=768, ge=16)
    collector: int = Field(default=512, ge=16)
    digest: int = Field(default=1536, ge=16)
    diagnosis: int = Field(default=2048, ge=16)
    verifier: int = Field(default=1536, ge=16)
    composer: int = Field(default=1024, ge=16)


class BudgetSettings(_Section):
    prompt_tokens: int = Field(default=12000, ge=1000)
    output_tokens: OutputTokens = Field(default_factory=OutputTokens)
    per_tool_tokens: int = Field(default=2500, ge=200)
    # Full output is stored up to this size; beyond it the cut is recorded on the invocation.
    max_stored_output_bytes: int = Field(default=20 * 1024 * 1024, ge=1024)
    # A bundle file larger than this is refused before it is read (`workbench import /dev/zero`).
    max_bundle_bytes: int = Field(default=256 * 1024 * 1024, ge=1024)


class BackendKind(StrEnum):
    """Where a tool's evidence comes from; which kinds each tool accepts is its ToolSpec's
    (pipeline/tools/registry.py), checked when the toolbox is built."""

    BUNDLED = "bundled"  # the embedded incident worlds
    LOKI = "loki"  # Loki query_range
    FILES = "files"  # log files in a folder
    PROMETHEUS = "prometheus"  # Prometheus HTTP API
    FOLDER = "folder"  # a folder of runbooks


class BackendSettings(_Section):
    kind: BackendKind = BackendKind.BUNDLED
    url: str | None = None
    path: str | None = None
    bearer_token: str | None = None
    verify_tls: bool = True
    timeout_s: float = 10.0
    limit: int = 500
    # An HTTP backend's reply larger than this is refused (BackendError naming it), not parsed.
    max_reply_bytes: int = Field(default=64 * 1024 * 1024, ge=1024)
    # lookup_knowledge only: runbook blocks below this relevance (the idf-weighted share of
    # the query's terms a block holds, 0..1) are not returned, so none is suggested.
    min_relevance: float = Field(default=0.1, ge=0.0, le=1.0)


class BackendsSettings(_Section):
    query_logs: BackendSettings = Field(default_factory=BackendSettings)
    query_metrics: BackendSettings = Field(default_factory=BackendSettings)
    lookup_knowledge: BackendSettings = Field(default_factory=BackendSettings)


class UISettings(_Section):
    language: Literal["en", "zh"] = "en"
    # Empty: anyone may apply rules. Otherwise only these (Streamlit-authenticated) users.
    editors: list[str] = Field(default_factory=list)
    # The shell's proof of identity once `editors` is set: the operating-system account running
    # `workbench rules ...` -> the editor it acts as. A typed --author alone proves nothing.
    shell_identities: dict[str, str] = Field(default_factory=dict)


class JobsSettings(_Section):
    """Sessions, eval runs and batch checks as jobs (pipeline/jobs, docs/deploy.md)."""

    # auto: procrastinate workers when the store is PostgreSQL, else the in-process pool.
    backend: Literal["auto", "local", "procrastinate"] = "auto"
    concurrency: int = Field(default=2, ge=1, le=64)
    # A running session refreshes its heartbeat this often; one silent for lease_s is interrupted.
    heartbeat_s: float = Field(default=10.0, gt=0)
    lease_s: float = Field(default=60.0, gt=0)
    # Extra attempts of a job whose failure was transient (an LLM endpoint or database outage).
    retries: int = Field(default=2, ge=0, le=10)
    # Concurrent requests one process sends to one LLM endpoint (base URL).
    llm_concurrency: int = Field(default=4, ge=1, le=256)
    # Alertmanager groups: a repeat of the same group key and fingerprints within this window
    # joins the session already started instead of starting another.
    dedup_window_s: float = Field(default=3600.0, ge=0)


class TelemetrySettings(_Section):
    """OpenTelemetry traces of sessions (pipeline/telemetry/tracing.py); off while no endpoint is set.
    OTEL_EXPORTER_OTLP_ENDPOINT, the variable every OpenTelemetry SDK reads, sets the endpoint too."""

    otlp_endpoint: str | None = None
    # openinference.project.name: the project Phoenix files the traces under.
    project: str = "evidence-workbench"
    timeout_s: float = Field(default=5.0, gt=0, le=60)
    max_queue_spans: int = Field(default=2048, ge=16)


class ProvenanceSettings(_Section):
    """Bundle signatures (pipeline/bundles/provenance.py)."""

    # The Ed25519 private key (PEM) export signs with; made on first use. Default: home/signing-key.pem.
    key_file: Path | None = None
    # Public keys (as `workbench keys` prints them) whose signed bundles import as "verified";
    # the workbench's own key is always trusted.
    trusted_keys: list[str] = Field(default_factory=list)


class WebhookSettings(_Section):
    """`workbench webhook` and `workbench metrics` against clients that are slow, hostile or many."""

    # A request body over this is answered 413 as soon as its declared or received size passes it.
    max_body_bytes: int = Field(default=1024 * 1024, ge=1024)
    # A connection must complete its request head this long after opening (or after its last
    # answer); a body must arrive in full this long after its head.
    header_timeout_s: float = Field(default=5.0, gt=0)
    body_timeout_s: float = Field(default=10.0, gt=0)
    # Alert groups read and queued at once; more wait for a slot within body_timeout_s.
    max_in_flight: int = Field(default=64, ge=1, le=4096)


class NotifySettings(_Section):
    """Where a finished alert-triggered session is announced (Slack-compatible `{"text": ...}`)."""

    url: str | None = None
    # The workbench UI as its readers reach it: the Trace link is <ui_url>/trace?session=<id>.
    ui_url: str = "http://localhost:8501"
    timeout_s: float = Field(default=5.0, gt=0, le=60)
    attempts: int = Field(default=3, ge=1, le=10)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(extra="forbid", env_prefix="WORKBENCH_", env_nested_delimiter="__",
                                      env_ignore_empty=True)

    provider: Literal["offline", "openai", "scripted"] = "offline"
    model: str = "rule-based"
    scripted_fixture: str | None = None
    home: Path = Field(default_factory=default_home)
    database_url: str | None = None
    rules_dir: Path = Field(default_factory=lambda: resource_dir("rules"))
    prompts_dir: Path = Field(default_factory=lambda: resource_dir("prompts"))
    incidents_dir: Path = Field(default_factory=lambda: resource_dir("data") / "incidents")
    fixtures_dir: Path = Field(default_factory=lambda: resource_dir("data") / "fixtures")
    digest: Switch = Field(default_factory=Switch)
    gatekeeper: Switch = Field(default_factory=Switch)
    composer: ComposerSettings = Field(default_factory=ComposerSettings)
    retry: RetrySettings = Field(default_factory=RetrySettings)
    openai: OpenAISettings = Field(default_factory=OpenAISettings)
    budget: BudgetSettings = Field(default_factory=BudgetSettings)
    backends: BackendsSettings = Field(default_factory=BackendsSettings)
    ui: UISettings = Field(default_factory=UISettings)
    jobs: JobsSettings = Field(default_factory=JobsSettings)
    telemetry: TelemetrySettings = Field(default_factory=TelemetrySettings)
    provenance: ProvenanceSettings = Field(default_factory=ProvenanceSettings)
    webhook: WebhookSettings = Field(default_factory=WebhookSettings)
    notify: NotifySettings = Field(default_factory=NotifySettings)

    @property
    def db_url(self) -> str:
        return self.database_url or f"sqlite:///{self.home / 'workbench.db'}"

    @property
    def shape(self) -> str:
        return "split" if self.digest.enabled else "single"


    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # First wins: overrides, WORKBENCH_<KEY>, the named variables, the settings file.
        return init_settings, env_settings, NamedEnvironment(settings_cls), ConfigFile(settings_cls, config_path())


# Each named environment variable: the key it sets and what it implies beside it (a backend URL
# or folder also picks that backend's kind).
_NAMED_ENV: tuple[tuple[str, tuple[str, ...], dict[str, str]], ...] = (
    ("DATABASE_URL", ("database_url",), {}),
    ("OPENAI_BASE_URL", ("openai", "base_url"), {}),
    ("OPENAI_API_KEY", ("openai", "api_key"), {}),
    ("OPENAI_MODEL", ("openai", "model"), {}),
    ("WORKBENCH_NOTIFY_URL", ("notify", "url"), {}),
    ("OTEL_EXPORTER_OTLP_ENDPOINT", ("telemetry", "otlp_endpoint"), {}),
    ("PROMETHEUS_URL", ("backends", "query_metrics", "url"), {"kind": BackendKind.PROMETHEUS}),
    ("LOKI_URL", ("backends", "query_logs", "url"), {"kind": BackendKind.LOKI}),
    ("WORKBENCH_LOG_DIR", ("backends", "query_logs", "path"), {"kind": BackendKind.FILES}),
    ("WORKBENCH_RUNBOOK_DIR", ("backends", "lookup_knowledge", "path"), {"kind": BackendKind.FOLDER}),
    ("PROMETHEUS_BEARER_TOKEN", ("backends", "query_metrics", "bearer_token"), {}),
    ("LOKI_BEARER_TOKEN", ("backends", "query_logs", "bearer_token"), {}),
)


class _WholeSource(PydanticBaseSettingsSource):
    """A source that yields its whole mapping at once rather than field by field."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False


class NamedEnvironment(_WholeSource):
    """The environment variables other tools also read (DATABASE_URL, OPENAI_*, PROMETHEUS_URL...)."""

    def __call__(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for var, path, implied in _NAMED_ENV:
            if os.environ.get(var):
                section = out
                for part in path[:-1]:
                    section = section.setdefault(part, {})
                section.update(implied)
                section[path[-1]] = os.environ[var]
        return out


class ConfigFile(_WholeSource):
    """workbench.yaml: nothing when the file is absent (load_settings refuses a missing file it was named)."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path):
        super().__init__(settings_cls)
        self.path = path

    def __call__(self) -> dict[str, Any]:
        return read_config_file(self.path) if self.path.exists() else {}


# The file load_settings was given (--config); otherwise WORKBENCH_CONFIG, then the default.
_CONFIG_FILE: ContextVar[Path | None] = ContextVar("workbench_config_file", default=None)


def config_path() -> Path:
    return _CONFIG_FILE.get() or Path(os.environ.get("WORKBENCH_CONFIG") or default_config_file())


@contextmanager
def _reading(path: Path) -> Iterator[None]:
    token = _CONFIG_FILE.set(path)
    try:
        yield
    finally:
        _CONFIG_FILE.reset(token)


def _from_environment() -> dict[str, Any]:
    """What the environment sets, named variables under WORKBENCH_<KEY>: to say where a refused value came from."""
    prefixed = EnvSettingsSource(Settings, env_prefix="WORKBENCH_", env_nested_delimiter="__", env_ignore_empty=True)
    return _merge(NamedEnvironment(Settings)(), prefixed())


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_settings(path: str | Path | None = None, **overrides: Any) -> Settings:
    """Settings from the config file, then the environment, then explicit keyword overrides."""
    cfg_path = Path(path) if path else config_path()
    if path and not cfg_path.exists():
        # Named explicitly (--config): a typo must not fall back to the defaults unnoticed.
        raise ConfigError(f"{cfg_path}: no such settings file")
    try:
        with _reading(cfg_path):
            settings = Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        raise settings_error(Settings, exc, cfg_path, _from_environment()) from None
    except SettingsError as exc:  # a WORKBENCH_<SECTION> variable that is not a JSON object
        raise ConfigError(f"the environment: {exc}") from None
    remember_settings(settings)  # from here on, every redact() masks the configured secrets
    return settings
