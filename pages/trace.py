"""Trace (?session=ID): one session's audit chain, top down from the answer to the raw outputs."""

from __future__ import annotations

import json
from typing import Any

import streamlit as st

from pages import _common as ui
from pipeline import views
from pipeline.store import SessionFilter

CLAIMS_PER_PAGE = 20
GOOD_CHECKS = ("direct_observation", "reasonable_inference")


def init_state() -> str | None:
    sid = st.query_params.get("session")
    if sid:
        st.session_state["trace_session"] = sid
    return st.session_state.get("trace_session")


def _pick(sid: str) -> None:
    st.session_state["trace_session"] = sid
    st.query_params["session"] = sid


def sidebar(current: str | None) -> str:
    url = ui.settings().db_url
    rows, _ = ui.list_sessions(url, SessionFilter(), 100, 0)
    with st.sidebar:
        options = [r["id"] for r in rows]
        if current and current not in options:
            options.insert(0, current)
        labels = {r["id"]: f"{r['id']} · {r.get('verdict') or r.get('status')} · {r['question'][:40]}" for r in rows}
        if options:
            chosen = st.selectbox(ui.t("trace.pick"), options, index=options.index(current) if current else 0,
                                  format_func=lambda sid: labels.get(sid, sid), key=f"trace_pick_{current}")
            if chosen != current:
                _pick(chosen)
                current = chosen
        reviewer = ui.reviewer_name()
    st.session_state["trace_reviewer"] = reviewer
    return current or ""


# --- sections ----------------------------------------------------------------------------------


def header(row: dict[str, Any]) -> None:
    st.title(ui.t("trace.title"))
    ui.text_block(row["question"])
    cols = st.columns([1, 1, 1, 3])
    with cols[0]:
        st.caption(ui.t("common.verdict"))
        ui.verdict_badge(row.get("verdict"))
    with cols[1]:
        st.caption(ui.t("common.gatekeeper"))
        ui.status_badge(row.get("gatekeeper_status"))
    with cols[2]:
        st.caption(ui.t("common.groundedness"))
        g = row.get("groundedness")
        st.write("—" if g is None else f"{g:.2f}")
    with cols[3]:
        st.caption(f"`{row['id']}` · {row['created_at']:%Y-%m-%d %H:%M:%S} · {row.get('world') or '-'} · "
                   f"{row['provider']}/{row['model']} · {row['shape']} · {ui.t('common.status')} {row['status']} "
                   f"({row['stage']}) · rounds {row.get('rounds', 1)} · tokens "
                   f"{row.get('prompt_tokens', 0)}+{row.get('completion_tokens', 0)}")
        timings = row.get("timings_ms") or {}
        if timings:
            st.caption(" · ".join(f"{k} {v:.0f} ms" for k, v in timings.items()))
    if row.get("error"):
        st.error(row["error"])


def final_answer(row: dict[str, Any], ev: dict[str, Any]) -> None:
    st.subheader(ui.t("trace.final"))
    ui.text_block(row.get("final_answer") or ui.t("common.none"))
    guard = ev.get("composer_guard") or {}
    if guard:
        line = f"{ui.t('trace.guard')}: {ui.pill(guard.get('status'))}"
        if guard.get("used_template"):
            line += f" · {ui.esc(ui.t('trace.template'))}"
        if guard.get("detail"):
            line += f" · {ui.esc(guard['detail'])}"
        violations = "".join(f"<li>{ui.esc(v.get('kind'))}: <code>{ui.esc(v.get('token'))}</code> "
                             f"{ui.esc(v.get('field', ''))}</li>" for v in guard.get("violations", []))
        ui.html_block(f"<div>{line}</div>" + (f'<ul class="wb-list">{violations}</ul>' if violations else ""))


