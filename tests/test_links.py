"""Links between notes (memtree.notes.links): parsing, resolving, `memtree links`, dangling links in
`check`, and links and node keywords kept through renames (memory tool, split, consolidate, git mv)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import replace
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest
from helpers import node
from typer.testing import CliRunner, Result

from memtree import MemTree
from memtree.cli.app import app
from memtree.notes import links, store
from memtree.notes import tree as treemod

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
        assert links.resolve(ref, nodes.get, links.lookup(notes)) == "bank/a/b.md", ref
    assert links.resolve("memory/2026-01-02", nodes.get, links.lookup(notes)) == "memory/2026-01-02.md"
    assert links.resolve("nothing", nodes.get, links.lookup(notes)) is None
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
    # a link's target as written names its note, as `get` reads it
    written = run("links", "[[infra/redis-old#e-2222222222]]", "--root", str(linked), "--json")
    assert written.exit_code == 0 and json.loads(written.stdout) == doc
    (back,) = doc["incoming"]
    assert back["source"] == "bank/infra/redis.md" and back["kind"] == "supersedes" and back["target_line"] == 3


def test_links_of_an_unknown_note_is_one_line_and_exit_2(linked: Path) -> None:
    out = run("links", "infra/nope", "--root", str(linked))
    assert out.exit_code == 2
    assert out.stderr.count("\n") == 1 and "no node or note named 'infra/nope'" in out.stderr


def test_backlinks_are_cached_and_a_changed_note_is_read_again(linked: Path) -> None:
    mt = MemTree(linked, refresh_interval=0)  # every call looks at the disk, as each CLI run does
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


# --- renames keep links and the node ------------------------------------------------------------------


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env={**os.environ, **GIT_ENV})


def hand_edited(root: Path) -> None:
    """A person's own keyword and weight on the redis node (not words of the note)."""

    def edit(current: treemod.Tree) -> treemod.Tree:
        n = current.by_id["infra/redis"]
        nodes = [
            replace(n, keywords=(*n.keywords, "커넥션풀"), weight=2.5) if x.id == n.id else x for x in current.nodes
        ]
        return treemod.validate(nodes)

    treemod.update(root, edit)


@pytest.mark.skipif(not HAS_GIT, reason="git")
@pytest.mark.parametrize("how", ["git mv", "mv"])
def test_a_note_renamed_by_hand_keeps_its_node_and_links_after_check_fix(linked: Path, how: str) -> None:
    hand_edited(linked)
    git(linked, "init", "-q")
    git(linked, "add", "-A")
    git(linked, "commit", "-qm", "memory")
    assert [h.path for h in MemTree(linked).search("커넥션풀").hits][:1] == ["bank/infra/redis.md"]
    if how == "git mv":
        git(linked, "mv", "bank/infra/redis.md", "bank/infra/cache.md")
    else:
        (linked / "bank/infra/redis.md").rename(linked / "bank/infra/cache.md")
    out = run("check", "--fix", "--root", str(linked))
    assert out.exit_code == 0, out.stdout
    tree = treemod.load(linked)
    moved = tree.by_path["bank/infra/cache.md"]
    assert moved.id == "infra/cache" and "커넥션풀" in moved.keywords and moved.weight == 2.5
    assert "infra/redis" not in tree.by_id
    assert [h.path for h in MemTree(linked).search("커넥션풀").hits][:1] == ["bank/infra/cache.md"]
    assert "[[infra/cache|redis 노트]]" in (linked / "bank/infra/deploy.md").read_text(encoding="utf-8")
    assert "renamed" in out.stdout


def test_outside_git_a_note_moved_unchanged_is_found_by_the_hash_the_index_kept(linked: Path) -> None:
    hand_edited(linked)
    MemTree(linked).index()  # the index records each note's content hash
    (linked / "bank/infra/redis.md").rename(linked / "bank/infra/cache.md")
    out = run("check", "--fix", "--root", str(linked))
    assert out.exit_code == 0, out.stdout
    moved = treemod.load(linked).by_path["bank/infra/cache.md"]
    assert (moved.id, moved.weight) == ("infra/cache", 2.5) and "커넥션풀" in moved.keywords


@pytest.mark.skipif(not HAS_GIT, reason="git")
def test_a_note_deleted_and_another_written_is_no_rename(make_root: Callable[..., Path]) -> None:
    front = "---\ntitle: x\n---\n"
    root = make_root(
        {"bank/a.md": front + "# A\n\n- 사과는 빨갛다\n", "bank/keep.md": "- [[a]]\n"},
        [node("a", "bank/a.md", keywords=["사과", "손으로"], weight=3.0), node("keep", "bank/keep.md")],
    )
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "memory")
    (root / "bank/a.md").unlink()
    (root / "bank/b.md").write_text(front + "# B\n\n- 바나나는 노랗다\n", encoding="utf-8")
    result = MemTree(root).index()
    assert result.renamed == () and result.nodes_dropped == (("a", "bank/a.md"),)
    assert treemod.load(root).by_path["bank/b.md"].weight == 1.0
    assert (root / "bank/keep.md").read_text(encoding="utf-8") == "- [[a]]\n"


