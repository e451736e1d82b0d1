"""The user's own root ($MEMTREE_HOME) searched beside the project's: hits tagged, refusals, the merge."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memtree import MemTree
from memtree.cli.app import app
from memtree.notes.root import user_home
from memtree.search.result import Hit, SearchResult
from memtree.search.roots import merged

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
PROJECT = {"bank/project.md": "# project\n\n- The deploy pipeline runs blue-green on the staging cluster.\n"}
USER = {"bank/preferences.md": "# preferences\n\n- I prefer tabs over spaces and the dark theme in every editor.\n"}


@pytest.fixture
def roots(make_root: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A project root and a user root, MEMTREE_HOME naming the latter."""
    project = make_root(PROJECT, name="project")
    user = make_root(USER, name="home")
    monkeypatch.setenv("MEMTREE_HOME", str(user))
    return project, user


def test_the_default_home_is_the_platforms_data_folder() -> None:
    home = {"HOME": "/home/ada", "XDG_DATA_HOME": None, "APPDATA": None, "MEMTREE_HOME": None}
    assert user_home(home, "linux") == Path("/home/ada/.local/share/memtree")
    assert user_home(home | {"XDG_DATA_HOME": "/data"}, "linux") == Path("/data/memtree")
    assert user_home(home | {"XDG_DATA_HOME": "relative"}, "freebsd14") == Path("/home/ada/.local/share/memtree")
    assert user_home(home, "darwin") == Path("/home/ada/Library/Application Support/memtree")
    assert user_home(home | {"APPDATA": "C:/Users/ada/AppData/Roaming"}, "win32") == Path(
        "C:/Users/ada/AppData/Roaming/memtree"
    )
    assert user_home(home | {"MEMTREE_HOME": "/srv/mine"}, "linux") == Path("/srv/mine")
    assert user_home(home | {"MEMTREE_HOME": ""}, "linux") is None  # set empty: turned off


def test_tests_never_see_the_real_users_home() -> None:
    home = user_home()
    assert home is not None and not home.exists() and Path.home() not in home.parents
    probe = "from memtree.notes.root import user_home; print(user_home())"
    child = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    assert child.stdout.strip() == str(home)  # a hook's, a daemon's process: the same folder that does not exist


def test_search_reads_both_roots_and_tags_each_hit(roots: tuple[Path, Path]) -> None:
    project, _ = roots
    mt = MemTree(project)
    found = mt.search("deploy pipeline blue-green", now=NOW)
    assert found.hits and {h.root for h in found.hits} == {"project"}
    mine = mt.search("tabs or spaces editor theme", now=NOW)
    assert mine.hits and mine.hits[0].root == "user" and mine.hits[0].path == "bank/preferences.md"
    out = CliRunner().invoke(app, ["search", "--root", str(project), "--json", "tabs spaces editor"])
    assert out.exit_code == 0, out.output
    assert [h["root"] for h in json.loads(out.stdout)["hits"]] == ["user"]
    shown = CliRunner().invoke(app, ["search", "--root", str(project), "tabs spaces editor"], env={"COLUMNS": "200"})
    assert "[user root]" in shown.stdout
    ctx = mt.context("tabs spaces editor", now=NOW)
    assert ctx.sources == ("user:bank/preferences.md:1-3",) and "### user:bank/preferences.md" in ctx.markdown
    assert "tabs over spaces" in mt.get("user:bank/preferences.md").text  # a source as the block names it
    assert _cli("get", "bank/preferences.md", "--root", str(project)).exit_code == 2  # not the project's


def test_a_root_that_rejects_adds_nothing_and_both_must_refuse(roots: tuple[Path, Path]) -> None:
    project, _ = roots
    mt = MemTree(project)
    assert mt.search("kubernetes helm chart rollback", now=NOW).rejected  # neither holds it
    found = mt.search("dark theme", now=NOW)  # the project refuses, the user root answers
    assert not found.rejected and [h.root for h in found.hits] == ["user"]


def test_a_write_to_the_user_root_elsewhere_is_seen_by_a_long_lived_memtree(roots: tuple[Path, Path]) -> None:
    project, user = roots
    (user / "memtree.yaml").write_text("search:\n  refresh_interval_s: 0\n", encoding="utf-8")
    daemon_like = MemTree(project, refresh_interval=3600)  # as `memtree serve` opens its root: a watcher tells it
    assert daemon_like.search("dark theme", now=NOW).hits
    MemTree(user).add("I drink oolong tea every morning.", to="bank/preferences.md", now=NOW)  # another project
    found = daemon_like.search("oolong tea morning", now=NOW)
    assert found.hits and found.hits[0].root == "user"


