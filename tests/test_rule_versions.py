"""Rule versions: one in force whatever the concurrency, applied from the shell as from the page."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest
from helpers import postgres_schema

from pipeline.store import StaleRuleVersion, Store

APPLIERS = 8


def _apply(url: str, based_on: int, start: multiprocessing.synchronize.Barrier, n: int) -> str:
    store = Store(url)
    start.wait()
    try:
        new = store.apply_rule_version(index_yaml=f"i{n}", metadata_yaml="m", author=f"a{n}", comment="",
                                       based_on=based_on)
        return f"ok {new}"
    except StaleRuleVersion as exc:
        return str(exc)


def _race(url: str, existing: bool) -> None:
    store = Store(url)
    base = store.apply_rule_version(index_yaml="i", metadata_yaml="m", author="ana", comment="",
                                    based_on=None) if existing else 0
    ctx = multiprocessing.get_context("fork")
    start = ctx.Manager().Barrier(APPLIERS)
    with ctx.Pool(APPLIERS) as pool:
        said = pool.starmap(_apply, [(url, base, start, n) for n in range(APPLIERS)])
    won = [int(s.split()[1]) for s in said if s.startswith("ok ")]
    assert len(won) == 1, said
    assert [s for s in said if not s.startswith("ok ")] == [f"version {won[0]} was applied meanwhile (you started from version {base}); "
                                 "reload, review the difference and apply again"] * (APPLIERS - 1)
    versions = store.rule_versions()
    assert [v["id"] for v in versions if v["active"]] == [won[0]] == [store.rules_version()]
    assert len(versions) == 1 + existing  # the refused applies left nothing behind
    assert store.active_rule_version()["parent_id"] == (base or None)


@pytest.mark.slow
@pytest.mark.parametrize("existing", [False, True], ids=["first-version", "over-a-version"])
def test_concurrent_applies_on_sqlite_leave_one_version_in_force(tmp_path: Path, existing: bool) -> None:
    _race(f"sqlite:///{tmp_path / 'wb.db'}", existing)


@pytest.mark.slow
@pytest.mark.parametrize("existing", [False, True], ids=["first-version", "over-a-version"])
def test_concurrent_applies_on_postgresql_leave_one_version_in_force(existing: bool) -> None:
    with postgres_schema("rv") as url:
        _race(url, existing)
