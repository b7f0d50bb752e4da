from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipeline.text.primitives import estimate_tokens
from pipeline.tools.knowledge import KnowledgeBase, split_runbook, tokenize
from pipeline.tools.queries import KnowledgeQuery, NoData

CPU_RUNBOOK = """# CPU 饱和处置手册

适用于 payment-service 等 Java 服务。

## 现象

CPU 使用率持续高于 90%，线程数激增，接口延迟升高。

## 排查步骤

1. 使用 `top -H` 查看高 CPU 线程。
2. jstack 导出线程栈，查找死循环或频繁 GC。

```
# a comment inside code, not a heading
```

## 处置

扩容实例，必要时限流。
"""

DB_RUNBOOK = """# Database connection pool exhausted

## Symptoms
HikariPool-1 - Connection is not available, request timed out after 30000ms.

## Remediation
Increase maximumPoolSize; look for slow queries and connection leaks.
"""


@pytest.fixture()
def kb_dir(tmp_path: Path) -> Path:
    (tmp_path / "cpu.md").write_text(CPU_RUNBOOK, encoding="utf-8")
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "pool.md").write_text(DB_RUNBOOK, encoding="utf-8")
    return tmp_path


def ask(kb: KnowledgeBase, query: str, top_k: int = 3) -> dict:
    return kb.lookup_knowledge(KnowledgeQuery(query=query, top_k=top_k))


def test_chinese_question_finds_the_focused_section(kb_dir: Path) -> None:
    out = ask(KnowledgeBase.from_folder(kb_dir), "线程数激增 CPU 使用率高", top_k=1)
    (block,) = out["evidenceBlocks"]
    assert block["id"] == "cpu#1"
    assert block["title"] == "CPU 饱和处置手册 / 现象"
    assert block["source"] == "cpu.md"
    assert "90%" in block["content"]
    assert block["score"] > 0


def test_english_question_and_nested_folder(kb_dir: Path) -> None:
    out = ask(KnowledgeBase.from_folder(kb_dir), "connection leaks maximumPoolSize")
    assert out["evidenceBlocks"][0]["id"] == "db/pool#1"
    assert out["evidenceBlocks"][0]["source"] == "db/pool.md"
    assert all(b["id"].startswith("db/pool#") for b in out["evidenceBlocks"])


def test_segmentation_bridges_compound_words(kb_dir: Path) -> None:
    # "连接池" is indexed both whole and as parts, so a shorter question word still meets it.
    assert {"连接", "连接池", "数据库"} <= set(tokenize("数据库连接池耗尽"))
    assert {"payment-service", "payment", "service"} <= set(tokenize("Payment-Service"))


def test_code_fence_hash_is_not_a_heading() -> None:
    blocks = split_runbook(CPU_RUNBOOK, doc_id="cpu", source="cpu.md")
    assert [b.id for b in blocks] == ["cpu#0", "cpu#1", "cpu#2", "cpu#3"]
    assert "# a comment inside code" in blocks[2].content


def test_long_section_is_split_into_paragraph_blocks() -> None:
    paras = "\n\n".join(f"第{i}段：检查 redis 连接数与慢查询日志。" * 12 for i in range(8))
    blocks = split_runbook(f"# 长文\n\n## 步骤\n\n{paras}\n", doc_id="long", source="long.md")
    assert len(blocks) > 2
    assert all(len(b.content) < 1300 for b in blocks)
    assert len({b.id for b in blocks}) == len(blocks)


def test_ids_are_stable_across_rebuilds(kb_dir: Path) -> None:
    first = [b.id for b in KnowledgeBase.from_folder(kb_dir).blocks]
    (kb_dir / "zzz.md").write_text("# other\n\nunrelated text\n", encoding="utf-8")
    second = [b.id for b in KnowledgeBase.from_folder(kb_dir).blocks]
    assert set(first) <= set(second)


def test_index_is_cached_until_a_file_changes(kb_dir: Path) -> None:
    a = KnowledgeBase.from_folder(kb_dir)
    b = KnowledgeBase.from_folder(kb_dir)
    assert a._index is b._index
    path = kb_dir / "cpu.md"
    path.write_text(CPU_RUNBOOK + "\n## 回滚\n\n回滚最近一次发布。\n", encoding="utf-8")
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    c = KnowledgeBase.from_folder(kb_dir)
    assert c._index is not a._index
    assert ask(c, "回滚发布", top_k=1)["evidenceBlocks"][0]["title"].endswith("回滚")


def test_undecodable_file_is_skipped_and_reported(kb_dir: Path) -> None:
    (kb_dir / "broken.md").write_bytes(b"# broken\n\n\xff\xfe\xfa CPU")
    kb = KnowledgeBase.from_folder(kb_dir)
    assert len(kb.skipped) == 1 and kb.skipped[0].startswith("broken.md")
    out = ask(kb, "CPU")
    assert out["skipped"] == kb.skipped
    assert all(b["source"] != "broken.md" for b in out["evidenceBlocks"])


def test_no_match_raises_no_data(kb_dir: Path) -> None:
    kb = KnowledgeBase.from_folder(kb_dir)
    with pytest.raises(NoData):
        ask(kb, "kubernetes ingress certificate")
    with pytest.raises(NoData):
        ask(kb, "的 了 ？")


def test_missing_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        KnowledgeBase.from_folder(tmp_path / "nope")


def test_pack_fits_the_budget_and_states_the_cut(kb_dir: Path) -> None:
    roomy = ask(KnowledgeBase.from_folder(kb_dir, max_pack_tokens=1500), "CPU 线程")
    assert "truncated" not in roomy["contextPack"]["packedText"]
    for block in roomy["evidenceBlocks"]:
        assert block["content"] in roomy["contextPack"]["packedText"]

    tight = ask(KnowledgeBase.from_folder(kb_dir, max_pack_tokens=60), "CPU 线程")
    packed = tight["contextPack"]["packedText"]
    assert "[truncated:" in packed and "60 tokens" in packed
    assert estimate_tokens(packed) <= 60 + 40  # the budget plus the one-line note
    assert tight["evidenceBlocks"][0]["id"] in packed


def test_top_k_and_deterministic_order(kb_dir: Path) -> None:
    kb = KnowledgeBase.from_folder(kb_dir)
    one = ask(kb, "CPU 处置 线程 连接", top_k=5)
    two = ask(kb, "CPU 处置 线程 连接", top_k=5)
    assert one == two
    scores = [b["score"] for b in one["evidenceBlocks"]]
    assert scores == sorted(scores, reverse=True)
    assert len(ask(kb, "CPU", top_k=1)["evidenceBlocks"]) == 1