def test_an_entry_link_follows_its_entry_into_the_part_a_split_moved_it_to(make_root: Callable[..., Path]) -> None:
    sections = [
        f"## 주제 {i}\n\n" + "".join(f"- 사실 {i}-{j}: 내용이 조금 길다.\n" for j in range(12)) for i in range(6)
    ]
    sections[4] += "- 목표 항목은 여기다. <!-- memtree: id=e-aaaaaaaaaa -->\n"
    root = make_root(
        {"bank/big.md": "# 큰 노트\n\n" + "\n".join(sections), "bank/ref.md": "- relates_to [[big#e-aaaaaaaaaa]]\n"},
        [node("big", "bank/big.md"), node("ref", "bank/ref.md")],
    )
    mt = MemTree(root)
    (done,) = mt.split("bank/big.md", max_bytes=600)
    assert done.children
    (out,) = mt.links("ref").outgoing
    assert out.path in done.children and not out.problem
    moved = (root / out.path).read_text(encoding="utf-8").split("\n")
    assert out.line is not None and "e-aaaaaaaaaa" in moved[out.line - 1]
    assert not [p for p in mt.check() if p.kind == "dangling-link"]


def test_an_entry_link_follows_its_entry_into_the_one_consolidate_merged_it_into(
    make_root: Callable[..., Path],
) -> None:
    note = (
        "# Redis\n\n- Redis 연결 풀은 50으로 올려야 안정적이다. <!-- memtree: id=e-1111111111 -->\n"
        "- Redis 연결 풀은 50으로 올려야 안정적이다 확실히 <!-- memtree: id=e-2222222222 -->\n"
    )
    root = make_root(
        {"bank/redis.md": note, "bank/ref.md": "- see [[redis#e-1111111111]]\n"},
        [node("redis", "bank/redis.md"), node("ref", "bank/ref.md")],
    )
    mt = MemTree(root)
    assert mt.consolidate().merges
    text = (root / "bank/redis.md").read_text(encoding="utf-8")
    assert "id=e-1111111111" not in text and "e-1111111111" in text  # merged into the other entry
    (out,) = mt.links("ref").outgoing
    assert (out.path, out.problem) == ("bank/redis.md", "")
    assert "e-2222222222" in text.split("\n")[out.line - 1]  # type: ignore[operator]


def test_a_damaged_cache_is_read_past_and_a_korean_name_in_nfd_is_found(make_root: Callable[..., Path]) -> None:
    import unicodedata

    nfd = unicodedata.normalize("NFD", "bank/가치관.md")
    root = make_root({nfd: "- 원칙\n", "bank/ref.md": "- relates_to [[가치관]]\n"}, [node("ref", "bank/ref.md")])
    mt = MemTree(root, refresh_interval=0)
    (out,) = mt.links("ref").outgoing
    assert out.path is not None and unicodedata.normalize("NFC", out.path) == "bank/가치관.md" and not out.problem
    cache = root / ".memtree" / links.CACHE_FILE
    doc = json.loads(cache.read_text(encoding="utf-8"))
    doc["notes"]["bank/ref.md"][2] = [["not", "a", "row"]]
    cache.write_text(json.dumps(doc), encoding="utf-8")
    assert [r.link.note for r in mt.links("ref").outgoing] == ["가치관"]
    cache.write_text("{not json", encoding="utf-8")
    assert [r.link.note for r in mt.links("ref").outgoing] == ["가치관"]


# --- hand-written supersedes lines retire their target (current by default, --as-of) -----------------

KST = timezone(timedelta(hours=9))
APR = datetime(2026, 4, 1, 10, 0, tzinfo=KST)
CACHE_OLD = (
    "# Cache\n\n"
    "- Cache TTL is 60 seconds, tuned by 정민 <!-- memtree: id=e-20260110-aaaa0001; "
    "created=2026-01-10T10:00:00+09:00 -->\n"
    "- 캐시 만료 시간은 60초다 <!-- memtree: id=e-20260110-aaaa0002; created=2026-01-10T10:00:00+09:00 -->\n"
)


def _search(mt: MemTree, query: str, as_of: date | None = None) -> list[tuple[str, str]]:
    return [(h.text, h.status) for h in mt.search(query, now=APR, as_of=as_of, cache=False).hits]


