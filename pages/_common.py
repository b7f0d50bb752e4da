"""What every workbench page shares: labels (en/zh), escaping, cached store reads, badges.

Pages import only this module and `pipeline`. Everything drawn from a tool output or an LLM
answer passes through `esc` / `segments_html` before it becomes markup: a log line is data.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import streamlit as st

from pipeline.core.config import Settings, load_settings
from pipeline.core.errors import NotFound, WorkbenchError, one_line
from pipeline.core.messages import localized, symptom_name
from pipeline.frontends import views
from pipeline.runs import review_queue
from pipeline.runs.record import SessionRecord, SessionRow, read_session
from pipeline.store import SessionFilter, Store

# --- the entry file and deep links ---------------------------------------------------------

PAGES = (  # (file, label key, icon); app.py builds st.navigation from this
    ("pages/ask.py", "nav.ask", ":material/chat:"),
    ("pages/sessions.py", "nav.sessions", ":material/inbox:"),
    ("pages/trace.py", "nav.trace", ":material/account_tree:"),
    ("pages/rules.py", "nav.rules", ":material/rule:"),
    ("pages/eval.py", "nav.eval", ":material/science:"),
)
_ENTRY_RAN = "_workbench_entry_ran"  # set by frame() on each run, taken by the page
_FRAMED = "_workbench_framed"  # frame() ran at least once in this browser session


# A local file: a :material/...: or emoji icon is fetched from fonts.gstatic.com, a failed
# name lookup in every browser console of a workbench without internet access.
ICON = str(Path(__file__).with_name("icon.png"))


def frame() -> Any:
    """What app.py draws around every page: page config, language switch, navigation, CSS.

    Returns the page st.navigation picked from the URL; app.py runs it.
    """
    st.set_page_config(page_title="Evidence Workbench", page_icon=ICON, layout="wide")
    _lang_from_url()
    with st.sidebar:
        st.segmented_control(t("app.language"), ["en", "zh"], key="lang", required=True, persist_state="session",
                             format_func=lambda code: {"en": "English", "zh": "中文"}[code])
    # The URL carries the code (?lang=zh), not the label a bound widget would write (?lang=中文).
    st.query_params["lang"] = st.session_state[_LANG_URL] = lang()
    st.session_state[_ENTRY_RAN] = st.session_state[_FRAMED] = True
    page = st.navigation([st.Page(path, title=t(key), icon=icon, default=i == 0)
                          for i, (path, key, icon) in enumerate(PAGES)])
    setup()
    return page


_LANG_URL = "_workbench_lang_url"  # the ?lang= value frame() last wrote


def _lang_from_url() -> None:
    """?lang=zh|en decides the language on a fresh load and whenever the URL changes it; else the
    choice in the sidebar (kept for the browser session) stands."""
    wanted = st.query_params.get("lang")
    if wanted in ("en", "zh") and wanted != st.session_state.get(_LANG_URL):
        st.session_state["lang"] = wanted
    elif st.session_state.get("lang") not in ("en", "zh"):
        st.session_state["lang"] = settings().ui.language


def _warm_imports() -> None:
    # st.dataframe imports pandas and pyarrow on its first call in a server process: about a
    # second, paid by whoever first opens a page with a table (Trace, Sessions). Done after the
    # first page is drawn (the reader already sees it), in the script's own thread: importing them
    # on a thread of their own raced the script's imports ("partially initialized module").
    import pandas  # noqa: F401
    import pyarrow  # noqa: F401


def run_app() -> None:
    """app.py's whole body. A WorkbenchError from the frame (a bad workbench.yaml) or a page (a
    store that cannot be opened, a rules file that does not load) becomes one message box; any
    other exception is a bug and keeps Streamlit's traceback."""
    try:
        frame().run()
    except WorkbenchError as exc:
        st.error(md(one_line(exc)), icon=":material/error:")
    _warm_imports()  # a no-op once imported


def page_start() -> None:
    """First call of every page: make sure app.py framed this run.

    A folder named pages/ beside the entry file puts a fresh Streamlit server in its old
    file-per-page mode until some run calls st.navigation, so the first request for
    /trace?session=ID runs pages/trace.py alone (no language switch, no CSS). Drawing the
    frame calls st.navigation, which ends that mode for the whole server; the rerun then goes
    through app.py to the same URL before the user has touched anything.
    """
    if st.session_state.pop(_ENTRY_RAN, False):
        return
    if st.session_state.get(_FRAMED):
        # Only streamlit.testing gets here: AppTest resets the mode before every run.
        return
    try:
        frame()
    except WorkbenchError as exc:  # the same message box run_app shows
        st.error(md(one_line(exc)), icon=":material/error:")
        st.stop()
    st.rerun()


