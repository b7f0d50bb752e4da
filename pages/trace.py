"""Trace (?session=ID): one session's audit chain, top down from the answer to the raw outputs."""

from __future__ import annotations

import json

import streamlit as st

from pages._ui import frame, i18n, identity, markup, reads, widgets
from pipeline.core.errors import WorkbenchError, one_line
from pipeline.core.messages import guard_kind
from pipeline.frontends.views import highlight
from pipeline.frontends.views import trace as trace_view
from pipeline.runs import review_queue
from pipeline.store.record import InvocationMeta, SessionRecord, verdict_marks

CLAIMS_PER_PAGE = 10


def init_state() -> str | None:
    sid = st.query_params.get("session")
    if sid:
        st.session_state["trace_session"] = sid
    return st.session_state.get("trace_session")


def _pick(sid: str) -> None:
    st.session_state["trace_session"] = sid
    st.query_params["session"] = sid


def sidebar(current: str | None) -> str:
    url = reads.settings().db_url
    # Every stored session (eval runs too), each with its verdict in force as the queue lists it.
    rows = reads.queue_rows(url, review_queue.QueueFilter(needs_person=False, include_eval=True, reviewed=None), 100, 0)
    with st.sidebar:
        options = [r.id for r in rows]
        if current and current not in options:
            options.insert(0, current)
        labels = {r.id: " · ".join([r.id, widgets.verdict_shown(r.verdict, r.verdict_at_ask, r.rules_version,
                                                                 r.rules_version_at_ask) or r.status,
                                      *(i18n.named("mark.", m) for m in r.marks), r.question[:40]]) for r in rows}
        if options:
            chosen = st.selectbox(i18n.t("trace.pick"), options, index=options.index(current) if current else 0,
                                  format_func=lambda sid: labels.get(sid, sid), placeholder=i18n.t("common.choose_one"), key=f"trace_pick_{current}")
            if chosen != current:
                _pick(chosen)
                current = chosen
    return current or ""


# --- sections ----------------------------------------------------------------------------------


def header(r: SessionRecord, change: trace_view.VerdictChange | None) -> None:
    """One verdict badge: the verdict in force; the verdict at ask and both rule versions beside it
    where applied rules changed it."""
    st.title(i18n.t("trace.title"))
    markup.text_block(r.question)
    cols = st.columns([1, 1, 1, 3])
    with cols[0]:
        st.caption(i18n.t("common.verdict"))
        if change is None:
            widgets.verdict_badge(r.verdict, r.marks)
        else:
            widgets.verdict_badge(change.in_force, verdict_marks(ungated=change.ungated_in_force,
                                                                 provenance=r.provenance))
            st.caption(i18n.t("trace.at_ask", a=change.at_ask or "—", n=change.version_in_force,
                              m="—" if change.version_at_ask is None else change.version_at_ask))
    with cols[1]:
        st.caption(i18n.t("common.gatekeeper"))
        widgets.status_badge(r.gatekeeper_status)
    with cols[2]:
        st.caption(i18n.t("common.groundedness"))
        st.write("—" if r.groundedness is None else f"{r.groundedness:.2f}")
    with cols[3]:
        st.caption(markup.md(f"{r.id} · {r.created_at:%Y-%m-%d %H:%M:%S} · {r.world or '-'} · {r.provider}/{r.model} · "
                             f"{i18n.value(r.shape)} · " + i18n.t("common.status") + f" {i18n.value(r.status)} ({i18n.value(r.stage)}) · "
                             + i18n.t("trace.meta_rounds", n=r.rounds) + " · "
                             + i18n.t("trace.meta_tokens", p=r.prompt_tokens, c=r.completion_tokens)))
        if r.timings_ms:
            st.caption(markup.md(" · ".join(f"{k} {v:.0f} ms" for k, v in r.timings_ms.items())))
    if r.error:
        st.error(markup.md(r.error))


