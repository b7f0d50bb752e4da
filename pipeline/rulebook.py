"""The applied rule versions: which is in force, applying one, rolling back; the page and the
`workbench rules` commands both act through here, with the same checks and messages.

The texts are stored as their authors wrote them (comments and layout included), so the
difference between two versions is the lines a person changed. Version 0 is the rules/
directory the workbench was started with.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeline.config import Settings
from pipeline.errors import NotFound, RulesError, WorkbenchError
from pipeline.gatekeeper.rules_schema import (
    INDEX_FILE,
    MAX_RULES_FILE_BYTES,
    METADATA_FILE,
    RuleSet,
    load_rules_from_text,
)
from pipeline.messages import Message, msg, render
from pipeline.store import Store


class RulesRefused(WorkbenchError):
    """An apply or rollback that the checks refuse; `message` renders in the reader's language."""

    def __init__(self, message: Message, details: list[str] | None = None):
        self.message = message
        self.details = details or []
        super().__init__(render(message, "en") + "".join(f"\n  {d}" for d in self.details))


@dataclass(frozen=True)
class RulesText:
    """A rule version's two files as stored, and its id (0: the shipped rules/ directory)."""

    version: int
    index_yaml: str
    metadata_yaml: str

    @property
    def texts(self) -> tuple[str, str]:
        return self.index_yaml, self.metadata_yaml


def read_rules_dir(settings: Settings, directory: Path | None = None) -> tuple[str, str]:
    """(index.yaml, metadata.yaml) of `directory` (default: the shipped rules/), as written."""
    root = directory or settings.rules_dir
    texts = []
    for name in (INDEX_FILE, METADATA_FILE):
        path = root / name
        try:
            with path.open("rb") as fh:  # no further than the cap: the loader refuses a larger text
                texts.append(fh.read(MAX_RULES_FILE_BYTES + 1).decode("utf-8"))
        except OSError as exc:
            raise RulesError([f"{name}: file: cannot read {path} ({exc.strerror or exc})"]) from exc
        except UnicodeDecodeError as exc:
            raise RulesError([f"{name}: file: not UTF-8 text (offset {exc.start}); save it as UTF-8"]) from exc
    return texts[0], texts[1]


def version_text(settings: Settings, store: Store, version: int) -> RulesText:
    """The texts of one version; NotFound for an id the store never applied."""
    if version == 0:
        return RulesText(0, *read_rules_dir(settings))
    for row in store.rule_versions():
        if row["id"] == version:
            return RulesText(version, row["index_yaml"], row["metadata_yaml"])
    raise NotFound(f"no rule version {version} (`workbench rules history` lists them)")


def text_in_force(settings: Settings, store: Store) -> RulesText:
    """The texts of the version in force, as its author wrote them."""
    active = store.active_rule_version()
    if active:
        return RulesText(active["id"], active["index_yaml"], active["metadata_yaml"])
    return RulesText(0, *read_rules_dir(settings))


def refusal(settings: Settings, candidate: tuple[str, str], base: tuple[str, str] | None,
            author: str) -> tuple[Message | None, list[str]]:
    """Why `candidate` may not be applied over `base` by `author` (None: it may), and the
    validation messages when it is invalid. Who may apply with a login is the page's check."""
    rules, errors = _check(*candidate)
    if rules is None:
        return msg("rules.invalid", count=len(errors)), errors
    if base is not None and candidate == base:
        return msg("rules.unchanged"), []
    if base is not None and _check(*base)[0] == rules:
        return msg("rules.unchanged"), []
    if not author.strip():
        return msg("rules.need_author"), []
    return None, []


def _check(index_yaml: str, metadata_yaml: str) -> tuple[RuleSet | None, list[str]]:
    try:
        return load_rules_from_text(index_yaml, metadata_yaml), []
    except RulesError as exc:
        return None, list(exc.messages)


def apply_rules(settings: Settings, store: Store, candidate: tuple[str, str], *, author: str, comment: str,
                based_on: int) -> int:
    """Store `candidate` as a new version and put it in force, if the checks pass and the version
    in force is still `based_on`; returns the new id. Raises RulesRefused or StaleRuleVersion."""
    editors = settings.ui.editors
    if editors and author.strip() not in editors:
        raise RulesRefused(msg("rules.not_an_editor", who=author.strip(), editors=", ".join(editors)))
    reason, errors = refusal(settings, candidate, version_text(settings, store, based_on).texts, author)
    if reason is not None:
        raise RulesRefused(reason, errors)
    return store.apply_rule_version(index_yaml=candidate[0], metadata_yaml=candidate[1], author=author.strip(),
                                    comment=comment, based_on=based_on)


def rollback(settings: Settings, store: Store, version: int, *, author: str) -> int:
    """Apply version `version`'s texts again as a new version (0: the shipped rules)."""
    target = version_text(settings, store, version)
    in_force = store.rules_version()
    if in_force == version:
        raise RulesRefused(msg("rules.already_in_force", id=version))
    return apply_rules(settings, store, target.texts, author=author, comment=f"roll back to version {version}",
                       based_on=in_force)
