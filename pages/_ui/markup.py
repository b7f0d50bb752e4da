"""Escaping and markup: the only way text from a tool output, an LLM or the store becomes HTML
or Markdown on a page."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from typing import Any

import streamlit as st

CSS = """
<style>
.wb-box{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:0.8rem;white-space:pre-wrap;
  word-break:normal;overflow-wrap:normal;background:rgba(127,127,127,0.08);border:1px solid rgba(127,127,127,0.25);
  border-radius:6px;padding:0.5rem 0.6rem;max-height:18rem;overflow:auto;margin:0}
mark.wb-match{background:#ffe066;color:#000;border-radius:2px;padding:0 1px}
span.wb-cited{background:#e7f5ff;border-bottom:1px dotted #1c7ed6}
mark.wb-entity{background:#ffc9c9;color:#7a0000;border-radius:2px;text-decoration:underline wavy #c92a2a}
.wb-text{white-space:pre-wrap;line-height:1.55}
.wb-ln{color:#868e96;user-select:none;display:inline-block;min-width:4.5em}
.wb-muted{color:#868e96;font-size:0.8rem}
.wb-bind,.wb-two{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:1rem;margin-top:0.6rem}
.wb-list{margin:0.2rem 0 0.4rem 1.1rem;padding:0}
.wb-digest{margin:0 0 0.9rem}
.wb-list li{margin:0.15rem 0}
.wb-ev{color:#5c7cfa;font-size:0.8rem}
.wb-pill{display:inline-block;border-radius:0.6rem;padding:0 0.45rem;font-size:0.75rem;font-weight:600;color:#fff}
.wb-PASS,.wb-pass,.wb-ok{background:#2b8a3e}.wb-LOW_CONFID,.wb-warn{background:#e67700}
.wb-REJECT,.wb-fail,.wb-error{background:#c92a2a}.wb-none,.wb-skipped,.wb-no_data{background:#868e96}
.wb-answered,.wb-healthy,.wb-verified{background:#2b8a3e}.wb-not_queried,.wb-not_answered{background:#e67700}.wb-unverified{background:#c92a2a}
table.wb-queue{width:100%;border-collapse:collapse;font-size:0.85rem;line-height:1.4}
.wb-queue th{text-align:left;font-weight:600;color:#495057;border-bottom:2px solid rgba(127,127,127,0.3);padding:0.3rem 0.4rem}
.wb-queue td{vertical-align:top;border-bottom:1px solid rgba(127,127,127,0.2);padding:0.3rem 0.4rem;overflow-wrap:anywhere}
.wb-queue td:first-child,.wb-queue td:nth-child(2),.wb-queue td:nth-child(5),.wb-queue td:nth-child(6){white-space:nowrap}
.wb-queue tr:hover td{background:rgba(59,91,219,0.06)}
.wb-queue a{color:inherit;text-decoration:none}.wb-queue a:hover{text-decoration:underline}
.wb-queue td:first-child a{color:#3b5bdb;font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:0.8rem}
table.wb-eval{table-layout:fixed}.wb-queue.wb-eval td{white-space:normal;overflow-wrap:break-word}
.wb-eval th:nth-child(1){width:21%}.wb-eval th:nth-child(2){width:7%}.wb-eval th:nth-child(3){width:11%}
.wb-eval th:nth-child(4){width:19%}.wb-eval th:nth-child(5){width:23%}
.wb-queue.wb-runs td:nth-child(2),.wb-queue.wb-diff td:nth-child(5){white-space:normal}
.wb-eval td:nth-child(5){font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:0.75rem;overflow-wrap:anywhere}
.wb-bar{display:inline-block;width:3rem;height:0.45rem;background:rgba(127,127,127,0.2);border-radius:3px;vertical-align:middle}
.wb-bar span{display:block;height:100%;background:#3b5bdb;border-radius:3px}
</style>
"""


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


# Every ASCII punctuation CommonMark lets a backslash escape, so none starts an image, a link, a
# directive (:red[...], :material/x:), emphasis, code, math or an entity.
_MARKDOWN = re.compile(r"""([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])""")
# GFM links bare URLs and e-mail addresses after escapes are read; an invisible word joiner
# inside the scheme, "www." or "@" keeps them text.
_AUTOLINK = re.compile(r"(?i)(https?:|www(?=\.)|@)")
WORD_JOINER = "\u2060"


def md(value: Any) -> str:
    """Stored or upstream text (errors, questions, provider and model names, ids) for a widget
    that renders Markdown (captions, alerts, labels, st.write): shown as typed, so an image link
    in an endpoint's error is text, not a request to its host, and a URL is no link."""
    text = _AUTOLINK.sub(lambda m: m.group(1) + WORD_JOINER, "" if value is None else str(value))
    return _MARKDOWN.sub(r"\\\1", text)


def segments_html(segments: Iterable[tuple[str, str]]) -> str:
    """(text, kind) segments as escaped HTML: the only place highlight marks are made."""
    out = []
    for text, kind in segments:
        if kind == "match":
            out.append(f'<mark class="wb-match">{esc(text)}</mark>')
        elif kind == "entity":
            out.append(f'<mark class="wb-entity">{esc(text)}</mark>')
        elif kind == "cited":
            out.append(f'<span class="wb-cited">{esc(text)}</span>')
        else:
            out.append(esc(text))
    return "".join(out)


def scroll_here(anchor: str, once_per: str, block: str = "start", unless: str | None = None) -> None:
    """An anchor at this point of the page, scrolled into view when first drawn ("start": to the
    top of the window, "end": the bottom). `once_per` (an id) makes the script new for each thing
    worth a scroll and the same on reruns that should not jump. `unless`: the `once_per` of an
    anchor that wins when both are on the page; the browser runs the scripts of one batch of
    elements in the page's order, not in the order they were drawn, so a later scroll that
    stands higher on the page would otherwise lose to the one below it."""
    guard = f"!document.querySelector('[data-once=\"{esc(unless)}\"]') && " if unless else ""
    st.html(f"<div id='{esc(anchor)}' data-once='{esc(once_per)}'></div><script>/* {esc(once_per)} */ {guard}"
            f"document.getElementById('{esc(anchor)}')?.scrollIntoView({{block: '{esc(block)}', behavior: 'smooth'}});"
            "</script>", unsafe_allow_javascript=True)


def html_block(markup: str) -> None:
    """Markup built only from esc()/segments_html() output; rendered without markdown processing."""
    st.html(markup)


def text_block(text: Any) -> None:
    """Free text from an LLM or a tool: shown as text, line breaks kept."""
    st.html(f'<div class="wb-text">{esc(text)}</div>')


def pill(value: str | None, shown: str | None = None) -> str:
    """A status as a coloured pill: coloured by the status id, showing `shown` (its words) or the id."""
    v = value or "none"
    return f'<span class="wb-pill wb-{esc(v)}">{esc(shown or v)}</span>'
