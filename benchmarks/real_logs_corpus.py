"""Generate the real-log grounding corpus: quotes of public logs, faithful and mutated.

    python benchmarks/real_logs_corpus.py              # writes benchmarks/real_logs_corpus.jsonl
    python benchmarks/real_logs_corpus.py --held-out   # writes benchmarks/real_logs_corpus_held_out.jsonl
    python benchmarks/real_logs_corpus.py --check      # exit 1 if either committed file is stale

The logs are slices of public logs nobody on this team wrote (benchmarks/real_logs/, licence and
attribution in LICENSE-and-SOURCE.md), in five genres (GENRES): one-line logs (the Loghub samples of
16 systems), JSON per line (MongoDB 4.4 and Elasticsearch server logs), web access logs (nginx and
Apache combined format), multi-line exception traces (Java, Node.js, Python, PHP and Ruby) and CI
console output (a GitLab Runner job trace). Four further genres are held out (HELD_OUT_GENRES, their
cases in their own file, real_logs_corpus_held_out.jsonl, so that the corpus above stays as it is):
key=value audit records (Linux auditd), a database server log with continuation lines (PostgreSQL:
DETAIL/HINT/STATEMENT lines, statements over several tab-indented lines), a slow query log (MySQL and
Percona: "# Time:"/"# Query_time:" header lines, then the statement over one or more lines) and a
Redis server log (one-line records around the ASCII-art start-up banner). A record over several lines
is quoted line by line, as the multi-line traces are. Each slice is one tool
output, cited either as plain text (the lines as a log file or `grep` shows them) or as JSON
({"logs": [{"message": line}, ...]}, as a log query tool returns them).

This generator is a yardstick independent of the product: it imports nothing from `pipeline/`,
decides whether a mutated quote really differs from the log with its own normalisation (NFKC,
lower case, every run of non-alphanumerics one space) and draws its inserted words from its own
lists, none of which occur in rules/metadata.yaml. Levels, hosts and services swapped in come from
the same slice (values seen in its other lines).

faithful   exact (a whole line), sub-span (a run of whole tokens), reflowed whitespace, full-width
           punctuation, elided (a mark such as "…" or "[...]" between two pieces of one line),
           adjacent records (the end of one line and the start of the next)
mutated    digit changed, sibling value (a field's value from another line of the same template),
           tokens swapped, token dropped, negation added, level changed, host or service changed,
           words invented

A mutated quote is kept only when its normalised form occurs nowhere in the normalised slice
(read as one text, so a run over two adjacent lines counts as found): a "mutation" that another
line says verbatim is a faithful quote after all. Each corpus line is one case:
{"id", "class", "faithful", "system", "line", "shape", "excerpt"}, where "line" is the 1-based
line of the slice the quote was made from (an adjacent-records quote goes on into the next one).
Deterministic (seeded).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import unicodedata
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOGS = HERE / "real_logs"
CORPUS = HERE / "real_logs_corpus.jsonl"
HELD_OUT_CORPUS = HERE / "real_logs_corpus_held_out.jsonl"
SEED = 20
PER_SYSTEM = 20  # lines sampled per system; every class that applies to a line is generated from it
PER_OTHER_SYSTEM = 60  # the same for a system of another genre (fewer systems, smaller files)

FAITHFUL = ("exact", "sub-span", "reflowed whitespace", "full-width punctuation", "elided", "adjacent records")
MUTATED = ("digit changed", "sibling value", "tokens swapped", "token dropped", "negation added", "level changed",
           "host or service changed", "words invented")
SHAPES = ("text", "json")

# Negations this corpus adds: contracted auxiliaries, which a reader takes as "not" but a list of
# negation words may not hold. An auxiliary in the quote is contracted in place; else one is inserted.
CONTRACTED = {"is": "isn't", "was": "wasn't", "are": "aren't", "has": "hasn't", "have": "haven't", "can": "can't",
              "will": "won't", "does": "doesn't", "did": "didn't", "could": "couldn't", "should": "shouldn't"}
INSERTED_NEGATIONS = ("didn't", "wasn't", "hasn't", "couldn't", "doesn't", "won't")
INVENTED = ("during the nightly compaction", "after a firmware rollback", "while the mirror resynced",
            "owing to a stale lease", "behind the edge balancer", "before the quota reset", "amid heavy swapping",
            "once the fencing token expired")
ELISION_MARKS = ("…", " … ", "...", " ... ", " [...] ")
PIECE_CHARS = 16  # a piece of an elided or two-record quote is at least this long, normalised
# Cutting a quote right after one of these would invert what the line says, so faithful cuts avoid
# them (a guard on the source text, not a word this corpus inserts).
_SOURCE_NEGATORS = frozenset({"not", "no", "never", "cannot", "without", "none", "nor", "isn't", "can't", "don't",
                              "doesn't", "didn't", "wasn't", "won't", "unable"})
_FULL_WIDTH = {c: chr(ord(c) + 0xFEE0) for c in ":,;()[]!?=|"}
_WHITESPACE = (" ", "  ", "\n", "\n  ", "\t")
_TOKEN = re.compile(r"\S+")
_NON_ALNUM = re.compile(r"[^0-9a-z]+")


@dataclass(frozen=True)
class System:
    """How one system's lines are laid out: where the header ends, which token is the level, and
    which fields name a host or a service (named groups of `fields`)."""

    head: str  # matches the header; the message starts where it ends
    level: str | None = None  # a pattern whose group "v" is the level
    fields: tuple[str, ...] = ()  # patterns whose group "v" is a host or service name


_IP = r"(?<![\d.])(?P<v>\d{1,3}(?:\.\d{1,3}){3})(?![\d.])"
SYSTEMS: dict[str, System] = {
    "Android": System(r"^\S+ \S+\s+\d+\s+\d+ [A-Z] [^:]+:", r"^\S+ \S+\s+\d+\s+\d+ (?P<v>[A-Z]) ",
                      (r"^\S+ \S+\s+\d+\s+\d+ [A-Z] (?P<v>[^:]+):",)),
    "Apache": System(r"^\[[^\]]+\] \[\w+\]", r"^\[[^\]]+\] \[(?P<v>\w+)\]"),
    "BGL": System(r"^- \d+ \S+ \S+ \S+ \S+ RAS \w+ \w+", r"^- \d+ \S+ \S+ \S+ \S+ RAS \w+ (?P<v>\w+) ",
                  (r"^- \d+ \S+ (?P<v>\S+) ", r"^- \d+ \S+ \S+ \S+ \S+ RAS (?P<v>\w+) ")),
    "HDFS": System(r"^\d+ \d+ \d+ \w+ \S+:", r"^\d+ \d+ \d+ (?P<v>\w+) ", (r"^\d+ \d+ \d+ \w+ (?P<v>\S+):", _IP)),
    "HPC": System(r"^\d+ \S+ \S+ \S+ \d+ \d+", None, (r"^\d+ (?P<v>\S+) ", r"^\d+ \S+ (?P<v>\S+) ")),
    "Hadoop": System(r"^\S+ \S+ \w+ \[[^\]]+\] \S+:", r"^\S+ \S+ (?P<v>\w+) \[",
                     (r"^\S+ \S+ \w+ \[[^\]]+\] (?P<v>\S+):", r"(?P<v>msra-sa-\d+|MININT-\w+)")),
    "HealthApp": System(r"^[^|]+\|[^|]+\|\d+\|", None, (r"^[^|]+\|(?P<v>[^|]+)\|",)),
    "Linux": System(r"^\w+\s+\d+ \S+ \S+ [^:]+:", None, (r"^\w+\s+\d+ \S+ \S+ (?P<v>[\w.-]+)", _IP)),
    "Mac": System(r"^\w+\s+\d+ \S+ \S+ [^:]+:", None,
                  (r"^\w+\s+\d+ \S+ (?P<v>\S+) ", r"^\w+\s+\d+ \S+ \S+ (?P<v>[\w.]+)\[")),
    "OpenSSH": System(r"^\w+\s+\d+ \S+ \S+ \S+:", None, (_IP,)),
    "OpenStack": System(r"^\S+ \S+ \S+ \d+ \w+ \S+", r"^\S+ \S+ \S+ \d+ (?P<v>\w+) ",
                        (r"^\S+ \S+ \S+ \d+ \w+ (?P<v>\S+) ", _IP)),
    "Proxifier": System(r"^\[[^\]]+\] \S+(?: \*64)? -", None,
                        (r"^\[[^\]]+\] (?P<v>\S+) ", r" - (?P<v>[\w.-]+):\d+")),
    "Spark": System(r"^\S+ \S+ \w+ \S+:", r"^\S+ \S+ (?P<v>\w+) ", (r"^\S+ \S+ \w+ (?P<v>\S+):",)),
    "Thunderbird": System(r"^- \d+ \S+ \S+ \w+ \d+ \S+ \S+", None, (r"^- \d+ \S+ (?P<v>[\w-]+) ",)),
    "Windows": System(r"^\S+ \S+, \w+\s+\w+", r"^\S+ \S+, (?P<v>\w+)\s", (r"^\S+ \S+, \w+\s+(?P<v>\w+)\s",)),
    "Zookeeper": System(r"^\S+ \S+ - \w+\s+\[[^\]]+\] -", r"^\S+ \S+ - (?P<v>\w+)\s+\[", (_IP,)),
    # Genres other than one-line logs (the files' sources in LICENSE-and-SOURCE.md).
    "MongoDB": System(r'^\{"t":\{"\$date":"[^"]+"\},"s":"\w",\s*"c":"\w+",\s*"id":\d+,\s*"ctx":"[^"]+",',
                      r'"s":"(?P<v>\w)"', (r'"c":"(?P<v>\w+)"', r'"ctx":"(?P<v>[^"]+)"', _IP)),
    "Elasticsearch": System(r'^\{.*?"message": ', r'"level": "(?P<v>\w+)"', (r'"component": "(?P<v>[^"]+)"',)),
    "NginxAccess": System(r"^(?:\S+ )?\S+ - - \[[^\]]+\]", r'" (?P<v>\d{3}) \d+ "', (_IP,)),
    "ApacheAccess": System(r"^\S+ - - \[[^\]]+\]", r'" (?P<v>\d{3}) \d+ "', (_IP,)),
    "ExceptionTraces": System(r"^\s*(?:at )?", None, (r"\((?P<v>\w+)\.java:\d+\)", r"/(?P<v>\w+)\.(?:js|py|rb|php)\b")),
    "GitLabCI": System(r"^(?:\$ |-- )?", None, (r"section_(?:start|end):\d+:(?P<v>\w+)", r'create_table\("(?P<v>\w+)"',
                                               r"image (?P<v>[\w.-]+:[\w.-]+) \.\.\.")),
    # Held-out genres (HELD_OUT_GENRES): each pattern written from the log's own layout.
    # auditd: "[node=N ]type=T msg=audit(EPOCH:SERIAL): key=value ..." (quoted values, a nested msg='...').
    "Auditd": System(r"^(?:node=\S+ )?type=\w+ msg=audit\([\d.:]+\):", None,
                     (r"\bunit=(?P<v>[\w@.-]+)", r'\bcomm="(?P<v>[^"]+)"', r'\bexe="(?P<v>[^"]+)"')),
    # PostgreSQL (log_line_prefix '%m [%p] %q%u@%d '): "DATE TIME TZ [PID] [USER@DB ]SEVERITY:  message";
    # DETAIL:, HINT: and STATEMENT: lines take the severity's place; a statement goes on over tab-indented lines.
    "PostgreSQL": System(r"^\d{4}-\d\d-\d\d [\d:.]+ \w+ \[\d+\](?: \S+@\S+)? [A-Z]+:",
                         r"^\S+ \S+ \w+ \[\d+\](?: \S+@\S+)? (?P<v>(?!DETAIL|HINT|STATEMENT)[A-Z]+):",
                         (r"^\S+ \S+ \w+ \[\d+\] \S+@(?P<v>\w+) ",)),
    # MySQL / Percona slow query log: "# Name: value  Name: value" header lines, then "SET timestamp=N;" and
    # the statement over one or more lines.
    "MySQLSlow": System(r"^(?:#\s+[\w@]+:)?", None,
                        (r"^# User@Host: (?P<v>[\w-]+)\[", r"\] @ (?P<v>[\w.-]+) \[", r"^# Schema: (?P<v>\w+) ", _IP)),
    # Redis: "PID:ROLE DATE TIME MARK msg" (3.x, 5.x), "[PID] DATE TIME MARK msg" (2.4), "DATE TIME MARK msg" (1.2),
    # "PID:signal-handler (EPOCH) msg"; the mark is the level (. debug, - verbose, * notice, # warning).
    "Redis": System(r"^(?:\d+:[MSCX] \d+ \w+ (?:\d{4} )?[\d:.]+ [*#.-]|\[\d+\] \d+ \w+ [\d:]+ [*#.-]"
                    r"|\d+ \w+ [\d:]+ [*#.-]|\d+:signal-handler \(\d+\))",
                    r"^(?:\d+:[MSCX] \d+ \w+ (?:\d{4} )?[\d:.]+|\[\d+\] \d+ \w+ [\d:]+|\d+ \w+ [\d:]+) (?P<v>[*#.-]) ",
                    # the role, and the version that tells the slice's servers apart
                    (r"^\d+:(?P<v>[MSCX]) ", r"Redis (?:version )?(?P<v>\d+\.\d+\.\d+)")),
}
# Each system's genre: the one-line logs of Loghub, and four genres of other public systems.
GENRES: dict[str, tuple[str, ...]] = {
    "one-line": ("Android", "Apache", "BGL", "HDFS", "HPC", "Hadoop", "HealthApp", "Linux", "Mac", "OpenSSH",
                 "OpenStack", "Proxifier", "Spark", "Thunderbird", "Windows", "Zookeeper"),
    "JSON per line": ("MongoDB", "Elasticsearch"),
    "web access": ("NginxAccess", "ApacheAccess"),
    "multi-line trace": ("ExceptionTraces",),
    "CI console": ("GitLabCI",),
}
# Genres held out of the corpus above: their cases go to HELD_OUT_CORPUS, and the corpus above is unchanged.
HELD_OUT_GENRES: dict[str, tuple[str, ...]] = {
    "key=value audit": ("Auditd",),
    "database server log": ("PostgreSQL",),
    "slow query log": ("MySQLSlow",),
    "Redis server log": ("Redis",),
}
ALL_GENRES = {**GENRES, **HELD_OUT_GENRES}
GENRE_OF = {system: genre for genre, systems in ALL_GENRES.items() for system in systems}


def norm(text: str) -> str:
    """This corpus's own matching form: NFKC, lower case, every non-alphanumeric run one space."""
    return " ".join(_NON_ALNUM.sub(" ", unicodedata.normalize("NFKC", text).lower()).split())


