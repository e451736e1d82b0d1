"""Small builders shared by the tests (plain functions; fixtures live in conftest.py)."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
"""The repository; its bank/, memory/, recall/ and tree-index.json are the sample memory."""


def node(node_id: str, path: str | None = None, **fields: Any) -> dict[str, Any]:
    """A tree-index.json node with every key present."""
    raw: dict[str, Any] = {
        "id": node_id,
        "path": path,
        "keywords": [],
        "parent": None,
        "children": [],
        "weight": 1.0,
    }
    raw.update(fields)
    return raw


def tree_json(nodes: list[dict[str, Any]]) -> str:
    """A tree-index.json document for the given raw nodes."""
    return json.dumps({"version": 1, "nodes": nodes}, ensure_ascii=False, indent=2) + "\n"


def write_root(root: Path, files: dict[str, str | bytes], nodes: list[dict[str, Any]] | None = None) -> Path:
    """Create a memory root with the three tiers, the given notes and a tree of ``nodes``."""
    for tier in ("bank", "memory", "recall"):
        (root / tier).mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        written_now(path)
    (root / "tree-index.json").write_text(tree_json(nodes or []), encoding="utf-8")
    return root


def written_now(path: Path) -> None:
    """Stamp ``path`` with this process's clock: a note a test writes is as old as the test says.

    Why: under libfaketime the kernel stamps files with the real clock while Python reads the
    faked one (it does not shift statx), so a note just written would look years old.
    """
    now = time.time_ns()
    os.utime(path, ns=(now, now))


def bump(path: Path, text: str) -> None:
    """Rewrite a note and move its mtime forward, so the change is seen whatever the clock resolution."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text, encoding="utf-8")
    mtime = max(path.stat().st_mtime_ns, before + 1_000_000_000)
    os.utime(path, ns=(mtime, mtime))


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file of a root except the derived .memtree/ state, for 'nothing was written' checks."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".memtree" not in p.relative_to(root).parts
    }


SECTION = "\n## 회고 {n}\n\n{n}번째 회고: 크론 작업이 겹친 원인과 lock 대기 시간을 정리했다.\n"


def grown(note: Path, past: int = 10_240, section: str = SECTION) -> str:
    """The note's text with Korean sections (``section`` formatted with n) appended past ``past`` bytes."""
    text = note.read_text(encoding="utf-8").rstrip("\n") + "\n"
    n = 0
    while len(text.encode()) <= past:
        n += 1
        text += section.format(n=n)
    return text


def assert_one_line_error(result: Any, *needles: str) -> str:
    """Exit 2, exactly one line on stderr starting with 'memtree:', no traceback; returns the line."""
    assert result.exit_code == 2, (result.stdout, result.stderr, result.exception)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("memtree:"), result.stderr
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


VOLATILE_SIGNALS = ("age_days", "recalls")
"""Signals that change between two searches of the same memory: time passes and searches count."""


def steady(signals: dict[str, float]) -> dict[str, float]:
    """A hit's signals without the ones time and use change (for comparing two searches)."""
    return {k: v for k, v in signals.items() if k not in VOLATILE_SIGNALS}


def final_score(signals: dict[str, float]) -> float:
    """keyword (or blended) × evidence × adjacency × decay × recency × scope, as --explain prints it."""
    out = signals.get("blended", signals["keyword"])
    for factor in ("evidence", "adjacency", "decay", "recency", "scope"):
        out *= signals.get(factor, 1.0)
    return out


DEADLINE_S = 10.0
"""How long a test waits for something another thread or process does; generous for a loaded CI box."""


def wait_for(what: Callable[[], object], message: str, timeout: float = DEADLINE_S) -> None:
    """Poll until ``what()`` is truthy; fail with ``message`` after ``timeout`` seconds (never a fixed sleep)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if what():
            return
        time.sleep(0.05)
    if what():  # a last look: the deadline may have passed while this thread was not scheduled
        return
    raise AssertionError(f"gave up waiting: {message}")


_FACT_WORDS = "사과 바다 기차 연필 구름 책상 우산 시계 고양이 나무 bridge candle meadow rocket violin harbor".split()


def distinct_fact(worker: int, i: int, per_worker: int) -> str:
    """The ``i``-th fact of concurrent writer ``worker``: no other worker's or index's shares it — its own
    words, not just its own numbers (so dedup never merges two of them)."""
    n = worker * per_worker + i
    picks = [_FACT_WORDS[(n * k + k) % len(_FACT_WORDS)] for k in (1, 3, 7)]
    return f"w{worker}x{i}: {' '.join(picks)} {n * 7919 % 104729}"


BENCH = Path(__file__).resolve().parent.parent / "bench"


def load_bench(name: str) -> ModuleType:
    """A bench/ script by path: bench/ never goes on sys.path, where its names would shadow others'."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module
