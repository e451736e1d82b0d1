"""One MemTree shared by 8 threads of mixed search, add and status: no exception, no lost write, same answers."""

from __future__ import annotations

import sys
import threading
from datetime import datetime, timezone
from pathlib import Path

import pytest
from helpers import node, write_root

from memtree import MemTree
from memtree.notes.entries import parse_entries

THREADS = 8
ROUNDS = 25
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
NOTES = {
    "bank/infra/redis.md": "# Redis\n\n- Redis 커넥션 풀은 최대 50으로 둔다.\n- Redis 장애 시 DB를 직접 읽는다.\n",
    "bank/infra/deploy.md": "# 배포\n\n- 배포는 금요일에 하지 않는다.\n- 롤백은 blue-green 전환으로 5분 안에 끝낸다.\n",
    "bank/people/team.md": "# Team\n\n- Mina owns the billing service.\n- Joon reviews every schema migration.\n",
    "bank/facts/log.md": "# Facts\n",
}
QUERIES = ["Redis 커넥션 풀 최대", "롤백은 어떻게 해?", "who owns billing", "schema migration review"]


def _root(tmp_path: Path) -> Path:
    nodes = [
        node("infra", children=["infra/redis", "infra/deploy"]),
        node("infra/redis", "bank/infra/redis.md", keywords=["redis", "캐시"], parent="infra"),
        node("infra/deploy", "bank/infra/deploy.md", keywords=["배포", "롤백"], parent="infra"),
        node("people", children=["people/team"]),
        node("people/team", "bank/people/team.md", keywords=["team", "billing"], parent="people"),
        node("facts", "bank/facts/log.md", keywords=["facts"]),
    ]
    return write_root(tmp_path / "root", NOTES, nodes)


def fact(worker: int, i: int) -> str:
    """A fact no other one shares, in words no query asks about."""
    return f"측정 w{worker}r{i}: 표본 {worker * 1000 + i} 개"


def ranking(mt: MemTree, query: str, cache: bool = False) -> list[tuple[str, tuple[int, int]]]:
    return [(h.path, h.lines) for h in mt.search(query, k=3, now=NOW, cache=cache).hits]


def test_eight_threads_share_one_memtree_safely(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Why: a thread switch every microsecond, not every 5 ms, makes interleavings that a missing lock
    # turns into errors show up in a run this short
    monkeypatch.setattr(sys, "getswitchinterval", sys.getswitchinterval)
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        _run(tmp_path)
    finally:
        sys.setswitchinterval(old)


def _run(tmp_path: Path) -> None:
    root = _root(tmp_path)
    alone = MemTree(root, refresh_interval=0)
    expected = {q: ranking(alone, q) for q in QUERIES}
    assert all(expected.values())  # every query has an answer to compare with

    mt = MemTree(root, refresh_interval=0)
    start = threading.Barrier(THREADS)
    errors: list[BaseException] = []
    seen: dict[str, list[list[tuple[str, tuple[int, int]]]]] = {q: [] for q in QUERIES}
    written: list[str] = []
    guard = threading.Lock()

    def work(worker: int) -> None:
        try:
            start.wait()
            for i in range(ROUNDS):
                match (worker + i) % 3:
                    case 0:
                        # a new note (and node) every few adds: the index and the tree grow under the readers
                        mt.add(fact(worker, i), to=f"facts/w{worker}-{i // 6}", now=NOW)
                        with guard:
                            written.append(fact(worker, i))
                    case 1:
                        q = QUERIES[(worker + i) % len(QUERIES)]
                        got = ranking(mt, q, cache=i % 2 == 0)  # the query cache is shared too
                        with guard:
                            seen[q].append(got)
                    case _:
                        st = mt.status(now=NOW)
                        assert st.tiers["bank"].files >= len(NOTES)
        except BaseException as exc:  # the assertion below names it
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert errors == []
    assert sum(len(v) for v in seen.values()) > 0 and len(written) > 0
    for q, rankings in seen.items():
        assert all(r == expected[q] for r in rankings), q  # what the adds wrote never moves these answers
    contents = [
        e.content
        for note in sorted((root / "bank/facts").rglob("*.md"))
        for e in parse_entries(note.read_text(encoding="utf-8"))
        if e.content.startswith("측정")
    ]
    assert sorted(contents) == sorted(written)  # every add on disk, once
    assert {q: ranking(mt, q) for q in QUERIES} == expected