@cache
def lines(system: str) -> tuple[str, ...]:
    return tuple((LOGS / f"{system}.log").read_text(encoding="utf-8").splitlines())


def output_text(system: str, shape: str) -> str:
    """The tool output a case cites: the slice as text lines, or as a log query's JSON."""
    if shape == "text":
        return "\n".join(lines(system))
    logs = [{"message": line} for line in lines(system)]
    return json.dumps({"logs": logs, "total": len(logs), "truncated": False})


@cache
def _normalised_slice(system: str) -> str:
    return f" {' '.join(norm(line) for line in lines(system))} "


def really_differs(system: str, quote: str) -> bool:
    """True when no line, and no run of adjacent lines, says the quote (in this corpus's normalisation)."""
    folded = norm(quote)
    return bool(folded) and f" {folded} " not in _normalised_slice(system)


# --- the lines' structure --------------------------------------------------------------------


def _tokens(line: str) -> list[tuple[int, int]]:
    return [m.span() for m in _TOKEN.finditer(line)]


def _field(pattern: str, line: str) -> tuple[int, int] | None:
    m = re.search(pattern, line)
    return m.span("v") if m else None


def _message_start(system: str, line: str) -> int:
    m = re.match(SYSTEMS[system].head, line)
    return m.end() if m else 0


