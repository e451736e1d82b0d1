"""Blind tests: what the documentation promises about facts that change, links and team use.

Written from the docs alone (README.md, docs/concepts/time.md, docs/concepts/links.md,
docs/guides/team.md, docs/guides/writing.md, docs/reference/*.md, docs/data-safety.md) and issue 30,
without reading memtree's code. memtree is driven only through its documented interfaces: the CLI as
a subprocess (``--no-daemon``, ``--root``, ``--json``) and ``from memtree import MemTree``. Each test
names the doc line it holds memtree to; a test that fails is kept failing (``xfail(strict=True)``)
with the reason, so the suite stays green and the broken promise stays on record.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from memtree import MemTree, MemtreeError

MEMTREE = Path(sys.executable).with_name("memtree")
KST = timezone(timedelta(hours=9))
JAN = datetime(2026, 1, 10, 10, 0, tzinfo=KST)
MAR = datetime(2026, 3, 1, 10, 0, tzinfo=KST)
JUN = datetime(2026, 6, 1, 12, 0, tzinfo=KST)
ENTRY_ID = re.compile(r"\be-\d{8}-[0-9a-f]+\b")


def env() -> dict[str, str]:
    """The environment of every memtree call: no daemon, no root from outside, a fixed git identity."""
    out = {k: v for k, v in os.environ.items() if k != "MEMTREE_ROOT"}
    out.update(
        MEMTREE_NO_DAEMON="1",
        GIT_AUTHOR_NAME="blind",
        GIT_AUTHOR_EMAIL="blind@example.com",
        GIT_COMMITTER_NAME="blind",
        GIT_COMMITTER_EMAIL="blind@example.com",
    )
    return out


def mt(root: Path, *args: str, stdin: str | None = None, check: int | None = 0) -> subprocess.CompletedProcess[str]:
    """Run ``memtree --no-daemon ARGS --root ROOT``; assert its exit code (unless ``check`` is None)."""
    result = subprocess.run(
        [str(MEMTREE), "--no-daemon", *args, "--root", str(root)],
        input=stdin,
        capture_output=True,
        text=True,
        env=env(),
        cwd=root if root.is_dir() else None,
        timeout=120,
    )
    if check is not None:
        assert result.returncode == check, (args, result.returncode, result.stdout, result.stderr)
    return result


def mtj(root: Path, *args: str, check: int | None = 0) -> Any:
    """``mt(... --json)`` parsed: stdout must be one JSON document."""
    return json.loads(mt(root, *args, "--json", check=check).stdout)


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """Exit 2, one line on stderr starting with 'memtree:', no traceback anywhere (errors.md)."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("memtree:"), result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    return lines[0]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=env(), check=True, capture_output=True, text=True).stdout


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A fresh root made by ``memtree init`` (README: the tour)."""
    r = tmp_path / "mem"
    r.mkdir()
    mt(r, "init")
    return r


def note(root: Path, rel: str) -> str:
    return (root / rel).read_text(encoding="utf-8")


def dated_redis(root: Path) -> tuple[str, str]:
    """50 written on 2026-01-10, 80 on 2026-03-01 (API ``now=``): the time.md example. Returns both ids."""
    api = MemTree(root)
    first = api.add("Redis pool size is 50", to="infra/redis", now=JAN)
    second = api.add("Redis pool size is 80", to="infra/redis", now=MAR)
    return first.entry_id, second.entry_id


# A note written by hand in the documented format (time.md "Current, superseded, expiring").
GATEWAY = (
    "# gateway\n\n"
    "- The zeppelin gateway listens on port 8080 <!-- memtree: id=e-20260110-aaaaaaaaaaaaaaaa; "
    "created=2026-01-10T10:00:00+09:00; superseded=2026-03-01; by=e-20260301-bbbbbbbbbbbbbbbb -->\n"
    "- The edge proxy listens on port 9090 <!-- memtree: id=e-20260301-bbbbbbbbbbbbbbbb; "
    "created=2026-03-01T10:00:00+09:00 -->\n"
)


def hand_note(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


PARAGRAPH = (
    "# deploy\n\nRelease notes are written by the on-call engineer. "
    "Staging deploys happen every Tuesday afternoon. Hotfixes skip the queue.\n"
)


def make_conflict(root: Path) -> dict[str, Any]:
    """A hand-written paragraph and an entry contradicting one of its sentences: an open conflict
    (writing.md:114 — 0.5-0.8 similar is recorded as a conflict). Returns add's --json."""
    hand_note(root, "bank/ops/deploy.md", PARAGRAPH)
    added = mtj(root, "add", "Staging deploys never happen on Tuesday afternoons", "--to", "ops/deploy")
    assert added["decision"] == "conflict" and added["conflict_id"], added
    return dict(added)


# ---------------------------------------------------------------- supersede, never delete


def test_add_of_a_new_value_supersedes_and_keeps_the_old_text(root: Path) -> None:
    """README.md:152, time.md:35 — the same statement with another value replaces; the 50 stays, marked."""
    first = mtj(root, "add", "Redis pool size is 50", "--to", "infra/redis")
    second = mtj(root, "add", "Redis pool size is 80", "--to", "infra/redis")
    assert second["supersedes"] == first["entry_id"]
    text = note(root, "bank/infra/redis.md")
    line50 = next(line for line in text.splitlines() if "Redis pool size is 50" in line)
    assert "superseded=" in line50 and f"by={second['entry_id']}" in line50


def test_search_serves_the_current_value_not_the_superseded_one(root: Path) -> None:
    """README.md:153, time.md:16 — search serves current facts: 80, and not the 50 beside it."""
    mt(root, "add", "Redis pool size is 50", "--to", "infra/redis")
    mt(root, "add", "Redis pool size is 80", "--to", "infra/redis")
    hits = mtj(root, "search", "Redis pool size")["hits"]
    assert "80" in hits[0]["text"]
    assert not any("is 50" in h["text"] for h in hits)


