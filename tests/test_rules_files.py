"""The rule files: the shipped ones load, and every kind of bad edit is refused with file and field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pipeline.gatekeeper import RulesError, load_rules, load_rules_from_text, rules_schema
from pipeline.gatekeeper.rules import RULES

RULES_DIR = Path(__file__).resolve().parent.parent / "rules"
INDEX = (RULES_DIR / "index.yaml").read_text(encoding="utf-8")
METADATA = (RULES_DIR / "metadata.yaml").read_text(encoding="utf-8")


def _edit(text: str, change) -> str:
    doc = yaml.safe_load(text)
    change(doc)
    return yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)


def _errors(index: str = INDEX, metadata: str = METADATA) -> list[str]:
    with pytest.raises(RulesError) as info:
        load_rules_from_text(index, metadata)
    return info.value.messages


def test_shipped_rules_load_with_seed_defaults():
    rules = load_rules(RULES_DIR)
    ids = [r.id for r in rules.rules]
    assert ids[:2] == ["schema.executor_v2", "evidence.invocation_ref"]
    assert set(ids) == set(RULES)
    assert rules.impact("evidence.invocation_ref") == "reject_on_fail"
    assert rules.impact("schema.executor_v2") == "low_confid_on_fail"
    assert rules.impact("evidence.excerpt_entities") == "reject_on_fail"
    similarity = rules.get("evidence.excerpt_similarity").params
    assert (similarity.passThreshold, similarity.warnThreshold) == (0.5, 0.3)
    utilization = rules.get("claim.evidence_utilization")
    assert not utilization.enabled and utilization.verdict_impact == "warn_only"
    blacklist = rules.get("claim.hallucination_phrases").params.blacklist
    for phrase in ("通常情况下", "根据经验", "一般来说", "可能是", "推测", "我认为", "理论上", "probably", "I think"):
        assert phrase in blacklist


def test_a_copy_rebuilt_from_its_documents_with_nothing_changed_equals_the_original():
    rules = load_rules(RULES_DIR)
    for spec in rules.rules:
        assert rules.with_rule(spec.id) == rules


def test_with_params_validates_and_leaves_original_alone():
    rules = load_rules(RULES_DIR)
    tuned = rules.with_params("evidence.excerpt_similarity", passThreshold=0.7)
    assert tuned.get("evidence.excerpt_similarity").params.passThreshold == 0.7
    assert rules.get("evidence.excerpt_similarity").params.passThreshold == 0.5
    with pytest.raises(RulesError) as info:
        rules.with_params("evidence.excerpt_similarity", warnThreshold=0.7)
    assert info.value.messages == [
        "metadata.yaml: ruleMetadata.evidence.excerpt_similarity.params.warnThreshold: 0.7 > passThreshold 0.5"
    ]


def test_yaml_syntax_error_names_file_and_line():
    (message,) = _errors(metadata=METADATA + "\n  bad: [unclosed\n")
    assert message.startswith("metadata.yaml: line ")
    (message,) = _errors(index="rules:\n  - id: x\n   name: y\n")
    assert message.startswith("index.yaml: line ")


def test_unknown_rule_id_has_no_implementation():
    def add(doc):
        doc["rules"].append({"id": "evidence.telepathy", "name": "x", "description": "x", "enabled": True})

    messages = _errors(index=_edit(INDEX, add))
    assert messages[0].startswith("index.yaml: rules[7].id: unknown rule id 'evidence.telepathy' (no implementation")


def test_unknown_param_for_rule_kind():
    def add(doc):
        doc["ruleMetadata"]["evidence.excerpt_similarity"]["params"]["blacklist"] = ["x"]

    assert _errors(metadata=_edit(METADATA, add)) == [
        "metadata.yaml: ruleMetadata.evidence.excerpt_similarity.params.blacklist: unknown parameter for this rule"
    ]


@pytest.mark.parametrize(
    "rule, param, value, field",
    [
        ("evidence.excerpt_similarity", "passThreshold", "0.5", "passThreshold"),
        ("claim.hallucination_phrases", "blacklist", "推测", "blacklist"),
        ("schema.executor_v2", "allowEmptyClaims", "yes please", "allowEmptyClaims"),
        ("evidence.excerpt_entities", "kinds", ["service", "mood"], "kinds.1"),
    ],
)
def test_wrong_type_names_the_field(rule, param, value, field):
    def change(doc):
        doc["ruleMetadata"][rule]["params"][param] = value

    (message,) = _errors(metadata=_edit(METADATA, change))
    assert message.startswith(f"metadata.yaml: ruleMetadata.{rule}.params.{field}: ")


def test_missing_param_is_an_error_because_yaml_is_the_only_source():
    def drop(doc):
        del doc["ruleMetadata"]["evidence.excerpt_similarity"]["params"]["warnThreshold"]

    (message,) = _errors(metadata=_edit(METADATA, drop))
    assert message.startswith("metadata.yaml: ruleMetadata.evidence.excerpt_similarity.params.warnThreshold: missing")


def test_warn_threshold_above_pass_threshold():
    def change(doc):
        doc["ruleMetadata"]["evidence.excerpt_similarity"]["params"]["warnThreshold"] = 0.7

    assert _errors(metadata=_edit(METADATA, change)) == [
        "metadata.yaml: ruleMetadata.evidence.excerpt_similarity.params.warnThreshold: 0.7 > passThreshold 0.5"
    ]


def test_threshold_outside_unit_interval():
    def change(doc):
        doc["ruleMetadata"]["evidence.excerpt_similarity"]["params"]["passThreshold"] = 5

    (message,) = _errors(metadata=_edit(METADATA, change))
    assert message == "metadata.yaml: ruleMetadata.evidence.excerpt_similarity.params.passThreshold: 5.0 is outside [0, 1]"


def test_metadata_id_missing_from_index():
    def drop(doc):
        doc["rules"] = [r for r in doc["rules"] if r["id"] != "claim.evidence_utilization"]

    assert _errors(index=_edit(INDEX, drop)) == [
        "metadata.yaml: ruleMetadata.claim.evidence_utilization: not listed in index.yaml"
    ]


def test_index_rule_without_metadata():
    def drop(doc):
        del doc["ruleMetadata"]["evidence.invocation_ref"]

    (message,) = _errors(metadata=_edit(METADATA, drop))
    assert message.startswith("metadata.yaml: ruleMetadata.evidence.invocation_ref: missing")


@pytest.mark.parametrize("impact", ["reject", "LOW_CONFID", None])
def test_bad_verdict_impact(impact):
    def change(doc):
        doc["ruleMetadata"]["schema.executor_v2"]["verdictImpact"] = impact

    (message,) = _errors(metadata=_edit(METADATA, change))
    assert message.startswith("metadata.yaml: ruleMetadata.schema.executor_v2.verdictImpact: ")


def test_severity_warning_must_be_warn_only():
    def change(doc):
        doc["ruleMetadata"]["evidence.invocation_ref"]["severity"] = "warning"

    (message,) = _errors(metadata=_edit(METADATA, change))
    assert message.startswith("metadata.yaml: ruleMetadata.evidence.invocation_ref.severity: warning contradicts")


def test_enabled_must_be_boolean_and_ids_unique():
    def change(doc):
        doc["rules"][0]["enabled"] = "sometimes"
        doc["rules"].append(dict(doc["rules"][1]))

    messages = _errors(index=_edit(INDEX, change))
    assert "index.yaml: rules[0].enabled: must be true or false, got 'sometimes'" in messages
    assert "index.yaml: rules[7].id: duplicate rule id 'evidence.invocation_ref'" in messages


def test_field_in_both_target_and_allow_lists():
    def change(doc):
        doc["ruleMetadata"]["claim.hallucination_phrases"]["params"]["allowInFields"].append("claims[].claim_text")

    assert _errors(metadata=_edit(METADATA, change)) == [
        ("metadata.yaml: ruleMetadata.claim.hallucination_phrases.params.allowInFields: "
         "claims[].claim_text is also a targetField")
    ]


def test_all_problems_reported_at_once():
    def change(doc):
        doc["ruleMetadata"]["evidence.excerpt_similarity"]["params"]["warnThreshold"] = 0.9
        doc["ruleMetadata"]["schema.executor_v2"]["verdictImpact"] = "nope"

    assert len(_errors(metadata=_edit(METADATA, change))) == 2


def test_missing_files(tmp_path):
    with pytest.raises(RulesError) as info:
        load_rules(tmp_path)
    assert [m.split(":")[0] for m in info.value.messages] == ["index.yaml", "metadata.yaml"]


def test_bad_file_does_not_replace_rules_in_force(tmp_path):
    in_force = load_rules(RULES_DIR)
    (tmp_path / "index.yaml").write_text(INDEX, encoding="utf-8")
    (tmp_path / "metadata.yaml").write_text("ruleMetadata: [", encoding="utf-8")
    try:
        in_force = load_rules(tmp_path)
    except RulesError:
        pass
    assert in_force == load_rules(RULES_DIR)


# --- hostile files: each is refused quickly with file, line and a bounded message --------------

_BOMB = "".join(
    f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9) if i else ', '.join(['lol'] * 9)}]\n" for i in range(10)
)


def test_alias_bomb_is_refused_at_the_first_anchor():
    # 10 levels of 9-fold aliases would expand to 9**10 strings; the loader never expands one.
    assert len(_BOMB.encode()) < 4096
    (message,) = _errors(metadata=_BOMB)
    assert message == "metadata.yaml: line 1, column 5: anchors and aliases (&name, *name) are not allowed here"


def test_plain_alias_is_refused_too():
    (message,) = _errors(index=INDEX + "extra: *nowhere\n")
    assert message.startswith("index.yaml: line ") and "aliases" in message


def test_duplicate_key_names_the_key_and_both_lines():
    text = METADATA.replace("ruleMetadata:\n", "ruleMetadata:\n  claim.evidence_utilization: {}\n", 1)
    (message,) = _errors(metadata=text)
    first_line, dup_line = [n for n, line in enumerate(text.splitlines(), 1)
                            if line.startswith("  claim.evidence_utilization:")]
    assert message == (f"metadata.yaml: line {dup_line}, column 3: duplicate key 'claim.evidence_utilization' "
                       f"(first set on line {first_line})")


def test_deep_nesting_is_refused_before_the_parser_recurses():
    deep = "rules: " + "[" * 5000 + "]" * 5000 + "\n"
    (message,) = _errors(index=deep)
    assert message.startswith("index.yaml: line 1, column ") and message.endswith("nested deeper than 32 levels")


def test_size_cap_on_text_and_on_files(tmp_path, monkeypatch):
    monkeypatch.setattr(rules_schema, "MAX_RULES_FILE_BYTES", len(METADATA.encode()) - 1)
    (message,) = _errors()
    assert message == f"metadata.yaml: file: {len(METADATA.encode())} bytes exceeds the {len(METADATA.encode()) - 1}" \
                      "-byte limit for a rule file"
    (tmp_path / "index.yaml").write_text(INDEX, encoding="utf-8")
    (tmp_path / "metadata.yaml").write_text(METADATA + "#" * 10_000_000, encoding="utf-8")
    with pytest.raises(RulesError) as info:
        load_rules(tmp_path)
    limit = len(METADATA.encode()) - 1
    assert info.value.messages == [f"metadata.yaml: file: larger than the {limit}-byte limit for a rule file"]


def test_non_utf8_file_names_the_byte(tmp_path):
    (tmp_path / "index.yaml").write_bytes(INDEX.encode("utf-8"))
    (tmp_path / "metadata.yaml").write_bytes(METADATA.encode("gb18030"))
    with pytest.raises(RulesError) as info:
        load_rules(tmp_path)
    (message,) = info.value.messages
    assert message.startswith("metadata.yaml: file: not UTF-8 text (byte 0x") and "save it as UTF-8" in message


def test_control_character_is_a_clear_error():
    (message,) = _errors(index=INDEX + "\x00")
    assert message.startswith("index.yaml: character ") and "#x0000" in message


def test_huge_values_are_quoted_short():
    def index_change(doc):
        doc["rules"][0]["enabled"] = ["x" * 1000] * 100

    def metadata_change(doc):
        doc["ruleMetadata"]["evidence.excerpt_similarity"]["params"]["passThreshold"] = "9" * 100_000

    messages = _errors(index=_edit(INDEX, index_change), metadata=_edit(METADATA, metadata_change))
    assert len(messages) == 2 and all(len(m) < 300 for m in messages)
    assert "got ['xxxx" in messages[0] and "(got '9999" in messages[1]


def test_rules_page_text_path_refuses_the_bomb_without_expanding_it():
    from pipeline.frontends.views import rules as rules_view
    from pipeline.frontends.views import rules_yaml

    rules, messages = rules_view.check_rules(INDEX, _BOMB)
    assert rules is None and messages == [
        "metadata.yaml: line 1, column 5: anchors and aliases (&name, *name) are not allowed here"]
    # A form edit while the editor holds the bomb leaves the text as typed, never a dumped expansion.
    assert rules_yaml.set_rule_field(INDEX, _BOMB, "evidence.excerpt_similarity", "params.passThreshold", 0.6) == (
        INDEX, _BOMB)


def _changed_lines(diff: str) -> list[str]:
    return [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]


def test_form_edits_keep_the_authors_comments_order_and_layout():
    from pipeline.frontends.views import rules as rules_view
    from pipeline.frontends.views import rules_yaml

    index, meta = INDEX, METADATA
    for name, value in (("passThreshold", 0.55), ("warnThreshold", 0.35)):
        index, meta = rules_yaml.set_rule_field(index, meta, "evidence.excerpt_similarity", f"params.{name}", value)
    assert index == INDEX and _changed_lines(rules_view.yaml_diff((INDEX, METADATA), (index, meta), "a", "b")) == [
        "-      passThreshold: 0.5", "-      warnThreshold: 0.3", "+      passThreshold: 0.55", "+      warnThreshold: 0.35"]
    # Another author's layout: four-space mappings, dashes under their key, end-of-line comments,
    # a flow list, keys out of the usual order.
    own = ("# tuned for the noisy payment logs\nruleMetadata:\n    evidence.excerpt_similarity:   # since 2026-11\n"
           "        params:\n            warnThreshold: 0.3\n            passThreshold: 0.50   # why: noisy logs\n"
           "            compareAgainst:\n            - output\n            kinds: [a, b]\n        severity: error\n")
    _, edited = rules_yaml.set_rule_field(INDEX, own, "evidence.excerpt_similarity", "params.passThreshold", 0.6)
    assert edited == own.replace("passThreshold: 0.50   #", "passThreshold: 0.6    #")
    _, edited = rules_yaml.set_rule_field(INDEX, own, "evidence.excerpt_similarity", "params.compareAgainst",
                                     ["output", "digest.summary"])
    assert edited == own.replace("- output\n", "- output\n            - digest.summary\n")
    switched, _ = rules_yaml.set_rule_field(INDEX, METADATA, "claim.evidence_utilization", "enabled", True)
    assert _changed_lines(rules_view.yaml_diff((INDEX, METADATA), (switched, METADATA), "a", "b")) == [
        "-    enabled: false", "+    enabled: true"]


@pytest.mark.parametrize("outcome", ["off", "warn", "fail"])
def test_switch_values_read_as_written_unquoted(outcome):
    """YAML 1.1 read `off` as False; a switch value is taken as the word the user typed."""
    assert "      negationOutcome: fail\n" in METADATA
    rules = load_rules_from_text(INDEX, METADATA.replace("      negationOutcome: fail\n",
                                                         f"      negationOutcome: {outcome}\n"))
    (rule,) = [r for r in rules.rules if r.id == "evidence.excerpt_entities"]
    assert rule.params.negationOutcome == outcome
