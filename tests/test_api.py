"""memtree.api: root discovery, init, MemTree errors, get and status."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from memtree import MemTree, schema
from memtree.errors import EmptyMemory, MemtreeError, QueryError, RootNotFound
from memtree.notes.root import find_root, init

# --- root discovery ------------------------------------------------------------------------------


def test_explicit_root_wins_over_environment(
    sample_root: Path, make_root: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    other = make_root({"bank/a.md": "사과\n"}, name="other")
    monkeypatch.setenv("MEMTREE_ROOT", str(other))
    assert find_root(sample_root) == sample_root.resolve()
    assert find_root() == other.resolve()


def test_nearest_parent_with_tree_index_is_found(sample_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(sample_root / "bank" / "identity")
    assert find_root() == sample_root.resolve()
    assert MemTree().root == sample_root.resolve()


def test_no_root_anywhere_is_a_helpful_error(tmp_path: Path) -> None:
    assert not any((p / "tree-index.json").exists() for p in (tmp_path, *tmp_path.parents))
    with pytest.raises(RootNotFound) as err:
        find_root()
    message = str(err.value)
    assert "--root" in message and "MEMTREE_ROOT" in message and "memtree init" in message


@pytest.mark.parametrize("source", ["explicit", "env"])
def test_a_missing_root_folder_is_root_not_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> None:
    missing = tmp_path / "nowhere"
    if source == "env":
        monkeypatch.setenv("MEMTREE_ROOT", str(missing))
    with pytest.raises(RootNotFound, match="nowhere"):
        find_root(missing if source == "explicit" else None)


def test_a_folder_that_is_no_memory_root_is_refused(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(RootNotFound, match="not a memory root"):
        find_root(plain)


# --- init ----------------------------------------------------------------------------------------


def test_init_scaffolds_tiers_an_empty_tree_and_gitignore(tmp_path: Path) -> None:
    root, created, updated = init(tmp_path / "mem")
    assert root == (tmp_path / "mem").resolve() and updated == []
    assert all((root / tier).is_dir() for tier in ("bank", "memory", "recall"))
    assert json.loads((root / "tree-index.json").read_text(encoding="utf-8")) == {"version": 1, "nodes": []}
    assert ".memtree/" in (root / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert set(created) == {"bank/", "memory/", "recall/", "tree-index.json", ".gitignore", ".gitattributes"}
    assert find_root(root) == root


def test_init_is_idempotent_and_keeps_existing_files(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    root.mkdir()
    (root / ".gitignore").write_text("*.pyc\n", encoding="utf-8")
    _, created, updated = init(root)
    assert ".gitignore" not in created and updated == [".gitignore"]  # appended to, not created
    snapshot = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    _, created, updated = init(root)
    assert created == updated == []
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == snapshot
    assert (root / ".gitignore").read_text(encoding="utf-8") == "*.pyc\n.memtree/\n.*.memtree-*.tmp\n"


def test_writing_in_a_fresh_root_lands_in_the_inbox_bank_and_says_what_it_created(tmp_path: Path) -> None:
    root = init(tmp_path / "mem")[0]
    mt = MemTree(root, refresh_interval=0)
    lost = mt.add("회의록은 매주 금요일에 정리한다")
    assert (lost.how, lost.path, lost.new_nodes) == ("inbox", "bank/inbox/inbox.md", ("inbox",))
    tagged = mt.add("Trust comes from evidence, not from confidence", tag="W")
    assert (tagged.path, tagged.new_nodes) == ("bank/identity/values.md", ("identity", "identity/values"))
    meetings = mt.add("Weekly sync is on Monday at 10:00", to="work/meetings")
    assert (meetings.path, meetings.new_nodes) == ("bank/work/meetings.md", ("work", "work/meetings"))
    from memtree.lifecycle.banks import list_banks

    assert [b.name for b in list_banks(root)] == ["identity", "inbox", "work"]


def test_init_on_a_file_is_a_memtree_error(tmp_path: Path) -> None:
    target = tmp_path / "file.txt"
    target.write_text("not a folder", encoding="utf-8")
    with pytest.raises(MemtreeError, match=r"file\.txt"):
        init(target)


# --- search errors -----------------------------------------------------------------------------


def test_empty_memory_is_an_error(tmp_path: Path) -> None:
    root = init(tmp_path / "mem")[0]
    with pytest.raises(EmptyMemory, match="no notes"):
        MemTree(root).search("가치관")


def test_notes_only_in_memory_tier_are_empty_for_the_default_tiers(make_root: Callable[..., Path]) -> None:
    root = make_root({"memory/2026-11-28.md": "- 09:00 가치관 정리\n"})
    with pytest.raises(EmptyMemory, match="--tier all"):
        MemTree(root).search("가치관")
    assert MemTree(root).search("가치관", tier="all").hits[0].path == "memory/2026-11-28.md"


@pytest.mark.parametrize("query", ["뭐야?", "???", "what is it", "   "])
def test_a_query_without_searchable_terms_is_a_query_error(sample_root: Path, query: str) -> None:
    with pytest.raises(QueryError):
        MemTree(sample_root).search(query)


@pytest.mark.parametrize(
    ("options", "needle"), [({"k": 0}, "k must"), ({"tier": "bogus"}, "unknown tier"), ({"budget": 0}, "budget")]
)
def test_nonsense_options_are_query_errors(sample_root: Path, options: dict[str, object], needle: str) -> None:
    with pytest.raises(QueryError, match=needle):
        MemTree(sample_root).search("가치관", **options)  # type: ignore[arg-type]


# --- get and status ------------------------------------------------------------------------------


def test_get_by_node_id_and_by_path(sample_root: Path) -> None:
    mt = MemTree(sample_root)
    expected = (sample_root / "bank/identity/values.md").read_text(encoding="utf-8")
    by_id = mt.get("identity/values")
    by_path = mt.get("bank/identity/values.md")
    assert by_id.text == by_path.text == expected
    assert by_id.node == by_path.node == "identity/values"
    assert "가치관" in by_id.keywords


def test_get_takes_every_form_a_link_names_a_note_by(sample_root: Path) -> None:
    # Why: get had its own rule (a node id, else the exact path) while [[links]] named notes more ways
    mt = MemTree(sample_root)
    made = mt.add("Redis 풀 크기는 80이다", to="infra/redis")
    entry_id = made.entry_id  # type: ignore[union-attr]
    expected = (sample_root / "bank/identity/values.md").read_text(encoding="utf-8")
    for ref in ("identity/values.md", "bank/identity/values", "[[identity/values]]", "identity/values|가치관"):
        found = mt.get(ref)
        assert (found.path, found.node, found.text, found.line) == (
            "bank/identity/values.md",
            "identity/values",
            expected,
            None,
        ), ref
    heading = mt.get("identity/values#2. 틀린 기억은 없는 기억보다 나쁘다")
    assert heading.path == "bank/identity/values.md" and heading.line == 16
    entry = mt.get(f"infra/redis#{entry_id}")
    assert entry.path == "bank/infra/redis.md" and f"id={entry_id}" in entry.text.split("\n")[entry.line - 1]  # type: ignore[operator]
    with pytest.raises(QueryError, match="no entry or heading 'e-nowhere'"):
        mt.get("identity/values#e-nowhere")
    assert schema.note(entry)["target_line"] == entry.line


@pytest.mark.parametrize("ref", ["nope/none", "identity", "../tree-index.json", "/etc/hostname", "bank/identity"])
def test_get_refuses_unknown_categories_and_outside_paths(sample_root: Path, ref: str) -> None:
    with pytest.raises(MemtreeError):
        MemTree(sample_root).get(ref)


def test_get_refuses_a_symlink_leading_outside_the_root(sample_root: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("비밀\n", encoding="utf-8")
    (sample_root / "bank" / "link.md").symlink_to(secret)
    with pytest.raises(MemtreeError):
        MemTree(sample_root).get("bank/link.md")


def test_status_counts_tiers_and_reports_oversized_notes(sample_root: Path) -> None:
    big = sample_root / "bank" / "big.md"
    big.write_text("# 큰 노트\n\n" + "가나다라 " * 2100, encoding="utf-8")
    assert big.stat().st_size > 10_240
    mt = MemTree(sample_root)
    before = mt.status()
    assert before.tiers["bank"].files == 7 and before.tiers["memory"].files == 2 and before.tiers["recall"].files == 0
    assert before.tiers["bank"].nodes == 6
    assert before.oversized == (("bank/big.md", big.stat().st_size),)
    assert "bank/big.md" in before.stale
    mt.refresh()
    after = mt.status()
    assert after.stale == () and after.tiers["bank"].chunks > 0
