"""Marks that hold under attack: a mark is given only when earned, and one bad input never breaks
the store. Each probe as the attacker ran it, through the CLI where a person would."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import CPU_QUESTION, cpu_claim, diagnosis_json, scripted

from pipeline.core.config import ROOT, Settings
from pipeline.frontends.cli import main
from pipeline.runs.session import run_session
from pipeline.store import Store

SINGLE = {"digest": {"enabled": False}}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --- rules neutered by their thresholds ---------------------------------------------------------

NEUTERED = {
    "evidence.excerpt_similarity": {"passThreshold": 0.0, "warnThreshold": 0.0, "inventedTolerated": 100000},
    "evidence.excerpt_entities": {"kinds": []},
    "evidence.digest_ref": {"requireDigestId": False, "quotePassThreshold": 0.0, "quoteWarnThreshold": 0.0},
}


def _neutered_rules(dst: Path) -> Path:
    """The shipped rules, every one still enabled, with thresholds no quote can fail."""
    shutil.copytree(ROOT / "rules", dst)
    meta = yaml.safe_load((dst / "metadata.yaml").read_text(encoding="utf-8"))
    for rule_id, params in NEUTERED.items():
        meta["ruleMetadata"][rule_id]["params"].update(params)
    (dst / "metadata.yaml").write_text(yaml.safe_dump(meta, allow_unicode=True), encoding="utf-8")
    return dst


def test_rules_that_cannot_fail_mark_their_verdicts_ungated(capsys: pytest.CaptureFixture[str], settings: Settings,
                                                           store: Store, tmp_path: Path) -> None:
    rules = _neutered_rules(tmp_path / "rules")
    invented = "payment-service connection pool exhausted by the v2.3.1 deploy at 10:02"
    script: dict[str, Any] = {"diagnosis": diagnosis_json(*(cpu_claim(f"claim-{n}", excerpt=invented) for n in range(4)))}
    result = run_session(CPU_QUESTION, settings=scripted(settings, tmp_path, script, rules_dir=str(rules), **SINGLE),
                         store=store)
    assert [u.split(" (")[0] for u in result.ungated_by] == list(NEUTERED)
    row = store.get_session(result.session_id)
    assert row is not None and row["ungated"] is True

    code, _, err = run(capsys, "rules", "apply", str(rules), "--author", "tuner")
    assert code == 0 and "inventedTolerated 100000" in err and "marked ungated" in err
    code, out, _ = run(capsys, "sessions", "--json")
    assert code == 0 and '"ungated": true' in out
