"""Messages the engine writes for a person, as a code and parameters rendered in zh or en.

A producer (gatekeeper rule, verdict policy, composer filter, coverage) builds `msg(code, **params)`;
the stored record keeps the Message beside its English rendering, and a page renders it in the
reader's language. Quoted evidence and identifiers travel verbatim as parameters, never translated.
A message made of several findings (an excerpt both dissimilar and holding invented words) is one
Message with `then` parts, joined in the reader's punctuation.
"""

from __future__ import annotations

from collections.abc import Mapping
from string import Formatter
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Lang = Literal["en", "zh"]
Param = str | int | float


class Message(BaseModel):
    model_config = ConfigDict(extra="ignore")

    code: str
    params: dict[str, Param] = Field(default_factory=dict)
    then: list[Message] = Field(default_factory=list)


def msg(code: str, /, **params: Param) -> Message:
    """A catalogued message; an unknown code is a programming error, caught here, not on a page."""
    if code not in CATALOGUE:
        raise KeyError(f"message code {code!r} is not in pipeline/core/messages.py CATALOGUE")
    return Message(code=code, params=params)


_JOIN = {"en": "; ", "zh": "；"}


def render(message: Message, lang: str) -> str:
    """The message in `lang` ("zh" or anything else: en). A code a newer version wrote and this one
    lacks renders as the code and its parameters, never as an exception on a page."""
    key: Lang = "zh" if lang == "zh" else "en"
    entry = CATALOGUE.get(message.code)
    if entry is None:
        text = message.code + (f" {message.params}" if message.params else "")
    else:
        text = entry[key].format(**{k: _param(k, v, key) for k, v in message.params.items()})
    return _JOIN[key].join([text, *(render(part, key) for part in message.then)])


def _param(name: str, value: Param, lang: Lang) -> Param:
    """A parameter as the sentence needs it: a symptom id becomes its name in the reader's
    language ("memory" -> "a memory problem" / "内存问题"), a blank service "any service"; the
    rest (quoted evidence, identifiers) stays verbatim."""
    if name == "symptom" and isinstance(value, str):
        return SYMPTOM_NAMES.get(value, {}).get(lang, value)
    if name == "service" and value == "":
        return "任一服务" if lang == "zh" else "any service"
    return value


def localized(text: str, message: Message | Mapping[str, Any] | None, lang: str) -> str:
    """A stored English `text` in `lang`: its message rendered, or the text itself when the record
    was written before messages had codes. A gatekeeper warning inside a failed rule keeps its mark."""
    if not message:
        return text
    shown = render(message if isinstance(message, Message) else Message.model_validate(message), lang)
    if text.startswith("[warn] "):
        return ("[警告] " if lang == "zh" else "[warn] ") + shown
    return shown


def placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in Formatter().parse(template) if name}


