"""Decay, recency and scopes (DESIGN §5): the design's table, where ages come from, and search."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from helpers import final_score, write_root

from memtree import MemTree
from memtree.config import DecaySettings
from memtree.errors import QueryError
from memtree.notes import scopes
from memtree.search import decay

DAY = 86_400.0
CURVE = DecaySettings()  # the design's curve: half-life 30 days, +0.1 a recall, 15 recalls, 7 days, 0.02


@pytest.mark.parametrize(
    ("age_days", "recalls", "expected"),
    [
        (0, 0, 1.0),
        (30, 0, 0.5),
        (60, 0, 0.25),
        (30, 5, 0.75),
        (90, 15, 1.0),  # permanent
        (7, 0, 1.0),  # protected for a week
        (8, 0, 2 ** (-8 / 30)),
        (10, 30, 1.0),
        (400, 0, 2 ** (-400 / 30)),
    ],
)
def test_the_design_table(age_days: float, recalls: int, expected: float) -> None:
    assert decay.weight(age_days, recalls, CURVE) == pytest.approx(expected, abs=1e-9)


def test_weights_never_leave_zero_to_one_and_old_unused_entries_become_archive_candidates() -> None:
    assert decay.weight(89, 14, CURVE) == pytest.approx(2 ** (-89 / 30) * 2.4)  # one recall short of permanent
    assert 0.0 < decay.weight(200, 0, CURVE) < CURVE.archive_below
    assert decay.weight(20, 14, CURVE) == 1.0  # clamped above


def test_times_read_iso_dates_datetimes_and_z_and_reject_garbage() -> None:
    assert decay.parse_time("2026-11-01") == decay.parse_time("2026-11-01T00:00:00+00:00")
    assert decay.parse_time("2026-11-01T09:00:00+09:00") == decay.parse_time("2026-11-01T00:00:00Z")
    assert decay.parse_time("not a date") is None and decay.parse_time(None) is None and decay.parse_time(3) is None


def test_an_age_comes_from_entry_metadata_then_frontmatter_then_file_name_then_mtime() -> None:
    fm = ["---", "date: 2026-10-01", "scope: project:api", "---", "text"]
    note = decay.note_facts("bank/x.md", fm, mtime=5.0)
    assert (note.origin, note.scope) == ("frontmatter", "project:api")
    assert note.time == decay.parse_time("2026-10-01")
    named = decay.note_facts("memory/2026-11-20.md", ["- log line"], mtime=5.0)
    assert named.origin == "file name" and named.time == decay.parse_time("2026-11-20")
    plain = decay.note_facts("bank/y.md", ["- fact"], mtime=5.0)
    assert (plain.origin, plain.time, plain.scope) == ("modified", 5.0, "global")
    meta = "<!-- memtree: id=e-1; created=2026-11-25T10:00:00+09:00; scope=workspace:me -->"
    entry = decay.chunk_facts(f"- a {meta}", note)
    assert entry.origin == "entry" and entry.time == decay.parse_time("2026-11-25T01:00:00Z")
    assert entry.scopes == ("workspace:me",)
    assert decay.chunk_facts("- hand written", note) == decay.ChunkFacts(note.time, "frontmatter", ("project:api",))


def test_scope_chains_and_visibility() -> None:
    assert scopes.parse_scope("global") == ()
    assert scopes.parse_scope("project:api/workspace:me") == ("project:api", "workspace:me")
    for bad in ("", "team:x", "project:", "project:a b"):
        with pytest.raises(QueryError):
            scopes.parse_scope(bad)
    chain = ("project:api", "workspace:me")
    assert scopes.visible(("global",), chain) and scopes.visible(("project:api",), chain)
    assert not scopes.visible(("project:web",), chain)
    assert not scopes.visible(("workspace:me",), ("project:api",))  # never the reverse
    assert not scopes.visible(("global", "workspace:you"), chain)  # a shared chunk is visible only whole
    assert scopes.visible(("workspace:you",), None)  # no current scope: everything


def _aged(root: Path, path: str, days: float) -> None:
    stamp = time.time() - days * DAY
    os.utime(root / path, (stamp, stamp))


def test_search_weighs_old_notes_down_and_explains_it(tmp_path: Path) -> None:
    root = write_root(
        tmp_path,
        {
            "bank/old.md": "- 배포 롤백 절차는 스크립트로 한다.\n",
            "bank/new.md": "- 배포 롤백 절차는 스크립트로 한다. 확인 후.\n",
        },
    )
    _aged(root, "bank/old.md", 60)
    _aged(root, "bank/new.md", 1)
    result = MemTree(root, refresh_interval=0).search("배포 롤백 절차")
    by_path = {h.path: h for h in result.hits}
    old, new = by_path["bank/old.md"], by_path["bank/new.md"]
    assert result.hits[0].path == "bank/new.md"
    assert old.signals["decay"] == pytest.approx(0.25, abs=0.01) and old.signals["recency"] == 1.0
    assert new.signals["decay"] == 1.0 and new.signals["recency"] == 1.2
    for h in result.hits:
        assert h.score == pytest.approx(final_score(h.signals), abs=1e-3)
    assert old.dated == "modified"
    assert "× decay 0.25" in old.explain(0.4, 0.6) and "60 d old by modified" in old.explain(0.4, 0.6)


def test_recalls_keep_an_old_entry_alive(tmp_path: Path) -> None:
    root = write_root(tmp_path, {"bank/old.md": "- 배포 롤백 절차는 스크립트로 한다.\n"})
    _aged(root, "bank/old.md", 60)
    mt = MemTree(root, refresh_interval=0)
    first = mt.search("배포 롤백", cache=False).hits[0]
    for _ in range(15):
        mt.search("롤백 절차", cache=False)
    later = mt.search("배포 롤백", cache=False).hits[0]
    assert first.signals["decay"] == pytest.approx(0.25, abs=0.01)
    assert later.signals["recalls"] >= 15 and later.signals["decay"] == 1.0


def test_decay_off_in_memtree_yaml_leaves_the_keyword_score(tmp_path: Path) -> None:
    root = write_root(tmp_path, {"bank/old.md": "- 배포 롤백 절차\n", "memtree.yaml": "search:\n  decay: false\n"})
    _aged(root, "bank/old.md", 60)
    hit = MemTree(root, refresh_interval=0).search("배포 롤백").hits[0]
    assert hit.score == hit.signals["keyword"] and "decay" not in hit.signals


def test_scopes_filter_and_boost_in_search(tmp_path: Path) -> None:
    root = write_root(
        tmp_path,
        {
            "bank/global.md": "- 배포 체크리스트는 공통이다.\n",
            "bank/api.md": "---\nscope: project:api\n---\n- 배포 체크리스트 API 항목.\n",
            "bank/web.md": "---\nscope: project:web\n---\n- 배포 체크리스트 웹 항목.\n",
            "bank/me.md": "- 배포 체크리스트 내 메모. <!-- memtree: id=e-1; scope=workspace:me -->\n",
        },
    )
    mt = MemTree(root, refresh_interval=0)

    def paths(scope: str | None) -> set[str]:
        return {h.path for h in mt.search("배포 체크리스트", k=10, scope=scope).hits}

    assert paths(None) == {"bank/global.md", "bank/api.md", "bank/web.md", "bank/me.md"}
    assert paths("global") == {"bank/global.md"}
    assert paths("project:api") == {"bank/global.md", "bank/api.md"}
    assert paths("project:api/workspace:me") == {"bank/global.md", "bank/api.md", "bank/me.md"}
    hits = mt.search("배포 체크리스트", k=10, scope="project:api").hits
    boost = {h.path: h.signals["scope"] for h in hits}
    assert boost == {"bank/global.md": 1.0, "bank/api.md": 1.3}
    with pytest.raises(QueryError, match="scope"):
        mt.search("배포", scope="team:x")


def test_a_scope_that_hides_many_chunks_still_fills_k(tmp_path: Path) -> None:
    hidden = "".join(f"- 배포 배포 배포 기록 {i}\n" for i in range(60))
    root = write_root(
        tmp_path,
        {"bank/hidden.md": "---\nscope: project:web\n---\n" + hidden, "bank/open.md": "- 배포 한 번\n- 배포 두 번\n"},
    )
    hits = MemTree(root, refresh_interval=0).search("배포", k=2, scope="project:api").hits
    assert [h.path for h in hits] == ["bank/open.md", "bank/open.md"]


def test_search_scope_default_comes_from_memtree_yaml(tmp_path: Path) -> None:
    root = write_root(
        tmp_path,
        {
            "bank/api.md": "---\nscope: project:api\n---\n- 배포 체크리스트 API.\n",
            "bank/web.md": "---\nscope: project:web\n---\n- 배포 체크리스트 웹.\n",
            "memtree.yaml": "search:\n  scope: project:web\n",
        },
    )
    mt = MemTree(root, refresh_interval=0)
    assert [h.path for h in mt.search("배포 체크리스트").hits] == ["bank/web.md"]
    assert [h.path for h in mt.search("배포 체크리스트", scope="project:api").hits] == ["bank/api.md"]


def test_add_writes_the_scope_that_search_then_honours(tmp_path: Path) -> None:
    root = write_root(tmp_path, {"bank/a.md": "# A\n\n- 배포 체크리스트는 공통이다.\n"})
    mt = MemTree(root, refresh_interval=0)
    mt.add("배포 전에 API 스키마 버전을 확인한다", to="bank/a.md", scope="project:api")
    assert "scope=project:api" in (root / "bank/a.md").read_text(encoding="utf-8")
    assert [h.path for h in mt.search("스키마 버전", scope="project:web").hits] == []
    assert [h.path for h in mt.search("스키마 버전", scope="project:api").hits] == ["bank/a.md"]
    with pytest.raises(QueryError, match="scope"):
        mt.add("아무거나", to="bank/a.md", scope="team:x")


def test_frontmatter_dates_and_scopes_are_read_without_yaml_in_their_usual_forms() -> None:
    for raw in ("2026-10-01", "'2026-10-01'", '"2026-10-01"', "2026-10-01 # first draft", "2026-10-01T00:00:00Z"):
        facts = decay.note_facts(
            "bank/x.md", ["---", "title: x", f"updated: {raw}", "scope: 'project:api'", "---"], 1.0
        )
        expected = (decay.parse_time("2026-10-01"), "frontmatter", "project:api")
        assert (facts.time, facts.origin, facts.scope) == expected
    unclosed = decay.note_facts("bank/x.md", ["---", "date: 2026-10-01", "body"], 1.0)
    assert unclosed.origin == "modified"
    bad = decay.note_facts("bank/x.md", ["---", "date: someday", "scope: team:x", "---"], 1.0)
    assert (bad.origin, bad.scope) == ("modified", "global")