def verdict_in_force(change: trace_view.VerdictChange | None) -> None:
    """The verdict under the rule version in force beside the one at ask, where they differ."""
    if change is None:
        return
    shown = " · ".join([change.in_force, *([i18n.t("mark.ungated")] if change.ungated_in_force else [])])
    st.warning(i18n.t("trace.in_force", v=shown, n=change.version_in_force, a=change.at_ask or "—",
                    m="—" if change.version_at_ask is None else change.version_at_ask))
    for title, errors in ((i18n.t("trace.findings_added"), change.added), (i18n.t("trace.findings_removed"), change.removed)):
        if errors:
            items = "".join(f"<li><code>{markup.esc(e.rule_id)}</code> <code>{markup.esc(e.target)}</code>: "
                            f"{markup.esc(i18n.say(e.message, e.msg))}</li>" for e in errors)
            markup.html_block(f"<div>{markup.esc(title)}</div><ul class='wb-list'>{items}</ul>")


def final_answer(r: SessionRecord) -> None:
    st.subheader(i18n.t("trace.final"))
    markup.text_block(r.final_answer or i18n.t("common.none"))
    widgets.scope_block(r)
    guard = r.evaluation.composer_guard if r.evaluation else None
    if guard:
        line = i18n.t("trace.guard") + f": {i18n.pill(guard.status)}"
        if guard.used_template:
            line += " · " + markup.esc(i18n.t("trace.template"))
        if guard.detail:
            line += f" · {markup.esc(i18n.say(guard.detail, guard.msg))}"
        violations = "".join(f"<li>{markup.esc(guard_kind(v.kind, i18n.lang()))}: <code>{markup.esc(v.token)}</code> "
                             f"<code>{markup.esc(v.field)}</code></li>"
                             for v in guard.violations)
        markup.html_block(f"<div>{line}</div>" + (f'<ul class="wb-list">{violations}</ul>' if violations else ""))


def claimed_by_source(r: SessionRecord) -> None:
    """An imported session: the bundle's own verdict and answer beside ours, never used (law 9)."""
    c = r.claimed_by_source
    if c is None:
        return
    with st.expander(i18n.t("trace.claimed", v=markup.md(c.verdict or "—"), f=r.verdict or "—"),
                     expanded=c.verdict != r.verdict):
        sig = c.signature
        markup.html_block(f"<div class='wb-muted'>{markup.esc(c.provider)}/{markup.esc(c.model)} · "
                          f"<code>{markup.esc(c.session_id)}</code></div><div>" + markup.esc(i18n.t("trace.provenance"))
                          + f": {markup.pill(r.provenance)} {markup.esc(sig.reason if sig else '')}"
                          + (f" <code>{markup.esc(sig.key)}</code>" if sig and sig.key else "") + "</div>")
        markup.text_block(c.final_answer or i18n.t("common.none"))


def composer_input(r: SessionRecord) -> None:
    """What the composer was given beside what was kept from it and why the verdict is what it is:
    two columns of one block (columns of elements cost the browser a block each on first open)."""
    ev = r.evaluation
    if ev is None:
        return
    st.subheader(i18n.t("trace.composer_input"))
    ci = ev.composer_input
    sections = [
        (i18n.t("ask.confirmed"), [f"[{c.claim_id}] {c.claim_text}" for c in ci.allowed_claims] if ci else []),
        (i18n.t("ask.hypotheses"), [h.hypothesis_text for h in ci.allowed_hypotheses] if ci else []),
        (i18n.t("ask.gaps"), list(ci.missing_info) if ci else []),
        (i18n.t("ask.actions"), [a.action_text for a in ci.recommended_actions] if ci else []),
    ]
    given = []
    none = markup.esc(i18n.t("ask.none"))
    for heading, items in sections:
        lis = "".join(f"<li>{markup.esc(i)}</li>" for i in items) or f"<li class='wb-muted'>{none}</li>"
        given.append(f"<b>{markup.esc(heading)}</b><ul class='wb-list'>{lis}</ul>")
    if ci and ci.rationale:
        rationale = markup.esc(i18n.t("ask.rationale"))
        given.append(f"<b>{rationale}</b><div class='wb-text'>{markup.esc(ci.rationale)}</div>")
    # Wrapped text, not a grid: a reason is a sentence and must fit at 1280 px.
    kept = "".join(
        f"<li><code>{markup.esc(f.source)}</code> → <b>{markup.esc(i18n.value(f.moved_to))}</b>: {markup.esc(f.text)}"
        f"<div class='wb-muted'>{markup.esc(i18n.say(f.reason, f.msg))}</div></li>" for f in ev.composer_filtered)
    reasons = "".join(f"<li>{markup.esc(x)}</li>" for x in trace_view.verdict_reasons(ev, i18n.lang()))
    verdict = markup.esc(i18n.t("trace.verdict_guard", v=ev.verifier_verdict or "—", f=ev.verdict))
    kept_away = markup.esc(i18n.t("trace.filtered"))
    right = (f"<b>{kept_away}</b>"
             + (f"<ul class='wb-list'>{kept}</ul>" if kept else f"<div class='wb-muted'>{none}</div>")
             + f"<div>{verdict}</div>" + (f"<ul class='wb-list'>{reasons}</ul>" if reasons else ""))
    markup.html_block(f"<div class='wb-two'><div>{''.join(given)}</div><div>{right}</div></div>")


