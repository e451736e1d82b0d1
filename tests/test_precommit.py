"""The shipped hook (.pre-commit-hooks.yaml, id memtree-check) run by the pre-commit tool itself."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is needed to run pre-commit")


def run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_the_memtree_check_hook_passes_a_clean_memory_and_refuses_an_oversized_note(tmp_path: Path) -> None:
    pytest.importorskip("pre_commit")
    if not (REPO / ".git").exists():
        pytest.skip("try-repo needs the memtree source as a git checkout")
    user = tmp_path / "user-repo"
    user.mkdir()
    for part in ("bank", "memory", "recall", "tree-index.json"):
        src = REPO / part
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, user / part)
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    env.pop("MEMTREE_ROOT", None)
    for args in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "notes"]):
        assert run(args, user, env).returncode == 0
    hook = [sys.executable, "-m", "pre_commit", "try-repo", str(REPO), "memtree-check", "--all-files"]
    clean = run(hook, user, env)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "memtree check" in clean.stdout and "Passed" in clean.stdout

    big = user / "bank" / "project" / "huge.md"
    big.write_text("# huge\n\n" + "\n\n".join(f"## 절 {i}\n\n" + "긴 문장입니다. " * 60 for i in range(12)) + "\n")
    assert big.stat().st_size > 10_240
    assert run(["git", "add", "-A"], user, env).returncode == 0
    refused = run(hook, user, env)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "bank/project/huge.md: oversized" in refused.stdout
    assert "Failed" in refused.stdout
