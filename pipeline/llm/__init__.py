"""LLM providers behind one interface (pipeline.verdict.provider.Provider)."""

from __future__ import annotations

from pathlib import Path

from pipeline.core.config import Settings
from pipeline.verdict.provider import Provider


def make_provider(settings: Settings) -> Provider:
    from pipeline.llm.offline.provider import OfflineProvider

    if settings.provider == "offline":
        return OfflineProvider(settings)
    if settings.provider == "openai":
        from pipeline.llm.openai_provider import OpenAIProvider

        return OpenAIProvider(settings)
    if settings.provider == "scripted":
        from pipeline.llm.scripted import ScriptedProvider

        if not settings.scripted_fixture:
            raise ValueError("provider 'scripted' needs scripted_fixture (a fixture file)")
        return ScriptedProvider(settings, Path(settings.scripted_fixture), fallback=OfflineProvider(settings))
    raise ValueError(f"unknown provider {settings.provider!r}")