def _window_html(url: str, b: trace_view.BindingView) -> str:
    if b.invocation_id is None or not b.spans:
        # What the reviewer must judge: the quote beside the records of each output it cites
        # that come closest to it.
        parts = ["<div class='wb-muted'>" + markup.esc(i18n.t("trace.not_located")) + "</div>"]
        for inv_id in dict.fromkeys(b.binding.source_invocation_ids):
            near = reads.nearest_records(url, inv_id, b.binding.evidence_excerpt or '')
            rows = "\n".join(f"<span class='wb-ln'>#{n.number} · {n.score:.2f}</span> {markup.esc(n.line)}" for n in near)
            parts.append("<div class='wb-muted'>" + markup.esc(i18n.t("trace.nearest", id=inv_id)) + "</div>"
                         + "<div class='wb-box'>" + (rows or markup.esc(i18n.t("ask.none"))) + "</div>")
        return "".join(parts)
    decoded = reads.decoded_output(url, int(b.invocation_id))
    w = highlight.highlight_window(decoded, b.spans, entity_tokens=highlight.nearby_tokens(b.entity_misses),
                               cited=b.cited_spans)
    meta = (f"#{markup.esc(b.invocation_id)} · " + markup.esc(i18n.t("trace.similarity")) + f" <b>{markup.esc(b.score)}</b> · "
            + markup.esc(i18n.t("trace.window", start=w.start, end=w.end, total=w.total, line=w.line)))
    body = ("… " if w.start > 0 else "") + markup.segments_html(w.segments) + (" …" if w.end < w.total else "")
    return f"<div class='wb-muted'>{meta}</div><div class='wb-box'>{body}</div>"


def _binding_html(url: str, b: trace_view.BindingView) -> str:
    """One binding: the quote and its findings beside the window of the output it cites."""
    ids = ", ".join(f"#{i}" for i in b.binding.source_invocation_ids)
    if b.binding.source_record_ids:  # the records it cites, as it wrote them (marked in the window)
        ids += f" ({', '.join(map(str, b.binding.source_record_ids))})"
    scores = " · ".join(f"{i18n.value(name)} {score}" for name, score in b.source_scores.items())
    misses = "".join(
        f"<li><mark class='wb-entity'>{markup.esc(m['token'])}</mark> ({markup.esc(i18n.value(m['kind']))}) " + markup.esc(i18n.t("trace.entity_miss"))
        + (f" → {markup.esc(', '.join(m['nearby']))}" if m['nearby'] else "") + "</li>"
        for m in b.entity_misses)
    extra = ""
    if b.added_words:
        extra += "<div class='wb-muted'>" + markup.esc(i18n.t("trace.added")) + f": {markup.esc(', '.join(b.added_words))}</div>"
    if b.other_match:
        o = b.other_match
        other = i18n.t("trace.other_match", id=o['invocation_id'], tool=o['tool_name'], score=o['score'])
        extra += "<div class='wb-muted'>" + markup.esc(other) + "</div>"
    errors = "".join(f"<li>{i18n.pill('fail')} <code>{markup.esc(e.rule_id)}</code>: {markup.esc(i18n.say(e.message, e.msg))}</li>"
                     for e in b.errors)
    quote = (
        f"<div class='wb-muted'>{markup.esc(b.target)} · {markup.esc(b.binding.tool_name)} {markup.esc(ids)}"
        + (f" · {markup.esc(b.binding.digest_id)}" if b.binding.digest_id else "") + f" · {markup.esc(scores)}</div>"
        f"<div class='wb-box'>{markup.segments_html(highlight.excerpt_segments(b.binding.evidence_excerpt or '', b.entity_misses))}</div>"
        + (f"<ul class='wb-list'>{misses}</ul>" if misses else "") + extra
        + (f"<ul class='wb-list'>{errors}</ul>" if errors else "")
    )
    return f"<div class='wb-bind'><div>{quote}</div><div>{_window_html(url, b)}</div></div>"


