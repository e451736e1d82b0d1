"""memtree.index.chunk_index: the persisted chunk index follows the notes on disk, file by file."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import bump, steady

from memtree import MemTree
from memtree.index.chunk_index import MAX_DELTAS, Index
from memtree.index.term_cache import TermCache

NOTES = {
    "bank/fruit.md": "# 과일\n\n사과와 배는 가을 과일이다.\n",
    "bank/tools.md": "# 도구\n\n망치와 드라이버로 선반을 고친다.\n",
    "bank/cron.md": "# 크론\n\n매일 새벽 세 시에 색인을 점검한다.\n",
    "bank/tone.md": "# 말투\n\n차분한 해요체로 답한다.\n",
    "bank/rules.md": "# 규칙\n\n커밋 메시지는 평서체로 쓴다.\n",
    "bank/values.md": "# 가치관\n\n틀린 기억은 없는 기억보다 나쁘다.\n",
    # a larger daily log, so that a one-note edit stays a small delta (under a fifth of all bytes)
    "memory/2026-11-28.md": "# 2026-11-28\n\n"
    + "".join(f"- 09:{i:02d} 로그 줄 {i}번, 특별한 일 없음.\n" for i in range(40)),
}


@pytest.fixture
def root(make_root: Callable[..., Path]) -> Path:
    return make_root(NOTES)


def paths(mt: MemTree, query: str) -> list[str]:
    result = mt.search(query)
    return [h.path for h in result.hits]


def test_an_edit_between_two_searches_is_seen(root: Path) -> None:
    mt = MemTree(root, refresh_interval=0)
    assert paths(mt, "망치") == ["bank/tools.md"]
    bump(root / "bank/fruit.md", "# 과일\n\n사과와 망치가 함께 나오는 이상한 문장.\n")
    assert sorted(paths(mt, "망치")) == ["bank/fruit.md", "bank/tools.md"]


def test_new_and_deleted_files_are_reflected(root: Path) -> None:
    mt = MemTree(root, refresh_interval=0)
    assert mt.search("얼룩말").hits == ()
    (root / "bank/zoo.md").write_text("얼룩말과 기린이 산다.\n", encoding="utf-8")
    assert paths(mt, "얼룩말") == ["bank/zoo.md"]
    (root / "bank/tools.md").unlink()
    result = mt.search("망치")
    assert result.hits == () and result.rejected


def test_deleting_the_state_folder_rebuilds_the_same_results(root: Path) -> None:
    before = MemTree(root, refresh_interval=0).search("새벽 색인 점검")
    assert before.hits
    shutil.rmtree(root / ".memtree")
    after = MemTree(root, refresh_interval=0).search("새벽 색인 점검")
    assert [(h.path, h.lines, h.score) for h in after.hits] == [(h.path, h.lines, h.score) for h in before.hits]
    assert (root / ".memtree" / "index").is_dir()


def test_a_touched_but_unchanged_file_keeps_the_index_version(root: Path) -> None:
    index = Index(root)
    index.refresh()
    version = index.version
    note = root / "bank/tone.md"
    st = note.stat()
    os.utime(note, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    report = index.refresh()
    assert not report.touched
    assert index.version == version
    # ... and a new process loading the saved index does not see a change either
    again = Index(root)
    assert not again.refresh().touched
    assert again.version == version


def test_a_second_process_loads_the_saved_index(root: Path) -> None:
    first = Index(root)
    assert first.refresh().rebuilt
    second = Index(root)
    report = second.refresh()
    assert not report.touched
    assert second.version == first.version and set(second.files) == set(NOTES)


def test_delta_refresh_reindexes_only_the_changed_file(root: Path) -> None:
    index = Index(root)
    index.refresh()
    bump(root / "bank/tone.md", "# 말투\n\n반말 대신 존댓말 해요체로 답한다.\n")
    report = index.refresh()
    assert report.changed == ["bank/tone.md"]
    assert (report.added, report.removed, report.rebuilt) == ([], [], False)
    assert index.deltas and index.files["bank/tone.md"].segment == index.deltas[-1]

    mt = MemTree(root, refresh_interval=0)
    assert paths(mt, "존댓말") == ["bank/tone.md"]
    assert mt.search("차분한").hits == ()


def test_delta_scores_equal_a_full_rebuild(root: Path) -> None:
    mt = MemTree(root, refresh_interval=0)
    mt.search("과일")
    bump(root / "bank/fruit.md", "# 과일\n\n사과와 배와 감은 가을 과일이다. 과일 가게.\n")
    bump(root / "bank/rules.md", "# 규칙\n\n과일 이름은 커밋 메시지에 쓰지 않는다.\n")
    report = mt.refresh()
    assert sorted(report.changed) == ["bank/fruit.md", "bank/rules.md"] and not report.rebuilt
    delta = mt.search("과일 커밋")
    full = MemTree(root, refresh_interval=0)
    assert full.refresh(force=True).rebuilt
    rebuilt = full.search("과일 커밋")
    assert [(h.path, h.lines, steady(h.signals)) for h in delta.hits] == [
        (h.path, h.lines, steady(h.signals)) for h in rebuilt.hits
    ]


def test_a_non_utf8_note_is_skipped_with_a_warning(root: Path) -> None:
    mt = MemTree(root, refresh_interval=0)
    assert paths(mt, "망치") == ["bank/tools.md"]
    (root / "bank/latin1.md").write_bytes("caf\xe9 망치".encode("latin-1", errors="replace"))
    (root / "bank/blob.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    result = mt.search("망치")
    assert [h.path for h in result.hits] == ["bank/tools.md"]
    assert any("bank/latin1.md" in w and "UTF-8" in w for w in result.warnings)
    assert any("bank/blob.md" in w for w in result.warnings)


def test_a_symlink_loop_is_skipped_with_a_warning(root: Path) -> None:
    (root / "bank" / "loop").symlink_to(root / "bank", target_is_directory=True)
    result = MemTree(root, refresh_interval=0).search("망치")
    assert [h.path for h in result.hits] == ["bank/tools.md"]
    assert any("bank/loop" in w and "loop" in w for w in result.warnings)


def test_invalid_frontmatter_is_indexed_with_a_warning(root: Path) -> None:
    (root / "bank/broken.md").write_text("---\nkeywords: [얼룩말\n---\n얼룩말 본문\n", encoding="utf-8")
    report = Index(root).refresh()
    assert "bank/broken.md" in report.added
    assert any(w.startswith("bank/broken.md: frontmatter is not valid YAML") for w in report.warnings)
    assert paths(MemTree(root, refresh_interval=0), "얼룩말") == ["bank/broken.md"]


def test_two_writers_on_one_root_see_each_others_edits(root: Path) -> None:
    first, second = MemTree(root, refresh_interval=0), MemTree(root, refresh_interval=0)
    assert paths(first, "망치") == paths(second, "망치") == ["bank/tools.md"]
    bump(root / "bank/fruit.md", "# 과일\n\n사과와 얼룩말 무늬 수박.\n")
    assert paths(first, "얼룩말") == ["bank/fruit.md"]
    bump(root / "bank/cron.md", "# 크론\n\n매일 새벽 기린 점검.\n")
    assert paths(second, "얼룩말") == ["bank/fruit.md"]  # the first writer's edit
    assert paths(second, "기린") == ["bank/cron.md"]
    assert paths(first, "기린") == ["bank/cron.md"]  # and back
    fresh = MemTree(root, refresh_interval=0)
    assert fresh.refresh().touched is False  # the saved index already holds both edits
    both = [(h.path, h.lines, steady(h.signals)) for h in first.search("얼룩말 기린").hits]
    assert [(h.path, h.lines, steady(h.signals)) for h in fresh.search("얼룩말 기린").hits] == both
    assert {p for p, _, _ in both} == {"bank/fruit.md", "bank/cron.md"}


def test_an_unusable_state_folder_keeps_the_index_in_memory_with_a_warning(root: Path) -> None:
    (root / ".memtree").write_text("a file where the state folder should be", encoding="utf-8")
    result = MemTree(root, refresh_interval=0).search("망치")
    assert [h.path for h in result.hits] == ["bank/tools.md"]
    assert any(".memtree" in w and "in memory" in w for w in result.warnings)


def test_a_same_size_edit_within_one_timestamp_tick_is_seen(root: Path) -> None:
    # Coarse file systems (FAT, SMB, HFS+) can give an edit the same mtime and size as before:
    # a note changed in the last two seconds is re-hashed, so the edit is not missed.
    note = root / "bank/fruit.md"
    mt = MemTree(root, refresh_interval=0)
    assert mt.search("사과").hits
    st = note.stat()
    note.write_text("# 과일\n\n자두와 배는 가을 과일이다.\n", encoding="utf-8")  # 사과 → 자두, same bytes
    assert note.stat().st_size == st.st_size
    os.utime(note, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert [h.path for h in mt.search("자두").hits] == ["bank/fruit.md"]
    assert mt.search("사과").rejected


def test_many_small_edits_fold_their_deltas_and_score_like_a_full_rebuild(make_root: Callable[..., Path]) -> None:
    # a big log keeps every edit a small delta; each refresh adds one delta segment, and past
    # MAX_DELTAS they are folded into one from their postings
    notes = {**NOTES, "memory/2026-11-27.md": "# 2026-11-27\n\n" + "- 로그 한 줄, 별일 없음.\n" * 400}
    root = make_root(notes)
    index = Index(root)
    index.refresh()
    for i in range(MAX_DELTAS + 3):
        note = ("bank/fruit.md", "bank/tools.md", "bank/cron.md")[i % 3]
        bump(root / note, f"# 메모\n\n과일 {i}번째 수정: 사과와 배, 망치와 크론 점검 {i}.\n")
        report = index.refresh()
        assert report.changed == [note] and not report.rebuilt
        assert len(index.deltas) <= MAX_DELTAS
    assert not (root / ".memtree/index").joinpath("seg-1").exists() or index.base == "seg-1"
    reloaded = Index(root)
    assert reloaded.load() and reloaded.deltas == index.deltas
    mt = MemTree(root, refresh_interval=0)
    after_edits = mt.search("과일 사과 점검")
    full = MemTree(root, refresh_interval=0)
    assert full.refresh(force=True).rebuilt
    rebuilt = full.search("과일 사과 점검")
    assert [(h.path, h.lines, steady(h.signals)) for h in after_edits.hits] == [
        (h.path, h.lines, steady(h.signals)) for h in rebuilt.hits
    ]


def test_a_writers_one_note_refresh_keeps_another_writers_new_note(root: Path) -> None:
    a, b = Index(root), Index(root)
    a.refresh()
    b.refresh()
    (root / "bank/by-b.md").write_text("# b\n\n두 번째 작성자가 남긴 메모 kiwi\n", encoding="utf-8")
    b.refresh(paths=["bank/by-b.md"])
    (root / "bank/by-a.md").write_text("# a\n\n첫 번째 작성자가 남긴 메모 mango\n", encoding="utf-8")
    a.refresh(paths=["bank/by-a.md"])  # a's own view predates b's note
    persisted = Index(root)
    assert persisted.load()
    assert {"bank/by-a.md", "bank/by-b.md"} <= set(persisted.files)


def test_a_note_over_the_size_limit_is_skipped_with_one_warning_naming_the_limit(root: Path) -> None:
    (root / "memtree.yaml").write_text("index:\n  max_note_bytes: 3000\n", encoding="utf-8")
    (root / "bank/huge.md").write_text("# 공구\n\n" + "망치 " * 1000 + "\n", encoding="utf-8")
    result = MemTree(root, refresh_interval=0).search("망치")
    assert [h.path for h in result.hits] == ["bank/tools.md"]
    warned = [w for w in result.warnings if "bank/huge.md" in w]
    assert len(warned) == 1 and "index.max_note_bytes (3,000)" in warned[0]
    # a raised limit is honoured by the next process, no --force needed
    (root / "memtree.yaml").write_text("index:\n  max_note_bytes: 100000\n", encoding="utf-8")
    again = MemTree(root, refresh_interval=0).search("망치")
    assert "bank/huge.md" in [h.path for h in again.hits]
    assert not any("bank/huge.md" in w for w in again.warnings)


def test_a_note_read_after_its_stat_is_read_as_it_is_now_up_to_the_limit(tmp_path: Path) -> None:
    from memtree.notes.store import FileStat

    index = Index(tmp_path, max_note_bytes=100)
    note = tmp_path / "bank/a.md"
    note.parent.mkdir(parents=True)
    for size_then, now in [(10, "배포 " * 10), (90, "grew "), (10, "x" * 100), (10, "x" * 101), (10, "y" * 500)]:
        note.write_text(now, encoding="utf-8")
        warnings: list[str] = []
        read = index._read(FileStat("bank/a.md", "bank", 1, size_then), warnings)  # stat'ed before it changed
        data = now.encode()
        if len(data) <= 100:
            assert read is not None and read[0] == now and not warnings
        else:  # read no further than one byte past the limit, whatever the stat said
            assert read is None and warnings == [
                "bank/a.md: skipped, 101 bytes, over index.max_note_bytes (100): split it or raise the limit"
            ]


def test_keywords_from_the_notes_as_indexed_equal_those_of_the_whole_notes(make_root: Callable[..., Path]) -> None:
    """The index keeps only what the catalog needs of each bank note (frequent terms, their first
    words); the catalog's suggestions must equal those made from the whole note and its counts."""
    from collections import Counter

    from memtree.index.chunk_index import _days
    from memtree.notes import chunks
    from memtree.notes.entries import strip_meta
    from memtree.text import terms as text
    from memtree.write import catalog

    root = make_root(
        {
            "bank/deploy.md": "---\nkeywords: [배포]\n---\n# 배포 절차\n\n"
            + "- Notion에 무중단배포 절차를 적었다 <!-- memtree: id=a1; created=2024-01-07 -->\n"
            + "- 무중단배포는 어제 끝났고 Notion에 기록했다. The paintings were painted.\n"
            + "- 2024-01-07 회의: 무중단배포 painting 회의 2024-01-07\n",
            "bank/fruit.md": "# 과일\n\n사과와 배는 가을 과일이다. 사과가 좋다.\n\n## 가을\n\n사과 사과 apples apple\n",
            "memory/2024-01-07.md": "# 2024-01-07\n\n- 배포 회의\n",
        }
    )
    index = Index(root)
    index.collect = {}
    index.refresh(force=True)
    segments = [s for _, s in index.segment_list()]
    df, n_docs = catalog.document_frequencies(segments), index.n_chunks
    assert set(index.collect) == {"bank/deploy.md", "bank/fruit.md"}
    for path, parsed in index.collect.items():
        doc = chunks.parse((root / path).read_text(encoding="utf-8"))
        own = [text.terms(strip_meta(c.text)) + day for c, day in zip(doc.chunks, _days(path, doc), strict=True)]
        whole = (doc, Counter(t for ts in own for t in ts), None)
        expected = catalog.suggest_keywords(root / path, df, n_docs, whole)  # type: ignore[arg-type]
        assert catalog.suggest_keywords(root / path, df, n_docs, parsed) == expected
    assert {"notion", "무중단배포", "paint"} <= set(index.collect["bank/deploy.md"][2])
    assert index.collect["bank/deploy.md"][2]["paint"] == "paintings"  # the first word, not the stem


