"""Shared fixtures: every test runs in its own tmp_path, away from any real memory root."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterator
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO, write_root
from hypothesis import HealthCheck, settings

# Why: CI and the people running the suite share a loaded 2-core machine; a property holds or fails
# whatever the time an example takes, so neither a slow example nor slow data generation fails it.
settings.register_profile("memtree", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("memtree")

SAMPLE_PARTS = ("bank", "memory", "recall", "tree-index.json")


@pytest.fixture(autouse=True, scope="session")
def _no_user_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Before any fixture of a wider scope runs: MEMTREE_HOME names a folder that does not exist, so nothing
    of the suite reads or writes the real user's own root (subprocesses inherit it)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MEMTREE_HOME", str(tmp_path_factory.mktemp("home") / "no-user-home"))
        yield


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No MEMTREE_ROOT from the environment, no user root of the real user's home (MEMTREE_HOME names a folder
    that does not exist; a test that wants one makes it), and a working directory inside tmp_path."""
    monkeypatch.delenv("MEMTREE_ROOT", raising=False)
    monkeypatch.setenv("MEMTREE_HOME", str(tmp_path / "no-user-home"))
    monkeypatch.chdir(tmp_path)


AGE_DAYS = int(os.environ.get("MEMTREE_TEST_AGE_DAYS", "0"))
"""Run the suite as if it were that many days later: the sample memory's dates are moved back.

Why not faketime: Python stats files through statx, which libfaketime does not shift, so every
file a test writes would look that old too — a day no user lives. The sample's own dates are
the only ones that age between runs (`MEMTREE_TEST_AGE_DAYS=400 pytest`)."""
_DATE = re.compile(r"\b(20\d\d)-([01]\d)-([0-3]\d)\b")


def _aged(text: str, days: int) -> str:
    def back(m: re.Match[str]) -> str:
        return (date(int(m[1]), int(m[2]), int(m[3])) - timedelta(days=days)).isoformat()

    return _DATE.sub(back, text)


@pytest.fixture
def sample_root(tmp_path: Path) -> Path:
    """A copy of the repository's sample memory (bank/, memory/, recall/, tree-index.json)."""
    root = tmp_path / "sample"
    root.mkdir()
    for part in SAMPLE_PARTS:
        src = REPO / part
        if src.is_dir():
            shutil.copytree(src, root / part)
        else:
            shutil.copy2(src, root / part)
    if AGE_DAYS:
        for path in sorted(root.rglob("*.md")):
            # the dates written in notes age; file names stay, as tests name them
            path.write_text(_aged(path.read_text(encoding="utf-8"), AGE_DAYS), encoding="utf-8")
    return root


@pytest.fixture
def make_root(tmp_path: Path) -> Callable[..., Path]:
    """``make_root({"bank/a.md": "..."}, nodes=[...])`` → a small memory root in tmp_path."""

    def build(files: dict[str, str | bytes], nodes: list[dict[str, Any]] | None = None, name: str = "root") -> Path:
        return write_root(tmp_path / name, files, nodes)

    return build


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With MEMTREE_TEST_AGE_DAYS, run only the tests that read the sample memory: nothing else ages."""
    if not AGE_DAYS:
        return
    aged = [item for item in items if "sample_root" in getattr(item, "fixturenames", ())]
    config.hook.pytest_deselected(items=[item for item in items if item not in aged])
    items[:] = aged