def _card(url: str, card: trace_view.ClaimCard, *, pick: int | None = None) -> None:
    """One claim with its checks and bindings; `pick` adds a button that opens it in the review panel."""
    c = card.claim
    check = card.claim_check
    with st.container(border=True):
        head = (f"<b>{markup.esc(c.claim_id)}</b> <span class='wb-muted'>{markup.esc(card.target)} · "
                f"{markup.esc(i18n.value(c.claim_type))} · {markup.esc(i18n.value(c.support_level))}</span> · "
                + markup.esc(i18n.t("trace.composer_state")) + f": <b>{markup.esc(i18n.value(card.composer))}</b>"
                + (f" <span class='wb-muted'>({markup.esc(i18n.say(card.filter_reason, card.filter_msg))})</span>"
                   if card.filter_reason else "")
                + f"<div class='wb-text'>{markup.esc(c.claim_text)}</div>")
        verification = check.verification if check else "—"
        color = ("pass" if verification in trace_view.GOOD_CHECKS else
                 "warn" if verification in ("overstated", "external_unknown") else "fail")
        head += ("<div>" + markup.esc(i18n.t("trace.claim_check")) + f": <span class='wb-pill wb-{color}'>{markup.esc(i18n.value(verification))}</span> "
                 f"<span class='wb-muted'>{markup.esc(i18n.say(check.detail, check.msg) if check else '')}</span></div>")
        own = [e for e in card.errors if not any(e in b.errors for b in card.bindings)]
        if own:
            head += "<ul class='wb-list'>" + "".join(
                f"<li>{i18n.pill('fail')} <code>{markup.esc(e.rule_id)}</code> @ <code>{markup.esc(e.target)}</code>: "
                f"{markup.esc(i18n.say(e.message, e.msg))}</li>"
                for e in own) + "</ul>"
        if card.reviews:
            head += ("<div class='wb-muted'>" + markup.esc(i18n.t("trace.reviews")) + ": "
                     + markup.esc("; ".join(f"{i18n.named('label.', rv.label)} ({rv.reviewer})" for rv in card.reviews)) + "</div>")
        # One HTML block per card, its bindings side by side in CSS: a page of cards drawn as
        # Streamlit columns cost the browser most of Trace's first open (docs/benchmarks.md).
        markup.html_block(head + "".join(_binding_html(url, b) for b in card.bindings))
        if pick is not None:
            st.button(i18n.t("trace.review_claim"), key=f"trace_pick_claim_{card.index}", on_click=_focus, args=(pick,))


# --- reviewing ---------------------------------------------------------------------------------


# The review panel (moves, the claim, note, label buttons and their keys) is drawn once asked for:
# a reader who does not label pays none of it on opening the page. Plain state, not a widget's, so
# a reviewer who opened it finds it open on every session they open next in the tab (until a reload).
_REVIEWING = "trace_reviewing"


def _focus(pos: int) -> None:
    st.session_state["trace_review_pos"] = pos
    st.session_state["trace_review_scroll"] = st.session_state[_REVIEWING] = True


def _close_panel() -> None:
    st.session_state[_REVIEWING] = False


