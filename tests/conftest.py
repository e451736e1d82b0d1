"""Shared fixtures: every test runs in its own tmp_path, away from any real memory root."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO, write_root

SAMPLE_PARTS = ("bank", "memory", "recall", "tree-index.json")


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No MEMTREE_ROOT from the environment and a working directory inside tmp_path."""
    monkeypatch.delenv("MEMTREE_ROOT", raising=False)
    monkeypatch.chdir(tmp_path)


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
    return root


@pytest.fixture
def make_root(tmp_path: Path) -> Callable[..., Path]:
    """``make_root({"bank/a.md": "..."}, nodes=[...])`` → a small memory root in tmp_path."""

    def build(files: dict[str, str | bytes], nodes: list[dict[str, Any]] | None = None, name: str = "root") -> Path:
        return write_root(tmp_path / name, files, nodes)

    return build
