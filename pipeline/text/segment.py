"""Chinese word segmentation (jieba), loaded once, quietly.

jieba writes "Building prefix dict ..." to stderr on first use; a CLI answer or a test run should
not start with tokenizer chatter, so its logger is lowered before the dictionary loads. The
import is lazy because the dictionary load costs about half a second and few callers need it.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from types import ModuleType

# Words incident text uses far more than the news corpus behind jieba's frequencies (超时 45, 报错 3,
# against 时报 989), which cut "加购超时报错" as 加购/超/时报/错. Weighted as common words, they stay whole.
_INCIDENT_WORDS = ("超时", "报错")


@lru_cache(maxsize=1)
def jieba() -> ModuleType:
    import jieba as _jieba

    _jieba.setLogLevel(logging.WARNING)
    _jieba.initialize()
    for word in _INCIDENT_WORDS:
        _jieba.add_word(word, freq=10_000)
    module: ModuleType = _jieba  # jieba ships no type information: name what it is
    return module
