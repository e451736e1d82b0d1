"""memtree.dense: the numpy backend ranks and scores exactly like the pure-Python one."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest
from helpers import bump, steady

from memtree import MemTree, dense

pytest.importorskip("numpy")

QUERIES = [
    "가치관이 뭐야?",
    "Reflect 파이프라인 구조",
    "가치",  # a prefix of 가치관
    "정체성",  # a category keyword only: parent fallback
    "집",  # one syllable: matches 집에
    "크론 스케줄 설계 KST",
    "양자역학 블랙홀",  # rejected
]


# Why: decay reads the notes' ages; a pinned moment keeps both runs (and every date) comparable.
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


def outcome(mt: MemTree, query: str, tier: str) -> tuple[object, ...]:
    result = mt.search(query, tier=tier, cache=False, now=NOW)
    hits = [(h.node, h.path, h.lines, h.score, steady(h.signals), h.matched) for h in result.hits]
    return result.rejected, [(s.term, s.df) for s in result.term_stats], hits


@pytest.mark.parametrize("tier", ["default", "all"])
def test_both_backends_give_the_same_results(sample_root: Path, monkeypatch: pytest.MonkeyPatch, tier: str) -> None:
    # Why: each search counts a recall, which lifts decay; the second pass must see the first's memory.
    (sample_root / "memtree.yaml").write_text("search:\n  reinforce: false\n", encoding="utf-8")
    note = sample_root / "bank/identity/values.md"
    MemTree(sample_root).refresh()
    bump(note, note.read_text(encoding="utf-8") + "\n가치관 메모: 집에서도 원칙을 지킨다.\n")  # a delta segment
    mt = MemTree(sample_root, refresh_interval=0)
    python = [outcome(mt, q, tier) for q in QUERIES]
    calls = []
    real_score = dense.score

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real_score(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(dense, "DENSE_MIN_POSTINGS", 0)
    monkeypatch.setattr(dense, "score", counted)
    vectorized = [outcome(mt, q, tier) for q in QUERIES]
    assert len(calls) == len(QUERIES)  # the numpy backend really ran
    assert vectorized == python
    assert any(hits for _, _, hits in python)