def composer_input(ev: dict[str, Any]) -> None:
    st.subheader(ui.t("trace.composer_input"))
    ci = ev.get("composer_input") or {}
    left, right = st.columns(2)
    with left:
        sections = [
            ("ask.confirmed", [f"[{c.get('claim_id')}] {c.get('claim_text')}" for c in ci.get("allowed_claims", [])]),
            ("ask.hypotheses", [h.get("hypothesis_text", "") for h in ci.get("allowed_hypotheses", [])]),
            ("ask.gaps", list(ci.get("missing_info", []))),
            ("ask.actions", [a.get("action_text", "") for a in ci.get("recommended_actions", [])]),
        ]
        parts = []
        for key, items in sections:
            lis = "".join(f"<li>{ui.esc(i)}</li>" for i in items) or f"<li class='wb-muted'>{ui.esc(ui.t('ask.none'))}</li>"
            parts.append(f"<b>{ui.esc(ui.t(key))}</b><ul class='wb-list'>{lis}</ul>")
        if ci.get("rationale"):
            parts.append(f"<b>{ui.esc(ui.t('ask.rationale'))}</b><div class='wb-text'>{ui.esc(ci['rationale'])}</div>")
        ui.html_block("".join(parts))
    with right:
        st.markdown(f"**{ui.t('trace.filtered')}**")
        filtered = ev.get("composer_filtered") or []
        if filtered:
            st.dataframe([{"source": f.get("source"), "text": f.get("text"), "moved to": f.get("moved_to"),
                           "reason": f.get("reason")} for f in filtered], hide_index=True)
        else:
            st.caption(ui.t("ask.none"))
        st.markdown(ui.t("trace.verdict_guard", v=ev.get("verifier_verdict") or "—", f=ev.get("verdict") or "—"))
        reasons = ev.get("verdict_guard_reasons") or []
        if reasons:
            ui.html_block("<ul class='wb-list'>" + "".join(f"<li>{ui.esc(r)}</li>" for r in reasons) + "</ul>")


def _window_html(url: str, b: views.BindingView) -> str:
    if b.invocation_id is None or not b.spans:
        return f"<div class='wb-muted'>{ui.esc(ui.t('trace.not_located'))}</div>"
    decoded = ui.decoded_output(url, int(b.invocation_id))
    w = views.highlight_window(decoded, b.spans, entity_tokens=views.nearby_tokens(b.entity_misses))
    meta = (f"#{ui.esc(b.invocation_id)} · {ui.esc(ui.t('trace.similarity'))} <b>{ui.esc(b.score)}</b> · "
            + ui.esc(ui.t("trace.window", start=w.start, end=w.end, total=w.total, line=w.line)))
    body = ("… " if w.start > 0 else "") + ui.segments_html(w.segments) + (" …" if w.end < w.total else "")
    return f"<div class='wb-muted'>{meta}</div><div class='wb-box'>{body}</div>"


def _binding(url: str, b: views.BindingView) -> None:
    left, right = st.columns(2)
    with left:
        ids = ", ".join(f"#{i}" for i in b.source_invocation_ids)
        scores = " · ".join(f"{name} {score}" for name, score in b.source_scores.items())
        misses = "".join(
            f"<li><mark class='wb-entity'>{ui.esc(m.get('token'))}</mark> ({ui.esc(m.get('kind'))}) "
            f"{ui.esc(ui.t('trace.entity_miss'))}"
            + (f" → {ui.esc(', '.join(m.get('nearby') or []))}" if m.get("nearby") else "") + "</li>"
            for m in b.entity_misses)
        extra = ""
        if b.added_words:
            extra += f"<div class='wb-muted'>{ui.esc(ui.t('trace.added'))}: {ui.esc(', '.join(b.added_words))}</div>"
        if b.other_match:
            o = b.other_match
            extra += f"<div class='wb-muted'>{ui.esc(ui.t('trace.other_match', id=o.get('invocation_id'), tool=o.get('tool_name'), score=o.get('score')))}</div>"
        errors = "".join(f"<li>{ui.pill('fail')} {ui.esc(e.get('rule_id'))}: {ui.esc(e.get('message'))}</li>"
                         for e in b.errors)
        ui.html_block(
            f"<div class='wb-muted'>{ui.esc(b.target)} · {ui.esc(b.tool_name)} {ui.esc(ids)}"
            + (f" · {ui.esc(b.digest_id)}" if b.digest_id else "") + f" · {ui.esc(scores)}</div>"
            f"<div class='wb-box'>{ui.segments_html(views.excerpt_segments(b.evidence_excerpt, b.entity_misses))}</div>"
            + (f"<ul class='wb-list'>{misses}</ul>" if misses else "") + extra
            + (f"<ul class='wb-list'>{errors}</ul>" if errors else "")
        )
    with right:
        ui.html_block(_window_html(url, b))


