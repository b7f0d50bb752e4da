"""Who a sentence says wrote a record, and who wrote it.

"payment-service logged that api-gateway did not respond" names both services of the api-gateway
line it retells, so comparing the services a claim and its record name finds them equal; what is
swapped is the speaker. A claim's speaker is the service its SPEAKING word follows ("X logged",
"X's log shows", "X 日志显示"); a record's writer is the service field its line was rendered from
(pipeline.tools.results.ToolRecord.line: a log's service beside its level, an alert's
`service=` label). Either may be unknown, and then nothing is compared.
"""

from __future__ import annotations

import re

from pipeline.text.lexicon import SPEAKING
from pipeline.text.primitives import CJK_IDEOGRAPHS, find_entities, normalize, unquoted

# Between the service and the speaking word: a possessive, and in Chinese "的" with a few characters
# naming which log ("user-service 的慢查询日志显示").
_SPEAKS = re.compile(rf"(?:'s)?\s*(?:的\s*[{CJK_IDEOGRAPHS}]{{0,4}}?)?\s*(?:{SPEAKING.alternation})")
_LEVEL = r"(?:trace|debug|info|notice|warn|warning|error|err|fatal|critical|crit)"
_LEVEL_BEFORE = re.compile(rf"(?:^|\s){_LEVEL}\s+$")
# A level is a field of its own: "payment-service error: 504" inside a message is no level.
_LEVEL_AFTER = re.compile(rf"\s+{_LEVEL}\s+(?![:=])")
_LABEL = re.compile(r"(?:^|\s)service=(\S+)")


def speaker(sentence: str) -> str | None:
    """The service the sentence says wrote what it reports, if it names one that way. Quotations are
    the record's own words: a service speaking inside one is not the sentence's speaker."""
    norm = normalize(unquoted(sentence))
    for ent in find_entities(norm):
        if ent.kind == "service" and _SPEAKS.match(norm, ent.end):
            return ent.value
    return None


def writer(line: str) -> str | None:
    """The service that wrote a record, read from its rendered line: the service beside the log's level
    ("… payment-service ERROR …", "… ERROR payment-service …") or an alert's service label."""
    norm = normalize(line)
    label = _LABEL.search(norm)
    if label:
        return label.group(1)
    for ent in find_entities(norm):
        if ent.kind == "service" and (_LEVEL_AFTER.match(norm, ent.end) or _LEVEL_BEFORE.search(norm[: ent.start])):
            return ent.value
    return None


def swapped_speaker(claim: str, anchor: list[str]) -> tuple[str, str] | None:
    """(the records' writers, the claim's speaker) when the claim attributes its records to a service
    that wrote none of them."""
    told = speaker(claim)
    wrote = {w for w in map(writer, anchor) if w}
    if told and wrote and told not in wrote:
        return "/".join(sorted(wrote)), told
    return None
