"""Rules: edit the gatekeeper rules as a form or as YAML, replay them over history, apply a version."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, cast

import plotly.graph_objects as go
import streamlit as st

from pages._ui import frame, i18n, identity, markup, reads, widgets
from pipeline.core.messages import msg, render
from pipeline.frontends.views import rules as rules_view
from pipeline.frontends.views import rules_yaml
from pipeline.gatekeeper import RulesError, RuleSet
from pipeline.gatekeeper.quote_rules import ExcerptSimilarityRule
from pipeline.replay.history import GateColumnCache, similarity_histogram
from pipeline.runs import review_queue, rulebook
from pipeline.runs.rulebook import rules_in_force
from pipeline.store import StaleRuleVersion

# --- state ---------------------------------------------------------------------------------------


def _load_active() -> None:
    """Start (again) from the rules in force, as their author wrote them: the editor's base
    version and candidate text."""
    in_force = rulebook.text_in_force(reads.settings(), reads.store())
    rules_in_force(reads.settings(), reads.store())  # the page shows only a load error if they do not load
    st.session_state["rules_base"] = in_force.version
    st.session_state["rules_index"], st.session_state["rules_meta"] = in_force.texts
    st.session_state["rules_base_yaml"] = in_force.texts
    _bump("rules_form_gen")
    _bump("rules_yaml_gen")
    for key in ("rules_preview", "rules_stale", "rules_last_valid"):
        st.session_state.pop(key, None)


def _bump(key: str) -> None:
    st.session_state[key] = st.session_state.get(key, 0) + 1


def init_state() -> str | None:
    """The load error of the rules in force, if any (the page then shows only that)."""
    if "rules_index" not in st.session_state:
        try:
            _load_active()
        except RulesError as exc:
            return "\n".join(exc.messages)
    return None


def candidate() -> tuple[RuleSet | None, list[str]]:
    return rules_view.check_rules(st.session_state["rules_index"], st.session_state["rules_meta"])


# --- permission ----------------------------------------------------------------------------------


def permission() -> tuple[bool, str]:
    """(may apply, why not): the engine's editor check for whoever is signed in."""
    decision = identity.may_apply_rules()
    return decision.allowed, identity.why_not(decision)


def author_field(key: str) -> str:
    who = identity.current_user()
    if who:
        st.caption(i18n.t("rules.author") + f": {markup.md(who)}")
        return who
    return st.text_input(i18n.t("rules.author"), key=key, persist_state="session").strip()


# --- sidebar ---------------------------------------------------------------------------------------


def judging() -> None:
    """How far the re-judge under the version in force has come; one is started if none runs."""
    state = rulebook.judging(reads.store())
    if state.judging_version == state.version and not state.stalled(datetime.now(UTC)):
        st.caption(i18n.t("rules.rejudging", v=state.judging_version, phase=state.phase or "", done=state.done,
                        total=state.total))
    elif state.current:
        st.caption(i18n.t("rules.rejudged", v=state.version))
    else:
        st.caption(i18n.t("rules.judge_pending", v=state.version) if state.judged_version is None  # none ended yet
                   else i18n.t("rules.rejudge_pending", old=state.judged_version, v=state.version))
        rulebook.rejudge_in_background(reads.settings(), reads.store(), _history(reads.settings().db_url))


def sidebar() -> None:
    with st.sidebar:
        # It polls only while the verdicts in force lag the version in force, until the page's next
        # run: a fragment that reruns every 2 s when nothing moves keeps the page busy for nothing.
        # (A whole-page rerun once the re-judge ends would reset a threshold being typed.)
        polling = not rulebook.judging(reads.store()).current
        st.fragment(judging, run_every=2 if polling else None)()
        base = st.session_state.get("rules_base")
        st.caption(i18n.t("rules.in_force", v=i18n.t("rules.version", id=base) if base else i18n.t("rules.dir")))
        allowed, why = permission()
        if not allowed:
            st.warning(why)
            identity.login_button("rules_login")
        st.button(i18n.t("rules.reload"), on_click=_load_active, key="rules_reload_side")


