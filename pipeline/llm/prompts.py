"""Prompt files: one per LLM stage under `prompts/`, each with a versioned front matter.

```
---
version: 3
stage: composer
---
You are the Answer Composer ...
```

Every LLM call records the file and its version (law 6), so a change of wording is visible in
the audit trail and in eval comparisons.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

from pipeline.core.errors import ConfigError, one_line
from pipeline.text.echoes import PromptExample
from pipeline.verdict.provider import STAGES


@dataclass(frozen=True)
class Prompt:
    stage: str
    file: str  # e.g. "prompts/composer.md", as recorded on llm_call rows
    version: str
    text: str
    # The values only its example uses: a reply repeating them is malformed (law 12).
    example: PromptExample = field(default_factory=PromptExample)


class PromptError(ConfigError):
    """A prompt file that is missing or lacks its versioned front matter."""


def _parse(path: Path, raw: str) -> tuple[dict[str, object], str]:
    if not raw.startswith("---\n"):
        raise PromptError(f"{path}: missing front matter (--- version: N ---)")
    end = raw.find("\n---\n", 4)
    if end < 0:
        raise PromptError(f"{path}: front matter is not closed by a '---' line")
    try:
        meta = yaml.safe_load(raw[4:end]) or {}
    except yaml.YAMLError as exc:
        raise PromptError(f"{path}: front matter is not YAML ({one_line(exc)})") from None
    if not isinstance(meta, dict) or "version" not in meta:
        raise PromptError(f"{path}: front matter needs a `version:` line")
    return meta, raw[end + 5 :].strip() + "\n"


@lru_cache(maxsize=64)
def _load(path: Path, _mtime_ns: int) -> Prompt:
    meta, body = _parse(path, path.read_text(encoding="utf-8"))
    stage = str(meta.get("stage") or path.stem)
    return Prompt(stage=stage, file=f"{path.parent.name}/{path.name}", version=str(meta["version"]), text=body,
                  example=PromptExample.of(body))


def load_prompt(stage: str, prompts_dir: Path) -> Prompt:
    """The prompt of one stage; re-read when the file changes (the cache key holds its mtime)."""
    if stage not in STAGES:
        raise PromptError(f"unknown stage {stage!r}; stages are {', '.join(STAGES)}")
    path = Path(prompts_dir) / f"{stage}.md"
    if not path.exists():
        raise PromptError(f"{path}: prompt file missing")
    return _load(path.resolve(), path.stat().st_mtime_ns)