def _save(sid: str, claim_id: str | None, label: str, reviewer: str, note_key: str, advance: int | None) -> None:
    """A review button's callback: store, then every view (this page, the queue) reads it on this rerun."""
    if not reviewer:
        st.session_state["trace_review_flash"] = ("warning", i18n.t("common.need_name"))
        return
    note = str(st.session_state.get(note_key) or "")
    try:
        reads.store().add_review(session_id=sid, label=label, reviewer=reviewer, note=note, claim_id=claim_id)
    except WorkbenchError as exc:
        # A callback runs before the page, outside run_app's message box: the refusal (a
        # read-only store, a full disk) is this panel's one-line notice, not a traceback.
        st.session_state["trace_review_flash"] = ("error", markup.md(one_line(exc)))
        return
    reads.refresh_session_reads(sid)
    st.session_state[note_key] = ""
    st.session_state["trace_review_flash"] = ("success", i18n.t("common.saved_as", label=label,
                                                                            target=markup.md(claim_id or sid)))
    if advance is not None:
        _focus(advance)


def _label_buttons(sid: str, claim_id: str | None, reviewer: str, note_key: str, advance: int | None,
                   key: str, keys: bool) -> None:
    """One button per label; with `keys`, digits 1-5 press them (the per-claim keyboard flow)."""
    row = st.container(horizontal=True)  # one flex row: five columns cost the browser five blocks more
    for i, label in enumerate(widgets.REVIEW_LABELS):
        row.button(i18n.named("label.", label), key=f"{key}_{label}", width="stretch", shortcut=str(i + 1) if keys else None,
                   on_click=_save, args=(sid, claim_id, label, reviewer, note_key, advance))


def review_panel(url: str, r: SessionRecord, queue: list[trace_view.ClaimCard]) -> int | None:
    """Claim after claim with findings: J / K move, 1-5 label and go to the next one; drawn once a
    reviewer opens it (_REVIEWING). Returns the position of the claim it shows, None while closed."""
    st.subheader(i18n.t("trace.review_panel"))
    name_col, info_col = st.columns([1, 2], vertical_alignment="bottom")
    with name_col:
        reviewer = identity.reviewer_name("reviewer")
    flash = st.session_state.pop("trace_review_flash", None)
    if flash:
        {"success": st.success, "warning": st.warning, "error": st.error}[flash[0]](flash[1])
    if not queue:
        info_col.caption(i18n.t("ask.none"))
        return None
    pos = min(max(0, int(st.session_state.get("trace_review_pos", 0))), len(queue) - 1)
    if not st.session_state.get(_REVIEWING):
        info_col.button(i18n.t("trace.review_start", n=len(queue)), key="trace_review_start", type="primary",
                        on_click=_focus, args=(pos,))
        return None
    keys = info_col.container(horizontal=True, vertical_alignment="center")
    keys.caption(i18n.t("trace.review_keys"))
    keys.button(i18n.t("trace.review_close"), key="trace_review_close", width="content", on_click=_close_panel)
    row = st.container(horizontal=True, vertical_alignment="center")
    row.button(i18n.t("trace.prev_claim"), key="trace_prev", shortcut="K", disabled=pos == 0, width="content",
               on_click=_focus, args=(pos - 1,))
    row.markdown(i18n.t("trace.review_pos", k=pos + 1, n=len(queue)), width="stretch")  # Next at the right edge
    row.button(i18n.t("trace.next_claim"), key="trace_next", shortcut="J", disabled=pos >= len(queue) - 1,
               width="content", on_click=_focus, args=(pos + 1,))
    card = queue[pos]
    st.html("<div id='wb-focus'></div>")
    _card(url, card)
    if st.session_state.pop("trace_review_scroll", False):
        # A move by key or button brings the claim it lands on into view (the card may be far
        # below the fold after a long card); the position in the script makes each move a new element.
        st.html(f"<script>/* {pos} */ document.getElementById('wb-focus')?.scrollIntoView({{block: 'start'}});</script>",
                unsafe_allow_javascript=True)
    note_key = f"trace_note_{card.index}"
    st.text_input(i18n.t("common.note"), key=note_key)
    _label_buttons(r.id, card.claim.key, reviewer, note_key, min(pos + 1, len(queue) - 1), "trace_label", True)
    if trace_view.claims_labelled_session_not(r, queue):
        # The last flagged claim was labelled: the queue counts the session, so offer its label here.
        st.info(i18n.t("trace.all_labelled"))
        _label_buttons(r.id, None, reviewer, note_key, None, "trace_session_offer", False)
    return pos


