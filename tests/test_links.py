"""Links between notes (memtree.notes.links): parsing, resolving, `memtree links`, dangling links in
`check`, and links and node keywords kept through renames (memory tool, split, consolidate, git mv)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import node
from typer.testing import CliRunner, Result

from memtree import MemTree
from memtree.cli.app import app
from memtree.notes import links

HAS_GIT = shutil.which("git") is not None
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x"}

REDIS = """# Redis

- Redis pool size is 80. <!-- memtree: id=e-1111111111 -->
- supersedes [[infra/redis-old#e-2222222222]]
- relates_to [[bank/infra/deploy.md]]
"""
OLD = "# Old\n\n- Redis pool size is 10. <!-- memtree: id=e-2222222222 -->\n"
DEPLOY = "# 배포\n\n- 배포는 목요일에 한다; 풀 크기는 [[infra/redis|redis 노트]]를 본다.\n"
NODES = [
    node("infra", None, keywords=["infra"], children=["infra/deploy", "infra/redis", "infra/redis-old"]),
    node("infra/redis", "bank/infra/redis.md", keywords=["redis"], parent="infra"),
    node("infra/redis-old", "bank/infra/redis-old.md", keywords=["redis"], parent="infra"),
    node("infra/deploy", "bank/infra/deploy.md", keywords=["배포"], parent="infra"),
]


def run(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def linked(make_root: Callable[..., Path]) -> Path:
    files = {"bank/infra/redis.md": REDIS, "bank/infra/redis-old.md": OLD, "bank/infra/deploy.md": DEPLOY}
    return make_root(files, NODES)


# --- parsing and resolving -------------------------------------------------------------------------


def test_parse_reads_links_relations_anchors_and_aliases_but_not_code() -> None:
    text = (
        "# t\n- supersedes [[a/b#e-1]]\n- relates_to: [[c]] and [[d|디]]\n"
        "plain [[가치관]] `[[in code]]`\n```\n[[fenced]]\n```\n- contradicts [[x/y.md#Heading One]]\n"
    )
    found = links.parse("bank/t.md", text)
    assert [(k.line, k.kind, k.note, k.anchor, k.alias) for k in found] == [
        (2, "supersedes", "a/b", "e-1", ""),
        (3, "relates_to", "c", "", ""),
        (3, "relates_to", "d", "", "디"),
        (4, "link", "가치관", "", ""),
        (8, "contradicts", "x/y.md", "Heading One", ""),
    ]
    assert links.parse("bank/t.md", "no links here, just [single] brackets") == ()


def test_a_ref_names_a_note_as_get_does_with_or_without_md_and_bank() -> None:
    notes = {"bank/a/b.md", "memory/2026-01-02.md", "bank/x.md"}
    nodes = {"ab": "bank/a/b.md"}
    for ref in ("ab", "a/b", "a/b.md", "bank/a/b", "bank/a/b.md", "/a/b/"):
        assert links.resolve(ref, nodes.get, notes.__contains__) == "bank/a/b.md", ref
    assert links.resolve("memory/2026-01-02", nodes.get, notes.__contains__) == "memory/2026-01-02.md"
    assert links.resolve("nothing", nodes.get, notes.__contains__) is None
    # the form a link was written in is kept when its note moves
    assert links.renamed_ref("a/b", "bank/a/b.md", "bank/c/d.md") == "c/d"
    assert links.renamed_ref("bank/a/b.md", "bank/a/b.md", "bank/c/d.md") == "bank/c/d.md"
    assert links.renamed_ref("a/b.md", "bank/a/b.md", "bank/c/d.md") == "c/d.md"


# --- memtree links ----------------------------------------------------------------------------------


def test_links_lists_both_directions_in_text_and_json(linked: Path) -> None:
    out = run("links", "infra/redis", "--root", str(linked))
    assert out.exit_code == 0, out.stdout
    out_line = "bank/infra/redis.md:4  supersedes  [[infra/redis-old#e-2222222222]] → bank/infra/redis-old.md:3"
    assert out_line in out.stdout
    assert "bank/infra/deploy.md:3  link  [[infra/redis]]" in out.stdout
    doc = json.loads(run("links", "bank/infra/redis-old.md", "--root", str(linked), "--json").stdout)
    assert doc["node"] == "infra/redis-old" and doc["outgoing"] == []
    (back,) = doc["incoming"]
    assert back["source"] == "bank/infra/redis.md" and back["kind"] == "supersedes" and back["target_line"] == 3


def test_links_of_an_unknown_note_is_one_line_and_exit_2(linked: Path) -> None:
    out = run("links", "infra/nope", "--root", str(linked))
    assert out.exit_code == 2
    assert out.stderr.count("\n") == 1 and "no node or note named 'infra/nope'" in out.stderr


def test_backlinks_are_cached_and_a_changed_note_is_read_again(linked: Path) -> None:
    mt = MemTree(linked)
    assert [r.link.source for r in mt.links("infra/deploy").incoming] == ["bank/infra/redis.md"]
    cache = json.loads((linked / ".memtree" / links.CACHE_FILE).read_text(encoding="utf-8"))
    assert cache["notes"]["bank/infra/redis-old.md"][2] == []  # a note without links: nothing kept
    (linked / "bank/infra/redis.md").write_text(REDIS.replace("[[bank/infra/deploy.md]]", "deploy"), encoding="utf-8")
    assert mt.links("infra/deploy").incoming == ()


# --- check ------------------------------------------------------------------------------------------


def test_check_reports_dangling_links_with_their_line_and_fix_leaves_them(linked: Path) -> None:
    note = linked / "bank/infra/deploy.md"
    note.write_text(DEPLOY + "- 예전 문서는 [[infra/gone]], [[infra/redis#e-9999999999]]에 있다.\n", encoding="utf-8")
    for args in ((), ("--fix",)):
        out = run("check", "--root", str(linked), *args)
        assert out.exit_code == 1, out.stdout
        lines = [ln for ln in out.stdout.splitlines() if "dangling-link" in ln]
        assert lines == [
            "bank/infra/deploy.md: dangling-link: line 4: [[infra/gone]] leads nowhere: no note named 'infra/gone'",
            "bank/infra/deploy.md: dangling-link: line 4: [[infra/redis#e-9999999999]] leads nowhere: "
            "no entry or heading 'e-9999999999' in bank/infra/redis.md",
        ]
    assert "[[infra/gone]]" in note.read_text(encoding="utf-8")