def test_a_hand_written_supersedes_line_retires_its_entry_from_the_day_of_the_entry_holding_it(
    make_root: Callable[..., Path],
) -> None:
    # Why: only memtree's own superseded= mark counted; a person's `- supersedes [[…]]` changed nothing
    root = make_root(
        {
            "bank/infra/cache.md": CACHE_OLD,
            "bank/infra/cache-now.md": (
                "# Cache now\n\n"
                "- supersedes [[infra/cache#e-20260110-aaaa0001]]: Cache TTL is 300 seconds "
                "<!-- memtree: id=e-20260301-bbbb0001; created=2026-03-01T09:00:00+09:00 -->\n"
                "- 캐시 만료 시간은 300초다\n"
                "- supersedes [[infra/cache.md#e-20260110-aaaa0002]]\n"
            ),
            # nested under an entry memtree wrote: the line belongs to that entry, and takes its day
            "bank/infra/queue.md": (
                "# Queue\n\n"
                "- Queue depth is 5 <!-- memtree: id=e-20260105-cccc0001; created=2026-01-05T09:00:00+09:00 -->\n"
                "- Queue depth is 9 <!-- memtree: id=e-20260207-cccc0002; created=2026-02-07T09:00:00+09:00 -->\n"
                "  - supersedes [[infra/queue#e-20260105-cccc0001]]\n"
            ),
        }
    )
    noon = datetime(2026, 3, 22, 12, 0, tzinfo=timezone.utc).timestamp()  # that day in every time zone but ±12
    os.utime(root / "bank/infra/cache-now.md", (noon, noon))  # the note's time: when it was last changed
    mt = MemTree(root, refresh_interval=0)
    now = _search(mt, "Cache TTL seconds")
    assert now and "300 seconds" in now[0][0] and not any("60 seconds" in t for t, _ in now)
    then = _search(mt, "Cache TTL seconds", as_of=date(2026, 2, 1))
    assert then and "60 seconds" in then[0][0] and then[0][1] == "current"
    # only the retired entry answers: served, marked with the day and the entry that replaced it
    assert _search(mt, "정민")[0][1] == "superseded 2026-03-01 by e-20260301-bbbb0001"
    # a line of its own, with no entry to date it: the note's time
    korean = _search(mt, "캐시 만료 시간")
    assert korean and "300초" in korean[0][0] and not any("60초" in t for t, _ in korean)
    assert any("60초" in t for t, _ in _search(mt, "캐시 만료 시간", as_of=date(2026, 3, 21)))
    assert not any("60초" in t for t, _ in _search(mt, "캐시 만료 시간", as_of=date(2026, 3, 22)))
    marks = links.retirements(links.scan(root, store.walk(root)[0], {}), lambda path: date(2020, 1, 1))
    assert marks.entries["e-20260105-cccc0001"] == links.Retirement(date(2026, 2, 7), "e-20260207-cccc0002")


def test_a_supersedes_line_to_a_whole_note_retires_every_entry_of_it_and_a_heading_retires_nothing(
    make_root: Callable[..., Path],
) -> None:
    root = make_root(
        {
            "bank/team/deploy-old.md": "# 배포 규칙\n\n배포는 목요일 오후에 한다.\n\n- 배포 승인은 팀장이 한다.\n",
            "bank/team/deploy.md": (
                "---\nupdated: 2026-03-01\n---\n# 배포 규칙 (새)\n\n"
                "- 배포는 화요일 오전에 한다.\n- supersedes [[team/deploy-old]]\n"
                "- supersedes [[team/deploy-old#배포 규칙]]\n- supersedes [[team/nowhere]]\n"
            ),
            "bank/team/other.md": "# Other\n\n- supersedes [[team/deploy#배포 규칙 (새)]]\n",
        }
    )
    mt = MemTree(root, refresh_interval=0)
    now = _search(mt, "배포")  # other.md's link to deploy.md's heading retires none of deploy.md
    assert any("화요일" in t for t, _ in now) and not any("목요일" in t for t, _ in now)
    assert _search(mt, "팀장 승인")[0][1] == "superseded 2026-03-01 by bank/team/deploy.md:7"
    then = _search(mt, "배포", as_of=date(2026, 2, 1))
    assert any("목요일" in t for t, _ in then)  # it held then (the new note, undated by entries, too)
    marks = links.retirements(links.scan(root, store.walk(root)[0], {}), lambda path: date(2026, 1, 1))
    assert set(marks.notes) == {"bank/team/deploy-old.md"}  # the dangling link retires nothing


def test_search_reads_no_links_until_a_note_says_supersedes_and_then_sees_the_new_line(
    make_root: Callable[..., Path],
) -> None:
    root = make_root({"bank/infra/cache.md": CACHE_OLD, "bank/infra/deploy.md": DEPLOY})
    mt = MemTree(root, refresh_interval=0)
    assert any("60 seconds" in t for t, _ in _search(mt, "Cache TTL"))
    assert not (root / store.STATE_DIR / links.CACHE_FILE).exists()  # no scan of the notes' links
    (root / "bank/infra/cache-now.md").write_text(
        "# Cache now\n\n- Cache TTL is 300 seconds\n- supersedes [[infra/cache#e-20260110-aaaa0001]]\n",
        encoding="utf-8",
    )
    noon = datetime(2026, 3, 22, 12, 0, tzinfo=timezone.utc).timestamp()
    os.utime(root / "bank/infra/cache-now.md", (noon, noon))  # written before the day asked (APR)
    now = _search(mt, "Cache TTL")
    assert any("300 seconds" in t for t, _ in now) and not any("60 seconds" in t for t, _ in now)
