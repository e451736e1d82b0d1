"""memtree.schema: every command's --json is one object with exactly the documented keys, in one convention.

One run of every command (and subcommand, and form) over a copy of the sample memory feeds the tests:
the keys match ``schema.KEYS`` and ``schema.OBJECTS``, which match the tables of docs/reference/json-output.md;
times are ISO 8601 with an offset; no ``notices``; a key has one JSON type wherever it appears.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from datetime import datetime
from typing import Any

import click
import pytest
import typer
from helpers import REPO, grown
from typer.testing import CliRunner

from memtree import schema
from memtree.cli.app import app
from memtree.lifecycle.recall import Excerpt, Sync
from memtree.write.retain import Conflict, Created, Duplicate, Merged

Doc = dict[str, Any]
MAPS = frozenset({"signals", "tiers", "categories"})
"""Objects keyed by names (a signal, a tier, a category), not by schema keys."""
ISO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d")
REDIS_OLD = "Redis 연결 풀 크기는 10이면 충분하다"
REDIS_NEW = "Redis 연결 풀은 필요 없다"  # its negation in other words: a conflict
POOL = "# pool\n\n- Redis 연결 풀은 50으로 올려야 안정적이다.\n- Redis 연결 풀은 50으로 올려야 안정적이다 확실히\n"


def run(*args: str, stdin: str | None = None, code: int = 0, stream: str = "stdout") -> str:
    result = CliRunner().invoke(app, list(args), input=stdin)
    assert result.exit_code == code, (args, result.stdout, result.stderr, result.exception)
    return str(getattr(result, stream))


def one(*args: str, code: int = 0) -> Doc:
    doc = json.loads(run(*args, "--json", code=code))
    assert isinstance(doc, dict), (args, doc)
    return doc


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Doc]]:
    """Form (as in schema.KEYS) → the JSON objects every command printed in one run over the sample."""
    from memtree.serve.watch import HEARTBEAT_FILE, Watcher

    base = tmp_path_factory.mktemp("schema")
    root = base / "sample"
    for part in ("bank", "memory", "recall", "tree-index.json"):
        (shutil.copytree if (REPO / part).is_dir() else shutil.copy2)(REPO / part, root / part)
    r = ("--root", str(root))
    out: dict[str, list[Doc]] = {}

    def put(form: str, doc: Doc) -> Doc:
        out.setdefault(form, []).append(doc)
        return doc

    put("init", one("init", str(base / "fresh")))
    (root / "bank/infra").mkdir()
    (root / "bank/infra/pool.md").write_text(POOL, encoding="utf-8")
    (root / "bank/infra/links.md").write_text("- relates_to [[identity/values]] and [[infra/pool]]\n", encoding="utf-8")
    put("index", one("index", *r))
    put("search", one("search", "크론 스케줄", *r))
    put("search", one("search", "양자역학 블랙홀 증명", *r, code=1))
    queries = [{"id": "q1", "query": "가치관"}, {"id": "q2", "query": "양자역학 블랙홀"}, {"id": "q3"}]
    lines = "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries) + "not json\n"
    for line in run("search", "--batch", "--json", "-k", "3", *r, stdin=lines).splitlines():
        doc = json.loads(line)
        put("search --batch (bad line)" if "error" in doc else "search --batch", doc)
    put("context", one("context", "가치관", "--budget", "300", *r))
    put("get", one("get", "identity/values", *r))
    put("links", one("links", "infra/pool", *r))
    start = {"hook_event_name": "SessionStart", "session_id": "s1", "cwd": str(root), "source": "startup"}
    put("hook", json.loads(run("hook", "SessionStart", "--json", *r, stdin=json.dumps(start))))
    put("claude", one("claude"))
    put("claude install", one("claude", "install", "--print"))
    for text in ("PR마다 CHANGELOG를 고친다", "PR마다 CHANGELOG를 고친다"):  # created, then duplicate
        put("add", one("add", text, "--to", "project/rules", *r))
    put("add", one("add", REDIS_OLD, "--to", "project/decisions", *r))
    conflicted = put("add", one("add", REDIS_NEW, "--to", "project/decisions", *r))
    put("log", one("log", "배포 끝, 에러 없음", *r))
    put("conflicts", one("conflicts", *r))
    put("conflicts --scan", one("conflicts", "--scan", *r))
    cron = root / "bank/technical/cron-design.md"
    cron.write_text(grown(cron), encoding="utf-8")
    put("check", one("check", *r, code=1))  # the note over the limit
    put("split", one("split", *r))
    put("check", one("check", *r))

    def run_once(self: Watcher) -> None:  # the lines a real run logs, without an observer
        self.log("re-indexed bank/identity/values.md")
        self.log("warning: bank/x.md: not UTF-8")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Watcher, "run", run_once)
        for line in run("watch", "--json", *r).splitlines():
            put("watch", json.loads(line))
    from memtree.serve import daemon as daemon_module
    from memtree.serve import mcp as mcp_module

    def serve_once(self: daemon_module.Daemon, address: object = None) -> None:  # a daemon's log, no socket
        self.log("listening on .memtree/serve.sock")
        self.log("stopped: idle for 300 s")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(daemon_module.Daemon, "serve", serve_once)
        mp.setattr(mcp_module, "serve_stdio", lambda mt: None)
        for form in ("serve", "mcp"):  # their --json is their log, on stderr (mcp's stdout is the protocol)
            for line in run(form, "--json", *r, stream="stderr").splitlines():
                put(form, json.loads(line))
    put("distill", one("distill", *r))
    chat = [("user", "pytest fails with `TypeError: unhashable type`"), ("assistant", "Fixed it: a tuple.")]
    transcript = base / "chat.jsonl"
    transcript.write_text(  # turns of 2024: quiet for long at any real clock, so the flush examines them
        "".join(json.dumps({"conversation": "c1", "role": role, "text": text, "ts": f"2024-05-08T13:5{i}:00Z"}) + "\n"
                for i, (role, text) in enumerate(chat)),
        encoding="utf-8",
    )  # fmt: skip
    put("ingest", one("ingest", str(transcript), *r))
    export = base / "memory.json"
    export.write_text(run("export", "--json", *r), encoding="utf-8")
    put("export", json.loads(export.read_text(encoding="utf-8")))
    put("import", one("import", str(export), "--root", str(base / "fresh")))
    put("banks", one("banks", *r))
    put("banks disable", one("banks", "disable", "technical", *r))
    put("banks enable", one("banks", "enable", "technical", *r))
    put("decay", one("decay", "--all", *r))
    put("decay", one("decay", *r))
    put("decay --archive", one("decay", "--archive", "--dry-run", *r))
    put("consolidate", one("consolidate", "--dry-run", *r))
    put("consolidate", one("consolidate", *r))
    put("recall", one("recall", *r))
    put("recall sync", one("recall", "sync", "--dry-run", *r))
    queries_file = base / "q.jsonl"
    queries_file.write_text(json.dumps({"id": "a", "query": "크론 스케줄", "expected": ["technical/cron-design"]}))
    put("eval", one("eval", str(queries_file), *r))
    beat = {"pid": os.getpid(), "started": "2026-01-05T09:00:00+09:00", "time": time.time(), "running": True}
    (root / ".memtree" / HEARTBEAT_FILE).write_text(json.dumps(beat | {"actions": 2}), encoding="utf-8")
    put("status", one("status", *r))
    entry = one("add", "히스토리용 항목: 로그 보관은 30일이다", "--to", "project/rules", *r)["entry_id"]
    put("update", one("update", entry, "히스토리용 항목: 로그 보관은 14일이다", *r))
    put("forget", one("forget", entry, "--reason", "test", *r))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MEMTREE_HOME", str(base / "home"))
        put("init", one("init", "--user"))
        moving = one("add", "옮길 항목: 탭 대신 공백 네 칸을 쓴다", "--to", "project/rules", *r)["entry_id"]
        put("promote", one("promote", moving, "--to", "user", *r))
        put("search", one("search", "탭 대신 공백", *r))
    put("history", one("history", *r))
    put("undo", one("undo", "--dry-run", *r))
    put("undo", one("undo", *r))
    put("conflicts resolve", one("conflicts", "resolve", conflicted["conflict_id"], "--keep", "both", *r))
    viewer = put("view", one("view", "--no-open", *r))  # starts `memtree serve --http`: stopped at once
    os.kill(viewer["pid"], signal.SIGTERM)
    git_env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@x",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@x",
    }
    with pytest.MonkeyPatch.context() as env:
        for key, value in git_env.items():
            env.setenv(key, value)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        put("git", one("git", *r))
        put("git setup", one("git", "setup", *r))
        put("sync", one("sync", *r))  # no upstream: committed here alone
    sides = [base / name for name in ("o.md", "a.md", "b.md")]
    for side, text in zip(sides, ("- x\n", "- x\n- a\n", "- x\n- b\n"), strict=True):
        side.write_text(text, encoding="utf-8")
    put("merge-driver", one("merge-driver", *map(str, sides), "bank/n.md"))
    return out


def command_paths(command: click.Command, prefix: str = "") -> list[tuple[str, click.Command]]:
    """Every command and subcommand of the app, by the words that call it."""
    found = []
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        path = f"{prefix} {name}".strip()
        found += [(path, sub), *command_paths(sub, path)]
    return found


def test_every_command_takes_json_and_has_its_keys_written_down() -> None:
    paths = command_paths(typer.main.get_command(app))
    assert {"search", "add", "recall sync", "banks enable", "conflicts resolve"} <= {p for p, _ in paths}
    for path, command in paths:
        assert any("--json" in p.opts for p in command.params), f"`memtree {path}` has no --json"
        assert path in {form.split(" --")[0] for form in schema.KEYS}, f"`memtree {path}` has no schema.KEYS entry"


def test_every_form_prints_one_object_with_exactly_its_keys(outputs: dict[str, list[Doc]]) -> None:
    assert set(outputs) == set(schema.KEYS)
    for form, docs in outputs.items():
        for doc in docs:
            assert set(doc) == schema.KEYS[form], (form, set(doc) ^ schema.KEYS[form])


def objects(outputs: dict[str, list[Doc]]) -> dict[str, list[Doc]]:
    """The objects of every list the run printed, by their name in schema.OBJECTS."""
    lists = {
        "hit": ("search", "hits"),
        "conflict": ("conflicts", "conflicts"),
        "contradiction": ("conflicts --scan", "contradictions"),
        "bank": ("banks", "banks"),
        "split": ("split", "splits"),
        "problem": ("check", "problems"),
        "proposal": ("distill", "proposals"),
        "cycle": ("ingest", "cycles"),
        "entry": ("decay", "entries"),
        "merge": ("consolidate", "merges"),
        "change": ("history", "changes"),
        "commit": ("history", "commits"),
    }
    found = {name: [o for doc in outputs[form] for o in doc[key]] for name, (form, key) in lists.items()}
    found["bank"] += [b for doc in outputs["status"] for b in doc["banks"]]
    found["conflict"] += [doc["conflict"] for doc in outputs["conflicts resolve"]]
    found["entry"] += [a for doc in outputs["consolidate"] for a in doc["archive_candidates"]]
    found["proposal"] += [p for doc in outputs["ingest"] for p in doc["proposals"]]
    found["excerpt"] = [o for doc in outputs["recall sync"] for k in ("kept", "promoted", "evicted") for o in doc[k]]
    found["change"] += [c for doc in outputs["undo"] for c in doc["undone"]]
    return found


def test_the_listed_objects_have_exactly_their_keys(outputs: dict[str, list[Doc]]) -> None:
    found = objects(outputs)
    for name, items in found.items():
        # excerpts and commits (the sample is no git repository): test_shapes_built_directly
        assert items or name in ("excerpt", "commit"), f"the run printed no {name}"
        for item in items:
            assert set(item) == schema.OBJECTS[name], (name, set(item) ^ schema.OBJECTS[name])
    batch = [h for doc in outputs["search --batch"] for h in doc["hits"]]
    assert batch and all(set(h) == schema.OBJECTS["hit"] - schema.TEXT_KEYS for h in batch)  # no --budget: no text


def test_shapes_built_directly_have_their_keys_too() -> None:
    common: dict[str, Any] = {"node": "n", "path": "bank/n.md", "similarity": 0.9, "how": "to"}
    decisions = [
        Created(**common, entry_id="e-1"),
        Merged(**common, entry_id="e-1", merged_id="e-2", strategy="longer"),
        Duplicate(**common, existing="e-1"),
        Conflict(**common, entry_id="e-3", conflict_id="c-1", other="old text"),
    ]
    for d in decisions:
        doc = schema.decision(d)
        assert set(doc) == schema.KEYS["add"] and doc["decision"] == type(d).__name__.lower()
    assert schema.decision(decisions[1])["merged_id"] == "e-2" and schema.decision(decisions[2])["entry_id"] is None
    ex = Excerpt("Redis 풀은 50", "bank/infra/ops.md", (3, 3), "abc", "e-redis", 4, 0.9)
    synced = schema.recall_sync(Sync((ex,), (ex,), ((ex, "source changed"),), (ex,), 12, 2000), dry_run=True)
    for key in ("kept", "promoted", "evicted"):
        assert set(synced[key][0]) == schema.OBJECTS["excerpt"] and synced[key][0]["recall_count"] == 4
    assert set(synced["dropped"][0]) == schema.OBJECTS["excerpt"] | {"why"}
    assert set(schema.recall([ex], {"tokens": 12, "budget": 2000})["excerpts"][0]) == schema.OBJECTS["excerpt"]
    from memtree.notes.git import Commit

    made = schema.commit(Commit("0" * 40, "2026-03-02T10:00:00+09:00", "A. Person", "memtree add: x"))
    assert set(made) == schema.OBJECTS["commit"] and made["time"] == "2026-03-02T10:00:00+09:00"


def walk(value: Any, key: str = "") -> list[tuple[str, Any]]:
    """Every (key, value) pair in a JSON value, nested ones too; the names keying MAPS are not keys."""
    pairs: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        for k, v in value.items():
            pairs += walk(v, key) if key in MAPS else [(k, v), *walk(v, k)]
    elif isinstance(value, list):
        for v in value:
            pairs += walk(v, key)
    return pairs


def json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", list: "list", dict: "object"}[type(value)]


def test_one_convention_times_warnings_and_one_type_per_key(outputs: dict[str, list[Doc]]) -> None:
    pairs = [p for form, docs in outputs.items() if form != "export" for doc in docs for p in walk(doc)]
    times = [(k, v) for k, v in pairs if k == "time" or k.endswith("_at")]
    assert {k for k, v in times if v is not None} >= {"time", "created_at", "started_at", "finished_at"}
    for k, v in times:
        assert v is None or datetime.fromisoformat(v).tzinfo is not None, (k, v)
    for k, v in pairs:
        assert k not in ("notices", "notice"), "notices are called warnings"
        assert not (isinstance(v, str) and ISO_TIME.match(v)) or k == "time" or k.endswith("_at"), (k, v)
        assert not (isinstance(v, (int, float)) and 1e9 <= v < 1e11), f"{k}: {v} looks like epoch seconds"
    types: dict[str, set[str]] = {}
    for k, v in pairs:
        if v is not None:
            types.setdefault(k, set()).add(json_type(v))
    assert {k: t for k, t in types.items() if len(t) > 1} == {}
    assert all(isinstance(v, int) for k, v in pairs if k.endswith("_count") and v is not None)


# --- the docs' tables say the same ---------------------------------------------------------------


def readme_tables() -> dict[str, dict[str, list[str]]]:
    """The tables of docs/reference/json-output.md, by their first header: first cell → other cells."""
    section = (REPO / "docs" / "reference" / "json-output.md").read_text(encoding="utf-8")
    tables: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    for line in section.splitlines():
        if not line.startswith("|"):
            current = None
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if current is None:
            current = tables[cells[0]] = {}
        elif not set(cells[0]) <= set("-: "):
            current[cells[0].strip("`")] = cells[1:]
    return tables


def keys_in(cell: str) -> set[str]:
    return set(re.findall(r"`([^`]+)`", cell))


def test_the_readme_lists_every_form_and_object_with_the_same_keys() -> None:
    tables = readme_tables()
    assert {form: keys_in(cells[0]) for form, cells in tables["command"].items()} == schema.KEYS
    assert {name: keys_in(cells[0]) for name, cells in tables["object"].items()} == schema.OBJECTS


def admits(kind: str, value: Any) -> bool:
    """Whether a README type (``int``, ``time or null``, …) admits a JSON value."""
    tests = {
        "null": lambda v: v is None,
        "string": lambda v: isinstance(v, str),
        "time": lambda v: isinstance(v, str) and datetime.fromisoformat(v).tzinfo is not None,
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "bool": lambda v: isinstance(v, bool),
        "list": lambda v: isinstance(v, list),
        "object": lambda v: isinstance(v, dict),
    }
    return any(tests[k.strip()](value) for k in kind.split(" or "))


def test_the_readme_gives_every_key_a_type_the_output_has(outputs: dict[str, list[Doc]]) -> None:
    glossary = readme_tables()["key"]
    documented = set().union(*schema.KEYS.values(), *schema.OBJECTS.values())
    assert set(glossary) == documented
    seen = [(k, v) for form, docs in outputs.items() for doc in docs for k, v in doc.items()]
    seen += [(k, v) for items in objects(outputs).values() for item in items for k, v in item.items()]
    for k, v in seen:
        assert admits(glossary[k][0], v), f"{k}: {v!r} is not {glossary[k][0]}"