def _template(line: str) -> tuple[str, ...]:
    """Tokens with every token holding a digit masked: lines of one template share it."""
    return tuple("<*>" if any(c.isdigit() for c in line[a:b]) else line[a:b] for a, b in _tokens(line))


@cache
def _field_values(system: str) -> dict[str, tuple[str, ...]]:
    """Level and host/service values seen in the slice, per pattern."""
    spec = SYSTEMS[system]
    values: dict[str, set[str]] = defaultdict(set)
    for pattern in (*((spec.level,) if spec.level else ()), *spec.fields):
        for line in lines(system):
            for m in re.finditer(pattern, line):
                values[pattern].add(m.group("v"))
    return {p: tuple(sorted(v)) for p, v in values.items()}


@cache
def _by_template(system: str) -> dict[tuple[str, ...], tuple[int, ...]]:
    groups: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for i, line in enumerate(lines(system)):
        groups[_template(line)].append(i)
    return {k: tuple(v) for k, v in groups.items()}


def _window(toks: list[tuple[int, int]], rng: random.Random, must: tuple[int, int] | None = None,
            shortest: int = 6, longest: int = 14) -> tuple[int, int]:
    """[a, b) token indices of a quote of `shortest`..`longest` tokens holding tokens must[0]..must[1]."""
    n = len(toks)
    size = min(n, rng.randint(shortest, longest))
    lo, hi = must if must else (0, 0)
    size = max(size, hi - lo + 1)
    first = max(0, hi - size + 1)
    last = min(lo, n - size)
    a = rng.randint(first, max(first, last))
    return a, min(n, a + size)