# --- form ------------------------------------------------------------------------------------------


def _on_form(rule_id: str, field_name: str, widget_key: str, kind: str) -> None:
    value: Any = st.session_state[widget_key]
    if kind == "text_list":
        value = [line.strip() for line in str(value).splitlines() if line.strip()]
    elif kind == "choice_list":
        value = list(value)
    _set_field(rule_id, field_name, value)


def _on_panel(rule_id: str) -> None:
    if st.session_state.get(f"rules_panel_{rule_id}"):
        st.session_state["rules_opened"] = rule_id


def _set_field(rule_id: str, field_name: str, value: Any) -> None:
    st.session_state["rules_index"], st.session_state["rules_meta"] = rules_yaml.set_rule_field(
        st.session_state["rules_index"], st.session_state["rules_meta"], rule_id, field_name, value)
    _bump("rules_yaml_gen")


def _param_widget(spec: Any, pf: rules_view.ParamField, gen: int) -> None:
    key = f"rules_f{gen}_{spec.id}_{pf.name}"
    args = (spec.id, f"params.{pf.name}", key, pf.kind)
    if pf.kind == "number":
        # One widget per value: a slider kept in step with a number box writes each into the other,
        # and a browser still sending the old value of one undoes steps taken on the other.
        st.number_input(i18n.field(pf.name), 0.0, 1.0, float(pf.value), 0.01, key=key, format="%.2f", on_change=_on_form,
                        args=args)
    elif pf.kind == "count":
        st.number_input(i18n.field(pf.name), 0, None, int(pf.value), 1, key=key, on_change=_on_form, args=args)
    elif pf.kind == "bool":
        st.checkbox(i18n.field(pf.name), bool(pf.value), key=key, on_change=_on_form, args=args)
    elif pf.kind == "choice_list":
        st.multiselect(i18n.field(pf.name), list(pf.options), default=list(pf.value), format_func=i18n.value, placeholder=i18n.t("common.choose_many"), key=key, on_change=_on_form, args=args)
    elif pf.kind == "choice":
        st.selectbox(i18n.field(pf.name), list(pf.options), index=list(pf.options).index(pf.value), format_func=i18n.value, placeholder=i18n.t("common.choose_one"), key=key,
                     on_change=_on_form, args=args)
    else:
        st.text_area(i18n.field(pf.name) + " · " + i18n.t("rules.one_per_line"), "\n".join(map(str, pf.value)), key=key,
                     on_change=_on_form, args=args, height=120)
    if pf.acts_on:
        _acts_on(spec, pf.acts_on)


def _acts_on(spec: Any, target: str) -> None:
    """What the value beside it is compared with, and where it is compared with nothing stored."""
    st.caption(i18n.named("rules.acts_on.", target))
    if target != "digest_scores":
        return
    # The history's arrays exist once a preview ran; the form never builds them itself.
    arrays = _history(reads.settings().db_url).arrays if st.session_state.get("rules_preview") else None
    judged = rules_view.digest_scores_judged(spec, arrays)
    if judged == 0:
        st.warning(i18n.t("rules.acts_on_nothing"))
    elif judged is not None:
        st.caption(i18n.t("rules.acts_on_count", n=judged))


