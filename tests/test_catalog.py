"""memtree.write.catalog via MemTree.index(): new notes get nodes, gone notes lose theirs, humans win."""

from __future__ import annotations

import json
from pathlib import Path

import orjson

from memtree import MemTree
from memtree.notes import tree as treemod
from memtree.text import terms as text

ZOO = """---
title: 동물원 노트
keywords: [얼룩말, zebra]
tags: 동물, 사파리
---
# 사바나 구역

기린 기린 기린이 산다. 코뿔소도 산다. 기린 먹이는 아카시아.

## 먹이 시간

오후 세 시에 기린에게 먹이를 준다.
"""


def node_blocks(data: str) -> dict[str, str]:
    """The exact text of every node object in a tree-index.json written with 2-space indent."""
    blocks: dict[str, str] = {}
    current: list[str] = []
    for line in data.split("\n"):
        if line == "    {":
            current = [line]
        elif current:
            current.append(line)
            if line in ("    }", "    },"):
                block = "\n".join(current).rstrip(",")
                blocks[json.loads(block)["id"]] = block
                current = []
    return blocks


def test_index_adds_a_node_with_keywords_from_frontmatter_headings_and_words(sample_root: Path) -> None:
    (sample_root / "bank/zoo").mkdir()
    (sample_root / "bank/zoo/savanna.md").write_text(ZOO, encoding="utf-8")
    result = MemTree(sample_root).index()
    assert result.nodes_added == ("zoo/savanna",)
    tree = treemod.load(sample_root)
    new = tree.by_id["zoo/savanna"]
    assert new.path == "bank/zoo/savanna.md" and new.parent == "zoo" and new.weight == 1.0
    assert tree.by_id["zoo"].path is None and tree.by_id["zoo"].children == ("zoo/savanna",)
    assert new.keywords[:4] == ("얼룩말", "zebra", "동물", "사파리")  # frontmatter keywords:, then tags:
    assert "사바나 구역" in new.keywords and "먹이 시간" in new.keywords  # headings
    assert "기린" in new.keywords  # the most distinctive word of the body
    body = text.normalize(ZOO)
    assert all(kw in body for kw in new.keywords)  # every keyword is a word people can find in the note


def test_a_new_node_routes_searches(sample_root: Path) -> None:
    (sample_root / "bank/zoo.md").write_text(ZOO, encoding="utf-8")
    mt = MemTree(sample_root, refresh_interval=0)
    mt.index()
    hit = mt.search("얼룩말").hits[0]
    assert hit.node == "zoo" and hit.signals["tree"] == 1.0


def test_index_drops_nodes_whose_files_are_gone(sample_root: Path) -> None:
    (sample_root / "bank/technical/cron-design.md").unlink()
    result = MemTree(sample_root).index()
    assert result.nodes_dropped == (("technical/cron-design", "bank/technical/cron-design.md"),)
    assert result.nodes_added == ()
    tree = treemod.load(sample_root)  # valid again: no node points to a missing file
    assert "technical/cron-design" not in tree.by_id
    assert tree.by_id["technical"].children == ("technical/heartbeat-reflect",)


def test_index_never_rewrites_a_hand_edited_node(sample_root: Path) -> None:
    tree_file = sample_root / "tree-index.json"
    doc = json.loads(tree_file.read_text(encoding="utf-8"))
    for raw in doc["nodes"]:
        if raw["id"] == "identity/values":
            raw["keywords"] = ["가치관", "손으로 고친 키워드", "zzz-custom"]
            raw["weight"] = 2.5
    tree_file.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    before = node_blocks(tree_file.read_text(encoding="utf-8"))

    (sample_root / "bank/identity/goals.md").write_text("# 목표\n\n가치관에 맞는 목표를 세운다.\n", encoding="utf-8")
    result = MemTree(sample_root).index()
    assert result.nodes_added == ("identity/goals",)

    after = node_blocks(tree_file.read_text(encoding="utf-8"))
    assert after["identity/values"] == before["identity/values"]
    for node_id in before:
        if node_id != "identity":  # the category gains its new child, nothing else
            assert after[node_id] == before[node_id], node_id
    assert json.loads(after["identity"])["children"] == ["identity/goals", "identity/personality", "identity/values"]
    assert json.loads(after["identity"])["keywords"] == json.loads(before["identity"])["keywords"]


def test_index_without_changes_leaves_tree_index_untouched(sample_root: Path) -> None:
    tree_file = sample_root / "tree-index.json"
    original = tree_file.read_bytes()
    result = MemTree(sample_root).index()
    assert (result.nodes_added, result.nodes_dropped) == ((), ())
    assert tree_file.read_bytes() == original
    assert result.files == 8 and result.chunks > 0


def test_suggested_keywords_do_not_depend_on_what_the_process_read_before(sample_root: Path) -> None:
    # a long-lived process has seen other inflected forms (another note, a query) of the note's words
    text.terms("코뿔소들이 뭐야? 하마에게 물어봐")
    (sample_root / "bank/rhino.md").write_text("# 코뿔소\n\n코뿔소 코뿔소 하마 하마 물웅덩이\n", encoding="utf-8")
    MemTree(sample_root).index()
    keywords = treemod.load(sample_root).by_id["rhino"].keywords
    assert "코뿔소" in keywords and "하마" in keywords
    assert "코뿔소들이" not in keywords and "하마에게" not in keywords


def test_a_days_terms_never_become_keywords(tmp_path: Path) -> None:
    # Why: chunks carry date terms (@d2024-01-07) for search; a keyword is a word a person reads
    from helpers import write_root

    log = "# 2024-01-07\n\n" + "".join(f"- 2024-01-07 배포 점검 {i}번째.\n" for i in range(6))
    root = write_root(tmp_path / "root", {"bank/ops/2024-01-07.md": log}, [])
    MemTree(root, refresh_interval=0).index()
    keywords = [k for n in treemod.load(root).nodes for k in n.keywords]
    assert keywords and not [k for k in keywords if k.startswith("@")]


def test_the_sanitizers_markers_never_become_keywords(tmp_path: Path) -> None:
    # Why: a note whose secrets were redacted holds `[REDACTED:github-token]` many times; its words
    # say what the sanitizer did, not what the note is about
    from helpers import write_root

    note = "# 배포 자격\n\n" + "".join(f"- 배포 봇 토큰 [REDACTED:github-token] 교체 {i}.\n" for i in range(6))
    root = write_root(tmp_path / "root", {"bank/ops/creds.md": note}, [])
    MemTree(root, refresh_interval=0).index()
    keywords = [k for n in treemod.load(root).nodes for k in n.keywords]
    assert "배포" in " ".join(keywords)
    assert not {"redacted", "github", "token", "redact"} & {k.casefold() for k in keywords}