def _token_index(toks: list[tuple[int, int]], span: tuple[int, int]) -> tuple[int, int]:
    """Indices of the first and last token overlapping a character span."""
    inside = [i for i, (a, b) in enumerate(toks) if a < span[1] and b > span[0]]
    return inside[0], inside[-1]


def _negator(word: str) -> bool:
    return word.lower().strip(",;:.") in _SOURCE_NEGATORS


# --- faithful quotes ---------------------------------------------------------------------------


def _sub_span(line: str, toks: list[tuple[int, int]], rng: random.Random) -> str | None:
    if len(toks) < 6:
        return None
    for _ in range(8):
        a, b = _window(toks, rng, shortest=4, longest=max(4, len(toks) - 1))
        if (a, b) != (0, len(toks)) and not (a and _negator(line[slice(*toks[a - 1])])):
            return line[toks[a][0] : toks[b - 1][1]]
    return None


def _reflowed(quote: str, rng: random.Random) -> str:
    parts = quote.split()
    gaps = [rng.choice(_WHITESPACE) for _ in parts[1:]]
    if len(gaps) and all(g == " " for g in gaps):
        gaps[rng.randrange(len(gaps))] = "\n"
    return parts[0] + "".join(g + p for g, p in zip(gaps, parts[1:], strict=True))