def form(rules: RuleSet | None, errors: list[str]) -> None:
    """Drawn from the last valid candidate, so a value that breaks validation can be fixed here too."""
    if errors:
        st.error(i18n.t("rules.invalid_list") + "\n\n" + "\n".join(f"- {markup.md(e)}" for e in errors))
    if rules is not None:
        st.session_state["rules_last_valid"] = rules
    rules = st.session_state.get("rules_last_valid")
    if rules is None:
        return
    gen = st.session_state.get("rules_form_gen", 0)
    # A rule's inputs are drawn only while its panel is open: one open panel's number, select and
    # multiselect inputs held the page's first open back by about 0.5 s (docs/benchmarks.md).
    for spec in rules.rules:
        title = (f"{'●' if spec.enabled else '○'} {rules_view.rule_name(spec, i18n.lang())} ({spec.id}) · "
                 f"{i18n.value(spec.verdict_impact)}")
        # The panel last opened is drawn open by default too, so a run that carries no panel state
        # (Streamlit 1.59's AppTest) keeps it; the default changes only when a panel opens, as a
        # change redraws the panel's inputs (an input being typed into would lose its focus).
        panel = st.expander(title, expanded=spec.id == st.session_state.get("rules_opened"), key=f"rules_panel_{spec.id}",
                            on_change=_on_panel, args=(spec.id,))
        if not panel.open:
            continue
        with panel:
            st.caption(markup.md(rules_view.in_language(spec.description, i18n.lang())))
            c1, c2, c3 = st.columns(3)
            k = f"rules_f{gen}_{spec.id}"
            c1.toggle(i18n.t("rules.enabled"), spec.enabled, key=f"{k}_enabled", on_change=_on_form,
                      args=(spec.id, "enabled", f"{k}_enabled", "bool"))
            c2.selectbox(i18n.field("verdictImpact"), rules_view.VERDICT_IMPACTS, format_func=i18n.value, index=rules_view.VERDICT_IMPACTS.index(spec.verdict_impact), placeholder=i18n.t("common.choose_one"), key=f"{k}_impact",
                         on_change=_on_form, args=(spec.id, "verdictImpact", f"{k}_impact", "choice"))
            c3.selectbox(i18n.field("severity"), rules_view.SEVERITIES, format_func=i18n.value, index=rules_view.SEVERITIES.index(spec.severity),
                         placeholder=i18n.t("common.choose_one"), key=f"{k}_severity", on_change=_on_form, args=(spec.id, "severity", f"{k}_severity", "choice"))
            for pf in rules_view.param_fields(spec):
                _param_widget(spec, pf, gen)


# --- YAML ------------------------------------------------------------------------------------------


def _on_yaml(which: str, widget_key: str, gen: int) -> None:
    # A text area the form has since redrawn (an older generation) still reports the text it was drawn
    # with while quick form edits are in flight: taking it would undo those edits and rebuild the form.
    if gen != st.session_state.get("rules_yaml_gen", 0) or st.session_state[widget_key] == st.session_state[which]:
        return
    st.session_state[which] = st.session_state[widget_key]
    rules, _ = candidate()
    if rules is not None:
        _bump("rules_form_gen")


def yaml_editor(errors: list[str]) -> None:
    gen = st.session_state.get("rules_yaml_gen", 0)
    left, right = st.columns(2)
    left.text_area("index.yaml", st.session_state["rules_index"], height=420, key=f"rules_y{gen}_index",
                   on_change=_on_yaml, args=("rules_index", f"rules_y{gen}_index", gen))
    right.text_area("metadata.yaml", st.session_state["rules_meta"], height=420, key=f"rules_y{gen}_meta",
                    on_change=_on_yaml, args=("rules_meta", f"rules_y{gen}_meta", gen))
    if errors:
        st.error(i18n.t("rules.invalid_list") + "\n\n" + "\n".join(f"- {markup.md(e)}" for e in errors))


# --- preview ---------------------------------------------------------------------------------------


@st.cache_resource(max_entries=4, show_spinner=False)
def _history(url: str) -> GateColumnCache:
    history = GateColumnCache(reads.store())
    history.warm(rules_in_force(reads.settings(), reads.store())[0])
    return history


def history_now() -> GateColumnCache:
    """The columnar history with every stored session in it (new ones are added)."""
    history = _history(reads.settings().db_url)
    history.refresh(rules_in_force(reads.settings(), reads.store())[0])
    return history


# Changed sessions listed with their findings; each costs a per-session replay, so a preview over
# a large history lists the first ones and counts the rest.
LISTED = 500