def claims(url: str, r: SessionRecord) -> None:
    cards = trace_view.claim_cards(r)
    flagged = [c for c in cards if c.has_findings]
    st.subheader(i18n.t("trace.claims") + f" ({len(cards)}; " + i18n.t("trace.claims_flagged") + f": {len(flagged)})")
    if not cards:
        st.caption(i18n.t("ask.none"))
        return
    left, right = st.columns([2, 1])
    show = left.segmented_control(i18n.t("trace.claims_filter"), ["flagged", "all"],
                                  default="flagged" if flagged else "all", required=True,
                                  format_func=lambda v: i18n.named("trace.claims_", v), key="trace_claims_filter")
    shown = flagged if show == "flagged" else cards
    focused = review_panel(url, r, shown)
    pages = max(1, -(-len(shown) // CLAIMS_PER_PAGE))
    page = 1
    if pages > 1:
        page = int(right.number_input(i18n.t("trace.claim_page"), 1, pages, 1, key="trace_claims_page"))
    first = (page - 1) * CLAIMS_PER_PAGE
    for pos, card in enumerate(shown[first : first + CLAIMS_PER_PAGE], start=first):
        if pos != focused:  # the review panel above draws it
            _card(url, card, pick=pos)


def verifier_rest(r: SessionRecord) -> None:
    # Lists, not grids, here and for the digests: a few rows each, read in full (a grid cut the
    # digests' quotes at 1280 px), and a page whose only grid sits in a closed panel opens without
    # the grid's frontend code (docs/benchmarks.md, first open).
    errors = trace_view.session_level_errors(r)
    if errors:
        st.subheader(i18n.t("trace.session_errors"))
        st.markdown("\n".join(f"- `{e.rule_id}` · {markup.md(e.target)}: {markup.md(i18n.say(e.message, e.msg))}"
                              for e in errors))
    hyps = trace_view.hypothesis_rows(r)
    if hyps:
        st.subheader(i18n.t("trace.hypothesis_checks"))
        st.markdown("\n".join(f"- **{h.index}.** {markup.md(h.text)} → {i18n.value(h.check.verification)}"
                              + (f" · {markup.md(h.check.detail)}" if h.check.detail else "") for h in hyps))


def digests(r: SessionRecord) -> None:
    rows = trace_view.digest_rows(r)
    if not rows:
        return
    st.subheader(i18n.t("trace.digests") + f" ({len(rows)})")
    # One block for the section: four elements a digest made a large share of the page's elements,
    # each one more for the browser to build on first open (docs/benchmarks.md).
    parts = []
    for d in rows:
        facts = [f"<b>{markup.esc(d.digest.digest_id)}</b>", f"<code>{markup.esc(d.digest.tool)}</code>",
                 markup.esc(i18n.named("col.", "sources") + ": " + ", ".join(f"#{i}" for i in d.digest.source_invocation_ids))]
        if d.quote_score is not None:
            facts.append(markup.esc(i18n.named("col.", "quote similarity") + f": {d.quote_score:.2f}"))
        if d.check:
            facts.append(markup.esc(i18n.named("col.", "digest_check") + f": {i18n.value(d.check.verification)}"
                                    + (f" ({d.check.detail})" if d.check.detail else "")))
        # The digest stage's words, quoting the output: text, not markdown.
        part = " · ".join(facts) + f"<div class='wb-text'>{markup.esc(d.digest.summary)}</div>"
        if d.digest.source_quote:
            quote = markup.esc(i18n.named("col.", "source_quote"))
            part += (f"<div class='wb-muted'>{quote}</div>"
                     f"<div class='wb-text'>{markup.esc(d.digest.source_quote)}</div>")
        part += "".join(f"<div class='wb-muted'><code>{markup.esc(e.rule_id)}</code>: {markup.esc(i18n.say(e.message, e.msg))}</div>"
                        for e in d.errors)
        parts.append(f"<div class='wb-digest'>{part}</div>")
    markup.html_block("".join(parts))


@st.fragment
def output_viewer(url: str, metas: list[InvocationMeta]) -> None:
    st.markdown("**" + i18n.t("trace.viewer") + "**")
    by_id = {m.id: m for m in metas}
    c1, c2, c3 = st.columns([2, 2, 1])
    # Nothing picked at first: an output may be megabytes, and reading one nobody asked for
    # would cost every opening of the page.
    inv_id = c1.selectbox(i18n.t("trace.viewer_pick"), list(by_id), index=None, key="trace_viewer_inv",
                          placeholder=i18n.t("trace.viewer_none"),
                          format_func=lambda i: f"#{i} {by_id[i].model_tool_name} · {i18n.value(by_id[i].status)} · "
                                                f"{by_id[i].output_bytes:,} B")
    if inv_id is None:  # search and page size come with an output to search
        return
    query = c2.text_input(i18n.t("trace.search"), key="trace_viewer_query")
    per_page = c3.selectbox(i18n.t("trace.per_page"), [100, 200, 500], index=1, placeholder=i18n.t("common.choose_one"), key="trace_viewer_per_page")
    pages = reads.output_pages(url, int(inv_id))
    hits = pages.search(query) if query else []
    n_pages = max(1, -(-pages.line_count // per_page))
    c1, c2, c3 = st.columns([1, 1, 3], vertical_alignment="bottom")
    if hits:
        # A search shows the chosen hit at the top of the box, a few lines of context above it.
        k = c1.number_input(i18n.t("trace.hit"), 1, len(hits), 1, key=f"trace_viewer_hit_{inv_id}_{query}")
        first = max(0, hits[int(k) - 1] - 3)
        c3.caption(i18n.t("trace.hits", n=len(hits)))
    else:
        page = c1.number_input(i18n.t("trace.page"), 1, n_pages, 1, key=f"trace_viewer_page_{inv_id}_{per_page}")
        first = (int(page) - 1) * per_page
        if query:
            c3.caption(i18n.t("trace.hits", n=0))
    lines = pages.lines(first, per_page)
    c2.caption(i18n.t("trace.lines", first=first + 1, last=first + len(lines), total=pages.line_count))
    body = "\n".join(f"<span class='wb-ln'>{n + 1}</span>{markup.segments_html(highlight.query_segments(text, query))}"
                     for n, text in lines)
    markup.html_block(f"<div class='wb-box' style='max-height:32rem'>{body}</div>")


def invocations(url: str, r: SessionRecord) -> None:
    if not r.invocations:
        return
    panel = st.expander(i18n.t("trace.invocations") + f" ({len(r.invocations)})", key="trace_invocations",
                        on_change="rerun")
    if panel.open:
        panel.dataframe([{
            "id": m.id, "round": m.round, "tool": m.model_tool_name, "stored as": m.tool_name,
            "arguments": json.dumps(m.arguments, ensure_ascii=False), "status": i18n.value(m.status),
            "latency ms": round(m.latency_ms, 1), "bytes": m.output_bytes,
            "cut bytes": m.stored_cut_bytes, "error": m.error or "",
        } for m in r.invocations], hide_index=True, column_config={
            **widgets.headers("tool", "stored as", "status", "latency ms", "bytes", "cut bytes", "error"),
            "id": st.column_config.NumberColumn(i18n.named("col.", "id"), width=50),
            "round": st.column_config.NumberColumn(i18n.named("col.", "round"), width=50),
            "arguments": st.column_config.TextColumn(i18n.named("col.", "arguments"), width="medium"),
        })
    output_viewer(url, r.invocations)


def llm_calls(r: SessionRecord) -> None:
    if not r.llm_calls:
        return
    st.subheader(i18n.t("trace.llm_calls") + f" ({len(r.llm_calls)})")
    for n, call in enumerate(r.llm_calls):
        label = i18n.t("trace.llm_call", stage=i18n.value(call.stage), round=call.round, attempt=call.attempt,
                       status=i18n.value(call.parse_status), prompt=call.prompt_tokens, completion=call.completion_tokens,
                       ms=f"{call.latency_ms:.0f}", endpoint=f"{call.provider}/{call.model}")
        if call.json_mode:  # how the reply was held to its shape: json_schema, tool_choice, ...
            label += f" · {call.json_mode}"
        if call.error:
            label += " · " + i18n.t("trace.llm_call_failed")
        # Drawn only when opened: a call's messages may be megabytes, and a closed expander's
        # content is still sent and laid out by the browser.
        panel = st.expander(markup.md(label), key=f"trace_llm_{n}", on_change="rerun")
        if not panel.open:
            continue
        with panel:
            if call.error:
                st.error(markup.md(call.error))
            if call.prompt_file:
                st.caption(markup.md(f"{call.prompt_file} {call.prompt_version}"))
            st.markdown("**" + i18n.t("trace.messages") + "**")
            for m in call.messages:
                content = m.get("content")
                st.caption(markup.md(m.get("role", "")))
                st.code(content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, indent=1),
                        language=None, wrap_lines=True, height=220 if len(str(content)) > 2000 else "content")
            st.markdown("**" + i18n.t("trace.raw_response") + "**")
            st.code(call.raw_response, language="json", wrap_lines=True)


def audit_sources(r: SessionRecord) -> None:
    plan = st.expander(i18n.t("trace.plan"), key="trace_plan", on_change="rerun")
    if plan.open:
        with plan:
            st.json(r.planner_plan.model_dump(mode="json") if r.planner_plan else {}, expanded=2)
    raw = st.expander(i18n.t("trace.executor_raw"), key="trace_executor_raw", on_change="rerun")
    if raw.open:  # tens of kilobytes of JSON to highlight: only when asked for
        with raw:
            st.code(r.executor_raw_output or "", language="json", wrap_lines=True)


def review(r: SessionRecord) -> None:
    st.subheader(i18n.t("trace.review"))
    # "Reviewed" is a label on the session (review_queue.queue_query): say so where the last claim was labelled.
    if r.claims and not r.session_reviews and all(r.claim_reviews(c.key) for c in r.claims):
        st.info(i18n.t("trace.claims_done"))
    if r.reviews:
        st.dataframe([{"time": rv.created_at, "claim": rv.claim_id or "—", "label": i18n.named("label.", rv.label),
                       "reviewer": rv.reviewer, "note": rv.note} for rv in r.reviews], hide_index=True,
                     column_config=widgets.headers("time", "claim", "label", "reviewer", "note"))
    name_col, note_col = st.columns([1, 2])
    with name_col:
        if r.claims:
            # The claim panel above drew the name field (a widget key appears once per page):
            # one identity, typed once, shown here beside this form too.
            reviewer = identity.reviewer_shown("reviewer")
            st.caption(i18n.t("common.reviewer") + f": {markup.md(reviewer or '—')}")
        else:
            reviewer = identity.reviewer_name("reviewer")
    note_col.text_input(i18n.t("common.note"), key="trace_note_session")
    _label_buttons(r.id, None, reviewer, "trace_note_session", None, "trace_session_label", False)


def body(session_id: str) -> None:
    url = reads.settings().db_url
    if not session_id:
        st.title(i18n.t("trace.title"))
        st.info(i18n.t("trace.no_sessions"))
        return
    r = reads.record(url, session_id)
    if r is None:
        st.title(i18n.t("trace.title"))
        st.error(i18n.t("trace.not_found", sid=markup.md(session_id)))
        return
    change = trace_view.verdict_change(reads.settings(), reads.store(), r.id)
    header(r, change)
    verdict_in_force(change)
    final_answer(r)
    claimed_by_source(r)
    composer_input(r)
    claims(url, r)
    verifier_rest(r)
    digests(r)
    invocations(url, r)
    llm_calls(r)
    audit_sources(r)
    review(r)


frame.page_start()
body(sidebar(init_state()))