def _full_width(quote: str) -> str | None:
    if not any(c in _FULL_WIDTH for c in quote):
        return None
    return "".join(_FULL_WIDTH.get(c, c) for c in quote)


def _elided(line: str, toks: list[tuple[int, int]], rng: random.Random) -> str | None:
    if len(toks) < 7:
        return None
    for _ in range(8):
        a = rng.randint(2, len(toks) - 4)
        b = rng.randint(a + 1, len(toks) - 2)
        left, right = line[toks[0][0] : toks[a - 1][1]], line[toks[b][0] : toks[-1][1]]
        gone = [line[slice(*t)] for t in toks[a - 1 : b]]
        if _identifying(left) and _identifying(right) and not any(_negator(w) for w in gone):
            return left + rng.choice(ELISION_MARKS) + right
    return None


def _identifying(piece: str) -> bool:
    """Long enough to point at its place on its own: two words and 16 characters, normalised."""
    folded = norm(piece)
    return len(folded) >= PIECE_CHARS and folded.count(" ") >= 1


def _adjacent(line: str, following: str, rng: random.Random) -> str | None:
    """The end of one line and the start of the next, each piece identifying on its own."""
    toks, next_toks = _tokens(line), _tokens(following)
    for _ in range(8):
        a = rng.randint(0, max(0, len(toks) - 3))
        while a and _negator(line[slice(*toks[a - 1])]):
            a -= 1
        b = rng.randint(min(3, len(next_toks)), len(next_toks))
        end, start = line[toks[a][0] :], following[: next_toks[b - 1][1]]
        if _identifying(end) and _identifying(start):
            return end + rng.choice((" ", "\n")) + start
    return None


# --- mutations ---------------------------------------------------------------------------------


def _replace(line: str, spans: list[tuple[int, int, str]], a: int, b: int) -> str:
    """line[a:b] with each (start, end, text) span replaced."""
    out, at = [], a
    for start, end, text in sorted(spans):
        out += [line[at:start], text]
        at = end
    out.append(line[at:b])
    return "".join(out)


def _digit_changed(line: str, toks: list[tuple[int, int]], rng: random.Random) -> str | None:
    a, b = _window(toks, rng)
    lo, hi = toks[a][0], toks[b - 1][1]
    digits = [i for i in range(lo, hi) if line[i].isdigit()]
    if not digits:
        return None
    at = rng.choice(digits)
    new = str((int(line[at]) + rng.randint(1, 9)) % 10)
    return _replace(line, [(at, at + 1, new)], lo, hi)