VERDICTS = ("PASS", "LOW_CONFID", "REJECT")
GATE_STATUSES = ("pass", "warn", "fail")
VERDICT_COLORS = {"PASS": "green", "LOW_CONFID": "orange", "REJECT": "red"}
STATUS_COLORS = {"pass": "green", "warn": "orange", "fail": "red", "skipped": "gray"}
REVIEW_LABELS = ("correct", "partially_correct", "incorrect", "hallucination", "needs_follow_up")

# --- labels ------------------------------------------------------------------------------------

LABELS: dict[str, tuple[str, str]] = {
    "app.title": ("Evidence Workbench", "证据工作台"),
    "app.language": ("Language", "语言"),
    "nav.ask": ("Ask", "提问"),
    "nav.sessions": ("Sessions", "会话"),
    "nav.trace": ("Trace", "审计链"),
    "nav.rules": ("Rules", "规则"),
    "nav.eval": ("Eval", "评测"),
    "engine.offline": ("rule-based offline engine (deterministic, no LLM)", "基于规则的离线引擎（确定性，无 LLM）"),
    "engine.provider": ("Provider", "提供方"),
    "engine.model": ("Model", "模型"),
    "engine.shape": ("Shape", "流程形态"),
    "engine.shape.split": ("split: Collector -> Digest -> Diagnosis", "拆分：Collector -> Digest -> Diagnosis"),
    "engine.shape.single": ("single: Executor reads raw outputs", "单体：Executor 直接读取原始输出"),
    "ask.title": ("Ask a diagnosis question", "提出诊断问题"),
    "ask.question": ("Question", "问题"),
    "ask.placeholder": ("e.g. payment API times out since 10:00", "例如：支付接口从10点左右开始大量超时"),
    "ask.submit": ("Ask", "提问"),
    "ask.samples": ("Sample questions of the bundled incidents", "内置故障场景的示例问题"),
    "ask.running": ("Diagnosing ...", "诊断中 ..."),
    "ask.empty": ("The question is empty.", "问题为空。"),
    "ask.failed": ("The session failed", "会话失败"),
    "ask.interrupted": ("Its worker stopped before the session finished", "会话未完成时其执行进程已停止"),
    "ask.rerun": ("Run it again", "重新运行"),
    "ask.open_trace": ("Open the audit trail of this session", "打开该会话的审计链"),
    "ask.answer": ("Answer", "回答"),
    "ask.full_answer": ("The whole answer as text", "完整回答文本"),
    "ask.confirmed": ("Confirmed facts", "已确认事实"),
    "ask.hypotheses": ("Possible causes (not confirmed)", "可能原因（未确认）"),
    "ask.gaps": ("Evidence gaps", "证据缺口"),
    "ask.actions": ("Next steps", "下一步建议"),
    "ask.rationale": ("Verifier rationale", "校验理由"),
    "ask.none": ("none", "无"),
    "scope.services": ("Asked about", "所问服务"),
    "scope.unknown": ("no backend knows it", "数据源中未知"),
    "scope.symptom": ("symptom", "症状"),
    "scope.window": ("window", "时间窗口"),
    "ask.evidence": ("evidence", "证据"),
    "stage.session": ("Session", "会话"),
    "stage.planner": ("Planner: plan", "Planner：计划"),
    "stage.collector": ("Collector: tool calls", "Collector：工具调用"),
    "stage.digest": ("Evidence digest", "证据摘要"),
    "stage.diagnosis": ("Diagnosis (Executor V2 JSON)", "诊断（Executor V2 JSON）"),
    "stage.verification": ("Gatekeeper, verifier, verdict", "Gatekeeper、Verifier 与结论"),
    "stage.retry": ("Another round (LOW_CONFID retry)", "补充一轮（LOW_CONFID 重试）"),
    "stage.done": ("Done", "完成"),
    "stage.skill": ("skill", "技能"),
    "stage.chars": ("characters of JSON", "字符的 JSON"),
    "common.verdict": ("Verdict", "结论"),
    "common.gatekeeper": ("Gatekeeper", "Gatekeeper"),
    "common.groundedness": ("Groundedness", "证据充分度"),
    "common.parse": ("Parse status", "解析状态"),
    "common.failed_rules": ("Failed rules", "未通过规则"),
    "common.warnings": ("Warnings", "警告"),
    "common.session": ("Session", "会话"),
    "common.question": ("Question", "问题"),
    "common.time": ("Time", "时间"),
    "common.review": ("Review", "评审"),
    "common.status": ("Status", "状态"),
    "common.latency": ("latency", "耗时"),
    "common.none": ("(none)", "（无）"),
    "trace.meta_rounds": ("rounds {n}", "轮次 {n}"),
    "trace.meta_tokens": ("tokens {p}+{c}", "令牌 {p}+{c}"),
    "eval.col.fixture": ("fixture", "用例"),
    "eval.col.result": ("result", "结果"),
    "eval.col.verdict": ("verdict", "判定"),
    "eval.col.failures": ("failures", "失败项"),
    "eval.col.expected": ("expected", "期望"),
    "eval.col.description": ("description", "说明"),
    "eval.col.when (UTC)": ("when (UTC)", "时间 (UTC)"),
    "eval.col.score": ("score", "得分"),
    "eval.col.rules": ("rules", "规则"),
    "eval.col.who": ("who", "执行者"),
    "eval.col.run": ("run", "运行"),
    "eval.col.changed": ("changed", "变化"),
    "eval.col.before": ("before", "之前"),
    "eval.col.after": ("after", "之后"),
    "eval.col.failures after": ("failures after", "之后的失败项"),
    "common.choose_one": ("Choose an option", "请选择"),
    "common.choose_many": ("Choose options", "请选择（可多选）"),
    # A review label's caption; the stored label stays the code (English: the code itself).
    "label.correct": ("correct", "正确"),
    "label.partially_correct": ("partially_correct", "部分正确"),
    "label.incorrect": ("incorrect", "错误"),
    "label.hallucination": ("hallucination", "幻觉"),
    "label.needs_follow_up": ("needs_follow_up", "需跟进"),
    "common.reviewer": ("Your name (reviewer)", "你的名字（评审人）"),
    "common.reviewers_only": ("Reviews are saved as the signed-in editor.", "评审以登录的编辑者身份保存。"),
    "common.note": ("Note", "备注"),
    "common.saved_as": ("Saved “{label}” for {target}.", "已保存 “{label}”：{target}。"),
    "common.need_name": ("Enter your name first.", "请先填写名字。"),
    "sessions.title": ("Review queue", "评审队列"),
    "sessions.filters": ("Filters", "筛选"),
    "sessions.verdicts": ("Verdicts", "结论"),
    "sessions.at_ask": ("{v} (at ask {a})", "{v}（提问时 {a}）"),
    "sessions.queued_for": ("queued for {why}", "待复核：{why}"),
    "sessions.composer_findings": ("composer self-check finding", "撰写自检发现"),
    "sessions.needs_person": ("Needs a person", "需要人工处理"),
    "sessions.needs_person_help": ("LOW_CONFID, REJECT, failed runs, and PASS with findings: gatekeeper warnings, "
                                   "claims kept from the answer, a composer guard fallback.",
                                   "LOW_CONFID、REJECT、失败的运行，以及有问题的 PASS：gatekeeper 警告、"
                                   "未进入回答的断言、Composer 守卫回退到固定模板。"),
    "sessions.eval": ("Include eval runs", "包含评测运行"),
    "sessions.gate": ("Gatekeeper status", "Gatekeeper 状态"),
    "sessions.rule": ("Failed rule id", "未通过的规则 id"),
    "sessions.since": ("From date", "起始日期"),
    "sessions.until": ("To date", "结束日期"),
    "sessions.service": ("Service", "服务"),
    "sessions.reviewed": ("Reviewed", "是否已评审"),
    "sessions.reviewed.any": ("any", "全部"),
    "sessions.reviewed.no": ("not yet", "未评审"),
    "sessions.reviewed.yes": ("reviewed", "已评审"),
    "sessions.text": ("Text in question or id", "问题或 id 包含"),
    "sessions.statuses": ("Run status", "运行状态"),
    "sessions.page": ("Page", "页码"),
    "sessions.count": ("{total} sessions match; showing {first}-{last}", "共 {total} 个会话匹配；显示第 {first}-{last} 个"),
    "sessions.empty_store": ("No sessions stored yet.", "还没有任何会话。"),
    "sessions.run_samples": ("Run the sample set: {n} sessions of every verdict, with claims to audit",
                             "运行示例集：{n} 个各种结论的会话，含待审核的断言"),
    "sessions.no_match_of": ("None of the {n} stored sessions matches these filters.",
                             "已存储的 {n} 个会话中没有符合筛选条件的。"),
    "sessions.show_all": ("Show all sessions", "显示全部会话"),
    "sessions.no_failed_rules": ("No gatekeeper rule failed in these sessions.", "这些会话中没有未通过的 Gatekeeper 规则。"),
    "sessions.per_day": ("Verdicts per day", "每日结论"),
    "sessions.rule_counts": ("Failed-rule counts", "规则未通过次数"),
    "sessions.histogram": ("Groundedness", "证据充分度分布"),
    "sessions.export_csv": ("Export list as CSV", "导出列表（CSV）"),
    "sessions.export_zip": ("Export as bundles (zip)", "导出为会话包（zip）"),
    "sessions.prepare_zip": ("Prepare bundles zip", "生成会话包 zip"),
    "trace.title": ("Audit trail", "审计链"),
    "trace.pick": ("Session", "会话"),
    "trace.not_found": ("No session with id {sid}.", "找不到会话 {sid}。"),
    "trace.no_sessions": ("No sessions yet: ask a question first.", "还没有会话：请先提问。"),
    "trace.final": ("Final answer", "最终回答"),
    "mark.ungated": ("ungated", "未把关"),
    "mark.ungated.help": ("Judged with the gatekeeper or an evidence rule switched off or warn-only: forged quotes "
                          "would have passed", "判定时闸门或某条证据规则被关闭或仅告警：伪造的引文也会通过"),
    "mark.unverified": ("unverified", "来源未验证"),
    "mark.unverified.help": ("Imported from a bundle no trusted key signed (or changed after signing): re-verified "
                             "here, held for a person", "导入的会话包未经受信密钥签名（或签名后被改动）：已重新核验，留待人工复核"),
    "trace.provenance": ("Provenance", "来源"),
    "rules.ungated_warning": ("This version switches off what stops forged quotes ({rules}): every verdict under it "
                              "will be marked ungated.", "此版本关闭了拦截伪造引文的检查（{rules}）：其下的判定都将标为“未把关”。"),
    "rules.ungated_confirm": ("Apply it anyway", "仍然应用"),
    "trace.in_force": ("Verdict in force {v} (rules version {n}); at ask {a} (rules version {m})",
                       "生效结论 {v}（规则版本 {n}）；提问时 {a}（规则版本 {m}）"),
    "trace.findings_added": ("Findings under the rules in force, not at ask", "生效规则下新增、提问时没有的发现"),
    "trace.findings_removed": ("Findings at ask, gone under the rules in force", "提问时有、生效规则下消失的发现"),
    "trace.claimed": ("Imported: the source claimed {v}; re-verified here as {f} (its claim is kept, never used)",
                      "导入会话：来源自称 {v}；本系统复核为 {f}（来源结论仅保留，不采用）"),
    "trace.guard": ("Composer guard", "Composer 守卫"),
    "trace.template": ("fixed template used", "已使用固定模板"),
    "trace.composer_input": ("Composer input (what the answer may use)", "Composer 输入（回答可用的内容）"),
    "trace.filtered": ("Kept away from the composer", "未交给 Composer 的内容"),
    "trace.verdict_guard": ("Verifier said {v}; final verdict {f}", "Verifier 判定 {v}；最终结论 {f}"),
    "trace.claims": ("Claims", "断言"),
    "trace.claims_filter": ("Show", "显示"),
    "trace.claims_all": ("all claims", "全部断言"),
    "trace.claims_flagged": ("claims with findings", "有问题的断言"),
    "trace.claim_page": ("Claims page", "断言页码"),
    "trace.binding": ("Evidence binding", "证据绑定"),
    "trace.excerpt": ("Excerpt (as the executor quoted it)", "摘录（Executor 的引用）"),
    "trace.raw": ("Raw tool output", "原始工具输出"),
    "trace.similarity": ("similarity", "相似度"),
    "trace.not_located": ("The excerpt was not located in any cited output.", "在所引用的输出中找不到该摘录。"),
    "trace.nearest": ("Records of #{id} nearest to the excerpt (record · share of the excerpt held):",
                      "#{id} 中与摘录最接近的记录（记录 · 摘录被覆盖的比例）："),
    "trace.other_match": ("matches invocation #{id} ({tool}) better: {score}", "与调用 #{id}（{tool}）更匹配：{score}"),
    "trace.entity_miss": ("not in the matched record", "匹配记录中没有"),
    "trace.added": ("words not in the output", "输出中没有的词"),
    "trace.window": ("characters {start}-{end} of {total}, line {line}", "第 {start}-{end} 个字符（共 {total}），第 {line} 行"),
    "trace.composer_state": ("composer", "Composer"),
    "trace.claim_check": ("claim_check", "claim_check"),
    "trace.gate_errors": ("gatekeeper errors", "gatekeeper 错误"),
    "trace.session_errors": ("Gatekeeper errors outside claims", "断言以外的 gatekeeper 错误"),
    "trace.hypothesis_checks": ("Hypothesis checks", "假设校验"),
    "trace.digests": ("Evidence digests", "证据摘要"),
    "trace.invocations": ("Tool invocations", "工具调用"),
    "trace.viewer": ("Full output", "完整输出"),
    "trace.viewer_pick": ("Invocation", "调用"),
    "trace.viewer_none": ("Pick one to read its whole output", "选择一个调用以阅读其完整输出"),
    "trace.search": ("Search in output", "在输出中搜索"),
    "trace.hits": ("{n} matching lines", "{n} 行匹配"),
    "trace.hit": ("Go to match", "跳到匹配"),
    "trace.page": ("Page", "页码"),
    "trace.per_page": ("Lines per page", "每页行数"),
    "trace.lines": ("lines {first}-{last} of {total}", "第 {first}-{last} 行（共 {total}）"),
    "trace.llm_calls": ("LLM calls", "LLM 调用"),
    "trace.messages": ("Messages", "消息"),
    "trace.raw_response": ("Raw response", "原始响应"),
    "trace.review": ("Review this session", "评审该会话"),
    "trace.review_claim": ("Review this claim", "评审该断言"),
    "trace.review_panel": ("Review claim by claim", "逐条评审断言"),
    "trace.all_labelled": ("Every flagged claim has a label. Label the session too, and it leaves the review queue:",
                           "每条被标记的断言都已评审。再给整个会话一个评审结论，它就会离开评审队列："),
    "trace.review_keys": ("Keys: J next · K previous · 1-5 label the claim and go on (type a note first).",
                          "快捷键：J 下一条 · K 上一条 · 1-5 给断言打标签并前进（可先填写备注）。"),
    "trace.prev_claim": ("◀ Previous", "◀ 上一条"),
    "trace.next_claim": ("Next ▶", "下一条 ▶"),
    "trace.review_pos": ("Claim **{k}** of {n}", "第 **{k}** 条，共 {n} 条"),
    "trace.reviews": ("Reviews so far", "已有评审"),
    "trace.plan": ("Planner plan", "Planner 计划"),
    "trace.executor_raw": ("Executor raw output", "Executor 原始输出"),
    "trace.cut": ("stored output was cut by {n} bytes", "存储时输出被截掉 {n} 字节"),
    "rules.title": ("Gatekeeper rules", "Gatekeeper 规则"),
    "rules.in_force": ("Editing from: {v}", "编辑基于：{v}"),
    "rules.rejudging": ("Re-judging the stored sessions under version {v}: {phase} {done}/{total}",
                        "正在按版本 {v} 重新判定已存会话：{phase} {done}/{total}"),
    "rules.rejudged": ("Verdicts in force: version {v}.", "生效结论：版本 {v}。"),
    "rules.rejudge_pending": ("The stored verdicts are version {old}'s; re-judging under version {v} starts.",
                              "已存结论属于版本 {old}；开始按版本 {v} 重新判定。"),
    "rules.dir": ("the rules/ directory (no applied version yet)", "rules/ 目录（尚无已应用版本）"),
    "rules.version": ("version {id}", "版本 {id}"),
    "rules.form": ("Form", "表单"),
    "rules.yaml": ("YAML", "YAML"),
    "rules.history": ("History", "历史"),
    "rules.enabled": ("enabled", "启用"),
    "rules.impact": ("verdictImpact", "verdictImpact"),
    "rules.severity": ("severity", "severity"),
    "rules.one_per_line": ("one per line", "每行一个"),
    "rules.invalid": ("The candidate rules are invalid:", "候选规则无效："),
    "rules.valid": ("The candidate rules are valid.", "候选规则有效。"),
    "rules.preview": ("Preview impact on all stored sessions", "预览对全部已存会话的影响"),
    "rules.preview_stale": ("The figures below are for an earlier candidate; preview again.",
                            "以下数字对应较早的候选规则；请重新预览。"),
    "rules.replayed": ("Sessions replayed", "重放会话数"),
    "rules.changed": ("Changed", "有变化"),
    "rules.status_changes": ("Gatekeeper status changes", "Gatekeeper 状态变化"),
    "rules.verdict_changes": ("Verdict changes", "结论变化"),
    "rules.no_change": ("No stored session would change.", "没有会话会发生变化。"),
    "rules.listed_first": ("The first {shown} of {total} changed sessions are listed.",
                           "列出了 {total} 个变化会话中的前 {shown} 个。"),
    "rules.similarity_hist": ("Excerpt similarity of all stored bindings", "全部证据绑定的摘录相似度"),
    "rules.apply": ("Apply as a new version", "应用为新版本"),
    "rules.author": ("Author", "作者"),
    "rules.comment": ("Comment", "说明"),
    "rules.applied": ("Applied as version {id}.", "已应用为版本 {id}。"),
    "rules.stale": ("Refused: {msg}", "已拒绝：{msg}"),
    "rules.rebase": ("Keep my edits, start from the active version", "保留修改，基于当前生效版本"),
    "rules.reload": ("Discard my edits, load the active version", "放弃修改，加载当前生效版本"),
    "rules.editors_only": ("Only these editors may apply rules: {who}.", "只有这些编辑者可以应用规则：{who}。"),
    "rules.login": ("Log in", "登录"),
    "rules.not_logged_in": ("You are not logged in.", "你尚未登录。"),
    "rules.not_editor": ("You are logged in as {who}, who is not an editor.", "你以 {who} 登录，不是编辑者。"),
    "rules.auth_missing": ("Authentication is not configured (see docs/auth.md).", "尚未配置认证（见 docs/auth.md）。"),
    "rules.diff_from": ("Compare", "比较"),
    "rules.diff_to": ("with", "与"),
    "rules.rollback": ("Roll back to version {id}", "回滚到版本 {id}"),
    "rules.rollback_title": ("Roll back (applies the chosen version as a new version)", "回滚（将所选版本作为新版本应用）"),
    "rules.rollback_to": ("Version", "版本"),
    "rules.no_difference": ("(no difference)", "（没有差异）"),
    "rules.diff_in_force": ("Difference against the rules in force", "与当前生效规则的差异"),
    "rules.include_eval": ("Include eval runs", "包含评测运行"),
    "rules.rolled_back": ("Version {old} re-applied as version {id}.", "版本 {old} 已重新应用为版本 {id}。"),
    "rules.load_error": ("The rules in force cannot be loaded:", "无法加载当前规则："),
    "eval.title": ("Eval: fixture suite", "评测：固定用例集"),
    "eval.rules": ("Rules", "规则"),
    "eval.rules.force": ("rules in force", "当前生效规则"),
    "eval.rules.candidate": ("candidate rules from the Rules page", "规则页上的候选规则"),
    "eval.no_candidate": ("No valid candidate on the Rules page; using the rules in force.",
                          "规则页上没有有效的候选规则；使用当前生效规则。"),
    "eval.run": ("Run the suite", "运行用例集"),
    "eval.pass_rate": ("Pass rate", "通过率"),
    "eval.progress": ("Fixture {n} of {total}: {name}", "用例 {n}/{total}：{name}"),
    "eval.open_hint": ("Click a row to open its session's audit trail.", "点击一行打开该会话的审计链。"),
    "eval.unavailable": ("The eval runner is not available: {err}", "评测执行器不可用：{err}"),
    "eval.not_run": ("Not run yet.", "尚未运行。"),
    "eval.shown": ("Run shown", "显示的运行"),
    "eval.run_label": ("{when} · {score} · {rules} · {who}", "{when} · {score} · {rules} · {who}"),
    "eval.rules_of_run": ("Rules: {rules} · run by {who} at {when} UTC", "规则：{rules} · 运行人 {who} · {when} UTC"),
    "eval.history": ("History", "历史"),
    "eval.compare": ("Compare two runs", "比较两次运行"),
    "eval.before": ("Before", "之前"),
    "eval.after": ("After", "之后"),
    "eval.changed": ("{n} fixture(s) changed result.", "{n} 个用例的结果变了。"),
    "eval.one_run": ("Run the suite again to compare two runs.", "再运行一次用例集即可比较两次运行。"),
}


