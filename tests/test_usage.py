"""Recall reinforcement: search hits and `get`s are counted per entry in .memtree/, never in notes."""

from __future__ import annotations

from pathlib import Path

from helpers import snapshot

from memtree import MemTree
from memtree.notes.usage import Usage, chunk_keys


def test_search_hits_are_counted_per_entry_and_get_separately(sample_root: Path) -> None:
    mt = MemTree(sample_root)
    before = snapshot(sample_root)
    first = mt.search("가치관이 뭐야?")
    mt.search("가치관이 뭐야?")  # answered from the cache: still a recall
    mt.get("identity/values")
    counts = mt.usage()
    top = first.hits[0].keys
    assert top and all(counts[k][0] == 2 and counts[k][1] > 0 for k in top)
    assert counts["bank/identity/values.md"][2] == 1  # the access, apart from retrievals
    assert all(counts[k][2] == 0 for k in top)
    assert snapshot(sample_root) == before  # reading memory never dirties git


def test_counts_reach_disk_and_survive_a_new_process(sample_root: Path) -> None:
    mt = MemTree(sample_root)
    keys = mt.search("크론 스케줄").hits[0].keys
    mt.state.usage().flush()
    saved = Usage(sample_root).load()
    assert all(saved[k][0] == 1 for k in keys)
    MemTree(sample_root).search("크론 스케줄")
    MemTree(sample_root).state.usage().flush()  # an empty buffer writes nothing
    again = MemTree(sample_root)
    again.search("크론 스케줄")
    again.state.usage().flush()
    assert all(Usage(sample_root).load()[k][0] >= 2 for k in keys)


def test_reinforcement_can_be_turned_off(sample_root: Path) -> None:
    (sample_root / "memtree.yaml").write_text("search:\n  reinforce: false\n", encoding="utf-8")
    mt = MemTree(sample_root)
    mt.search("가치관")
    mt.get("identity/values")
    assert mt.usage() == {}
    assert not (sample_root / ".memtree/usage.json").exists()


def test_entry_ids_key_written_entries_and_a_text_hash_keys_hand_written_ones() -> None:
    written = "- Redis pool은 50 <!-- memtree: id=e-20261129-aa11bb22; merged=e-20261128-cc33dd44 -->"
    assert chunk_keys("bank/a.md", written) == ("e-20261129-aa11bb22", "e-20261128-cc33dd44")
    hand = chunk_keys("bank/a.md", "- 금요일에는 배포하지 않는다")
    assert hand[0].startswith("bank/a.md#")
    # the same text keeps its count wherever it moves in the note; changed words start a new one
    assert chunk_keys("bank/a.md", "- 금요일에는 배포하지 않는다\n") == hand
    assert chunk_keys("bank/a.md", "- 목요일에는 배포하지 않는다") != hand


def test_a_cli_search_counts_its_hits_before_the_process_exits(sample_root: Path) -> None:
    import subprocess
    import sys

    import orjson

    done = subprocess.run(
        [sys.executable, "-m", "memtree", "search", "--root", str(sample_root), "크론 스케줄"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    counts = orjson.loads((sample_root / ".memtree/usage.json").read_bytes())
    assert counts and all(row[0] == 1 for row in counts.values())


def test_the_one_line_fast_path_keys_entries_as_parsing_them_does() -> None:
    from memtree.notes import entries
    from memtree.notes.usage import entry_keys

    for line in (
        "- 금요일에는 배포하지 않는다",
        "  * nested item  ",
        "12. numbered",
        "a paragraph",
        "1.5 is a number",
        "-dash",
    ):
        parsed = entries.parse_entries(line)
        assert len(parsed) == 1
        assert chunk_keys("bank/a.md", line) == entry_keys("bank/a.md", parsed[0]), line
