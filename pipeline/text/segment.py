"""Chinese word segmentation (jieba), loaded once, quietly.

jieba writes "Building prefix dict ..." to stderr on first use; a CLI answer or a test run should
not start with tokenizer chatter, so its logger is lowered before the dictionary loads. The
import is lazy because the dictionary load costs about half a second and few callers need it.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from types import ModuleType


@lru_cache(maxsize=1)
def jieba() -> ModuleType:
    import jieba as _jieba

    _jieba.setLogLevel(logging.WARNING)
    _jieba.initialize()
    module: ModuleType = _jieba  # jieba ships no type information: name what it is
    return module