def test_a_refresh_leaves_the_cycle_collector_as_it_found_it(root: Path) -> None:
    import gc

    assert gc.isenabled()
    Index(root).refresh(force=True)
    assert gc.isenabled()
    gc.disable()
    try:
        Index(root).refresh(force=True)
        assert not gc.isenabled()
    finally:
        gc.enable()


def entry(matched: int) -> tuple[list[tuple[dict[int, float], set[int], set[int]]], None, dict[str, object]]:
    """A cached term's entry as bm25.score keeps it: per segment, its matched chunks first."""
    return [({d: 1.0 for d in range(matched)}, set(), set())], None, {}


def test_the_term_cache_lets_the_least_recently_used_terms_go_first_by_the_chunks_they_match() -> None:
    cache = TermCache(limit=12)
    cache["old"], cache["used"] = entry(4), entry(4)  # 5 + 5 of 12: an entry counts one more than its chunks
    assert cache.get("old") is not None  # "old" is now the more recently used
    cache["new"] = entry(2)  # 3 more, past the limit: "used" must go
    assert sorted(cache) == ["new", "old"]
    cache["huge"] = entry(12)  # more than the whole limit: not kept, and nothing else is pushed out
    assert sorted(cache) == ["new", "old"]


def test_searches_answer_alike_whether_the_term_cache_holds_their_terms_or_keeps_losing_them(root: Path) -> None:
    roomy, starved = MemTree(root, refresh_interval=0), MemTree(root, refresh_interval=0)
    starved.search("과일")  # load the index, then give it a cache too small to keep more than a term or two
    starved.state.index.term_cache = TermCache(limit=3)
    queries = ["과일 커밋", "새벽 색인 점검", "망치 선반", "과일 가을", "커밋 메시지 평서체", "과일 커밋"]
    for query in queries + queries:
        want, got = roomy.search(query, cache=False), starved.search(query, cache=False)
        assert [(h.path, h.lines, h.score) for h in got.hits] == [(h.path, h.lines, h.score) for h in want.hits]
    assert 0 < starved.state.index.term_cache.currsize <= 3