def test_update_keeps_the_old_words_just_above_marked_superseded(root: Path) -> None:
    """time.md:40, commands.md:618 — update keeps the id; the old words stay just above, superseded by it."""
    added = mtj(root, "add", "The build server is ci-01", "--to", "infra/build")
    upd = mtj(root, "update", added["entry_id"], "The build server is ci-02")
    assert upd["decision"] == "updated" and upd["entry_id"] == added["entry_id"]
    lines = [line for line in note(root, "bank/infra/build.md").splitlines() if line.startswith("- ")]
    old = next(i for i, line in enumerate(lines) if "ci-01" in line)
    new = next(i for i, line in enumerate(lines) if "ci-02" in line)
    assert old == new - 1, lines
    assert "superseded=" in lines[old] and f"by={added['entry_id']}" in lines[old]
    assert f"id={added['entry_id']}" in lines[new] and "updated=" in lines[new]


def test_forget_moves_the_text_to_the_archive_with_its_reason(root: Path) -> None:
    """time.md:23, commands.md:266 — forget never deletes: the entry moves to bank/_archive/ with the reason."""
    added = mtj(root, "add", "The staging cluster is called hydra", "--to", "infra/staging")
    out = mtj(root, "forget", added["entry_id"], "--reason", "cluster retired")
    assert out["archive"] == "bank/_archive/infra/staging.md"
    archived = note(root, out["archive"])
    assert "The staging cluster is called hydra" in archived and "cluster retired" in archived
    assert "hydra" not in note(root, "bank/infra/staging.md")


def test_resolve_keep_new_marks_the_other_and_moves_a_hand_sentence_out(root: Path) -> None:
    """time.md:42-44 — resolve marks the entry not kept superseded; a hand paragraph's sentence moves out
    into an entry of its own at the note's end; the rest of the paragraph stays."""
    added = make_conflict(root)
    out = mtj(root, "conflicts", "resolve", added["conflict_id"], "--keep", "new")
    assert out["keep"] == "new"
    text = note(root, "bank/ops/deploy.md")
    assert "Release notes are written by the on-call engineer." in text and "Hotfixes skip the queue." in text
    last = text.rstrip("\n").splitlines()[-1]
    assert "Staging deploys happen every Tuesday afternoon" in last and "superseded=" in last
    assert f"by={added['entry_id']}" in last
    assert mtj(root, "conflicts")["conflicts"] == []


def test_resolve_keep_old_never_removes_text(root: Path) -> None:
    """time.md:23,42 — no command deletes an entry's words: --keep old marks the new one, keeps its text."""
    added = make_conflict(root)
    mtj(root, "conflicts", "resolve", added["conflict_id"], "--keep", "old")
    text = note(root, "bank/ops/deploy.md")
    assert PARAGRAPH.split("\n\n")[1] in text
    line = next(x for x in text.splitlines() if "never happen on Tuesday" in x)
    assert "superseded=" in line


def test_resolve_keep_both_marks_neither(root: Path) -> None:
    """time.md:42-43 — `--keep both` marks none; the conflict is settled."""
    added = make_conflict(root)
    mtj(root, "conflicts", "resolve", added["conflict_id"], "--keep", "both")
    text = note(root, "bank/ops/deploy.md")
    assert "superseded=" not in text and PARAGRAPH.split("\n\n")[1] in text
    assert mtj(root, "conflicts")["conflicts"] == []


def test_a_conflict_closes_itself_when_its_entry_is_forgotten(root: Path) -> None:
    """time.md:45-46 — a conflict whose entry was forgotten closes itself; resolving it says so."""
    added = make_conflict(root)
    mt(root, "forget", added["entry_id"])
    assert mtj(root, "conflicts")["conflicts"] == []
    said = mt(root, "conflicts", "resolve", added["conflict_id"], "--keep", "old", check=None)
    assert "Traceback" not in said.stderr
    assert re.search(r"clos|forgot|archiv", said.stdout + said.stderr, re.I), (said.stdout, said.stderr)


def test_a_conflict_closes_itself_when_its_entry_is_changed(root: Path) -> None:
    """time.md:45 — a conflict whose entry was changed (update) closes itself."""
    added = make_conflict(root)
    mt(root, "update", added["entry_id"], "Production deploys go out at noon after review")
    assert mtj(root, "conflicts")["conflicts"] == []


def test_a_conflict_closes_itself_when_its_entry_is_superseded(root: Path) -> None:
    """time.md:45, commands.md:143 — a conflict whose entry was superseded closes itself."""
    added = make_conflict(root)
    again = mtj(root, "add", "Staging deploys never happen on Wednesday afternoons", "--to", "ops/deploy")
    assert again["supersedes"] == added["entry_id"], again
    assert all(c["id"] != added["conflict_id"] for c in mtj(root, "conflicts")["conflicts"])


def test_a_negation_worded_otherwise_is_a_conflict_not_a_replacement(root: Path) -> None:
    """time.md:36-38 — the doc's own example pair is recorded as a conflict for a person to settle."""
    mt(root, "add", "We deploy on Thursdays", "--to", "ops/days")
    out = mtj(root, "add", "Thursday deploys are not allowed", "--to", "ops/days")
    assert out["decision"] == "conflict", out


def test_the_same_sentence_negated_replaces(root: Path) -> None:
    """time.md:35-36 — the same statement negated replaces the older entry."""
    first = mtj(root, "add", "We deploy on Thursdays", "--to", "ops/days")
    out = mtj(root, "add", "We never deploy on Thursdays", "--to", "ops/days")
    assert out["supersedes"] == first["entry_id"], out


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Redis pool 10이면 충분", "최소 50은 되어야 안정적"),
        ("Redis pool 크기는 50으로 정했다", "Redis 풀 사이즈 50으로 결정"),
    ],
)
def test_writing_guides_unseen_pairs_are_both_kept_unflagged(root: Path, old: str, new: str) -> None:
    """writing.md — a paraphrase and a pair sharing few words are both kept, neither merged nor flagged."""
    mt(root, "add", old, "--to", "db/pool")
    out = mtj(root, "add", new, "--to", "db/pool")
    assert out["decision"] == "created" and not out.get("supersedes"), out
    assert mtj(root, "conflicts")["conflicts"] == []
    text = note(root, "bank/db/pool.md")
    assert old in text and new in text