def test_status_names_the_user_root(roots: tuple[Path, Path]) -> None:
    project, user = roots
    assert MemTree(project).status(now=NOW).user_root == str(user)
    shown = CliRunner().invoke(app, ["status", "--root", str(project)], env={"COLUMNS": "300"})
    assert f"user root: {user}" in shown.stdout
    assert MemTree(user).status(now=NOW).user_root is None


def test_the_user_root_is_searched_once_when_it_is_the_project(roots: tuple[Path, Path]) -> None:
    _, user = roots
    mt = MemTree(user)
    assert mt.user() is None
    assert [h.root for h in mt.search("dark theme", now=NOW).hits] == ["project"]


def test_turned_off_by_setting_or_empty_variable(roots: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    project, _ = roots
    (project / "memtree.yaml").write_text("search:\n  user_root: false\n", encoding="utf-8")
    assert MemTree(project).search("dark theme", now=NOW).rejected
    (project / "memtree.yaml").unlink()
    monkeypatch.setenv("MEMTREE_HOME", "")
    assert MemTree(project).user() is None
    assert MemTree(project).search("dark theme", now=NOW).rejected


def test_no_user_root_leaves_the_projects_answer_unchanged(roots: tuple[Path, Path], tmp_path: Path) -> None:
    project, _ = roots
    alone = MemTree(project, home=tmp_path / "nowhere").search("deploy pipeline staging", now=NOW, cache=False)
    both = MemTree(project).search("deploy pipeline staging", now=NOW, cache=False)
    assert alone == both  # the user root holds none of it: nothing of the project's answer moves


def test_an_empty_project_still_answers_from_the_user_root(
    make_root: Callable[..., Path], roots: tuple[Path, Path]
) -> None:
    empty = make_root({}, name="empty")
    assert [h.root for h in MemTree(empty).search("dark theme editor", now=NOW).hits] == ["user"]


def test_a_broken_user_root_is_a_warning(roots: tuple[Path, Path]) -> None:
    project, user = roots
    (user / "memtree.yaml").write_text("search: [not, a, mapping]\n", encoding="utf-8")
    found = MemTree(project).search("deploy pipeline", now=NOW)
    assert found.hits and any(w.startswith(f"user root {user}") for w in found.warnings)


def _hit(score: float, path: str) -> Hit:
    return Hit(None, path, (1, 1), score, {}, "x " * 40, "bank")


def test_the_past_of_one_root_is_not_served_beside_the_current_facts_of_the_other() -> None:
    past = SearchResult("q", ("q",), (replace(_hit(0.9, "a.md"), status="superseded 2026-01-01 by e-x"),))
    now = SearchResult("q", ("q",), (_hit(0.4, "u.md"),))
    assert [h.path for h in merged(past, now, 3, None).hits] == ["u.md"]
    assert [h.path for h in merged(now, past, 3, None).hits] == ["u.md"]  # the project's current facts
    assert [h.root for h in merged(past, past, 3, None).hits] == ["project", "user"]  # only the past: both


def test_merge_by_score_project_first_on_a_tie_and_one_budget() -> None:
    project = SearchResult("q", ("q",), (_hit(0.9, "a.md"), _hit(0.5, "b.md")))
    user = SearchResult("q", ("q",), (_hit(0.9, "u.md"), _hit(0.7, "v.md")))
    both = merged(project, user, 3, None)
    assert [(h.path, h.root) for h in both.hits] == [("a.md", "project"), ("u.md", "user"), ("v.md", "user")]
    cut = merged(project, user, 3, 30)
    assert sum(len(h.text.split()) for h in cut.hits) < sum(len(h.text.split()) for h in both.hits)
    assert merged(project, SearchResult("q", (), (), rejected="no"), 3, None) is project
    assert merged(SearchResult("q", (), (), rejected="no"), user, 3, None).hits[0].root == "user"


def test_the_environment_of_this_test_run_names_no_real_home() -> None:
    assert os.environ["MEMTREE_HOME"].endswith("no-user-home")


# --- promote ------------------------------------------------------------------------------------


def _cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def _ids(root: Path, note: str) -> list[str]:
    from memtree.notes.entries import iter_ids

    path = root / note
    return list(iter_ids(path.read_text(encoding="utf-8"))) if path.is_file() else []


def test_promote_up_and_down_keeps_id_time_and_history(roots: tuple[Path, Path]) -> None:
    project, user = roots
    mt = MemTree(project)
    first = mt.add("The editor font size is 12 points.", to="bank/editor.md", now=NOW)
    mt.update(first.entry_id, "The editor font size is 14 points.", now=NOW)
    before = (project / "bank/editor.md").read_text(encoding="utf-8")
    older = [i for i in _ids(project, "bank/editor.md") if i != first.entry_id]
    assert len(older) == 1  # update kept the old words as an entry of their own, superseded by it
    out = _cli("promote", first.entry_id, "--to", "user", "--root", str(project), "--json")
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["entry_id"] == first.entry_id and doc["moved"] == [*older, first.entry_id] and not doc["already"]
    assert doc["to"] == "user" and doc["to_root"] == str(user) and doc["from_root"] == str(project)
    assert _ids(project, "bank/editor.md") == []
    moved = (user / "bank/editor.md").read_text(encoding="utf-8")
    for line in before.splitlines():
        if "memtree:" in line:
            assert line in moved  # id, created time, superseded= and by= as they were
    assert "editor" in json.loads((user / "tree-index.json").read_text(encoding="utf-8"))["nodes"][-1]["id"]
    hits = mt.search("editor font size", now=NOW).hits
    assert hits and hits[0].root == "user" and "14 points" in hits[0].text
    chain = MemTree(user).history(first.entry_id).chain
    assert [v.id for v in chain] == [*older, first.entry_id]
    back = _cli("promote", first.entry_id, "--to", "project", "--root", str(project))
    assert back.exit_code == 0 and "to the project root" in back.stdout, back.output
    assert _ids(project, "bank/editor.md") == [*older, first.entry_id] and _ids(user, "bank/editor.md") == []


def test_a_promote_stopped_between_its_two_writes_leaves_the_entry_in_both(
    roots: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from memtree.lifecycle import promote

    project, user = roots
    mt = MemTree(project)
    entry = mt.add("Always run the linter before pushing.", to="bank/habits.md", now=NOW).entry_id

    def killed(*args: object) -> None:
        raise KeyboardInterrupt  # the process dies after the target's write, before the source's

    with monkeypatch.context() as mp:
        mp.setattr(promote, "_remove", killed)
        with pytest.raises(KeyboardInterrupt):
            mt.promote(entry, "user", now=NOW)
    assert _ids(project, "bank/habits.md") == [entry] and _ids(user, "bank/habits.md") == [entry]
    done = mt.promote(entry, "user", now=NOW)  # again: nothing written twice, the removal finished
    assert done.already and _ids(project, "bank/habits.md") == [] and _ids(user, "bank/habits.md") == [entry]


def test_promote_refusals_are_one_line(roots: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    project, _ = roots
    missing = _cli("promote", "e-20260101-0000000000000000", "--root", str(project))
    assert missing.exit_code == 2 and missing.stderr.count("\n") == 1 and "no entry with id" in missing.stderr
    wrong = _cli("promote", "bank/project.md:3", "--to", "moon", "--root", str(project))
    assert wrong.exit_code == 2 and "--to must be user or project" in wrong.stderr
    monkeypatch.setenv("MEMTREE_HOME", str(project.parent / "nowhere"))
    none = _cli("promote", "bank/project.md:3", "--root", str(project))
    assert none.exit_code == 2 and "memtree init --user" in none.stderr and none.stderr.count("\n") == 1


def test_init_user_and_add_user(
    tmp_path: Path, make_root: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "mine"
    monkeypatch.setenv("MEMTREE_HOME", str(home))
    made = _cli("init", "--user", "--json")
    assert made.exit_code == 0 and json.loads(made.stdout)["root"] == str(home)
    project = make_root(PROJECT, name="project")
    added = _cli("add", "I write commit messages in English.", "--user", "--root", str(project), "--json")
    assert added.exit_code == 0, added.output
    assert json.loads(added.stdout)["path"].startswith("bank/")
    found = _cli("search", "--root", str(project), "commit messages English", "--json")
    assert found.exit_code == 0 and json.loads(found.stdout)["hits"][0]["root"] == "user"
    assert "commit messages" not in "".join(p.read_text(encoding="utf-8") for p in (project / "bank").rglob("*.md"))
    monkeypatch.chdir(tmp_path)  # no project root here: --user writes to the user root alone
    alone = _cli("add", "I prefer short functions.", "--user")
    assert alone.exit_code == 0, alone.output
    monkeypatch.setenv("MEMTREE_HOME", "")
    off = _cli("init", "--user")
    assert off.exit_code == 2 and "turns the user root off" in off.stderr


# --- the daemon, the hooks, MCP ---------------------------------------------------------------------


def test_the_daemon_runs_a_command_only_for_a_caller_whose_user_root_is_its_own(roots: tuple[Path, Path]) -> None:
    from memtree.serve import client
    from memtree.serve.dispatch import Dispatcher, EditWatcher
    from memtree.serve.maintenance import Maintenance

    project, _ = roots
    mt, ran = MemTree(project), []
    ticks = Maintenance(mt, print, every_h=0)
    requests = Dispatcher(mt, print, EditWatcher(mt, print), ticks, lambda m, r: ran.append(r) or {"code": 0}, float)
    here = {"argv": ["search", "dark theme"], "tz": os.environ.get("TZ"), "home": client.home_env()}
    assert requests.command(here) == {"code": 0}
    assert requests.command(here | {"home": client.home_env() | {"MEMTREE_HOME": ""}}) == {"fallback": True}
    assert requests.command({k: v for k, v in here.items() if k != "home"}) == {"fallback": True}  # an older client
    assert len(ran) == 1


def test_a_forwarded_search_and_a_hook_through_the_daemon_read_the_user_root(roots: tuple[Path, Path]) -> None:
    from test_serve import cli, serving

    project, _ = roots
    (project / "memtree.yaml").write_text("search:\n  reinforce: false\n", encoding="utf-8")
    with serving(project) as served:
        before = served.requests()
        run = cli(project, "search", "tabs spaces editor", "--json")
        assert served.requests() - before == 1, run.stderr  # answered by the daemon
        assert run.returncode == 0 and [h["root"] for h in json.loads(run.stdout)["hits"]] == ["user"]
        prompt = {"hook_event_name": "UserPromptSubmit", "session_id": "s", "cwd": str(project)}
        prompt["prompt"] = "Do I prefer tabs or spaces in my editor?"
        hooked = cli(project, "hook", "UserPromptSubmit", stdin=json.dumps(prompt).encode())
        assert served.requests() - before == 2, hooked.stderr
    said = json.loads(hooked.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "tabs over spaces" in said and "user:bank/preferences.md" in said


def test_the_hooks_recall_and_briefing_see_the_user_root(roots: tuple[Path, Path]) -> None:
    from memtree.hooks.protocol import parse
    from memtree.hooks.respond import respond

    project, user = roots
    (user / "bank/preferences.md").write_text(
        USER["bank/preferences.md"]
        + "- Answer me in Korean. <!-- memtree: id=e-20260501-00000000000000aa; created=2026-05-01T09:00:00+00:00; "
        "kind=preference -->\n",
        encoding="utf-8",
    )
    mt = MemTree(project)
    ask = {"hook_event_name": "UserPromptSubmit", "session_id": "s", "cwd": str(project)}
    out = respond(mt, parse("UserPromptSubmit", json.dumps(ask | {"prompt": "tabs or spaces?"}).encode()), NOW)
    assert "tabs over spaces" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    start = {"hook_event_name": "SessionStart", "session_id": "s", "cwd": str(project), "source": "startup"}
    brief = respond(mt, parse("SessionStart", json.dumps(start).encode()), NOW)
    assert "Answer me in Korean" in json.loads(brief)["hookSpecificOutput"]["additionalContext"]


def test_mcp_search_hits_carry_their_root(roots: tuple[Path, Path]) -> None:
    from memtree.serve.mcp_tools import tools

    project, _ = roots
    search = next(t for t in tools(MemTree(project)) if t.name == "search")
    found = search.fn(query="tabs spaces editor")
    assert [h["root"] for h in found["hits"]] == ["user"]


def test_promote_into_a_note_that_is_not_utf8_writes_nothing(roots: tuple[Path, Path]) -> None:
    project, user = roots
    entry = MemTree(project).add("Coffee after lunch only.", to="bank/habits.md", now=NOW).entry_id
    (user / "bank/habits.md").write_bytes(b"# habits\n\n- \xff\xfe\n")
    out = _cli("promote", entry, "--root", str(project))
    assert out.exit_code == 2 and "not UTF-8" in out.stderr and out.stderr.count("\n") == 1
    assert _ids(project, "bank/habits.md") == [entry]
