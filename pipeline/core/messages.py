"""Text the workbench writes for a person, in zh or en: one gettext catalogue per language.

The catalogues are pipeline/core/locale/<lang>/LC_MESSAGES/workbench.po, managed with Babel
(docs/i18n.md: `python scripts/messages.py extract` runs `pybabel extract` over the code, `update`
merges new ids into both catalogues). Ids are codes ("gk.no_output", "answer.key_facts",
"trace.title"), so English is a catalogue like Chinese and a stored message never depends on the
wording of the version that wrote it. The .po files are read at first use (no compile step, so a
checkout, an editable install and a wheel read the same files).

Engine findings (gatekeeper rule, verdict policy, composer filter, coverage) are `msg(code, **params)`:
the stored record keeps the Message beside its English rendering, and a page renders it in the
reader's language. Quoted evidence and identifiers travel verbatim as parameters, never translated.
A message made of several findings (an excerpt both dissimilar and holding invented words) is one
Message with `then` parts, joined in the reader's punctuation. Fixed text (answer framing, page
labels) is `tr(code, lang, **params)`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from string import Formatter
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Lang = Literal["en", "zh"]
LANGS: tuple[Lang, ...] = ("en", "zh")
Param = str | int | float

LOCALE_DIR = Path(__file__).with_name("locale")
DOMAIN = "workbench"


def lang_of(language: str) -> Lang:
    """The catalogue for `language`: zh, or en for anything else."""
    return "zh" if language == "zh" else "en"


@cache
def catalogue(lang: Lang) -> Mapping[str, str]:
    """id -> template of one language; fuzzy and untranslated entries are left out, as gettext does."""
    from babel.messages.pofile import read_po  # at first use: most imports of pipeline render nothing

    with (LOCALE_DIR / lang / "LC_MESSAGES" / f"{DOMAIN}.po").open("rb") as f:
        po = read_po(f, locale=lang, domain=DOMAIN)
    return {str(m.id): str(m.string) for m in po if m.id and m.string and not m.fuzzy}


def tr(code: str, language: str, /, **params: Any) -> str:
    """The catalogued text `code` in `language`, its placeholders filled; an unknown code is a
    programming error (KeyError), caught by the tests that extract every code from the source."""
    template = catalogue(lang_of(language))[code]
    return template.format(**params, **_readings(params, lang_of(language))) if params else template


# A reason is written for its reader: a rule id or a status a template names is also read out in
# plain words ("{rule_why} (rule {rule})"), looked up when rendered, so a stored message reads
# in the wording of the version that shows it. The id itself stays in the sentence as a detail.
READINGS = frozenset({"rule_why", "status_why"})


def _readings(params: Mapping[str, Any], lang: Lang) -> dict[str, str]:
    out = {}
    for name, table in (("rule", family("rule_why.", lang)), ("status", family("status_why.", lang))):
        value = params.get(name)
        if isinstance(value, str):
            out[f"{name}_why"] = table.get(value, table["_"])
    return out


def family(prefix: str, language: str) -> Mapping[str, str]:
    """Every template whose id starts with `prefix` (ending in "."), keyed by the rest of the id: a
    table the code indexes by a value it holds, such as a symptom id or a review label. The prefix
    is a literal, so the extraction lists it and the catalogue test knows the family is read."""
    return _family(prefix, lang_of(language))


@cache
def _family(prefix: str, lang: Lang) -> Mapping[str, str]:
    return {code[len(prefix):]: text for code, text in catalogue(lang).items() if code.startswith(prefix)}


class Message(BaseModel):
    model_config = ConfigDict(extra="ignore")

    code: str
    params: dict[str, Param] = Field(default_factory=dict)
    then: list[Message] = Field(default_factory=list)

    def says(self, code: str) -> bool:
        """Whether this message or one of its parts is `code` (asked of a finding, never of its wording)."""
        return self.code == code or any(part.says(code) for part in self.then)


def msg(code: str, /, **params: Param) -> Message:
    """A catalogued message raised with exactly the parameters its template names; a wrong code or
    parameter is a programming error, caught here, not on a page."""
    if set(params) != _parameters(code):
        raise TypeError(f"message {code!r} takes {sorted(_parameters(code))}, got {sorted(params)}")
    return Message(code=code, params=params)


@cache
def _parameters(code: str) -> frozenset[str]:
    template = catalogue("en").get(code)
    if template is None:
        raise KeyError(f"message code {code!r} is not in the catalogue ({LOCALE_DIR})")
    return frozenset(placeholders(template)) - READINGS


def render(message: Message, lang: str) -> str:
    """The message in `lang` ("zh" or anything else: en). A code a newer version wrote and this one
    lacks renders as the code and its parameters, never as an exception on a page."""
    key = lang_of(lang)
    template = catalogue(key).get(message.code)
    if template is None:
        text = message.code + (f" {message.params}" if message.params else "")
    else:
        text = template.format(**{k: _param(k, v, key) for k, v in message.params.items()},
                               **_readings(message.params, key))
    return tr("common.join", key).join([text, *(render(part, key) for part in message.then)])


def _param(name: str, value: Param, lang: Lang) -> Param:
    """A parameter as the sentence needs it: a symptom id becomes its name in the reader's
    language ("memory" -> "a memory problem" / "内存问题"), a status, form or kind id its words, a
    blank service "any service"; the rest (quoted evidence, identifiers) stays verbatim."""
    if name == "symptom" and isinstance(value, str):
        return symptom_name(value, lang)
    if name in _VALUE_PARAMS and isinstance(value, str):  # "unsupported" -> "无证据支持", "yes_no" -> "是否"
        return value_name(value, lang)
    if name == "wanted" and isinstance(value, str):  # what an eval fixture expects: "pass, warn"
        return ("、" if lang == "zh" else ", ").join(value_name(v, lang) for v in value.split(", "))
    if name == "backends" and isinstance(value, str) and lang == "zh":  # "bundled logs, loki alerts"
        return "、".join(_CJK_GAP.sub("", " ".join(value_name(w, lang) for w in part.split()))
                        for part in value.split(", "))
    if name == "service" and value == "":
        return tr("common.any_service", lang)
    return value


# Parameters that hold a status, form or kind id (a verification, a claim type, a coverage status).
_VALUE_PARAMS = frozenset({"form", "type", "verification", "why", "said", "status", "impact"})
_CJK_GAP = re.compile(r"(?<=[\u4e00-\u9fff]) (?=[\u4e00-\u9fff])")


def value_name(value: str, lang: str) -> str:
    """A status, form or kind id a page or a sentence shows ("fail", "no_data", "yes_no") in the
    reader's words; English keeps most ids as they read (a form is spelled out), and an id not
    listed stays itself."""
    return family("value.", lang).get(value, value)


def symptom_name(symptom: str, lang: str) -> str:
    """What a symptom is called in a sentence (ids: pipeline.verdict.scope.SYMPTOMS; "any": the
    pair asked of a service named without a symptom); an unknown id stays itself."""
    return family("symptom.", lang).get(symptom, symptom)


def localized(text: str, message: Message | Mapping[str, Any] | None, lang: str) -> str:
    """A stored English `text` in `lang`: its message rendered, or the text itself when the record
    was written before messages had codes. A gatekeeper warning inside a failed rule keeps its mark."""
    if not message:
        return text
    shown = render(message if isinstance(message, Message) else Message.model_validate(message), lang)
    if text.startswith("[warn] "):
        return tr("common.warn_mark", lang) + shown
    return shown


def placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in Formatter().parse(template) if name}


def guard_kind(kind: str, lang: str) -> str:
    """A violation kind in the reader's language; a kind not listed stays its identifier."""
    return family("guard_kind.", lang).get(kind, kind)