def test_issue30_repro_ends_with_80_current_and_every_text_kept(root: Path) -> None:
    """issue 30 'How it is checked': add 50, add 10, update line 3 to 80, forget the 10, resolve what is
    open --keep old: the 80 is current, the others marked, no text lost."""
    mt(root, "add", "Redis pool size is 50", "--to", "infra/redis")
    ten = mtj(root, "add", "Redis pool size is 10", "--to", "infra/redis")
    mt(root, "update", "bank/infra/redis.md:3", "Redis pool size was raised to 80")
    mt(root, "forget", ten["entry_id"])
    for c in mtj(root, "conflicts")["conflicts"]:
        mt(root, "conflicts", "resolve", c["id"], "--keep", "old", check=None)
    live = note(root, "bank/infra/redis.md")
    archive = root / "bank/_archive/infra/redis.md"
    everything = live + (archive.read_text(encoding="utf-8") if archive.exists() else "")
    for words in ("Redis pool size is 50", "Redis pool size is 10", "Redis pool size was raised to 80"):
        assert words in everything, words
    line80 = next(x for x in live.splitlines() if "raised to 80" in x)
    assert "superseded=" not in line80
    line50 = next(x for x in live.splitlines() if "size is 50" in x)
    assert "superseded=" in line50
    hits = mtj(root, "search", "Redis pool size")["hits"]
    assert "80" in hits[0]["text"] and hits[0]["status"] in (None, "current")


# ---------------------------------------------------------------- current by default, the past on request


def test_as_of_answers_with_the_value_that_held_that_day(root: Path) -> None:
    """time.md:58,63 — search --as-of 2026-02-01 answers 50; a day after the change, 80."""
    dated_redis(root)
    feb = mtj(root, "search", "Redis pool size", "--as-of", "2026-02-01")["hits"]
    assert "is 50" in feb[0]["text"] and not any("is 80" in h["text"] for h in feb)
    mar = mtj(root, "search", "Redis pool size", "--as-of", "2026-03-02")["hits"]
    assert "is 80" in mar[0]["text"] and not any("is 50" in h["text"] for h in mar)


def test_as_of_before_anything_was_written_finds_nothing(root: Path) -> None:
    """time.md:63 — entries written by then: on 2025-12-01 neither value existed (search exits 1)."""
    dated_redis(root)
    out = mtj(root, "search", "Redis pool size", "--as-of", "2025-12-01", check=1)
    assert out["hits"] == [] and out["rejected"]


def test_context_as_of_gives_the_past_value(root: Path) -> None:
    """time.md:59, commands.md:181 — context --as-of DAY: the facts that held on that day."""
    dated_redis(root)
    block = mtj(root, "context", "Redis pool size", "--as-of", "2026-02-01")["markdown"]
    assert "Redis pool size is 50" in block and "Redis pool size is 80" not in block


def test_api_search_as_of_matches_the_cli(root: Path) -> None:
    """api.md:28,37 — MemTree.search(as_of=) answers with the facts that held on that day."""
    dated_redis(root)
    api = MemTree(root)
    feb = api.search("Redis pool size", as_of=date(2026, 2, 1), now=JUN)
    now = api.search("Redis pool size", now=JUN)
    assert "is 50" in feb.hits[0].text and "is 80" in now.hits[0].text


def test_a_superseded_entry_is_served_marked_when_nothing_current_answers(root: Path) -> None:
    """time.md:67-70 — served, marked '[superseded DAY by e-…: no longer current]' in text; status in --json."""
    hand_note(root, "bank/infra/gw.md", GATEWAY)
    out = mtj(root, "search", "zeppelin")
    assert out["hits"], out
    assert out["hits"][0]["status"] == "superseded 2026-03-01 by e-20260301-bbbbbbbbbbbbbbbb"
    human = mt(root, "search", "zeppelin").stdout
    assert "[superseded 2026-03-01 by e-20260301-bbbbbbbbbbbbbbbb: no longer current]" in human


def test_the_context_block_marks_a_superseded_entry(root: Path) -> None:
    """time.md:68-69 — the mark is in the context block too."""
    hand_note(root, "bank/infra/gw.md", GATEWAY)
    block = mtj(root, "context", "zeppelin")["markdown"]
    assert "zeppelin" in block
    assert "[superseded 2026-03-01 by e-20260301-bbbbbbbbbbbbbbbb: no longer current]" in block


def test_a_current_hit_says_current_in_json(root: Path) -> None:
    """time.md:69-70 — '(a current hit says "current")'."""
    hand_note(root, "bank/infra/gw.md", GATEWAY)
    hit = mtj(root, "search", "edge proxy port")["hits"][0]
    assert hit["status"] == "current"


def test_history_shows_the_chain_oldest_first(root: Path) -> None:
    """time.md:60,71, json-output.md:86,114 — history ID: the chain, oldest first, with superseded and by."""
    old_id, new_id = dated_redis(root)
    chain = mtj(root, "history", new_id)["chain"]
    assert [v["id"] for v in chain] == [old_id, new_id]
    assert chain[0]["superseded"] == "2026-03-01" and chain[0]["by"] == new_id
    assert chain[1]["superseded"] is None and chain[0]["text"] == "Redis pool size is 50"
    for v in chain:
        assert set(v) == {"id", "path", "lines", "created_at", "superseded", "by", "valid_until", "text"}


