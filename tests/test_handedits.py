"""A value edited by hand in place supersedes the old one (issue 30); no verb removes an entry's words."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memtree import MemTree
from memtree.cli.app import app
from memtree.notes import entries, store
from memtree.write import handedits

KST = timezone(timedelta(hours=9))
JAN = datetime(2026, 1, 10, 10, 0, tzinfo=KST)
MAR = datetime(2026, 3, 1, 9, 30, tzinfo=KST)
APR = datetime(2026, 4, 1, 10, 0, tzinfo=KST)
NOTE = "bank/infra/redis.md"


def _root(make_root: Callable[..., Path]) -> tuple[MemTree, Path]:
    root = make_root({"bank/readme.md": "# readme\n\nNotes live here.\n"})
    mt = MemTree(root, refresh_interval=0)
    mt.add("Dashboards live in Grafana", to="infra/redis", now=JAN)
    mt.add("Redis pool size is 50", to="infra/redis", now=JAN)
    return mt, root / NOTE


def _edit(note: Path, old: str, new: str, when: datetime) -> str:
    """A person edits ``old`` to ``new`` in place, in an editor that saves at ``when``; the text saved."""
    text = note.read_text(encoding="utf-8").replace(f"- {old} ", f"- {new} ", 1)
    note.write_text(text, encoding="utf-8")
    os.utime(note, (when.timestamp(), when.timestamp()))
    return text


def _by_content(note: Path) -> dict[str, entries.EntryMeta]:
    return {e.content: e.meta for e in entries.parse_entries(note.read_text(encoding="utf-8"))}


def test_a_value_edited_in_place_keeps_the_old_one_superseded_on_the_day_of_the_edit(
    make_root: Callable[..., Path],
) -> None:
    mt, note = _root(make_root)
    was = _by_content(note)["Redis pool size is 50"]
    _edit(note, "Redis pool size is 50", "Redis pool size is 80", MAR)
    mt.refresh()  # the next look (a search, the watcher) sees the edit
    found = _by_content(note)
    old, new = found["Redis pool size is 50"], found["Redis pool size is 80"]
    # the old words keep their id and time, marked; the edited line takes a fresh id and the edit's time
    assert old.id == was.id and old.created == was.created
    assert old.extra[entries.SUPERSEDED] == "2026-03-01" and old.extra[entries.BY] == new.id
    assert new.id != was.id and new.created.startswith("2026-03-01T") and not entries.is_retired(new)
    assert mt.search("Redis pool size", now=APR).hits[0].text.count("is 80") == 1
    then = mt.search("Redis pool size", now=APR, as_of=date(2026, 2, 1))
    assert then.hits and "is 50" in then.hits[0].text
    assert [h.text.count("is 80") for h in mt.search("Redis pool size", now=APR).hits[:1]] == [1]
    chain = mt.history(new.id)
    assert chain is not None


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Redis pool size is 50", "Redis pool sise is 50"),  # a typo made, or fixed
        ("Dashboards live in Grafana", "Dashboards live in Grafnaa"),
        ("Redis pool size is 50", "Redis pool size is 50 on the main cluster"),  # words added
    ],
)
def test_a_typo_fix_or_a_rewording_keeps_the_id_and_changes_nothing(
    make_root: Callable[..., Path], old: str, new: str
) -> None:
    mt, note = _root(make_root)
    saved = _edit(note, old, new, MAR)
    mt.refresh()
    assert note.read_text(encoding="utf-8") == saved  # not one byte changed by memtree


def test_typo_tells_a_spelling_slip_from_another_value() -> None:
    assert handedits.typo("Redis pool sise is 50", "Redis pool size is 50")
    assert handedits.typo("The on-call engineer is Alcie", "The on-call engineer is Alice")
    assert not handedits.typo("Redis pool size is 50", "Redis pool size is 80")
    assert not handedits.typo("The on-call engineer is Bob", "The on-call engineer is Rob")
    assert not handedits.typo("배포는 매주 화요일에 한다", "배포는 매주 수요일에 한다")
    assert not handedits.typo("Logs go to Grafana", "Logs go to Grafana Cloud")


def test_a_hand_edit_is_still_seen_after_memtree_wrote_the_note(make_root: Callable[..., Path]) -> None:
    # Why: memtree's own write moves what it has seen of the entries it changed only, never of the
    # one a person edited before it
    mt, note = _root(make_root)
    _edit(note, "Redis pool size is 50", "Redis pool size is 80", MAR)
    mt.add("Incidents go to #ops", to="infra/redis", now=MAR)  # lands before any look at the note
    found = _by_content(note)
    assert found["Redis pool size is 50"].extra[entries.BY] == found["Redis pool size is 80"].id
    assert "Incidents go to #ops" in found


def test_memtree_own_update_is_no_hand_edit(make_root: Callable[..., Path]) -> None:
    mt, note = _root(make_root)
    line = next(e.start for e in entries.parse_entries(note.read_text()) if "50" in e.content)
    mt.update(f"{NOTE}:{line}", "Redis pool size is 80", now=MAR)
    before = note.read_text(encoding="utf-8")
    MemTree(mt.root, refresh_interval=0).refresh(force=True)
    assert note.read_text(encoding="utf-8") == before
    assert [c for c in _by_content(note) if "Redis" in c] == ["Redis pool size is 50", "Redis pool size is 80"]


def test_a_person_saving_again_during_the_write_keeps_their_text(
    make_root: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    mt, note = _root(make_root)
    _edit(note, "Redis pool size is 50", "Redis pool size is 80", MAR)
    reads = []
    real = store.read

    def read(root: Path, rel: str) -> store.Snapshot:
        snap = real(root, rel)
        reads.append(rel)
        if len(reads) == 1:  # memtree has read the note to rewrite it: the person saves once more
            text = note.read_text(encoding="utf-8").replace("Dashboards live in Grafana", "Dashboards moved to Kibana")
            note.write_text(text + "- a line typed meanwhile\n", encoding="utf-8")
        return snap

    monkeypatch.setattr(handedits.store, "read", read)
    done = handedits.settle(mt.state, [NOTE], when=MAR)
    monkeypatch.undo()
    text = note.read_text(encoding="utf-8")
    assert len(done) == 1 and len(reads) >= 2  # the first write was refused, the note read again
    assert "Dashboards moved to Kibana" in text and "- a line typed meanwhile" in text
    assert "Dashboards live in Grafana" not in text
    found = _by_content(note)
    assert found["Redis pool size is 50"].extra[entries.BY] == found["Redis pool size is 80"].id


def test_supersede_is_pure_and_keeps_the_persons_words_byte_for_byte() -> None:
    before = "- Redis pool size is 50 <!-- memtree: id=e-1; created=2026-01-10T10:00:00+09:00; tags=infra -->"
    note = "# redis\n\n" + before.replace("is 50", "is  80") + "\n- other\n"
    out, edits = handedits.supersede(NOTE, note, {"e-1": before}, MAR, 0.8, 0.5)
    assert [(e.old_id, e.day) for e in edits] == [("e-1", date(2026, 3, 1))]
    lines = out.split("\n")
    assert lines[2].startswith("- Redis pool size is 50 <!-- memtree: id=e-1;") and "superseded=2026-03-01" in lines[2]
    assert lines[3].startswith("- Redis pool size is  80 <!-- memtree: id=") and "tags=infra" in lines[3]
    assert lines[4] == "- other"
    assert handedits.supersede(NOTE, out, {"e-1": before}, MAR, 0.8, 0.5)[1] == []  # once only


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def test_check_fix_compares_a_note_memtree_never_saw_with_git_head(make_root: Callable[..., Path]) -> None:
    mt, note = _root(make_root)
    root = mt.root
    _git(root, "init", "-q")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "facts")
    for f in (root / store.STATE_DIR / "seen").iterdir():  # what memtree saw is gone (.memtree/ deleted)
        f.unlink()
    _edit(note, "Redis pool size is 50", "Redis pool size is 80", MAR)
    MemTree(root, refresh_interval=0).refresh()  # no past to compare with: nothing is judged
    assert "Redis pool size is 50" not in note.read_text(encoding="utf-8")
    result = CliRunner().invoke(app, ["check", "--fix", "--root", str(root), "--json"])
    assert result.exit_code == 0, result.stdout
    assert any("edited by hand" in line for line in json.loads(result.stdout)["fixed"])
    found = _by_content(note)
    assert found["Redis pool size is 50"].extra[entries.BY] == found["Redis pool size is 80"].id


def test_a_note_memtree_cannot_write_is_left_as_the_person_saved_it_with_a_warning(
    make_root: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from memtree.errors import ReadOnlyRoot

    mt, note = _root(make_root)
    saved = _edit(note, "Redis pool size is 50", "Redis pool size is 80", MAR)

    def refuse(*_: object, **__: object) -> store.Snapshot:
        raise ReadOnlyRoot(f"cannot write {NOTE}: Read-only file system; nothing was written")

    monkeypatch.setattr(handedits.store, "save", refuse)
    mt.refresh()  # no traceback: the refresh goes on, and says why
    assert note.read_text(encoding="utf-8") == saved
    assert any("edited by hand could not be kept" in w for w in mt.state.warnings)