CATALOGUE: dict[str, dict[Lang, str]] = {
    # --- gatekeeper: schema.executor_v2 ---
    "gk.no_output": {"en": "executor output must be a JSON object, got no parseable executor output",
                     "zh": "执行器输出必须是 JSON 对象，但没有可解析的执行器输出"},
    "gk.not_object": {"en": "executor output must be a JSON object, got a JSON {type}",
                      "zh": "执行器输出必须是 JSON 对象，实际是 JSON {type}"},
    "gk.field_missing": {"en": "required field {name} is missing", "zh": "缺少必填字段 {name}"},
    "gk.answer_version": {"en": "answer_version is {got}, expected {expected}",
                          "zh": "answer_version 为 {got}，应为 {expected}"},
    "gk.deprecated_field": {"en": "deprecated field {name} is not allowed in executor_evidence_v2",
                            "zh": "executor_evidence_v2 不允许已废弃字段 {name}"},
    "gk.not_array": {"en": "{name} must be an array, got {type}", "zh": "{name} 必须是数组，实际是 {type}"},
    "gk.claims_empty": {"en": "claims is empty", "zh": "claims 为空"},
    "gk.claim_not_object": {"en": "claim must be an object", "zh": "结论必须是对象"},
    "gk.claim_field_missing": {"en": "required claim field {name} is missing", "zh": "结论缺少必填字段 {name}"},
    "gk.not_text": {"en": "{name} must be a non-empty string", "zh": "{name} 必须是非空字符串"},
    "gk.support_level": {"en": "support_level {value} is not one of {allowed}",
                         "zh": "support_level {value} 不在允许值 {allowed} 之中"},
    "gk.bindings_not_array": {"en": "evidence_bindings must be an array", "zh": "evidence_bindings 必须是数组"},
    "gk.bindings_empty": {"en": "evidence_bindings is empty; a claim needs evidence",
                          "zh": "evidence_bindings 为空；结论必须有证据"},
    "gk.binding_not_object": {"en": "evidence binding must be an object", "zh": "证据绑定必须是对象"},
    "gk.binding_field_missing": {"en": "required binding field {name} is missing", "zh": "证据绑定缺少必填字段 {name}"},
    "gk.ids_not_integers": {"en": "source_invocation_ids must be an array of integers",
                            "zh": "source_invocation_ids 必须是整数数组"},
    # --- gatekeeper: evidence.invocation_ref (digest_ref repeats them per digest, see below) ---
    "gk.claim_no_bindings": {"en": "claim has no evidence_bindings", "zh": "结论没有 evidence_bindings"},
    # --- gatekeeper: evidence.excerpt_similarity ---
    "gk.similarity_invocation": {
        "en": "excerpt similarity {score:.2f} < {bound_name} {bound} against invocation {invocation}",
        "zh": "摘录与调用 {invocation} 的相似度 {score:.2f} 低于 {bound_name} {bound}"},
    "gk.not_by_structure": {
        "en": "excerpt is not one span of a record of invocation {invocation}, nor pieces split at an "
              "elision mark or between adjacent records (words reordered, left out or taken from another "
              "record; best window similarity {score:.2f})",
        "zh": "摘录不是调用 {invocation} 某条记录中连续的一段，也不是在省略号处或相邻记录之间断开的片段"
              "（词序被调换、漏词或取自另一条记录；最相近窗口的相似度 {score:.2f}）"},
    "gk.outside_cited": {
        "en": "excerpt is not in the records it cites ({cited}); it is found in record(s) {found} of invocation {invocation}",
        "zh": "摘录不在其引用的记录（{cited}）中，而在调用 {invocation} 的记录 {found} 中"},
    "gk.not_in_cited": {
        "en": "excerpt is not in the records it cites ({cited}) nor elsewhere in the output by structure "
              "(best window similarity {score:.2f})",
        "zh": "摘录既不在其引用的记录（{cited}）中，也不以原样出现在输出的其他位置（最相近窗口的相似度 {score:.2f}）"},
    "gk.missing_records": {
        "en": "excerpt cites records the output does not have: {records}",
        "zh": "摘录引用了输出中不存在的记录：{records}"},
    "gk.similarity_source": {"en": "excerpt similarity {score:.2f} < {bound_name} {bound} against {source}",
                             "zh": "摘录与 {source} 的相似度 {score:.2f} 低于 {bound_name} {bound}"},
    "gk.similarity_other": {"en": "the excerpt matches invocation {invocation} ({tool}) at {score:.2f} instead",
                            "zh": "该摘录反而与调用 {invocation}（{tool}）相符，相似度 {score:.2f}"},
    "gk.invented_words": {
        "en": "excerpt holds {count} word(s) that the cited output has nowhere (invented content, "
              "{tolerated} tolerated): {words}",
        "zh": "摘录含有 {count} 个所引输出中完全没有的词（编造内容，容许 {tolerated} 个）：{words}"},
    "gk.invented_words_also": {
        "en": "it holds {count} word(s) that the cited output has nowhere (invented content, "
              "{tolerated} tolerated): {words}",
        "zh": "其中还有 {count} 个所引输出中完全没有的词（编造内容，容许 {tolerated} 个）：{words}"},
    # --- gatekeeper: evidence.excerpt_entities ---
    "gk.entity_nearby": {"en": 'excerpt says "{token}" ({kind}) but output near the match holds {held}',
                         "zh": "摘录写的是“{token}”（{kind}），但输出中匹配处附近是 {held}"},
    "gk.entity_not_in_record": {"en": 'excerpt says "{token}" ({kind}) but the matched output record does not hold it',
                                "zh": "摘录写的是“{token}”（{kind}），但匹配到的输出记录中没有它"},
    "gk.entity_elsewhere": {
        "en": 'excerpt says "{token}" ({kind}) but the matched output record does not hold it '
              "(it appears elsewhere in the output)",
        "zh": "摘录写的是“{token}”（{kind}），但匹配到的输出记录中没有它（它出现在输出的其他位置）"},
    "gk.entity_nowhere": {"en": 'excerpt says "{token}" ({kind}), which the cited output does not hold anywhere',
                          "zh": "摘录写的是“{token}”（{kind}），所引输出中任何位置都没有它"},
    "gk.level_changed": {"en": "excerpt changes the log level: it says {said} where the record says {record}",
                         "zh": "摘录改变了日志级别：记录是 {record}，摘录写成 {said}"},
    "gk.negation_dropped_before": {
        "en": 'excerpt drops the negation "{term}" that directly precedes it in the cited output',
        "zh": "摘录去掉了所引输出中紧挨在它前面的否定词“{term}”"},
    "gk.negation_added": {"en": 'excerpt adds the negation "{term}" ("{added}"), which the cited output does not have',
                          "zh": "摘录加入了所引输出中没有的否定词“{term}”（“{added}”）"},
    "gk.negation_dropped": {"en": 'excerpt drops the negation "{term}" that the cited output has ("{out}")',
                            "zh": "摘录去掉了所引输出中的否定词“{term}”（“{out}”）"},
    "gk.antonym": {"en": 'excerpt flips "{orig}" to its opposite "{said}" ("{ex}" vs output "{out}")',
                   "zh": "摘录把“{orig}”反写成“{said}”（摘录“{ex}”，输出“{out}”）"},
    "gk.number_changed": {"en": 'excerpt says "{said}" where the cited output says "{orig}" ("{out}")',
                          "zh": "摘录写的是“{said}”，所引输出写的是“{orig}”（“{out}”）"},
    # --- gatekeeper: claim.* ---
    "gk.speculative": {"en": "speculative wording {phrases} in a confirmed claim",
                       "zh": "确认的结论中含有推测性措辞 {phrases}"},
    "gk.keyword_coverage": {"en": "keyword coverage {coverage:.2f} < {min}; not in the excerpts: {missing}",
                            "zh": "关键词覆盖率 {coverage:.2f} 低于 {min}；摘录中没有：{missing}"},
    # --- gatekeeper: evidence.digest_ref ---
    "gk.no_digest_id": {"en": "binding has no digest_id (split shape cites digests)",
                        "zh": "证据绑定没有 digest_id（拆分形态须引用摘要）"},
    "gk.digest_missing": {"en": "digest_id {digest} does not exist in this session", "zh": "本会话中不存在摘要 {digest}"},
    "gk.ids_outside_digest": {"en": "source_invocation_ids {ids} are not among digest {digest}'s sources",
                              "zh": "source_invocation_ids {ids} 不在摘要 {digest} 的来源之中"},
    "gk.quote_similarity": {"en": "digest {digest}: source_quote similarity {score:.2f} to its cited output is below {bound}",
                            "zh": "摘要 {digest}：source_quote 与所引输出的相似度 {score:.2f} 低于 {bound}"},
}