def _sibling_value(system: str, line: str, toks: list[tuple[int, int]], rng: random.Random) -> str | None:
    template = _template(line)
    siblings = [j for j in _by_template(system)[template] if lines(system)[j].rstrip() != line]
    if not siblings:
        return None
    message_start = _message_start(system, line)
    sibling = lines(system)[rng.choice(siblings)]
    sib_toks = _tokens(sibling)
    differing = [k for k, tok in enumerate(template)
                 if tok == "<*>" and line[slice(*toks[k])] != sibling[slice(*sib_toks[k])]]
    in_message = [k for k in differing if toks[k][0] >= message_start]
    pool = in_message or differing
    if not pool:
        return None
    k = rng.choice(pool)
    a, b = _window(toks, rng, must=(k, k))
    return _replace(line, [(*toks[k], sibling[slice(*sib_toks[k])])], toks[a][0], toks[b - 1][1])


def _tokens_swapped(line: str, toks: list[tuple[int, int]], rng: random.Random) -> str | None:
    a, b = _window(toks, rng)
    if b - a < 3:
        return None
    for _ in range(8):
        x, y = sorted(rng.sample(range(a, b), 2))
        tx, ty = line[slice(*toks[x])], line[slice(*toks[y])]
        if norm(tx) != norm(ty):
            return _replace(line, [(*toks[x], ty), (*toks[y], tx)], toks[a][0], toks[b - 1][1])
    return None


def _token_dropped(line: str, toks: list[tuple[int, int]], rng: random.Random) -> str | None:
    a, b = _window(toks, rng)
    if b - a < 3:
        return None
    k = rng.randint(a + 1, b - 2)  # an inner token: dropping an end one is a faithful sub-span
    return _replace(line, [(toks[k][0], toks[k + 1][0], "")], toks[a][0], toks[b - 1][1])


def _negation_added(system: str, line: str, toks: list[tuple[int, int]], rng: random.Random) -> str | None:
    start = _message_start(system, line)
    words = [k for k, (s, e) in enumerate(toks) if s >= start and re.fullmatch(r"[A-Za-z]{2,}", line[s:e])]
    if not words or any(_negator(line[slice(*t)]) for t in toks):
        return None
    auxiliaries = [k for k in words if line[slice(*toks[k])].lower() in CONTRACTED]
    k = rng.choice(auxiliaries or words)
    a, b = _window(toks, rng, must=(k, k))
    word = line[slice(*toks[k])]
    if auxiliaries:
        return _replace(line, [(*toks[k], CONTRACTED[word.lower()])], toks[a][0], toks[b - 1][1])
    return _replace(line, [(toks[k][0], toks[k][0], rng.choice(INSERTED_NEGATIONS) + " ")], toks[a][0], toks[b - 1][1])


def _level_changed(system: str, line: str, toks: list[tuple[int, int]], rng: random.Random) -> str | None:
    pattern = SYSTEMS[system].level
    span = _field(pattern, line) if pattern else None
    if pattern is None or span is None:
        return None
    others = [v for v in _field_values(system)[pattern] if v != line[slice(*span)]]
    if not others:
        return None
    first, last = _token_index(toks, span)
    a, b = _window(toks, rng, must=(first, min(len(toks) - 1, last + 3)))
    return _replace(line, [(*span, rng.choice(others))], toks[a][0], toks[b - 1][1])


def _host_changed(system: str, line: str, toks: list[tuple[int, int]], rng: random.Random) -> str | None:
    found = [(p, span) for p in SYSTEMS[system].fields if (span := _field(p, line))]
    rng.shuffle(found)
    for pattern, span in found:
        value = line[slice(*span)]
        others = [v for v in _field_values(system)[pattern] if v != value]
        if not others:
            continue
        first, last = _token_index(toks, span)
        a, b = _window(toks, rng, must=(first, last))
        lo, hi = toks[a][0], toks[b - 1][1]
        other = rng.choice(others)
        # Every mention of the value inside the quote (a host is often named twice in one line).
        spans = [(m.start(), m.end(), other)
                 for m in re.finditer(rf"(?<![\w.-]){re.escape(value)}(?![\w-])", line[lo:hi])]
        return _replace(line, [(lo + s, lo + e, t) for s, e, t in spans] or [(*span, other)], lo, hi)
    return None