def run_preview(rules: RuleSet, include_eval: bool) -> None:
    left_out = frozenset() if include_eval else frozenset(review_queue.eval_session_ids(reads.store()))
    result = history_now().replay(rules, exclude=left_out)
    total, changed, status, verdict = result.counts()
    rows = result.rows(changed_only=True, limit=LISTED)
    base_index, base_meta = st.session_state["rules_base_yaml"]
    edited = rules_view.changed_rules(rules_view.check_rules(base_index, base_meta)[0] or rules, rules)
    st.session_state["rules_preview"] = {
        "responsible": {r.session_id: rules_view.responsible_rules(r.rules_responsible, r.result, edited) for r in rows},
        "for": (st.session_state["rules_index"], st.session_state["rules_meta"]),
        "total": total,
        "changed": rows,
        "changed_count": changed,
        "status": Counter({k.replace("->", " → "): v for k, v in status.items()}),
        "verdict": Counter({k.replace("->", " → "): v for k, v in verdict.items()}),
    }


def _histogram(rules: RuleSet) -> None:
    arrays = _history(reads.settings().db_url).arrays  # as the preview just refreshed them
    spec = rules.get(ExcerptSimilarityRule.id)
    if arrays is None or spec is None or not spec.enabled:
        return
    # The scores the candidate's thresholds compare, not the raw similarity: a line is drawn
    # only where it can move a binding across it.
    p = cast(ExcerptSimilarityRule.Params, spec.params)
    bars = similarity_histogram(arrays, p, 0.05)
    if not any(n for _, n in bars):
        return
    fig = go.Figure(go.Bar(x=[b + 0.025 for b, _ in bars], y=[n for _, n in bars], width=0.048,
                           marker_color="#3b5bdb"))
    if rules_view.digest_scores_judged(spec, arrays):
        fig.add_vline(x=p.warnThreshold, line_color="#c92a2a", line_dash="dash", annotation_text="warn")
        fig.add_vline(x=p.passThreshold, line_color="#2b8a3e", line_dash="dash", annotation_text="pass")
    fig.update_layout(title=i18n.t("rules.similarity_hist"), height=280, margin={"l": 10, "r": 10, "t": 40, "b": 10},
                      bargap=0.05)
    st.plotly_chart(fig, key="rules_hist")


@st.fragment
def preview(rules: RuleSet | None) -> None:
    left, right = st.columns([2, 3], vertical_alignment="center")
    include_eval = right.toggle(i18n.t("rules.include_eval"), False, key="rules_preview_eval")
    if left.button(i18n.t("rules.preview"), disabled=rules is None, key="rules_preview_btn", type="primary") and rules:
        run_preview(rules, include_eval)
    result = st.session_state.get("rules_preview")
    if not result:
        return
    # Drawn only once a preview ran: building the history cache is the slow part of a first visit.
    if rules is not None:
        _histogram(rules)
    if result["for"] != (st.session_state["rules_index"], st.session_state["rules_meta"]):
        st.caption(i18n.t("rules.preview_stale"))
    c1, c2, c3, c4 = st.columns(4)
    c1.metric(i18n.t("rules.replayed"), result["total"])
    c2.metric(i18n.t("rules.changed"), result["changed_count"])
    c3.markdown("**" + i18n.t("rules.status_changes") + "**\n\n" + ("\n".join(
        f"- {k}: {v}" for k, v in result["status"].most_common()) or "—"))
    c4.markdown("**" + i18n.t("rules.verdict_changes") + "**\n\n" + ("\n".join(
        f"- {k}: {v}" for k, v in result["verdict"].most_common()) or "—"))
    if not result["changed"]:
        st.info(i18n.t("rules.no_change"))
        return
    changed = result["changed"]
    if result["changed_count"] > len(changed):
        st.caption(i18n.t("rules.listed_first", shown=len(changed), total=result["changed_count"]))
    picked = st.dataframe([{
        "session": r.session_id,
        "gatekeeper": f"{r.old_status} → {r.new_status}",
        "verdict": f"{r.old_verdict} → {r.projected_verdict}",
        "rules responsible": ", ".join(result["responsible"].get(r.session_id, [])),
    } for r in changed], hide_index=True, key="rules_diff_table", on_select="rerun", selection_mode=widgets.PICK,
        column_config=widgets.headers("session", "gatekeeper", "verdict", "rules responsible"))
    widgets.open_picked_trace(picked, [r.session_id for r in changed])