def test_history_of_the_old_entry_shows_what_replaced_it(root: Path) -> None:
    """commands.md:323 — for an entry id: the versions it replaced and what replaced it."""
    old_id, new_id = dated_redis(root)
    chain = mtj(root, "history", old_id)["chain"]
    assert [v["id"] for v in chain] == [old_id, new_id]


def test_history_after_update_lists_the_old_words_then_the_new(root: Path) -> None:
    """time.md:40,71 — after update, history ID lists the old words (superseded) then the new."""
    added = mtj(root, "add", "The build server is ci-01", "--to", "infra/build")
    mt(root, "update", added["entry_id"], "The build server is ci-02")
    chain = mtj(root, "history", added["entry_id"])["chain"]
    assert [v["text"] for v in chain] == ["The build server is ci-01", "The build server is ci-02"]
    assert chain[0]["by"] == added["entry_id"]


def test_add_until_stops_being_current_after_the_day(root: Path) -> None:
    """time.md:20-21, api.md:108 — valid_until is the last day it holds; after it, no longer current."""
    api = MemTree(root)
    api.add("The office is closed for renovation", to="office/hours", until="2026-03-31", now=MAR)
    assert "valid_until=2026-03-31" in note(root, "bank/office/hours.md")
    on_last_day = api.search("office closed renovation", now=datetime(2026, 3, 31, 18, tzinfo=KST))
    after = api.search("office closed renovation", now=datetime(2026, 4, 2, 9, tzinfo=KST))
    assert on_last_day.hits and on_last_day.hits[0].status in (None, "current")
    assert after.hits and after.hits[0].status and after.hits[0].status.startswith("expired")


def test_as_of_leaves_out_an_entry_expired_by_then_and_keeps_it_before(root: Path) -> None:
    """time.md:63-64 — as of a day: not expired before it."""
    MemTree(root).add("The office is closed for renovation", to="office/hours", until="2026-03-31", now=MAR)
    before = mtj(root, "search", "office closed renovation", "--as-of", "2026-03-15")["hits"]
    assert before and before[0]["status"] in (None, "current")
    after = mt(root, "search", "office closed renovation", "--as-of", "2026-04-15", "--json", check=None)
    hits = json.loads(after.stdout)["hits"]
    assert all(h["status"] not in (None, "current") for h in hits), hits


def test_cli_add_until_is_written_and_a_far_future_end_stays_current(root: Path) -> None:
    """commands.md:35 — --until YYYY-MM-DD is written as valid_until; before it the fact is served current."""
    mt(root, "add", "The blue badge opens the server room", "--to", "office/badges", "--until", "2999-12-31")
    assert "valid_until=2999-12-31" in note(root, "bank/office/badges.md")
    hit = mtj(root, "search", "badge server room")["hits"][0]
    assert hit["status"] in (None, "current")


def test_a_bad_until_day_is_one_line_exit_2(root: Path) -> None:
    """commands.md:35, errors.md — --until wants YYYY-MM-DD; anything else is a usage error."""
    one_line_error(mt(root, "add", "x fact", "--to", "a/b", "--until", "March", check=None))
    assert not (root / "bank/a/b.md").exists()


@pytest.mark.parametrize("day", ["2026-13-45", "yesterday", "2026-02-30"])
def test_search_as_of_a_bad_date_is_one_line_exit_2(root: Path, day: str) -> None:
    """errors.md — a usage error: one line on stderr starting with memtree:, exit 2, no traceback."""
    hand_note(root, "bank/infra/gw.md", GATEWAY)
    line = one_line_error(mt(root, "search", "edge proxy", "--as-of", day, check=None))
    assert "--as-of" in line


def test_a_value_edited_by_hand_in_place_keeps_its_past(root: Path) -> None:
    """time.md "Edits by hand" — the new value is current; the old words stay, superseded, with the old id."""
    added = mtj(root, "add", "The pager rotation starts on Monday", "--to", "ops/pager")
    path = root / "bank/ops/pager.md"
    path.write_text(path.read_text(encoding="utf-8").replace("Monday", "Wednesday"), encoding="utf-8")
    hits = mtj(root, "search", "pager rotation starts")["hits"]
    assert "Wednesday" in hits[0]["text"] and not any("Monday" in h["text"] for h in hits)
    assert added["entry_id"] not in hits[0]["ids"]  # the edited line took a fresh id
    text = path.read_text(encoding="utf-8")
    old = next(line for line in text.splitlines() if "Monday" in line)
    assert added["entry_id"] in old and "superseded=" in old


# ---------------------------------------------------------------- links


def linked_root(root: Path) -> str:
    """infra/redis and ops/deploy linking to it three ways; returns the redis entry id."""
    rid = mtj(root, "add", "Redis pool size is 50 for the cache tier", "--to", "infra/redis")["entry_id"]
    mt(root, "add", "Deploys wait for the pool change in [[infra/redis]]", "--to", "ops/deploy")
    with (root / "bank/ops/deploy.md").open("a", encoding="utf-8") as f:
        f.write(f"- relates_to [[bank/infra/redis.md]]\n- See [[infra/redis#{rid}|the pool entry]]\n")
    return rid


def test_links_lists_both_directions_with_types(root: Path) -> None:
    """links.md:100-141, README.md:168 — links REF: out and in; relation lines typed; entry anchors resolved."""
    rid = linked_root(root)
    into = mtj(root, "links", "infra/redis")
    assert into["path"] == "bank/infra/redis.md" and into["node"] == "infra/redis"
    kinds = sorted(link["kind"] for link in into["incoming"])
    assert kinds == ["link", "link", "relates_to"], into["incoming"]
    anchored = next(link for link in into["incoming"] if link["anchor"] == rid)
    assert anchored["alias"] == "the pool entry" and anchored["target_line"] == 3
    out = mtj(root, "links", "bank/ops/deploy.md")
    assert len(out["outgoing"]) == 3 and all(link["target"] == "bank/infra/redis.md" for link in out["outgoing"])
    for link in out["outgoing"] + into["incoming"]:
        assert set(link) == {"source", "line", "kind", "note", "anchor", "alias", "target", "target_line", "problem"}


