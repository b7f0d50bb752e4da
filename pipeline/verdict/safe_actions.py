"""Next steps that are safe under any verdict: gather more evidence, have a person review.

Shared by the fixed answer templates (pipeline.stages.templates) and the offline composer, which
must not import a stage; they carry no fact, so the composer guard never objects to them.
"""

from __future__ import annotations

from pipeline.core.contracts import ComposerAction

_ACTIONS: dict[str, list[tuple[str, str]]] = {
    "zh": [
        ("补充查询相关服务的日志、告警与指标，获取可直接支撑结论的证据。", "当前证据不足以得出可靠结论。"),
        ("人工复核本次会话的工具调用与证据绑定。", "需要人工确认证据与结论是否对应。"),
    ],
    "en": [
        ("Query the logs, alerts and metrics of the services involved for direct evidence.",
         "The current evidence does not support a reliable conclusion."),
        ("Have a person review this session's tool calls and evidence bindings.",
         "Someone needs to confirm that the evidence matches the conclusions."),
    ],
}


def fixed_actions(language: str) -> list[ComposerAction]:
    """Evidence-gathering and manual-review steps, in the question's language (en otherwise)."""
    return [ComposerAction(action_text=a, reason=r) for a, r in _ACTIONS[language if language in _ACTIONS else "en"]]
