"""bench/team.py at a small size: three clones doing random rounds through git end identical and whole."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import team

pytestmark = pytest.mark.skipif(subprocess.run(["git", "--version"], capture_output=True).returncode != 0, reason="git")


@pytest.mark.parametrize("seed", [7, 11])
def test_three_clones_end_identical_with_every_fact_once(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "MEMTREE_NO_DAEMON"):
        monkeypatch.setenv(key, "")  # so they are restored after the test: team.isolated_git sets them
    result = team.run(seed, rounds=3, n=3, work=tmp_path)
    assert result["failed"] == []
    assert result["facts"]  # the run wrote something to check