def lang() -> str:
    value = st.session_state.get("lang")
    return value if value in ("en", "zh") else settings().ui.language


def say(text: str, message: Any) -> str:
    """An engine message (gatekeeper finding, reason, coverage) in the page language."""
    return localized(text, message, lang())


def t(key: str, **kw: Any) -> str:
    en, zh = LABELS[key]
    text = zh if lang() == "zh" else en
    return text.format(**kw) if kw else text


# --- settings and store ----------------------------------------------------------------------


def settings() -> Settings:
    """Loaded once per browser session (config file + environment)."""
    if "app_settings" not in st.session_state:
        st.session_state["app_settings"] = load_settings()
    return st.session_state["app_settings"]


@st.cache_resource(show_spinner=False)
def _store(url: str) -> Store:
    return Store(url)


def store() -> Store:
    return _store(settings().db_url)


# Cached reads: keyed by the database URL, the store object itself is not hashed.


@st.cache_data(ttl=30, show_spinner=False)
def list_sessions(url: str, f: SessionFilter, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    return _store(url).list_sessions(f, limit=limit, offset=offset)


@st.cache_data(ttl=30, show_spinner=False)
def queue_rows(url: str, q: review_queue.QueueFilter, limit: int, offset: int) -> list[SessionRow]:
    return review_queue.queue_rows(_store(url), q, limit=limit, offset=offset)


@st.cache_data(ttl=30, show_spinner=False)
def queue_stats(url: str, q: review_queue.QueueFilter) -> review_queue.QueueStats:
    return review_queue.queue_stats(_store(url), q)


@st.cache_resource(ttl=5, max_entries=32, show_spinner=False)
def record(url: str, session_id: str) -> SessionRecord | None:
    """The session with its invocations, LLM calls and reviews, validated once per read.

    Shared, not copied per rerun (a big session's LLM messages run to megabytes); pages only
    read it. The short TTL lets a running session's page follow its progress."""
    try:
        return read_session(_store(url), session_id)
    except NotFound:
        return None


# Tool outputs never change once stored and may be megabytes: kept as shared objects, not copied.


@st.cache_resource(max_entries=64, show_spinner=False)
def decoded_output(url: str, invocation_id: int) -> str:
    inv = _store(url).invocation(invocation_id)
    return views.decoded_output(inv.output) if inv else ""


@st.cache_data(max_entries=256, show_spinner=False)
def nearest_records(url: str, invocation_id: int, excerpt: str) -> list[views.NearRecord]:
    inv = _store(url).invocation(invocation_id)
    return views.nearest_records(inv.output, excerpt) if inv else []


@st.cache_resource(max_entries=8, show_spinner=False)
def output_pages(url: str, invocation_id: int) -> views.OutputPages:
    inv = _store(url).invocation(invocation_id)
    return views.OutputPages(inv.output if inv else "")


def refresh_session_reads(session_id: str | None = None) -> None:
    """After a write (new session, review): the lists, charts and that session's record show it at once."""
    for fn in (list_sessions, queue_rows, queue_stats):
        fn.clear()
    if session_id:
        record.clear(settings().db_url, session_id)


# --- escaping and markup ---------------------------------------------------------------------

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
.wb-list{margin:0.2rem 0 0.4rem 1.1rem;padding:0}
.wb-list li{margin:0.15rem 0}
.wb-ev{color:#5c7cfa;font-size:0.8rem}
.wb-pill{display:inline-block;border-radius:0.6rem;padding:0 0.45rem;font-size:0.75rem;font-weight:600;color:#fff}
.wb-PASS,.wb-pass,.wb-ok{background:#2b8a3e}.wb-LOW_CONFID,.wb-warn{background:#e67700}
.wb-REJECT,.wb-fail,.wb-error{background:#c92a2a}.wb-none,.wb-skipped,.wb-no_data{background:#868e96}
.wb-answered,.wb-healthy,.wb-verified{background:#2b8a3e}.wb-not_queried{background:#e67700}.wb-unverified{background:#c92a2a}
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


def scroll_here(anchor: str, once_per: str, block: str = "start") -> None:
    """An anchor at this point of the page, scrolled into view when first drawn ("start": to the
    top of the window, "end": the bottom). `once_per` (an id) makes the script new for each thing
    worth a scroll and the same on reruns that should not jump."""
    st.html(f"<div id='{esc(anchor)}'></div><script>/* {esc(once_per)} */ "
            f"document.getElementById('{esc(anchor)}')?.scrollIntoView({{block: '{esc(block)}', behavior: 'smooth'}});"
            "</script>", unsafe_allow_javascript=True)


def html_block(markup: str) -> None:
    """Markup built only from esc()/segments_html() output; rendered without markdown processing."""
    st.html(markup)


def text_block(text: Any) -> None:
    """Free text from an LLM or a tool: shown as text, line breaks kept."""
    st.html(f'<div class="wb-text">{esc(text)}</div>')


def _symptom(symptom: str) -> str:
    """A symptom id in the reader's language ("memory" -> "内存问题"); an older scope's trigger word as written."""
    return symptom_name(symptom, lang())


def scope_block(r: SessionRecord) -> None:
    """What the question asked (law 8) and, once verified, each asked service's coverage."""
    scope = r.question_scope
    if scope is None:
        return
    known = set(scope.known_services)
    services = ", ".join(f"{esc(s)}" + ("" if s in known else f" <span class='wb-muted'>({esc(t('scope.unknown'))})</span>")
                         for s in scope.services) or esc(t("ask.none"))
    window = scope.time_window
    span = (f"{window.text} = " if window and window.text else "") + (
        f"{window.start:%Y-%m-%d %H:%M} – {window.end:%H:%M} UTC" if window and window.start and window.end else "—")
    parts = [f"{esc(t('scope.services'))}: {services}", f"{esc(t('scope.symptom'))}: {esc(', '.join(_symptom(x.strip()) for x in scope.symptom.split(',') if x.strip()) or '—')}",
             f"{esc(t('scope.window'))}: {esc(span)}"]
    coverage = r.evaluation.question_coverage if r.evaluation else []
    items = "".join(f"<li>{esc(c.service or '*')} · {esc(_symptom(c.symptom))} {pill(c.status)} "
                    f"<span class='wb-muted'>{esc(say(c.detail, c.msg))}</span></li>" for c in coverage)
    html_block(f"<div>{' · '.join(parts)}</div>" + (f'<ul class="wb-list">{items}</ul>' if items else ""))


def pill(value: str | None) -> str:
    v = value or "none"
    return f'<span class="wb-pill wb-{esc(v)}">{esc(v)}</span>'


def verdict_badge(verdict: str | None, marks: Sequence[str] = ()) -> None:
    """The verdict and what qualifies it (record.verdict_marks: "ungated", "unverified")."""
    st.badge(verdict or "—", color=VERDICT_COLORS.get(verdict or "", "gray"))  # type: ignore[arg-type]
    for mark in marks:
        st.badge(t(f"mark.{mark}"), color="orange" if mark == "ungated" else "red",
                 help=t(f"mark.{mark}.help"))


def status_badge(status: str | None, prefix: str = "") -> None:
    st.badge(md(f"{prefix}{status or '—'}"), color=STATUS_COLORS.get(status or "", "gray"))  # type: ignore[arg-type]


# --- page frame ------------------------------------------------------------------------------


def setup() -> None:
    """Per page run: the shared CSS (style-only html goes to an invisible container)."""
    st.html(CSS)


def engine_caption() -> str:
    s = settings()
    if s.provider == "offline":
        engine = t("engine.offline")
    else:
        engine = md(f"{s.provider} · {s.openai.model if s.provider == 'openai' else s.model}")
    return f"{t('engine.provider')}: {engine} · {t('engine.shape')}: {t('engine.shape.' + s.shape)}"


def trace_link(session_id: str, label: str | None = None) -> None:
    st.page_link("pages/trace.py", label=label or f"{t('nav.trace')}: {md(session_id)}", icon=":material/account_tree:",
                 query_params={"session": session_id})


PICK = ("single-row", "single-cell")  # selection_mode of tables whose rows open a trace


def open_picked_trace(event: Any, session_ids: list[str | None]) -> None:
    """A table's row or cell click opens that session's trace in this tab, in one click."""
    selection = event.selection if event else None
    picked = [*(selection.rows if selection else []), *(row for row, _ in (selection.cells if selection else []))]
    sid = session_ids[picked[0]] if picked else None
    if sid:  # an eval fixture that could not start has no session
        st.switch_page("pages/trace.py", query_params={"session": sid})


def current_user() -> str:
    """The authenticated user's email or name, or "" when nobody is logged in."""
    try:
        if st.user.get("is_logged_in"):
            return str(st.user.get("email") or st.user.get("name") or "")
    except Exception:  # noqa: BLE001 - st.user without an auth setup behaves differently across versions
        return ""
    return ""


def auth_configured() -> bool:
    """Whether login (st.login, docs/auth.md) is set up in .streamlit/secrets.toml."""
    try:
        return "auth" in st.secrets
    except Exception:  # noqa: BLE001 - no secrets file at all means no auth either
        return False


# The reviewer's name in this browser's localStorage: without login, a new tab or a link without
# ?reviewer= still knows who is reviewing. Stores what it is given, reports what it holds.
_BROWSER_NAME_JS = """
export default function(component) {
  const { data, setStateValue } = component;
  const KEY = "workbench.reviewer";
  if (data && data.name) { window.localStorage.setItem(KEY, data.name); }
  setStateValue("stored", window.localStorage.getItem(KEY) || "");
}
"""


def _browser_name() -> Any:
    # Declared on every run, not once at import: before Streamlit 1.67 (the floor is 1.59) the
    # registry belongs to the running app, and a module imported once outlives it.
    return st.components.v2.component("workbench_reviewer_name", js=_BROWSER_NAME_JS)


def reviewer_name(key: str) -> str:
    """Who labels: with login configured the signed-in user (an editor, when ui.editors lists
    them), never a typed name; "" while nobody who may label is signed in. Without login a name
    typed beside the review form, kept in the URL (?reviewer=) and in the browser."""
    editors = settings().ui.editors
    if auth_configured() or editors:
        who = current_user()
        if who and (not editors or who in editors):
            st.caption(f"{t('common.reviewer')}: {md(who)}")
            return who
        why = t("rules.not_editor", who=md(who)) if who else t("rules.not_logged_in")
        st.caption(f"{t('common.reviewers_only')} {why}")
        if not who and auth_configured():
            st.button(t("rules.login"), on_click=st.login, key=f"{key}_login")
        return ""
    remembered = _browser_name()(key=f"{key}_browser", data={"name": str(st.session_state.get(key) or "")},
                               on_stored_change=lambda: None)
    # Once per session, before the box is drawn: a box left empty later stays empty.
    if not st.session_state.get(f"{key}_restored") and remembered.stored:
        st.session_state[f"{key}_restored"] = True
        if not st.session_state.get(key):
            st.session_state[key] = remembered.stored
    name = st.text_input(t("common.reviewer"), key=key, bind="query-params", persist_state="session")
    return (name or "").strip()
