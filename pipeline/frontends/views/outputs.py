"""A stored tool output as the Trace page reads it: the decoded text the gatekeeper's offsets index,
the records nearest an excerpt that was not located, and a pager over the whole output."""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass

from pipeline.gatekeeper.features import match_excerpt
from pipeline.gatekeeper.matcher import segments
from pipeline.gatekeeper.prepared import PreparedOutput, record_text
from pipeline.tools.results import read_result


def decoded_output(output: str) -> str:
    """The text the gatekeeper's offsets index: a structured output's records one per line, else
    the output with JSON escapes decoded."""
    return record_text(output)[0]


@dataclass(frozen=True)
class NearRecord:
    number: int  # the record's number, the one a citation names
    score: float  # the matcher's similarity of the excerpt to the record, 0..1
    line: str


def nearest_records(output: str, excerpt: str, k: int = 3) -> list[NearRecord]:
    """The k records of a stored output most like an excerpt that was not located in it: what a
    reviewer compares the quote with. Each record is scored by the gatekeeper's matcher (its folding
    and its similarity), so Trace and the gatekeeper agree on what "like the quote" means."""
    quotes = segments(excerpt)
    if not quotes:
        return []
    scored = []
    for r in read_result(output).records:
        score = match_excerpt(quotes, PreparedOutput.build(r.line), placed=False).score
        if score > 0:
            scored.append(NearRecord(r.number, round(score, 2), r.line))
    scored.sort(key=lambda n: (-n.score, n.number))
    return scored[:k]


# --- full output viewer ----------------------------------------------------------------------


class OutputPages:
    """A tool output cut into numbered lines for paging and search, whatever its size.

    JSON is pretty-printed so each record reads on its own lines; any line longer than
    `wrap` characters is split, so a one-line 10 MB output still pages.
    """

    def __init__(self, output: str, *, wrap: int = 2000) -> None:
        self.text = self._readable(output)
        starts = [0]
        pos = 0
        text = self.text
        while True:
            nl = text.find("\n", pos)
            end = len(text) if nl < 0 else nl
            cut = pos + wrap
            while cut < end:
                starts.append(cut)
                cut += wrap
            if nl < 0:
                break
            pos = nl + 1
            starts.append(pos)
        self._starts = starts
        self._lower: str | None = None

    @staticmethod
    def _readable(output: str) -> str:
        stripped = output.lstrip()
        if stripped[:1] in ("{", "["):
            try:
                return json.dumps(json.loads(output), ensure_ascii=False, indent=1)
            except ValueError:
                pass
        return output

    @property
    def line_count(self) -> int:
        return len(self._starts)

    def line(self, n: int) -> str:
        end = self._starts[n + 1] if n + 1 < len(self._starts) else len(self.text)
        return self.text[self._starts[n] : end].rstrip("\n")

    def lines(self, first: int, count: int) -> list[tuple[int, str]]:
        """(0-based line number, text) for a page."""
        last = min(self.line_count, first + count)
        return [(n, self.line(n)) for n in range(max(0, first), last)]

    def search(self, query: str, limit: int = 10_000) -> list[int]:
        """Line numbers holding `query` (case-insensitive), at most `limit` of them."""
        if not query:
            return []
        if self._lower is None:
            self._lower = self.text.lower()
        needle = query.lower()
        hits: list[int] = []
        pos = self._lower.find(needle)
        while pos >= 0 and len(hits) < limit:
            n = bisect.bisect_right(self._starts, pos) - 1
            if not hits or hits[-1] != n:
                hits.append(n)
            pos = self._lower.find(needle, pos + 1)
        return hits
