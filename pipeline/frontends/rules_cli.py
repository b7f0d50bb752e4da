"""`workbench rules`: apply, history, diff and rollback of gatekeeper rule versions from a shell,
with the Rules page's checks and messages (pipeline/runs/rulebook.py). Registered by pipeline/frontends/cli.py."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pipeline.core.config import Settings, load_settings
from pipeline.store import Store


def _open(args: argparse.Namespace) -> tuple[Settings, Store]:
    settings = load_settings(getattr(args, "config", None))
    return settings, Store(settings.db_url)


def cmd_apply(args: argparse.Namespace) -> int:
    from pipeline.runs import rulebook

    settings, store = _open(args)
    base = store.rules_version()
    candidate = rulebook.read_rules_dir(settings, Path(args.dir))
    ungated = rulebook.ungated(settings, candidate)
    if ungated:
        print(f"warning: these rules switch off, or set so they cannot fail, what stops forged quotes "
              f"({', '.join(ungated)}): every verdict under them is marked ungated", file=sys.stderr)
    new = rulebook.apply_rules(settings, store, candidate, author=_author(settings, args), comment=args.comment or "",
                               based_on=base)
    print(f"applied {args.dir} as version {new} (based on version {base})")
    return _rejudge(settings, store)


def cmd_rollback(args: argparse.Namespace) -> int:
    from pipeline.runs import rulebook

    settings, store = _open(args)
    new = rulebook.rollback(settings, store, args.version, author=_author(settings, args))
    print(f"version {args.version} re-applied as version {new}")
    return _rejudge(settings, store)


def _author(settings: Settings, args: argparse.Namespace) -> str:
    from pipeline.frontends.access import shell_author
    from pipeline.runs.rulebook import RulesRefused

    who = shell_author(settings, args.author)
    if not isinstance(who, str):
        raise RulesRefused(who)
    return who


def _rejudge(settings: Settings, store: Store) -> int:
    """The stored sessions judged again under the version now in force, progress on stderr."""
    from pipeline.runs import rulebook

    def progress(phase: str, done: int, total: int) -> None:
        if phase != "done":
            print(f"  re-judging: {phase} {done}/{total}" if total else f"  re-judging: {phase}", file=sys.stderr)

    result = rulebook.rejudge(settings, store, on_progress=progress)
    if result.stored:
        print(f"re-judged {result.sessions} stored sessions under version {result.version}: "
              f"{result.differing} now differ from their verdict at ask")
    else:
        print(f"re-judge under version {result.version} not stored: another version was put in force meanwhile")
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    from pipeline.frontends.views.rules import rule_history
    from pipeline.runs import rulebook

    settings, store = _open(args)
    versions = rule_history(store, rulebook.read_rules_dir(settings), rulebook.rules_dir_time(settings))
    if args.json:
        print(json.dumps([{"version": v.id, "created_at": v.created_at, "author": v.author, "comment": v.comment,
                           "in_force": v.active, "based_on": v.parent_id} for v in versions],
                         ensure_ascii=False, indent=2, default=str))
        return 0
    for v in versions:
        when = f"{v.created_at:%Y-%m-%d %H:%M}" if v.created_at else "-"
        based = "" if v.parent_id is None else f"from v{v.parent_id}"
        print(f"{'*' if v.active else ' '} v{v.id:<5} {when:<16} {v.author:<16} {based:<8} {v.comment}")
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    from pipeline.frontends.views.rules import yaml_diff
    from pipeline.runs import rulebook

    settings, store = _open(args)
    in_force = rulebook.text_in_force(settings, store)
    diff = yaml_diff(in_force.texts, rulebook.read_rules_dir(settings, Path(args.dir)), f"v{in_force.version}",
                     str(args.dir).rstrip("/"))
    print(diff or f"(no difference against version {in_force.version}, the version in force)", end="" if diff else "\n")
    return 0


def register(sub: Any) -> None:
    """Add `workbench rules ...` to `workbench`'s subparsers."""
    rules = sub.add_parser("rules", help="apply, list, diff and roll back gatekeeper rule versions")
    actions = rules.add_subparsers(dest="rules_command", required=True)
    a = actions.add_parser("apply", help="apply the rules in DIR (index.yaml + metadata.yaml) as a new version")
    a.add_argument("dir", help="rules directory")
    a.add_argument("--author", help="who applies them (with ui.editors set: the editor your account maps to "
                                    "in ui.shell_identities, which is used when this is left out)")
    a.add_argument("--comment", help="why, kept with the version")
    a.set_defaults(func=cmd_apply)
    h = actions.add_parser("history", help="every version, newest first; * marks the one in force")
    h.add_argument("--json", action="store_true", help="print the versions as JSON")
    h.set_defaults(func=cmd_history)
    d = actions.add_parser("diff", help="unified diff of the rules in force against the rules in DIR")
    d.add_argument("dir", help="rules directory")
    d.set_defaults(func=cmd_diff)
    r = actions.add_parser("rollback", help="apply an earlier version again, as a new version (0: the shipped rules)")
    r.add_argument("version", type=int, help="the version to return to (see `workbench rules history`)")
    r.add_argument("--author", help="who rolls back (as for apply)")
    r.set_defaults(func=cmd_rollback)