# Reference problems, said of a claim's binding and, prefixed with the digest, of a digest.
_REF: dict[str, dict[Lang, str]] = {
    "ids_empty": {"en": "source_invocation_ids is empty or has no integer id",
                  "zh": "source_invocation_ids 为空或不含整数 id"},
    "unknown_tool": {"en": "tool_name {tool} is not a known tool", "zh": "tool_name {tool} 不是已知工具"},
    "fabricated_id": {"en": "source invocation {invocation} does not exist (fabricated id)",
                      "zh": "来源调用 {invocation} 不存在（编造的 id）"},
    "other_session": {"en": "source invocation {invocation} belongs to another session ({session}), not this one",
                      "zh": "来源调用 {invocation} 属于另一个会话（{session}），不属于本会话"},
    "tool_mismatch": {"en": "tool_name {tool} ({wanted}) does not match invocation {invocation}, which is {actual}",
                      "zh": "tool_name {tool}（{wanted}）与调用 {invocation} 不符，该调用是 {actual}"},
}
for _name, _text in _REF.items():
    CATALOGUE[f"gk.ref.{_name}"] = _text
    CATALOGUE[f"gk.digest_ref.{_name}"] = {"en": "digest {digest}: " + _text["en"], "zh": "摘要 {digest}：" + _text["zh"]}