def test_links_accepts_every_documented_form_of_a_ref(root: Path) -> None:
    """links.md:94-96, commands.md:426 — node id, or path with/without .md and bank/."""
    linked_root(root)
    for ref in ("infra/redis", "bank/infra/redis.md", "bank/infra/redis", "infra/redis.md"):
        assert mtj(root, "links", ref)["path"] == "bank/infra/redis.md", ref


def test_links_to_a_heading_and_contradicts_line(root: Path) -> None:
    """links.md:90,97,107 — a heading anchor (any case) resolves; a contradicts line is typed."""
    hand_note(root, "bank/team/rules.md", "# rules\n\n## Pool Size\n\n- fifty connections\n")
    hand_note(
        root,
        "bank/team/notes.md",
        "# notes\n\n- see [[team/rules#pool size]]\n- contradicts [[team/rules]]\n",
    )
    out = mtj(root, "links", "team/notes")["outgoing"]
    heading = next(link for link in out if link["anchor"])
    assert heading["problem"] is None and heading["target_line"] == 3
    assert any(link["kind"] == "contradicts" for link in out)


def test_links_in_code_are_text(root: Path) -> None:
    """links.md:98 — links inside code (inline or fenced) are text."""
    hand_note(root, "bank/a/b.md", "# b\n\n- inline `[[nowhere-1]]`\n\n```\n[[nowhere-2]]\n```\n")
    assert mtj(root, "links", "a/b")["outgoing"] == []


def test_links_of_a_missing_note_is_one_line_exit_2(root: Path) -> None:
    """links.md:140-141 — a ref that names no note is one line on stderr and exit 2."""
    one_line_error(mt(root, "links", "no/such-note", check=None))


def test_check_reports_a_dangling_link_and_fix_leaves_it(root: Path) -> None:
    """links.md:149-157 — check reports a link to a missing note, entry or heading with file and line;
    --fix leaves it and still reports it."""
    hand_note(root, "bank/infra/redis.md", "# redis\n\n- pool 50\n")
    hand_note(
        root,
        "bank/ops/deploy.md",
        "# deploy\n\n- ok [[infra/redis]]\n- gone [[infra/gone]]\n"
        "- no entry [[infra/redis#e-20260101-0000000000000000]]\n"
        "- no heading [[infra/redis#No Such Heading]]\n",
    )
    before = (root / "bank/ops/deploy.md").read_bytes()
    res = mt(root, "check", check=1)
    assert (
        "bank/ops/deploy.md: dangling-link: line 4: [[infra/gone]] leads nowhere: no note named 'infra/gone'"
        in res.stdout + res.stderr
    )
    out = mtj(root, "check", check=1)
    dangling = [p for p in out["problems"] if "dangling" in p["kind"]]
    assert len(dangling) == 3, out["problems"]
    assert all(p["path"] == "bank/ops/deploy.md" and p["fixable"] is False for p in dangling)
    fixed = mtj(root, "check", "--fix", check=1)
    assert len([p for p in fixed["problems"] if "dangling" in p["kind"]]) == 3
    assert (root / "bank/ops/deploy.md").read_bytes() == before


def test_every_check_problem_kind_is_a_documented_kind(root: Path) -> None:
    """json-output.md — `kind`: the kinds its row names (read from the page, so the page is what is held)."""
    page = (Path(__file__).resolve().parent.parent / "docs/reference/json-output.md").read_text(encoding="utf-8")
    row = next(line for line in page.splitlines() if line.startswith("| `kind` | string | `oversized`"))
    documented = set(re.findall(r"`([a-z-]+)`", row.split("|")[3]))
    hand_note(root, "bank/ops/deploy.md", "# deploy\n\n- gone [[infra/gone]]\n")
    kinds = {p["kind"] for p in mtj(root, "check", check=1)["problems"]}
    assert kinds <= documented, kinds


def committed_link_root(root: Path) -> str:
    """A git repository holding a linked memory whose redis node has hand-given keywords and weight."""
    git(root, "init", "-q")
    rid = linked_root(root)
    tree = json.loads(note(root, "tree-index.json"))
    for n in tree["nodes"]:
        if n["id"] == "infra/redis":
            n["keywords"] = ["quokkaword"]
            n["weight"] = 2.5
    (root / "tree-index.json").write_text(json.dumps(tree, indent=2) + "\n", encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "memory")
    return rid


def test_git_mv_then_check_fix_rewrites_links_and_keeps_keywords_and_weight(root: Path) -> None:
    """links.md:164-172, issue 30 — git mv, check --fix: the node follows with its keywords and weight;
    links rewritten in the form written, anchors and aliases kept; the hand keyword still finds the note."""
    rid = committed_link_root(root)
    git(root, "mv", "bank/infra/redis.md", "bank/infra/cache.md")
    res = mt(root, "check", "--fix")
    assert "renamed: bank/infra/redis.md is now bank/infra/cache.md" in res.stdout
    node = next(n for n in json.loads(note(root, "tree-index.json"))["nodes"] if n["path"] == "bank/infra/cache.md")
    assert node["keywords"] == ["quokkaword"] and node["weight"] == 2.5
    deploy = note(root, "bank/ops/deploy.md")
    assert "[[infra/cache]]" in deploy and "[[bank/infra/cache.md]]" in deploy
    assert f"[[infra/cache#{rid}|the pool entry]]" in deploy and "redis]]" not in deploy
    assert mtj(root, "search", "quokkaword")["hits"][0]["path"] == "bank/infra/cache.md"
    assert len(mtj(root, "links", "bank/infra/cache.md")["incoming"]) == 3