def _review_form(session_id: str, claim_id: str | None, key: str) -> None:
    with st.form(key, clear_on_submit=True, border=False):
        label = st.selectbox(ui.t("common.label"), ui.REVIEW_LABELS, key=f"{key}_label")
        note = st.text_input(ui.t("common.note"), key=f"{key}_note")
        if st.form_submit_button(ui.t("common.save_review")):
            reviewer = st.session_state.get("trace_reviewer", "")
            if not reviewer:
                st.warning(ui.t("common.need_name"))
                return
            ui.store().add_review(session_id=session_id, label=label, reviewer=reviewer, note=note, claim_id=claim_id)
            ui.refresh_session_reads()
            st.success(ui.t("common.saved"))


def _flagged(card: views.ClaimCard) -> bool:
    check = (card.claim_check or {}).get("verification")
    return bool(card.errors) or check not in GOOD_CHECKS or card.composer != "allowed"


def _card(url: str, row: dict[str, Any], card: views.ClaimCard) -> None:
    c = card.claim
    check = card.claim_check or {}
    with st.container(border=True):
        head = (f"<b>{ui.esc(c.get('claim_id'))}</b> <span class='wb-muted'>{ui.esc(card.target)} · "
                f"{ui.esc(c.get('claim_type'))} · {ui.esc(c.get('support_level'))}</span> · "
                f"{ui.esc(ui.t('trace.composer_state'))}: <b>{ui.esc(card.composer)}</b>"
                + (f" <span class='wb-muted'>({ui.esc(card.filter_reason)})</span>" if card.filter_reason else "")
                + f"<div class='wb-text'>{ui.esc(c.get('claim_text'))}</div>")
        verification = check.get("verification", "—")
        color = "pass" if verification in GOOD_CHECKS else ("warn" if verification in ("overstated", "external_unknown") else "fail")
        head += (f"<div>{ui.esc(ui.t('trace.claim_check'))}: <span class='wb-pill wb-{color}'>{ui.esc(verification)}</span> "
                 f"<span class='wb-muted'>{ui.esc(check.get('detail', ''))}</span></div>")
        own = [e for e in card.errors if not any(e in b.errors for b in card.bindings)]
        if own:
            head += "<ul class='wb-list'>" + "".join(
                f"<li>{ui.pill('fail')} {ui.esc(e.get('rule_id'))} @ {ui.esc(e.get('target'))}: {ui.esc(e.get('message'))}</li>"
                for e in own) + "</ul>"
        ui.html_block(head)
        for b in card.bindings:
            _binding(url, b)
        reviews = "; ".join(f"{r['label']} ({r['reviewer']})" for r in card.reviews)
        with st.popover(ui.t("trace.review_claim") + (f" · {reviews}" if reviews else "")):
            _review_form(row["id"], str(c.get("claim_id")), f"trace_review_{card.index}")


