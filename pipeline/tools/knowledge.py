"""Runbook search: a BM25 index over Markdown runbooks, Chinese and English alike.

Runbooks are split by headings (and long sections by paragraphs) so that a hit is one focused
block the Digest can quote, not a whole document. Chinese runs are segmented with jieba in
search mode (so "连接池" in a question meets "数据库连接池" in a runbook); other runs become
lower-case words, hyphenated names kept whole and also split ("payment-service" ->
payment-service, payment, service).
"""

from __future__ import annotations

import math
import re
import threading
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pipeline.text import segment
from pipeline.text.primitives import CJK_RUN, estimate_tokens
from pipeline.tools.queries import KnowledgeQuery, NoData
from pipeline.tools.results import EvidenceBlock, KnowledgeOutput

K1 = 1.2
B = 0.75
# Sections longer than this are split at blank lines into blocks of about _BLOCK_CHARS.
_SPLIT_OVER_CHARS = 1200
_BLOCK_CHARS = 800

_WORD = re.compile(r"[a-z0-9](?:[a-z0-9_.\-]*[a-z0-9])?")
_WORD_PARTS = re.compile(r"[_.\-]")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")

_EN_STOP = frozenset(
    "a an the is are was were be been of to in on at for and or with by from as it its this that these "
    "those there has have had not but into than then so such can could may might will would do does if "
    "when what which who how why".split()
)
_ZH_STOP = frozenset(
    "的 了 和 与 在 是 有 为 及 或 对 从 被 把 也 都 而 并 等 中 上 下 个 吗 呢 吧 啊 么 之 其 这 那 "
    "什么 怎么 如何 为什么 哪些 一下 进行 出现 当前 最近 我们 你们 他们 可以 需要 请 问".split()
)


def tokenize(text: str) -> list[str]:
    """Index terms of a text, with repetition (BM25 needs term frequencies)."""
    norm = unicodedata.normalize("NFKC", text).lower()
    terms: list[str] = []
    pos = 0
    for m in CJK_RUN.finditer(norm):
        _latin_terms(norm[pos : m.start()], terms)
        for tok in segment.jieba().cut_for_search(m.group(0)):
            if tok not in _ZH_STOP:
                terms.append(tok)
        pos = m.end()
    _latin_terms(norm[pos:], terms)
    return terms


def _latin_terms(text: str, out: list[str]) -> None:
    for m in _WORD.finditer(text):
        word = m.group(0)
        if word in _EN_STOP:
            continue
        out.append(word)
        if _WORD_PARTS.search(word):
            out.extend(p for p in _WORD_PARTS.split(word) if p and p not in _EN_STOP)


@dataclass(frozen=True)
class Block:
    id: str
    title: str
    source: str
    content: str


def split_runbook(text: str, *, doc_id: str, source: str) -> list[Block]:
    """Heading sections of one Markdown file; a long section becomes several paragraph blocks."""
    lines = text.splitlines()
    doc_title = doc_id.rsplit("/", 1)[-1]
    in_fence = False
    for line in lines:
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and (h := _HEADING.match(line)) and len(h.group(1)) == 1:
            doc_title = h.group(2)
            break

    sections: list[tuple[str, list[str]]] = []  # (heading path, lines incl. the heading line)
    path: list[tuple[int, str]] = []
    current: list[str] = []
    heading = doc_title
    in_fence = False
    for line in lines:
        if _FENCE.match(line):
            in_fence = not in_fence
        h = None if in_fence else _HEADING.match(line)
        if h:
            sections.append((heading, current))
            level = len(h.group(1))
            path = [(lv, t) for lv, t in path if lv < level] + [(level, h.group(2))]
            heading = " / ".join(t for _, t in path)
            current = [line]
        else:
            current.append(line)
    sections.append((heading, current))

    blocks: list[Block] = []
    for title, sec_lines in sections:
        body = [ln for ln in sec_lines if not _HEADING.match(ln)]
        if not "".join(body).strip():
            continue
        for piece in _pieces("\n".join(sec_lines).strip()):
            blocks.append(Block(f"{doc_id}#{len(blocks)}", title, source, piece))
    return blocks


def _pieces(section: str) -> list[str]:
    if len(section) <= _SPLIT_OVER_CHARS:
        return [section]
    pieces: list[str] = []
    buf: list[str] = []
    size = 0
    for para in re.split(r"\n\s*\n", section):
        if buf and size + len(para) > _BLOCK_CHARS:
            pieces.append("\n\n".join(buf))
            buf, size = [], 0
        buf.append(para)
        size += len(para)
    if buf:
        pieces.append("\n\n".join(buf))
    return pieces