def _words_invented(line: str, toks: list[tuple[int, int]], rng: random.Random) -> str | None:
    a, b = _window(toks, rng)
    if b - a < 2:
        return None
    k = rng.randint(a + 1, b - 1)
    return _replace(line, [(toks[k][0], toks[k][0], rng.choice(INVENTED) + " ")], toks[a][0], toks[b - 1][1])


def _variants(system: str, i: int, rng: random.Random) -> Iterator[tuple[str, str | None]]:
    line = lines(system)[i].rstrip()
    toks = _tokens(line)
    quote = _sub_span(line, toks, rng) or line
    yield "exact", line
    yield "sub-span", _sub_span(line, toks, rng)
    yield "reflowed whitespace", _reflowed(quote, rng)
    yield "full-width punctuation", _full_width(line if rng.random() < 0.5 else quote)
    yield "elided", _elided(line, toks, rng)
    following = lines(system)[i + 1] if i + 1 < len(lines(system)) else ""
    yield "adjacent records", _adjacent(line, following.rstrip(), rng) if following.strip() else None
    mutations: dict[str, Callable[[], str | None]] = {
        "digit changed": lambda: _digit_changed(line, toks, rng),
        "sibling value": lambda: _sibling_value(system, line, toks, rng),
        "tokens swapped": lambda: _tokens_swapped(line, toks, rng),
        "token dropped": lambda: _token_dropped(line, toks, rng),
        "negation added": lambda: _negation_added(system, line, toks, rng),
        "level changed": lambda: _level_changed(system, line, toks, rng),
        "host or service changed": lambda: _host_changed(system, line, toks, rng),
        "words invented": lambda: _words_invented(line, toks, rng),
    }
    for cls, make in mutations.items():
        for _ in range(4):  # a few draws: a mutation another line says verbatim is not one
            made = make()
            if made is None or really_differs(system, made):
                break
        else:
            made = None
        yield cls, made


def generate(genres: dict[str, tuple[str, ...]] = GENRES) -> list[dict]:
    rng = random.Random(SEED)
    cases: list[dict] = []
    for system in (s for s in SYSTEMS if GENRE_OF[s] in genres):
        one_line = GENRE_OF[system] == "one-line"
        # A stack frame ("at a.b.C.d(C.java:60)") is two tokens: a quote of it is still one.
        usable = [i for i, line in enumerate(lines(system)) if len(_tokens(line)) >= (4 if one_line else 2)]
        held_out = GENRE_OF[system] in HELD_OUT_GENRES
        if held_out:  # a quoted line, and a quote, has two words at least (not a banner's "_.-``__")
            usable = [i for i in usable if norm(lines(system)[i]).count(" ") >= 1]
        per_system = PER_SYSTEM if one_line else PER_OTHER_SYSTEM
        for i in sorted(rng.sample(usable, min(per_system, len(usable)))):
            for cls, excerpt in _variants(system, i, rng):
                if excerpt is None or (held_out and norm(excerpt).count(" ") < 1):  # a banner's "(  '  ,  .-`"
                    continue
                cases.append({"id": f"{system}#{i + 1}/{cls}", "class": cls, "faithful": cls in FAITHFUL,
                              "system": system, "line": i + 1, "shape": rng.choice(SHAPES), "excerpt": excerpt})
    return cases


def dump(cases: list[dict]) -> str:
    return "".join(json.dumps(case, ensure_ascii=False) + "\n" for case in cases)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if either committed corpus (the main one, the held-out one) is not what this makes")
    parser.add_argument("--held-out", action="store_true",
                        help=f"write the held-out genres' cases ({', '.join(HELD_OUT_GENRES)}) to {HELD_OUT_CORPUS.name}")
    args = parser.parse_args()
    if args.check:
        stale = 0
        for path, genres, rerun in ((CORPUS, GENRES, "without --check"), (HELD_OUT_CORPUS, HELD_OUT_GENRES, "with --held-out")):
            same = path.exists() and path.read_text(encoding="utf-8") == dump(generate(genres))
            print(f"{path.name}: {'up to date' if same else f'stale; rerun {rerun}'}")
            stale += not same
        return 1 if stale else 0
    path, genres = (HELD_OUT_CORPUS, HELD_OUT_GENRES) if args.held_out else (CORPUS, GENRES)
    text = dump(generate(genres))
    path.write_text(text, encoding="utf-8")
    print(f"{text.count(chr(10))} cases -> {path.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