# --- apply and history -----------------------------------------------------------------------------


def _apply(do: Callable[[], int]) -> int | None:
    try:
        new_id = do()
    except StaleRuleVersion as exc:
        st.session_state["rules_stale"] = str(exc)
        return None
    except rulebook.RulesRefused as exc:
        st.session_state["rules_stale"] = render(exc.message, i18n.lang())
        return None
    reads.refresh_session_reads()
    # With the page's columns, loaded for its previews: at a million sessions the load is most of
    # a re-judge (docs/benchmarks.md).
    rulebook.rejudge_in_background(reads.settings(), reads.store(), _history(reads.settings().db_url))
    return new_id


def _rebase() -> None:
    active = reads.store().active_rule_version()
    st.session_state["rules_base"] = active["id"] if active else None
    if active:
        st.session_state["rules_base_yaml"] = (active["index_yaml"], active["metadata_yaml"])
    st.session_state.pop("rules_stale", None)


def apply_section(rules: RuleSet | None) -> None:
    st.subheader(i18n.t("rules.apply"))
    stale = st.session_state.get("rules_stale")
    if stale:
        st.error(i18n.t("rules.stale", msg=markup.md(stale)))
        c1, c2 = st.columns(2)
        c1.button(i18n.t("rules.rebase"), on_click=_rebase, key="rules_rebase")
        c2.button(i18n.t("rules.reload"), on_click=_load_active, key="rules_reload")
    flash = st.session_state.pop("rules_flash", None)
    if flash:
        st.success(flash)
    allowed, why = permission()
    base_yaml = st.session_state.get("rules_base_yaml")
    current = (st.session_state["rules_index"], st.session_state["rules_meta"])
    unchanged = rules is not None and base_yaml is not None and rules_view.check_rules(*base_yaml)[0] == rules
    if base_yaml is not None and not unchanged:
        with st.expander(i18n.t("rules.diff_in_force"), expanded=True):
            st.code(rules_view.yaml_diff(base_yaml, current, "in force", "candidate")
                    or render(msg("rules.unchanged"), i18n.lang()), language="diff")
    author = author_field("rules_author")
    comment = st.text_input(i18n.t("rules.comment"), key="rules_comment")
    refused, _ = rulebook.refusal(reads.settings(), current, base_yaml, author)
    reason = why if not allowed else render(refused, i18n.lang()) if refused else ""
    # RuleSet.ungated_by: the same test `rules apply` makes before a version goes into force.
    ungated = rules.ungated_by(gatekeeper_enabled=reads.settings().gatekeeper.enabled) if rules else []
    unconfirmed = False
    if ungated and not reason:
        st.warning(i18n.t("rules.ungated_warning", rules=", ".join(ungated)), icon=":material/gpp_maybe:")
        unconfirmed = not st.checkbox(i18n.t("rules.ungated_confirm"), key="rules_ungated_confirm")
    if reason:
        st.caption(reason)
    if st.button(i18n.t("rules.apply"), disabled=bool(reason) or unconfirmed, key="rules_apply", type="primary"):
        base = st.session_state.get("rules_base") or 0
        new_id = _apply(lambda: rulebook.apply_rules(reads.settings(), reads.store(), current, author=author,
                                                     comment=comment, based_on=base))
        if new_id is not None:
            st.session_state["rules_base"] = new_id
            st.session_state["rules_base_yaml"] = current
            st.session_state["rules_flash"] = i18n.t("rules.applied", id=new_id)
        st.rerun()