CATALOGUE.update({
    # --- verdict policy (pipeline/verdict/policy.py) ---
    "policy.parse_status": {"en": "executor output parse status is {status}: nothing structured to verify",
                            "zh": "执行器输出解析状态为 {status}：没有可核验的结构化内容"},
    "policy.gk_override": {
        "en": "{claim}: verifier said {said}, but gatekeeper rule {rule} failed on it; treated as {verification}",
        "zh": "{claim}：核验器判为 {said}，但守门规则 {rule} 未通过，按 {verification} 处理"},
    "policy.gk_override_unbacked": {
        "en": "{claim}: verifier said {said}, but the gatekeeper failed on it; treated as {verification}",
        "zh": "{claim}：核验器判为 {said}，但守门器判定其证据无效，按 {verification} 处理"},
    "policy.no_claims": {"en": "the diagnosis has no claims", "zh": "诊断没有任何结论"},
    "policy.contradicted": {"en": "{claim} ({type}) is contradicted by its evidence",
                            "zh": "{claim}（{type}）与其证据相矛盾"},
    "policy.external_core": {
        "en": "{claim} ({type}) introduces a service, id, error code, value or cause not in the evidence",
        "zh": "{claim}（{type}）引入了证据中没有的服务、id、错误码、数值或原因"},
    "policy.external_background": {"en": "{claim} ({type}) introduces background not in the evidence",
                                   "zh": "{claim}（{type}）引入了证据中没有的背景信息"},
    "policy.weak": {"en": "{claim} ({type}) is {verification}", "zh": "{claim}（{type}）判定为 {verification}"},
    "policy.weak_unchecked": {"en": "{claim} ({type}) is {verification} (no claim check)",
                              "zh": "{claim}（{type}）判定为 {verification}（没有核验记录）"},
    "policy.no_direct_core": {"en": "no core claim is a direct observation", "zh": "没有一条核心结论是直接观察"},
    "policy.rule_failed": {"en": "gatekeeper rule {rule} failed (verdictImpact {impact})",
                           "zh": "守门规则 {rule} 未通过（verdictImpact {impact}）"},
    "policy.unbacked": {"en": "{claim} has no binding that is evidence, so the session cannot PASS",
                        "zh": "{claim} 没有一条证据绑定成立，会话不能判为 PASS"},
    "policy.coverage": {"en": "asked service {service} is {status}: the question about it is not answered",
                        "zh": "所问服务 {service} 为 {status}：关于它的问题没有得到回答"},
    "policy.coverage_symptom": {"en": "{symptom} in {service} is {status}: the question about it is not answered",
                                "zh": "{service} 的{symptom}为 {status}：关于它的问题没有得到回答"},
    "policy.tools_failed": {"en": "evidence is incomplete: {calls} failed", "zh": "证据不完整：{calls} 调用失败"},
    "policy.retry_open": {"en": "round {round} did not close the gaps of the previous round",
                          "zh": "第 {round} 轮没有补上上一轮的证据缺口"},
    "policy.verifier_stricter": {"en": "the verifier judged {verdict}", "zh": "核验器判定为 {verdict}"},
    "policy.verifier_differs": {"en": "the verifier said {said}; the policy requires {verdict}",
                                "zh": "核验器判为 {said}；判定策略要求 {verdict}"},
    "policy.check_rule": {"en": "gatekeeper rule {rule} failed on this claim", "zh": "守门规则 {rule} 在该结论上未通过"},
    "policy.check_unbacked": {"en": "the gatekeeper: no evidence binding of this claim is evidence",
                               "zh": "守门器：该结论的证据绑定没有一条成立"},
    # --- composer-input filter (pipeline/stages/composer.py) ---
    "filter.unbacked": {"en": "{why}, but no binding of it is evidence (gatekeeper unbacked_claims): never stated as confirmed",
                        "zh": "{why}，但它没有一条证据绑定成立（gatekeeper unbacked_claims）：不作为确认事实陈述"},
    "filter.reject_not_direct": {"en": "{why}: under REJECT only directly observed, non-root-cause facts are stated",
                                 "zh": "{why}：REJECT 时只陈述直接观察到的、非根因的事实"},
    "filter.root_cause": {"en": "{why}: a root cause is confirmed only by a direct observation under PASS",
                          "zh": "{why}：只有 PASS 下的直接观察才能确认根因"},
    "filter.overstated_reject": {"en": "{why}: no hypotheses under REJECT", "zh": "{why}：REJECT 时不给出假设"},
    "filter.downgraded": {"en": "{why}: downgraded to a hypothesis", "zh": "{why}：降级为假设"},
    "filter.unsupported": {"en": "{why}: stated only as an evidence gap", "zh": "{why}：只作为证据缺口陈述"},
    "filter.external": {"en": "{why}: its entity is not in the evidence; the gap is stated generically",
                        "zh": "{why}：其中的实体不在证据中；缺口以概括方式陈述"},
    "filter.contradicted": {"en": "{why}: contradicted by the evidence", "zh": "{why}：与证据相矛盾"},
    "filter.no_check": {"en": "no claim check", "zh": "没有核验记录"},
    "filter.certainty_removed": {"en": "its certainty clause removed", "zh": "已删去其中的确定性表述"},
    "filter.certainty_only": {"en": "nothing but a certainty claim, stated as a gap",
                              "zh": "只剩确定性表述，改作缺口陈述"},
    "filter.hypothesis_check": {"en": "{verification}", "zh": "假设核验结果：{verification}"},
    "filter.reject_hypotheses": {"en": "REJECT: no hypotheses reach the composer", "zh": "REJECT：假设不交给撰写器"},
    "filter.gap_closed": {"en": "a confirmed claim already holds the evidence this gap asks for",
                          "zh": "已有一条确认的结论含有该缺口所要的证据"},
    "filter.reject_action": {"en": "REJECT: only evidence-gathering or manual-review actions",
                             "zh": "REJECT：只保留取证或人工复核类行动"},
    # --- question coverage (pipeline/verdict/coverage.py) ---
    "coverage.healthy": {"en": "no sign of a fault in {service}: checked {calls}",
                         "zh": "{service} 没有故障迹象：已查 {calls}"},
    "coverage.answered": {"en": "{count} verified claim(s) about {service}", "zh": "关于 {service} 有 {count} 条已核验结论"},
    "coverage.unclaimed": {"en": "{count} record(s) of {service} returned, but no verified claim is about them",
                           "zh": "返回了 {service} 的 {count} 条记录，但没有已核验结论涉及它们"},
    "coverage.no_records": {"en": "no logs, alerts or metrics for {service} in {backends} ({calls})",
                            "zh": "{backends} 中没有 {service} 的日志、告警或指标（{calls}）"},
    "coverage.not_queried": {"en": "no tool call asked about {service}", "zh": "没有工具调用查询 {service}"},
    "coverage.answered_symptom": {"en": "{count} verified claim(s) about {symptom} in {service}",
                                  "zh": "关于 {service} 的{symptom}有 {count} 条已核验结论"},
    "coverage.healthy_figure": {"en": "no sign of {symptom} in {service}: {figure} ({calls})",
                                "zh": "{service} 没有{symptom}的迹象：{figure}（{calls}）"},
    "coverage.healthy_quiet": {
        "en": "no sign of {symptom} in {service}: none of its {count} record(s) is a warning, error or firing "
              "alert about it ({calls})",
        "zh": "{service} 没有{symptom}的迹象：它的 {count} 条记录中没有关于此的警告、错误或触发中的告警（{calls}）"},
    "coverage.quiet_figure": {"en": "none of {count} record(s) is a warning, error or firing alert about it",
                              "zh": "{count} 条记录中没有关于此的警告、错误或触发中的告警"},
    "coverage.unclaimed_symptom": {
        "en": "{count} record(s) about {symptom} in {service} returned ({calls}), but no verified claim is about them",
        "zh": "返回了 {service} 关于{symptom}的 {count} 条记录（{calls}），但没有已核验结论涉及它们"},
    "coverage.unclaimed_records": {
        "en": "{count} record(s) of {service} returned ({calls}), but no verified claim is about {symptom}",
        "zh": "返回了 {service} 的 {count} 条记录（{calls}），但没有关于{symptom}的已核验结论"},
    "coverage.records_outside": {
        "en": "{count} record(s) of {service} returned ({calls}), none inside the asked time window",
        "zh": "返回了 {service} 的 {count} 条记录（{calls}），但都不在所问的时间窗口内"},
    "coverage.unanswered": {"en": "the question about {symptom} in {service} is not answered",
                            "zh": "关于 {service} 的{symptom}的问题尚未得到回答"},
    "coverage.outside_window": {"en": "evidence {claims} lies outside the asked time window",
                                "zh": "证据 {claims} 不在所问的时间窗口内"},
    # --- composer guard (pipeline/stages/composer.py, composer_guard.py, meaning_guard.py) ---
    "guard.disabled": {"en": "composer disabled: fixed template", "zh": "撰写器已关闭：使用固定模板"},
    "guard.parse_status": {"en": "executor output {status}: fixed template", "zh": "执行器输出为 {status}：使用固定模板"},
    "guard.provider_failed": {"en": "{error}", "zh": "撰写器调用失败：{error}"},
    "guard.not_contract": {"en": "composer output is not the strict JSON contract: {error}",
                           "zh": "撰写器输出不符合严格 JSON 契约：{error}"},
    "guard.unlicensed": {"en": "{count} statement(s) not licensed by the composer input",
                         "zh": "{count} 处表述没有撰写器输入的依据"},
    "guard.degenerate": {"en": "composer answer unusable ({what}): fixed template",
                         "zh": "撰写器答案不可用（{what}）：使用固定模板"},
    # --- applying rules (pipeline/runs/rulebook.py) ---
    "rules.invalid": {"en": "the candidate rules are invalid ({count} problem(s))",
                      "zh": "候选规则无效（{count} 个问题）"},
    "rules.unchanged": {"en": "No change against the version you started from.", "zh": "与起始版本相比没有变化。"},
    "rules.need_author": {"en": "Enter the author's name.", "zh": "请填写作者。"},
    "rules.not_an_editor": {"en": "{who} is not one of the editors who may apply rules: {editors}.",
                            "zh": "{who} 不是可以应用规则的编辑者：{editors}。"},
    "rules.already_in_force": {"en": "Version {id} is already in force.", "zh": "版本 {id} 已经生效。"},
    # --- the bundled sample incidents (pipeline/tools/incidents.py) ---
    "sample.answered_from": {
        "en": "Answered from the bundled sample incident {world}, {window}: a recording shipped with the "
              "workbench, not your systems.",
        "zh": "本回答依据内置示例事故 {world}（{window}）：这是随工作台附带的录制数据，不是你的系统。"},
})

