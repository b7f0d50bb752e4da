"""Reading workbench.yaml (and the other mapping files a person hands us: a scripted fixture) and
explaining why settings are refused, in one line each.

A pydantic dump ("1 validation error for Settings / openai.modle / Extra inputs are not
permitted [type=extra_forbidden, ...]") tells a user neither which file nor what to type
instead; these messages name the file (or the environment), the dotted key and the fix.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from pipeline.core import safeyaml
from pipeline.core.errors import ConfigError, quote

# A settings file or a scripted fixture is a few kilobytes; anything near this is not one.
MAX_CONFIG_BYTES = 1024 * 1024


def read_config_file(path: Path) -> dict[str, Any]:
    """The settings in `path` (workbench.yaml)."""
    return read_mapping(path, what="the settings file", top="a mapping of settings (provider:, openai:, ...)")


def read_mapping(path: Path, *, what: str, top: str) -> dict[str, Any]:
    """The mapping in a file a person hands us (`what` names it, `top` says what it maps), read with
    the same defensive YAML loader as the rule files (JSON for a .json file); every problem is a
    one-line ConfigError that names the file."""
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read {what} ({exc.strerror or exc})") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_CONFIG_BYTES} bytes; is this really {what}?")
    try:
        text = data.decode("utf-8")
        loaded = json.loads(text) if path.suffix == ".json" else safeyaml.load(text)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None
    except ValueError as exc:  # JSONDecodeError and safeyaml.YamlProblem, both with line and column
        raise ConfigError(f"{path}: {exc}") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path}: the top level must be {top}")
    return loaded


def settings_error(model: type[BaseModel], exc: ValidationError, path: Path, env: dict[str, Any]) -> ConfigError:
    """One line for the first problem (and how many more), naming where the value came from."""
    errors = exc.errors()
    first = errors[0]
    loc = [str(part) for part in first["loc"]]
    key = ".".join(loc)
    source = "the environment" if _holds(env, loc) else str(path)
    if first["type"] == "extra_forbidden":
        known = _known_keys(model, loc[:-1])
        close = difflib.get_close_matches(loc[-1], known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; known keys here: {', '.join(known)}"
        message = f"{source}: {key}: unknown key{hint}"
    else:
        message = f"{source}: {key}: {first['msg']} (got {quote(first.get('input'))})"
    more = len(errors) - 1
    return ConfigError(message + (f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""))


def _holds(data: Any, loc: list[str]) -> bool:
    for part in loc:
        if not isinstance(data, dict) or part not in data:
            return False
        data = data[part]
    return True


def _known_keys(model: type[BaseModel], loc: list[str]) -> list[str]:
    """The field names of the section at `loc` (e.g. ["openai"] -> OpenAISettings' fields)."""
    for part in loc:
        field = model.model_fields.get(part)
        annotation = field.annotation if field else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return []
        model = annotation
    return list(model.model_fields)