@dataclass
class _Index:
    blocks: list[Block]
    # term -> (block indices, BM25 term weights); a weight depends only on its block, so it is
    # computed once here and a query only scales each posting array by the term's idf.
    postings: dict[str, tuple[np.ndarray, np.ndarray]]
    skipped: list[str] = field(default_factory=list)

    @classmethod
    def build(cls, blocks: list[Block], skipped: list[str]) -> _Index:
        # The title is indexed with the block so a section inherits its document's topic.
        counts = [Counter(tokenize(f"{b.title}\n{b.content}")) for b in blocks]
        lengths = [sum(c.values()) for c in counts]
        avg = sum(lengths) / len(lengths) if lengths else 0.0
        lists: dict[str, tuple[list[int], list[float]]] = {}
        for i, counter in enumerate(counts):
            norm = K1 * (1.0 - B + B * lengths[i] / avg)
            for term, tf in counter.items():
                ids, weights = lists.setdefault(term, ([], []))
                ids.append(i)
                weights.append(tf * (K1 + 1.0) / (tf + norm))
        postings = {t: (np.array(ids, dtype=np.int32), np.array(w)) for t, (ids, w) in lists.items()}
        return cls(blocks, postings, skipped)

    def search(self, query: str, top_k: int, min_relevance: float = 0.0) -> list[tuple[float, float, int]]:
        """(BM25 score, relevance, block index) of the best blocks, best first.

        BM25 scores are unbounded and not comparable across queries, so a floor is set on
        `relevance` instead: the idf-weighted share of the query's terms the block holds (0..1).
        A term no block holds weighs the most, so a question about a service no runbook knows
        ("billing-service 503") finds no block relevant merely for sharing "service" or "返回".
        """
        n = len(self.blocks)
        scores = np.zeros(n)
        covered = np.zeros(n)
        total = 0.0
        for term in set(tokenize(query)):
            posting = self.postings.get(term)
            df = len(posting[0]) if posting is not None else 0
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            total += idf
            if posting is None:
                continue
            ids, weights = posting
            scores[ids] += idf * weights  # a term's block indices are unique, so this is exact
            covered[ids] += idf
        relevance = covered / total if total else covered
        hits = np.flatnonzero((scores > 0.0) & (relevance >= min_relevance))
        # Highest score first, ties in block order, so the same query always returns the same blocks.
        best = hits[np.lexsort((hits, -scores[hits]))[:top_k]]
        return [(float(scores[i]), float(relevance[i]), int(i)) for i in best]


_CACHE: dict[Path, tuple[tuple[tuple[str, int, int], ...], _Index]] = {}
_CACHE_LOCK = threading.Lock()


def _signature(root: Path) -> tuple[tuple[str, int, int], ...]:
    sig = []
    for p in sorted(root.rglob("*.md")):
        try:
            st = p.stat()
        except OSError:
            sig.append((p.relative_to(root).as_posix(), -1, -1))
            continue
        sig.append((p.relative_to(root).as_posix(), st.st_mtime_ns, st.st_size))
    return tuple(sig)


def _load(root: Path, sig: tuple[tuple[str, int, int], ...]) -> _Index:
    blocks: list[Block] = []
    skipped: list[str] = []
    for rel, _, _ in sig:
        path = root / rel
        try:
            text = path.read_bytes().decode("utf-8-sig")
        except OSError as exc:
            skipped.append(f"{rel}: unreadable ({exc.strerror or exc})")
            continue
        except UnicodeDecodeError as exc:
            skipped.append(f"{rel}: not UTF-8 (byte {exc.start})")
            continue
        blocks.extend(split_runbook(text, doc_id=rel.removesuffix(".md"), source=rel))
    return _Index.build(blocks, skipped)


class KnowledgeBase:
    """The lookup_knowledge backend over one folder of runbooks."""

    def __init__(self, index: _Index, *, max_pack_tokens: int = 1500, min_relevance: float = 0.0) -> None:
        self._index = index
        self.max_pack_tokens = max_pack_tokens
        self.min_relevance = min_relevance

    @classmethod
    def from_folder(cls, path: Path | str, *, max_pack_tokens: int = 1500, min_relevance: float = 0.0) -> KnowledgeBase:
        root = Path(path).resolve()
        if not root.is_dir():
            raise FileNotFoundError(f"knowledge folder not found: {root}")
        sig = _signature(root)
        with _CACHE_LOCK:
            cached = _CACHE.get(root)
            if cached is None or cached[0] != sig:
                cached = (sig, _load(root, sig))
                _CACHE[root] = cached
        return cls(cached[1], max_pack_tokens=max_pack_tokens, min_relevance=min_relevance)

    @property
    def skipped(self) -> list[str]:
        return list(self._index.skipped)

    @property
    def blocks(self) -> list[Block]:
        return list(self._index.blocks)

    def lookup_knowledge(self, q: KnowledgeQuery) -> KnowledgeOutput:
        hits = self._index.search(q.query, q.top_k, self.min_relevance)
        if not hits:
            raise NoData(f"no runbook block reaches relevance {self.min_relevance:.2f} for {q.query!r}")
        evidence: list[EvidenceBlock] = []
        for score, relevance, i in hits:
            block = self._index.blocks[i]
            evidence.append(
                {
                    "id": block.id,
                    "title": block.title,
                    "source": block.source,
                    "score": round(score, 4),
                    "relevance": round(relevance, 3),
                    "content": block.content,
                }
            )
        return {
            "evidenceBlocks": evidence,
            "contextPack": {"packedText": self._pack(evidence)},
            "skipped": self.skipped,
        }

    def _pack(self, evidence: list[EvidenceBlock]) -> str:
        """Blocks in score order until the token budget; a cut is stated, never silent."""
        parts: list[str] = []
        used = 0
        for n, ev in enumerate(evidence):
            head = f"[{ev['id']}] {ev['title']} ({ev['source']})\n"
            text = head + ev["content"]
            cost = estimate_tokens(text)
            if used + cost <= self.max_pack_tokens:
                parts.append(text)
                used += cost
                continue
            room = self.max_pack_tokens - used - estimate_tokens(head) - 20
            if room > 50:
                parts.append(head + _cut_to_tokens(ev["content"], room) + " …")
                kept_note = f"block {ev['id']} cut"
            else:
                kept_note = f"block {ev['id']} omitted"
            rest = len(evidence) - n - 1
            parts.append(
                f"[truncated: {kept_note}"
                + (f", {rest} more block(s) omitted" if rest else "")
                + f" to stay within {self.max_pack_tokens} tokens]"
            )
            break
        return "\n\n".join(parts)


def _cut_to_tokens(text: str, tokens: int) -> str:
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate_tokens(text[:mid]) <= tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo]