def test_git_mv_of_an_edited_note_is_still_a_rename(root: Path) -> None:
    """links.md:174-176 — in git, at least half of the lines in common is one note renamed."""
    committed_link_root(root)
    git(root, "mv", "bank/infra/redis.md", "bank/infra/cache.md")
    with (root / "bank/infra/cache.md").open("a", encoding="utf-8") as f:
        f.write("- Eviction policy is allkeys-lru\n")
    mt(root, "check", "--fix")
    node = next(n for n in json.loads(note(root, "tree-index.json"))["nodes"] if n["path"] == "bank/infra/cache.md")
    assert node["keywords"] == ["quokkaword"] and node["weight"] == 2.5
    assert "[[infra/cache]]" in note(root, "bank/ops/deploy.md")


def test_plain_mv_outside_git_then_index_keeps_the_node(root: Path) -> None:
    """links.md:164-167,176-178 — outside git, a note moved unchanged, then `index` first: node follows."""
    linked_root(root)
    tree = json.loads(note(root, "tree-index.json"))
    for n in tree["nodes"]:
        if n["id"] == "infra/redis":
            n["keywords"], n["weight"] = ["quokkaword"], 2.5
    (root / "tree-index.json").write_text(json.dumps(tree, indent=2) + "\n", encoding="utf-8")
    mt(root, "index")  # the index records the content hash
    shutil.move(root / "bank/infra/redis.md", root / "bank/infra/cache.md")
    mt(root, "index")
    node = next(n for n in json.loads(note(root, "tree-index.json"))["nodes"] if n["path"] == "bank/infra/cache.md")
    assert node["keywords"] == ["quokkaword"] and node["weight"] == 2.5
    assert "[[infra/cache]]" in note(root, "bank/ops/deploy.md")


def test_links_and_check_never_write_backlinks_into_notes(root: Path) -> None:
    """links.md:143 — backlinks are derived, never written into notes."""
    linked_root(root)
    before = {p: p.read_bytes() for p in (root / "bank").rglob("*.md")}
    mt(root, "links", "infra/redis")
    mt(root, "check", check=None)
    assert {p: p.read_bytes() for p in (root / "bank").rglob("*.md")} == before


def test_an_entry_link_follows_the_entry_into_a_split_part(root: Path) -> None:
    """links.md:180-181 — after split, [[big#e-…]] leads to the part holding the entry; [[big]] still holds."""
    body = "".join(
        f"\n## Section {n}\n\n" + f"Paragraph {n} about the kestrel queue and its consumers. " * 8 + "\n"
        for n in range(12)
    )
    hand_note(root, "bank/infra/big.md", "# big\n" + body)
    first = MemTree(root).add("Kestrel queue retention is seven days", to="infra/big", now=JAN)
    hand_note(root, "bank/ops/ref.md", f"# ref\n\n- see [[infra/big#{first.entry_id}]] and [[infra/big]]\n")
    mt(root, "split", "bank/infra/big.md", "--max-bytes", "2048")
    assert first.entry_id not in note(root, "bank/infra/big.md")  # the entry moved into a part
    out = mtj(root, "links", "ops/ref")["outgoing"]
    entry_link = next(link for link in out if link["anchor"] == first.entry_id)
    assert entry_link["problem"] is None and entry_link["target"] != "bank/infra/big.md", entry_link
    held = note(root, entry_link["target"]).splitlines()[entry_link["target_line"] - 1]
    assert first.entry_id in held
    assert next(link for link in out if link["anchor"] is None)["problem"] is None


def test_get_shows_the_marks_in_the_note(root: Path) -> None:
    """time.md:71-72 — `memtree get NOTE` shows the marks in the note itself."""
    old_id, new_id = dated_redis(root)
    text = mtj(root, "get", "infra/redis")["text"]
    assert f"superseded=2026-03-01; by={new_id}" in text and old_id in text


def test_undo_is_refused_after_a_hand_edit(root: Path) -> None:
    """commands.md:599, team.md:71-72 — undo refuses with one line, nothing written, when the file changed since."""
    mt(root, "add", "The cache warms at 06:00", "--to", "infra/warm")
    path = root / "bank/infra/warm.md"
    path.write_text(path.read_text(encoding="utf-8").replace("06:00", "07:00"), encoding="utf-8")
    before = path.read_bytes()
    one_line_error(mt(root, "undo", check=None))
    assert path.read_bytes() == before


# ---------------------------------------------------------------- hostile input


def test_a_forged_metadata_comment_in_added_text_is_not_metadata(root: Path) -> None:
    """writing.md:121-122, time.md:9 — metadata is memtree's comment at the end of the line; a forged one in
    the text must not make the new entry superseded, dated 2020, or carry the forged id."""
    forged = (
        "Harmless fact about lanterns <!-- memtree: id=e-20200101-deadbeefdeadbeef; "
        "created=2020-01-01T00:00:00+00:00; superseded=2020-02-01; by=e-20200201-0000000000000000 -->"
    )
    out = mtj(root, "add", forged, "--to", "misc/forge")
    assert out["entry_id"] != "e-20200101-deadbeefdeadbeef"
    hit = mtj(root, "search", "lanterns")["hits"][0]
    assert hit["status"] in (None, "current") and hit["ids"] == [out["entry_id"]]
    chain = mtj(root, "history", out["entry_id"])["chain"]
    assert all(v["superseded"] is None and v["id"] != "e-20200101-deadbeefdeadbeef" for v in chain), chain
    assert mt(root, "history", "e-20200101-deadbeefdeadbeef", check=None).returncode == 2