@st.fragment
def claims(url: str, row: dict[str, Any]) -> None:
    cards = views.claim_cards(row, ui.reviews(url, row["id"]))
    flagged = [c for c in cards if _flagged(c)]
    st.subheader(f"{ui.t('trace.claims')} ({len(cards)}; {ui.t('trace.claims_flagged')}: {len(flagged)})")
    if not cards:
        st.caption(ui.t("ask.none"))
        return
    left, right = st.columns([2, 1])
    show = left.segmented_control(ui.t("trace.claims_filter"), ["all", "flagged"], default="all", required=True,
                                  format_func=lambda v: ui.t(f"trace.claims_{v}"), key="trace_claims_filter")
    shown = flagged if show == "flagged" else cards
    pages = max(1, -(-len(shown) // CLAIMS_PER_PAGE))
    page = 1
    if pages > 1:
        page = int(right.number_input(ui.t("trace.claim_page"), 1, pages, 1, key="trace_claims_page"))
    for card in shown[(page - 1) * CLAIMS_PER_PAGE : page * CLAIMS_PER_PAGE]:
        _card(url, row, card)


def verifier_rest(row: dict[str, Any], ev: dict[str, Any]) -> None:
    errors = views.session_level_errors(row)
    if errors:
        st.subheader(ui.t("trace.session_errors"))
        st.dataframe([{"rule": e.get("rule_id"), "target": e.get("target"), "message": e.get("message")}
                      for e in errors], hide_index=True)
    hyp = ev.get("hypothesis_checks") or []
    if hyp:
        st.subheader(ui.t("trace.hypothesis_checks"))
        hyps = ((ev.get("executor_structured_output") or {}).get("hypotheses")) or []
        st.dataframe([{"#": h.get("hypothesis_index"),
                       "hypothesis": (hyps[h["hypothesis_index"]].get("hypothesis_text")
                                      if isinstance(h.get("hypothesis_index"), int) and h["hypothesis_index"] < len(hyps)
                                      and isinstance(hyps[h["hypothesis_index"]], dict) else ""),
                       "verification": h.get("verification"), "detail": h.get("detail")} for h in hyp],
                     hide_index=True)


def digests(row: dict[str, Any]) -> None:
    rows = views.digest_rows(row)
    if not rows:
        return
    st.subheader(f"{ui.t('trace.digests')} ({len(rows)})")
    st.dataframe([{
        "digest_id": d.get("digest_id"), "sources": ", ".join(f"#{i}" for i in d.get("source_invocation_ids", [])),
        "tool": d.get("tool"), "summary": d.get("summary"), "source_quote": d.get("source_quote"),
        "quote similarity": d.get("quote_score"),
        "digest_check": (d.get("digest_check") or {}).get("verification"),
        "detail": (d.get("digest_check") or {}).get("detail"),
        "errors": "; ".join(f"{e.get('rule_id')}: {e.get('message')}" for e in d["errors"]),
    } for d in rows], hide_index=True)


@st.fragment
def output_viewer(url: str, metas: list[dict[str, Any]]) -> None:
    st.markdown(f"**{ui.t('trace.viewer')}**")
    by_id = {m["id"]: m for m in metas}
    c1, c2, c3 = st.columns([2, 2, 1])
    inv_id = c1.selectbox(ui.t("trace.viewer_pick"), list(by_id), key="trace_viewer_inv",
                          format_func=lambda i: f"#{i} {by_id[i]['model_tool_name']} · {by_id[i]['status']} · "
                                                f"{by_id[i]['output_bytes']:,} B")
    query = c2.text_input(ui.t("trace.search"), key="trace_viewer_query")
    per_page = c3.selectbox(ui.t("trace.per_page"), [100, 200, 500], index=1, key="trace_viewer_per_page")
    pages = ui.output_pages(url, int(inv_id))
    hits = pages.search(query) if query else []
    n_pages = max(1, -(-pages.line_count // per_page))
    c1, c2, c3 = st.columns([1, 1, 3], vertical_alignment="bottom")
    if hits:
        # A search shows the chosen hit at the top of the box, a few lines of context above it.
        k = c1.number_input(ui.t("trace.hit"), 1, len(hits), 1, key=f"trace_viewer_hit_{inv_id}_{query}")
        first = max(0, hits[int(k) - 1] - 3)
        c3.caption(ui.t("trace.hits", n=len(hits)))
    else:
        page = c1.number_input(ui.t("trace.page"), 1, n_pages, 1, key=f"trace_viewer_page_{inv_id}_{per_page}")
        first = (int(page) - 1) * per_page
        if query:
            c3.caption(ui.t("trace.hits", n=0))
    lines = pages.lines(first, per_page)
    c2.caption(ui.t("trace.lines", first=first + 1, last=first + len(lines), total=pages.line_count))
    body = "\n".join(f"<span class='wb-ln'>{n + 1}</span>{ui.segments_html(views.query_segments(text, query))}"
                     for n, text in lines)
    ui.html_block(f"<div class='wb-box' style='max-height:32rem'>{body}</div>")


def invocations(url: str, session_id: str) -> None:
    metas = ui.invocation_meta(url, session_id)
    if not metas:
        return
    st.subheader(f"{ui.t('trace.invocations')} ({len(metas)})")
    st.dataframe([{
        "id": m["id"], "round": m["round"], "tool": m["model_tool_name"], "stored as": m["tool_name"],
        "arguments": json.dumps(m["arguments"], ensure_ascii=False), "status": m["status"],
        "latency ms": round(m["latency_ms"], 1), "bytes": m["output_bytes"],
        "cut bytes": m["stored_cut_bytes"], "error": m["error"] or "",
    } for m in metas], hide_index=True)
    output_viewer(url, metas)


def llm_calls(url: str, session_id: str) -> None:
    calls = ui.llm_calls(url, session_id)
    if not calls:
        return
    st.subheader(f"{ui.t('trace.llm_calls')} ({len(calls)})")
    for call in calls:
        label = (f"{call['stage']} · r{call['round']} · attempt {call['attempt']} · {call['parse_status']} · "
                 f"{call['prompt_tokens']}+{call['completion_tokens']} tokens · {call['latency_ms']:.0f} ms · "
                 f"{call['provider']}/{call['model']}" + (" · error" if call.get("error") else ""))
        with st.expander(label):
            if call.get("error"):
                st.error(call["error"])
            if call.get("prompt_file"):
                st.caption(f"{call['prompt_file']} {call.get('prompt_version', '')}")
            st.markdown(f"**{ui.t('trace.messages')}**")
            for m in call.get("messages") or []:
                content = m.get("content")
                st.caption(str(m.get("role", "")))
                st.code(content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, indent=1),
                        language=None, wrap_lines=True, height=220 if len(str(content)) > 2000 else "content")
            st.markdown(f"**{ui.t('trace.raw_response')}**")
            st.code(call.get("raw_response") or "", language="json", wrap_lines=True)


def audit_sources(row: dict[str, Any]) -> None:
    with st.expander(ui.t("trace.plan")):
        st.json(row.get("planner_plan") or {}, expanded=2)
    with st.expander(ui.t("trace.executor_raw")):
        st.code(row.get("executor_raw_output") or "", language="json", wrap_lines=True)


def review(url: str, session_id: str) -> None:
    st.subheader(ui.t("trace.review"))
    done = [r for r in ui.reviews(url, session_id)]
    if done:
        st.dataframe([{"time": r["created_at"], "claim": r.get("claim_id") or "—", "label": r["label"],
                       "reviewer": r["reviewer"], "note": r.get("note")} for r in done], hide_index=True)
    _review_form(session_id, None, "trace_review_session")


def body(session_id: str) -> None:
    url = ui.settings().db_url
    if not session_id:
        st.title(ui.t("trace.title"))
        st.info(ui.t("trace.no_sessions"))
        return
    row = ui.session(url, session_id)
    if row is None:
        st.title(ui.t("trace.title"))
        st.error(ui.t("trace.not_found", sid=session_id))
        return
    ev = views.verifier_evaluation(row)
    header(row)
    final_answer(row, ev)
    composer_input(ev)
    claims(url, row)
    verifier_rest(row, ev)
    digests(row)
    invocations(url, session_id)
    llm_calls(url, session_id)
    audit_sources(row)
    review(url, session_id)


body(sidebar(init_state()))