# What a symptom is called in a sentence (ids: pipeline.verdict.scope.SYMPTOMS; "any": the pair asked of
# a service named without a symptom).
SYMPTOM_NAMES: dict[str, dict[Lang, str]] = {
    "any": {"en": "a fault", "zh": "故障"},
    "latency": {"en": "high latency", "zh": "延迟升高"},
    "timeout": {"en": "timeouts", "zh": "超时"},
    "errors": {"en": "errors", "zh": "报错"},
    "cpu": {"en": "CPU saturation", "zh": "CPU 饱和"},
    "memory": {"en": "a memory problem", "zh": "内存问题"},
    "disk": {"en": "a disk problem", "zh": "磁盘问题"},
    "restarts": {"en": "restarts or crashes", "zh": "重启或崩溃"},
    "connection_pool": {"en": "connection pool exhaustion", "zh": "连接池耗尽"},
    "queue_lag": {"en": "queue lag", "zh": "队列积压"},
    "cache": {"en": "a cache problem", "zh": "缓存问题"},
    "deploy": {"en": "a deploy", "zh": "发布"},
}


# What a composer-guard violation's `kind` means; the kind is its code, the token its parameter.
GUARD_KINDS: dict[str, dict[Lang, str]] = {
    "number": {"en": "number", "zh": "数字"}, "percentage": {"en": "percentage", "zh": "百分比"},
    "duration": {"en": "duration", "zh": "时长"}, "error_code": {"en": "error code", "zh": "错误码"},
    "service": {"en": "service", "zh": "服务"}, "identifier": {"en": "identifier", "zh": "标识符"},
    "root_cause": {"en": "root cause", "zh": "根因"}, "malformed": {"en": "malformed output", "zh": "格式错误的输出"},
    "lead_missing": {"en": "first sentence does not answer the question", "zh": "首句没有回答问题"},
    "unattributed": {"en": "sentence from no input item", "zh": "句子不来自任何输入条目"},
    "unconfirmed_as_fact": {"en": "an unconfirmed item stated as fact", "zh": "未确认的内容被写成事实"},
    "filtered_claim": {"en": "restates a claim kept from the composer", "zh": "复述了被拦下的结论"},
    "misattributed": {"en": "a fact moved onto another service", "zh": "事实被安到了另一个服务上"},
    "negation": {"en": "says the opposite of its source", "zh": "与来源的说法相反"},
    "empty": {"en": "empty answer", "zh": "空答案"},
    "placeholder": {"en": "placeholder instead of content", "zh": "占位符而非内容"},
    "verdict_wording": {"en": "the verdict's required wording is missing", "zh": "缺少判定要求的表述"},
}


def guard_kind(kind: str, lang: str) -> str:
    """A violation kind in the reader's language; a kind not listed stays its identifier."""
    return GUARD_KINDS.get(kind, {}).get("zh" if lang == "zh" else "en", kind)