def history() -> None:
    versions = rules_view.rule_history(reads.store(), rulebook.read_rules_dir(reads.settings()),
                                       rulebook.rules_dir_time(reads.settings()))
    # "based on" as text: version 0 is based on nothing, shown as "—" rather than a grid's None.
    # Version 0 is the shipped rules/ directory: who and what it is, in the page's words.
    shipped = {"author": i18n.t("rules.shipped_author"), "comment": i18n.t("rules.shipped_comment")}
    st.dataframe([{"version": v.id, "time": v.created_at, **({"author": v.author, "comment": v.comment} if v.id else shipped),
                   "active": v.active, "based on": "—" if v.parent_id is None else f"v{v.parent_id}"}
                  for v in versions], hide_index=True,
                 key="rules_versions", column_config={
                     **widgets.headers("version", "author", "active", "based on"),
                     "time": st.column_config.DatetimeColumn(i18n.named("col.", "time"), format="YYYY-MM-DD HH:mm",
                                                             width=140),
                     "comment": st.column_config.TextColumn(i18n.named("col.", "comment"), width="large")})
    by_id = {v.id: v for v in versions}
    ids = list(by_id)
    c1, c2 = st.columns(2)
    # Keyed by the newest id: after an Apply the comparison starts from the new version again.
    new = c2.selectbox(i18n.t("rules.diff_to"), ids, index=0, placeholder=i18n.t("common.choose_one"), key=f"rules_diff_new_{ids[0]}",
                       format_func=lambda i: i18n.t("rules.version", id=i))
    parent = by_id[new].parent_id
    old = c1.selectbox(i18n.t("rules.diff_from"), ids, index=ids.index(parent if parent in by_id else ids[-1]),
                       placeholder=i18n.t("common.choose_one"), key=f"rules_diff_old_{new}", format_func=lambda i: i18n.t("rules.version", id=i))
    diff = rules_view.yaml_diff(by_id[old].yaml, by_id[new].yaml, f"v{old}", f"v{new}")
    st.code(diff or i18n.t("rules.no_difference"), language="diff")
    targets = [i for i in ids if not by_id[i].active]
    if not targets:
        return
    st.markdown("**" + i18n.t("rules.rollback_title") + "**")
    pick, who, go = st.columns([1, 1, 1], vertical_alignment="bottom")
    target = pick.selectbox(i18n.t("rules.rollback_to"), targets, placeholder=i18n.t("common.choose_one"), key="rules_rollback_pick",
                            format_func=lambda i: i18n.t("rules.version", id=i))
    allowed, why = permission()
    with who:
        # Asked here, beside the button it enables; prefilled from the Apply form's author.
        st.session_state.setdefault("rules_rollback_author", st.session_state.get("rules_author", ""))
        author = author_field("rules_rollback_author")
    if go.button(i18n.t("rules.rollback", id=target), disabled=not allowed or not author, key="rules_rollback",
                 help=why or (None if author else render(msg("rules.need_author"), i18n.lang()))):
        new_id = _apply(lambda: rulebook.rollback(reads.settings(), reads.store(), target, author=author))
        if new_id is not None:
            _load_active()
            st.session_state["rules_flash"] = i18n.t("rules.rolled_back", old=target, id=new_id)
        st.rerun()


def body(load_error: str | None) -> None:
    st.title(i18n.t("rules.title"))
    if load_error:
        st.error(i18n.t("rules.load_error") + "\n\n" + markup.md(load_error))
        st.button(i18n.t("rules.reload"), on_click=_load_active, key="rules_reload_err")
        return
    _history(reads.settings().db_url)  # starts loading the history for previews in the background
    rules, errors = candidate()
    # History is drawn only while its tab is open: its table is the page's only grid, whose frontend
    # code held every first open back by about a second (docs/benchmarks.md, first open). The form
    # (its closed panels) and the YAML show one candidate, so both are always drawn.
    tab_form, tab_yaml, tab_history = st.tabs([i18n.t("rules.form"), i18n.t("rules.yaml"), i18n.t("rules.history")],
                                              key="rules_tab", on_change="rerun")
    with tab_form:
        form(rules, errors)
    with tab_yaml:
        yaml_editor(errors)
    if tab_history.open:
        with tab_history:
            history()
    st.divider()
    preview(rules)
    st.divider()
    apply_section(rules)


frame.page_start()
_load_error = init_state()
sidebar()
body(_load_error)
