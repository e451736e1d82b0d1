"""Two clones of one memory meeting in git: the merge driver, check's markers, search on a broken tree."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memtree.notes import entries
from memtree.write import merge

pytestmark = pytest.mark.skipif(subprocess.run(["git", "--version"], capture_output=True).returncode != 0, reason="git")


@pytest.fixture(autouse=True)
def _git_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = t\n\temail = t@example.com\n[init]\n\tdefaultBranch = main\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("MEMTREE_NO_DAEMON", "1")


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)}: {done.stderr}{done.stdout}")
    return done


def mt(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memtree", *args], cwd=cwd, capture_output=True, text=True)


def _clones(tmp_path: Path, driver: bool = True) -> tuple[Path, Path]:
    git(tmp_path, "init", "-q", "--bare", "remote.git")
    a, b = tmp_path / "a", tmp_path / "b"
    git(tmp_path, "clone", "-q", "remote.git", "a")
    assert mt(a, "init").returncode == 0
    if not driver:
        git(a, "config", "--unset-all", "merge.memtree.driver")
    git(a, "add", "-A")
    git(a, "commit", "-qm", "init")
    git(a, "push", "-q", "origin", "main")
    git(tmp_path, "clone", "-q", "remote.git", "b")
    if driver:
        assert mt(b, "git", "setup").returncode == 0
    return a, b


def _clones_sharing_a_fact(tmp_path: Path) -> tuple[Path, Path]:
    """Two clones (as _clones) that both hold one fact A added and B pulled."""
    a, b = _clones(tmp_path)
    assert mt(a, "add", "Redis pool size is 50", "--to", "bank/infra.md").returncode == 0
    git(a, "add", "-A")
    git(a, "commit", "-qm", "one")
    git(a, "push", "-q", "origin", "main")
    git(b, "pull", "-q", "origin", "main")
    return a, b


def _both_write(a: Path, b: Path) -> None:
    for clone, words in (
        (a, ("Redis pool size is 50", "deployed v2", "Lunch is on Friday")),
        (b, ("Postgres max is 200", "rollback tested", "Office closes at 6pm")),
    ):
        assert mt(clone, "add", words[0], "--to", "bank/infra.md").returncode == 0
        assert mt(clone, "log", words[1]).returncode == 0
        assert mt(clone, "add", words[2]).returncode == 0
        git(clone, "add", "-A")
        git(clone, "commit", "-qm", words[0])
    git(a, "push", "-q", "origin", "main")


def _markers(root: Path) -> list[str]:
    out = []
    for p in [*root.glob("*.json"), *root.glob("*/**/*.md")]:
        if merge.MARKER_RE.search(p.read_text(encoding="utf-8")):
            out.append(p.name)
    return out


@pytest.mark.parametrize("how", ["--no-rebase", "--rebase"])
def test_the_driver_merges_both_clones_facts_without_markers(tmp_path: Path, how: str) -> None:
    a, b = _clones(tmp_path)
    assert "merge=memtree" in (a / ".gitattributes").read_text()
    _both_write(a, b)
    pulled = git(b, "pull", "-q", how, "origin", "main", check=False)
    assert pulled.returncode == 0, pulled.stderr
    assert _markers(b) == []
    note = (b / "bank/infra.md").read_text()
    assert note.count("Redis pool size is 50") == 1 and note.count("Postgres max is 200") == 1
    log = next((b / "memory").glob("*.md")).read_text()
    assert "deployed v2" in log and "rollback tested" in log
    assert mt(b, "check").returncode == 0, mt(b, "check").stdout
    found = mt(b, "search", "Office closes")
    assert found.returncode == 0 and "bank/" in found.stdout


def test_an_entry_edited_both_ways_is_a_memtree_conflict(tmp_path: Path) -> None:
    a, b = _clones_sharing_a_fact(tmp_path)
    for clone, new in ((a, "Redis pool size is 80"), (b, "Redis pool size is 20")):
        note = clone / "bank/infra.md"
        note.write_text(note.read_text().replace("Redis pool size is 50", new))
        git(clone, "commit", "-qam", new)
    git(a, "push", "-q", "origin", "main")
    assert git(b, "pull", "-q", "--no-rebase", "origin", "main", check=False).returncode == 0
    note = (b / "bank/infra.md").read_text()
    assert "is 80" in note and "is 20" in note and _markers(b) == []
    listed = mt(b, "conflicts", "--json")
    assert listed.returncode == 0 and '"c-' in listed.stdout
    import json

    cid = json.loads(listed.stdout)["conflicts"][0]["id"]
    assert mt(b, "conflicts", "resolve", cid, "--keep", "new").returncode == 0
    note = (b / "bank/infra.md").read_text()
    assert "clash=" not in note
    # the version not kept stays in the note, superseded by the kept one (issue 30: no verb removes text)
    found = {e.content: e.meta for e in entries.parse_entries(note)}
    assert set(found) == {"Redis pool size is 80", "Redis pool size is 20"}, note
    marked = json.loads(listed.stdout)["conflicts"][0]["new"]["text"]
    kept, past = found.pop(marked), found.popitem()[1]
    assert not entries.is_retired(kept) and entries.is_retired(past) and past.extra["by"] == kept.id
    assert "." not in kept.id.rpartition("-")[2]  # the kept version has the entry's own id
    assert mt(b, "conflicts", "--json").stdout.count('"c-') == 0


def test_without_the_driver_check_names_the_markers_and_fix_merges_as_the_driver_would(tmp_path: Path) -> None:
    a, b = _clones(tmp_path, driver=False)
    _both_write(a, b)
    assert git(b, "pull", "-q", "--no-rebase", "origin", "main", check=False).returncode != 0
    marked = _markers(b)
    assert "infra.md" in marked
    # what the driver would have made of each path, from git's three stages
    want = {}
    for rel in git(b, "diff", "--name-only", "--diff-filter=U").stdout.split():
        sides = [git(b, "show", f":{n}:{rel}", check=False).stdout for n in (1, 2, 3)]
        want[rel] = merge.merge(rel, *sides).text
    git(b, "add", "-A")
    git(b, "commit", "-qm", "merged with markers")
    checked = mt(b, "check")
    assert checked.returncode == 1 and "markers" in checked.stdout and "bank/infra.md" in checked.stdout
    fixed = mt(b, "check", "--fix")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert _markers(b) == []
    for rel, text in want.items():
        assert (b / rel).read_text() == text, rel


def test_search_answers_while_tree_index_holds_markers(tmp_path: Path) -> None:
    a, _b = _clones(tmp_path)
    assert mt(a, "add", "Redis pool size is 50", "--to", "bank/infra.md").returncode == 0
    (a / "tree-index.json").write_text('<<<<<<< HEAD\n{"version": 1}\n=======\n{"nodes": []}\n>>>>>>> x\n')
    found = mt(a, "search", "Redis pool")
    assert found.returncode == 0 and "bank/infra.md" in found.stdout
    assert found.stderr.count("tree-index.json") == 1


def test_check_reports_an_unreadable_conflicts_file(tmp_path: Path) -> None:
    a, _b = _clones(tmp_path)
    (a / "conflicts.json").write_text('{"version": 1, "conflicts": [\n')
    checked = mt(a, "check")
    assert checked.returncode == 1 and "conflicts.json" in checked.stdout


def test_check_fix_rebuilds_a_cut_conflicts_file_from_its_whole_records_and_keeps_every_byte(tmp_path: Path) -> None:
    from memtree.write import conflicts

    root = tmp_path / "m"
    root.mkdir()
    assert mt(root, "init").returncode == 0
    side = lambda n: conflicts.Side("bank/a.md", f"e-{n}", f"fact {{n}} is {n}")  # noqa: E731
    made = [conflicts.OpenConflict(f"c-{n}", f"2026-12-0{n}T00:00:00", 0.6, side(n), side(n + 5)) for n in (1, 2, 3)]
    whole = conflicts.dumps(made)
    cut = whole[: whole.rindex(b'"old"')]  # a write cut short inside the last record
    (root / "conflicts.json").write_bytes(cut)
    checked = mt(root, "check")
    assert checked.returncode == 1 and "conflicts.json" in checked.stdout and "--fix" in checked.stdout
    fixed = mt(root, "check", "--fix")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    (kept,) = root.glob("conflicts.json.bad-*")
    assert kept.read_bytes() == cut and kept.name in fixed.stdout and "2 complete record(s)" in fixed.stdout
    # read back as stored (`memtree conflicts` lists none of them: their entries are in no note, so they closed)
    listed = conflicts.load(root)
    assert [c.id for c in listed] == ["c-1", "c-2"] and listed[1].new.text == "fact {n} is 2"


def test_init_outside_a_repository_writes_the_attributes_only(tmp_path: Path) -> None:
    done = mt(tmp_path, "init", "mem")
    assert done.returncode == 0 and ".gitattributes" in done.stdout
    assert "merge=memtree" in (tmp_path / "mem/.gitattributes").read_text()


def test_two_clones_with_one_clock_make_different_ids(tmp_path: Path) -> None:
    from datetime import datetime, timezone

    from memtree import MemTree
    from memtree.notes import entries
    from memtree.write.retain import new_id

    now = datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)
    # Why so many: 32 random bits (the old ids) meet among 200,000 ids of one day almost surely
    assert len({new_id(now) for _ in range(200_000)}) == 200_000
    a, b = _clones(tmp_path)
    for clone, text in ((a, "Redis pool size is 50"), (b, "Kafka retention is 7 days")):
        MemTree(clone).add(text, to="bank/infra.md", now=now)
        git(clone, "add", "-A")
        git(clone, "commit", "-qm", text)
    git(a, "push", "-q", "origin", "main")
    assert git(b, "pull", "-q", "--rebase", "origin", "main", check=False).returncode == 0
    ids = [e.meta.id for e in entries.parse_entries((b / "bank/infra.md").read_text())]
    assert len(ids) == 2 and len(set(ids)) == 2


def _memory(root: Path) -> dict[str, bytes]:
    files = [
        *root.glob("*.json"),
        *root.glob("bank/**/*.md"),
        *root.glob("memory/**/*.md"),
        *root.glob("recall/**/*.md"),
    ]
    return {str(p.relative_to(root)): p.read_bytes() for p in files}


def test_sync_commits_pulls_and_pushes_until_both_clones_agree(tmp_path: Path) -> None:
    a, b = _clones(tmp_path)
    for clone, words in ((a, "Redis pool size is 50"), (b, "Postgres max is 200")):
        assert mt(clone, "add", words, "--to", "bank/infra.md").returncode == 0
        assert mt(clone, "log", words).returncode == 0
    first = mt(a, "sync")
    assert first.returncode == 0 and first.stdout.count("\n") == 1 and ": ok:" in first.stdout, (
        first.stdout + first.stderr
    )
    assert "memtree sync: 1 note" in git(a, "log", "-1", "--format=%s").stdout
    second = mt(b, "sync", "--merge", "--json")
    assert second.returncode == 0 and '"outcome":"ok"' in second.stdout.replace(" ", ""), second.stdout
    assert mt(a, "sync").returncode == 0
    assert _memory(a) == _memory(b) and _markers(a) == []
    found = mt(a, "search", "Postgres max")
    assert found.returncode == 0 and "bank/infra.md" in found.stdout  # the index caught up with the pull


def test_sync_and_autocommit_wait_while_a_merge_is_stopped(tmp_path: Path) -> None:
    a, b = _clones(tmp_path, driver=False)
    _both_write(a, b)
    assert git(b, "pull", "-q", "--no-rebase", "origin", "main", check=False).returncode != 0
    head = git(b, "rev-parse", "HEAD").stdout
    waiting = mt(b, "sync")
    assert waiting.returncode == 1 and "middle of a merge" in waiting.stdout
    (b / "memtree.yaml").write_text("git:\n  autocommit: true\n")
    added = mt(b, "add", "Kafka retention is 7 days", "--to", "bank/kafka.md")
    assert added.returncode == 0 and "middle of a merge" in added.stderr
    assert git(b, "rev-parse", "HEAD").stdout == head


def test_the_daemon_syncs_on_its_tick_only_when_asked() -> None:
    from types import SimpleNamespace

    from memtree.config import Settings
    from memtree.notes.git import Synced
    from memtree.serve.maintenance import GitSync

    calls: list[bool] = []
    logged: list[str] = []
    now = [0.0]

    def fake(every: float) -> GitSync:
        settings = Settings()
        settings = type(settings)(**{**settings.__dict__, "git": type(settings.git)(sync_every_min=every)})
        mt = SimpleNamespace(settings=settings, sync=lambda: calls.append(True) or Synced("ok", "pulled and pushed"))
        return GitSync(mt, logged.append, lambda: now[0])  # type: ignore[arg-type]

    off, on = fake(0), fake(5)
    assert off.tick() is None and on.tick() is None  # off by default; on waits one interval
    now[0] = 5 * 60.0
    assert off.tick() is None
    thread = on.tick()
    assert thread is not None
    thread.join(timeout=30)
    assert calls == [True] and logged == ["git sync: ok: pulled and pushed"]


def _set_weight(clone: Path, node: str, weight: float) -> None:
    import json

    doc = json.loads((clone / "tree-index.json").read_text())
    next(n for n in doc["nodes"] if n["id"] == node)["weight"] = weight
    (clone / "tree-index.json").write_text(json.dumps(doc, indent=2) + "\n")
    git(clone, "commit", "-qam", f"weight {weight}")


def _weight(clone: Path, node: str) -> float:
    import json

    doc = json.loads((clone / "tree-index.json").read_text())
    return float(next(n for n in doc["nodes"] if n["id"] == node)["weight"])


def test_a_node_field_changed_both_ways_keeps_ours_and_records_theirs_as_a_conflict(tmp_path: Path) -> None:
    import json

    a, b = _clones_sharing_a_fact(tmp_path)
    node = next(n["id"] for n in json.loads((b / "tree-index.json").read_text())["nodes"] if n["path"])
    _set_weight(a, node, 2.0)
    _set_weight(b, node, 3.0)
    git(a, "push", "-q", "origin", "main")
    pulled = git(b, "pull", "-q", "--no-rebase", "origin", "main", check=False)
    assert pulled.returncode == 0 and _markers(b) == [] and _weight(b, node) == 3.0  # ours kept
    listed = json.loads(mt(b, "conflicts", "--json").stdout)["conflicts"]
    (found,) = [c for c in listed if c["new"]["path"] == "tree-index.json"]  # theirs recorded, listed at once
    assert found["new"]["id"] == node and found["new"]["text"] == "weight=2.0"
    assert json.loads(mt(b, "status", "--json").stdout)["open_conflict_count"] == 1
    assert mt(b, "sync").returncode == 0  # files it in conflicts.json and shares it
    git(a, "pull", "-q", "origin", "main")
    (filed,) = json.loads((a / "conflicts.json").read_text())["conflicts"]
    # sync pulled by rebase, where ours is the remote's: the record names the value kept as old
    assert filed["id"] == found["id"] and filed["old"]["text"] == f"weight={_weight(a, node)}"
    assert mt(a, "conflicts", "resolve", found["id"], "--keep", "both").returncode == 2  # one weight a node
    settled = mt(a, "conflicts", "resolve", found["id"], "--keep", "new")
    assert settled.returncode == 0, settled.stderr
    assert f"weight={_weight(a, node)}" == filed["new"]["text"] != filed["old"]["text"], settled.stdout
    assert json.loads(mt(a, "conflicts", "--json").stdout)["conflicts"] == []
    assert mt(a, "check").returncode == 0


def test_check_fix_of_tree_index_markers_keeps_ours_and_files_theirs(tmp_path: Path) -> None:
    import json

    root = tmp_path / "m"
    root.mkdir()
    assert mt(root, "init").returncode == 0
    assert mt(root, "add", "Redis pool size is 50", "--to", "bank/infra.md").returncode == 0
    text = (root / "tree-index.json").read_text()
    ours, theirs = text.replace('"weight": 1.0', '"weight": 2.0'), text.replace('"weight": 1.0', '"weight": 3.0')
    (root / "tree-index.json").write_text(f"<<<<<<< HEAD\n{ours}=======\n{theirs}>>>>>>> b\n")
    fixed = mt(root, "check", "--fix")
    assert fixed.returncode == 0 and "ours kept, theirs recorded" in fixed.stdout, fixed.stdout + fixed.stderr
    assert '"weight": 2.0' in (root / "tree-index.json").read_text()
    (filed,) = json.loads((root / "conflicts.json").read_text())["conflicts"]
    assert filed["new"]["text"] == "weight=3.0" and filed["old"]["text"] == "weight=2.0"


def test_status_counts_clash_marks_and_marker_files_beside_open_conflicts(tmp_path: Path) -> None:
    import json

    root = tmp_path / "m"
    root.mkdir()
    assert mt(root, "init").returncode == 0
    before = json.loads(mt(root, "status", "--json").stdout)
    assert (before["open_conflict_count"], before["clash_count"], before["marker_file_count"]) == (0, 0, 0)
    base = "# Redis\n\n- pool 10 <!-- memtree: id=e-1 -->\n"
    ours, theirs = base.replace("10", "80"), base.replace("10", "20")
    (root / "bank").mkdir(exist_ok=True)
    (root / "bank/redis.md").write_text(merge.merge("bank/redis.md", base, ours, theirs).text)
    (root / "bank/pg.md").write_text("# PG\n\n<<<<<<< HEAD\n- max 200\n=======\n- max 100\n>>>>>>> b\n")
    doc = json.loads(mt(root, "status", "--json").stdout)
    assert (doc["open_conflict_count"], doc["clash_count"], doc["marker_file_count"]) == (0, 1, 1)
    said = mt(root, "status").stdout
    assert "1 edit(s) a git merge kept both ways" in said and "1 file(s) hold git conflict markers" in said


def test_after_a_pull_history_shows_what_git_brought_and_undo_refuses_it_in_one_line(tmp_path: Path) -> None:
    import json

    a, b = _clones(tmp_path)
    assert mt(b, "add", "Redis pool size is 50", "--to", "bank/infra.md").returncode == 0
    git(b, "add", "-A")
    git(b, "commit", "-qm", "b adds redis")
    assert mt(a, "add", "Postgres max is 200", "--to", "bank/infra.md").returncode == 0
    git(a, "add", "-A")
    git(a, "commit", "-qm", "a adds postgres")
    git(a, "push", "-q", "origin", "main")
    assert git(b, "pull", "-q", "--no-rebase", "origin", "main", check=False).returncode == 0
    found = mt(b, "search", "Postgres max")  # the index caught up without a manual `memtree index`
    assert found.returncode == 0 and "bank/infra.md" in found.stdout
    history = json.loads(mt(b, "history", "--json").stdout)
    assert "a adds postgres" in [c["subject"] for c in history["commits"]]  # arrived by git: shown
    assert [c["summary"] for c in history["changes"]] == ["Redis pool size is 50"]  # b's own write, journaled
    before = (b / "bank/infra.md").read_bytes()
    undone = mt(b, "undo")
    assert undone.returncode == 2 and undone.stdout == ""
    (line,) = undone.stderr.strip().splitlines()
    assert "bank/infra.md changed since" in line and "git" in line and "nothing was written" in line
    assert (b / "bank/infra.md").read_bytes() == before