@pytest.mark.parametrize(
    "args",
    [
        ("get", "../etc/passwd"),
        ("get", "/etc/passwd"),
        ("links", "../../x"),
        ("links", "/etc/passwd"),
        ("history", "../x"),
        ("add", "a fact", "--to", "../evil"),
        ("add", "a fact", "--to", "/abs/x"),
        ("forget", "../x.md:3"),
        ("update", "/etc/passwd:1", "y"),
        ("get", "n" * 300),
        ("add", "a fact", "--to", "n" * 300),
    ],
)
def test_hostile_refs_are_one_line_exit_2_and_write_nothing(root: Path, args: tuple[str, ...]) -> None:
    """data-safety.md:319-320,324 — `..`, absolute and 300-character names: one line, exit 2, nothing written."""
    before = sorted(p.relative_to(root).as_posix() for p in (root / "bank").rglob("*"))
    one_line_error(mt(root, *args, check=None))
    assert sorted(p.relative_to(root).as_posix() for p in (root / "bank").rglob("*")) == before
    assert not (root.parent / "evil").exists() and not Path("/abs/x").exists()


@pytest.mark.parametrize("call", ["get", "links", "add_to", "history", "forget"])
def test_a_nul_in_a_name_is_a_memtree_error_in_the_api(root: Path, call: str) -> None:
    """data-safety.md:320 — a NUL-holding name: one check of every user-given name (a MemtreeError)."""
    api = MemTree(root)
    bad = "infra/re\x00dis"
    with pytest.raises(MemtreeError):
        {
            "get": lambda: api.get(bad),
            "links": lambda: api.links(bad),
            "add_to": lambda: api.add("a fact", to=bad),
            "history": lambda: api.history(bad),
            "forget": lambda: api.forget(bad + ".md:3"),
        }[call]()


def test_nul_bytes_in_added_text_from_stdin_do_not_reach_the_note_or_traceback(root: Path) -> None:
    """data-safety.md:306,313, errors.md — NUL in text: either refused in one line, or stored without it."""
    res = mt(root, "add", "-", "--to", "misc/nul", stdin="pool\x00size is 5\n", check=None)
    assert "Traceback" not in res.stdout + res.stderr
    if res.returncode == 2:
        one_line_error(res)
    else:
        assert res.returncode == 0
        assert "\x00" not in note(root, "bank/misc/nul.md")


# ---------------------------------------------------------------- team use through git


def clone_pair(tmp_path: Path) -> tuple[Path, Path]:
    """A bare remote, clone A holding a fresh memory (memtree init), clone B set up with `git setup`."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    a, b = tmp_path / "a", tmp_path / "b"
    git(tmp_path, "clone", "-q", str(remote), str(a))
    git(a, "checkout", "-q", "-b", "main")
    mt(a, "init")
    mt(a, "add", "The shared fact list starts here", "--to", "team/facts")
    git(a, "add", "-A")
    git(a, "commit", "-qm", "memory")
    git(a, "push", "-q", "-u", "origin", "main")
    git(tmp_path, "clone", "-q", "-b", "main", str(remote), str(b))
    mt(b, "git", "setup")
    return a, b


def test_git_status_says_whether_the_clone_is_set_up(tmp_path: Path) -> None:
    """team.md:13-17, json-output.md:25-26 — init sets the driver; git says so; setup in another clone."""
    a, b = clone_pair(tmp_path)
    st = mtj(a, "git")
    assert set(st) == {"root", "attributes", "driver"} and st["attributes"] is True and st["driver"]
    assert mtj(b, "git")["driver"]
    again = mtj(b, "git", "setup")
    assert set(again) == {"root", "attributes", "config"}


def test_two_clones_adding_to_one_note_sync_without_markers(tmp_path: Path) -> None:
    """team.md:4-5,31 — entries added on either side kept; sync commits, pulls and pushes; no markers."""
    a, b = clone_pair(tmp_path)
    mt(a, "add", "Alpha clone says the broker is kafka-east", "--to", "team/facts")
    mt(b, "add", "Beta clone says the dashboard lives in grafana", "--to", "team/facts")
    mt(a, "sync")
    mt(b, "sync")
    mt(a, "sync")
    for clone in (a, b):
        text = note(clone, "bank/team/facts.md")
        assert "kafka-east" in text and "grafana" in text and "<<<<<<<" not in text
        assert mtj(clone, "check", check=None)["ok"] is True


def test_a_supersede_travels_through_git(tmp_path: Path) -> None:
    """team.md + time.md — a replacement made in one clone reaches the other, the old text kept and marked."""
    a, b = clone_pair(tmp_path)
    mt(a, "add", "Redis pool size is 50", "--to", "infra/redis")
    mt(a, "sync")
    mt(b, "sync")
    mt(b, "add", "Redis pool size is 80", "--to", "infra/redis")
    mt(b, "sync")
    mt(a, "sync")
    text = note(a, "bank/infra/redis.md")
    assert "<<<<<<<" not in text
    assert "superseded=" in next(x for x in text.splitlines() if "is 50" in x)
    assert "80" in mtj(a, "search", "Redis pool size")["hits"][0]["text"]


def test_an_entry_edited_differently_on_both_sides_keeps_both_with_a_clash(tmp_path: Path) -> None:
    """team.md:31 — edited differently on both, both kept, the later with a clash= mark, listed by conflicts."""
    a, b = clone_pair(tmp_path)
    eid = mtj(a, "add", "The on-call phone rotates weekly", "--to", "team/oncall")["entry_id"]
    mt(a, "sync")
    mt(b, "sync")
    mt(a, "update", eid, "The on-call phone rotates daily")
    mt(b, "update", eid, "The on-call phone rotates monthly")
    mt(a, "sync")
    mt(b, "sync", check=None)
    text = note(b, "bank/team/oncall.md")
    assert "rotates daily" in text and "rotates monthly" in text and "<<<<<<<" not in text
    assert "clash=" in text
    assert mtj(b, "conflicts")["conflicts"], text


def test_history_lists_commits_that_arrived_by_git(tmp_path: Path) -> None:
    """team.md:70-71 — history lists the commits that arrived by git beside this clone's journaled writes."""
    a, b = clone_pair(tmp_path)
    mt(a, "add", "Alpha clone says the broker is kafka-east", "--to", "team/facts")
    mt(a, "sync")
    mt(b, "sync")
    out = mtj(b, "history")
    assert (
        any("kafka-east" in c["subject"] or "team/facts" in c["subject"] for c in out["commits"])
        or len(out["commits"]) >= 2
    ), out["commits"]
    assert all(set(c) == {"commit", "time", "author", "subject"} for c in out["commits"])


def test_memory_logs_merge_as_a_union(tmp_path: Path) -> None:
    """team.md:32 — memory/ logs: the union of both sides' lines, each once."""
    a, b = clone_pair(tmp_path)
    mt(a, "log", "alpha deployed the api")
    mt(b, "log", "beta rolled back nothing")
    mt(a, "sync")
    mt(b, "sync")
    logs = "".join(p.read_text(encoding="utf-8") for p in (b / "memory").glob("*.md"))
    assert logs.count("alpha deployed the api") == 1 and logs.count("beta rolled back nothing") == 1
    assert "<<<<<<<" not in logs


def test_a_node_weight_changed_on_both_sides_is_an_open_conflict(tmp_path: Path) -> None:
    """team.md:41-56 — a field changed both ways keeps ours and records the other as a conflict."""
    a, b = clone_pair(tmp_path)

    def set_weight(clone: Path, weight: float) -> None:
        tree = json.loads(note(clone, "tree-index.json"))
        for n in tree["nodes"]:
            if n["id"] == "team/facts":
                n["weight"] = weight
        (clone / "tree-index.json").write_text(json.dumps(tree, indent=2) + "\n", encoding="utf-8")

    set_weight(a, 2.0)
    set_weight(b, 3.0)
    mt(a, "sync")
    mt(b, "sync", check=None)
    raw = note(b, "tree-index.json")
    assert "<<<<<<<" not in raw
    assert "weight=3.0" in note(b, "conflicts.json")  # what sync filed
    assert mtj(b, "status")["open_conflict_count"] == 1
    conflicts = mtj(b, "conflicts")["conflicts"]
    assert any(c["new"]["path"] == "tree-index.json" for c in conflicts), conflicts
    c = next(c for c in conflicts if c["new"]["path"] == "tree-index.json")
    one_line_error(mt(b, "conflicts", "resolve", c["id"], "--keep", "both", check=None))


def test_the_merge_driver_is_symmetric(tmp_path: Path) -> None:
    """team.md:37-39 — A merging B equals B merging A, byte for byte; no markers; no line lost."""
    base = "# facts\n\n- shared <!-- memtree: id=e-20260110-1111111111111111; created=2026-01-10T10:00:00+09:00 -->\n"
    ours = (
        base + "- ours adds this <!-- memtree: id=e-20260111-2222222222222222; created=2026-01-11T10:00:00+09:00 -->\n"
    )
    theirs = (
        base
        + "- theirs adds that <!-- memtree: id=e-20260112-3333333333333333; created=2026-01-12T10:00:00+09:00 -->\n"
    )
    results = []
    for first, second in ((ours, theirs), (theirs, ours)):
        paths = []
        for name, text in (("base", base), ("ours", first), ("theirs", second)):
            p = tmp_path / f"{name}-{len(results)}.md"
            p.write_text(text, encoding="utf-8")
            paths.append(str(p))
        res = subprocess.run(
            [str(MEMTREE), "merge-driver", *paths, "bank/facts.md"], capture_output=True, text=True, env=env()
        )
        assert res.returncode == 0, res.stderr
        results.append(Path(paths[1]).read_bytes())
    assert results[0] == results[1]
    merged = results[0].decode()
    assert "ours adds this" in merged and "theirs adds that" in merged and "<<<<<<<" not in merged


# ---------------------------------------------------------------- --json shapes


JSON_COMMANDS = ("add", "search", "context", "get", "links", "history", "update", "forget", "conflicts",
                 "conflicts resolve", "check", "init", "index")  # fmt: skip


def documented_keys(name: str) -> set[str]:
    """The keys json-output.md's tables give a command (or an object such as `hit`): read from the page,
    so what the page says is what is held."""
    page = (Path(__file__).resolve().parent.parent / "docs/reference/json-output.md").read_text(encoding="utf-8")
    row = next(line for line in page.splitlines() if line.startswith(f"| `{name}` | `"))
    return set(re.findall(r"`([a-z_]+)`", row.split("|")[2]))


@pytest.mark.parametrize("command", sorted(JSON_COMMANDS))
def test_json_output_has_exactly_the_documented_keys(root: Path, command: str) -> None:
    """json-output.md:22-67 — every command prints one JSON object with its table's keys."""
    added = make_conflict(root)
    eid = added["entry_id"]
    other = mtj(root, "add", "Grafana dashboards live in the ops folder", "--to", "ops/dash")["entry_id"]
    calls: dict[str, tuple[str, ...]] = {
        "add": ("add", "The kafka broker is kafka-east", "--to", "ops/kafka"),
        "search": ("search", "staging deploys"),
        "context": ("context", "staging deploys"),
        "get": ("get", "ops/deploy"),
        "links": ("links", "ops/deploy"),
        "history": ("history", eid),
        "update": ("update", other, "Grafana dashboards live in the team folder"),
        "forget": ("forget", other),
        "conflicts": ("conflicts",),
        "conflicts resolve": ("conflicts", "resolve", str(added["conflict_id"]), "--keep", "both"),
        "check": ("check",),
        "init": ("init",),
        "index": ("index",),
    }
    out = mtj(root, *calls[command], check=None)
    assert isinstance(out, dict) and set(out) == documented_keys(command), sorted(out)
    if command == "search":
        assert out["hits"] and all(set(h) == documented_keys("hit") for h in out["hits"])
        assert all(ENTRY_ID.fullmatch(i) for h in out["hits"] for i in h["ids"])
