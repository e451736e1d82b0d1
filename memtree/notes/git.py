"""git, when the memory root is in a repository: the log of a path (read-only) and `git.autocommit`.

memtree runs the ``git`` program (no library); when it is not installed, or the root is in no
repository, history shows memtree's own journal alone and autocommit is skipped with one warning.
Reading never takes git's optional locks (``GIT_OPTIONAL_LOCKS=0``), so `memtree history` does not
write to the repository.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

HISTORY_COMMITS = 20
"""Commits a log lists when the caller does not say (memtree.write.history passes its own limit)."""
GIT_TIMEOUT_S = 60.0
"""A git call taking longer is given up (a commit runs the repository's hooks, which may be slow)."""
_SEP = "\x1f"
_warned: set[tuple[str, str]] = set()
log_ = logging.getLogger("memtree")


@dataclass(frozen=True)
class Commit:
    """One git commit that touched what history was asked about."""

    commit: str
    time: str  # ISO 8601 with offset (the author date)
    author: str
    subject: str


def _run(root: Path, args: list[str], read_only: bool = True) -> subprocess.CompletedProcess[str] | None:
    """``git args`` in ``root``; None when git is not installed or did not answer in time."""
    exe = shutil.which("git")
    if exe is None:
        return None
    env = dict(os.environ)
    if read_only:
        env["GIT_OPTIONAL_LOCKS"] = "0"
    try:
        return subprocess.run(
            [exe, "-c", "core.quotepath=off", *args],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None


def committed_text(root: Path, path: str) -> str | None:
    """The text of ``path`` (root-relative) at git's HEAD, or None (no repository, not committed, no git)."""
    done = _run(root, ["show", f"HEAD:./{path}"])
    return done.stdout if done is not None and done.returncode == 0 else None


def changed_since_head(root: Path, under: str) -> list[str]:
    """Root-relative paths under ``under`` whose text differs from git's HEAD ([] without git or a repository)."""
    done = _run(root, ["diff", "--name-only", "--relative", "HEAD", "--", under])
    return done.stdout.splitlines() if done is not None and done.returncode == 0 else []


def in_repository(root: Path) -> bool:
    """Whether ``root`` is inside a git work tree (False when git is not installed)."""
    done = _run(root, ["rev-parse", "--is-inside-work-tree"])
    return done is not None and done.returncode == 0 and done.stdout.strip() == "true"


def log(
    root: Path, paths: Sequence[str] = (), limit: int = HISTORY_COMMITS, mentions: str | None = None
) -> list[Commit]:
    """The newest ``limit`` commits touching ``paths`` (none given: the whole root), or whose diff adds
    or removes the string ``mentions`` (an entry id); [] when git or a repository is missing."""
    if limit <= 0 or not in_repository(root):
        return []
    args = ["log", f"-n{limit}", f"--format=%H{_SEP}%aI{_SEP}%an{_SEP}%s"]
    if mentions:
        args.append(f"-S{mentions}")
    done = _run(root, [*args, "--", *(paths or ["."])])
    if done is None or done.returncode != 0:
        return []
    out = []
    for line in done.stdout.splitlines():
        parts = line.split(_SEP)
        if len(parts) == 4:
            out.append(Commit(*parts))
    return out


def autocommit(root: Path, command: str, summary: str, paths: tuple[str, ...]) -> str | None:
    """Commit ``paths`` (a change's files), with a message naming its command; the commit's hash, or None.

    Skipped — with one warning for the root, on stderr through the ``memtree`` logger — when git is
    not installed, the root is in no repository, git is in the middle of a merge or rebase (a commit
    would land inside it), or git refuses (no user name, a failing hook).
    """
    message = f"memtree {command}: {summary}" if summary else f"memtree {command}"
    if shutil.which("git") is None:
        _warn(root, "git.autocommit is on but git is not installed; nothing was committed")
        return None
    if not in_repository(root):
        _warn(root, f"git.autocommit is on but {root} is not in a git repository (git init it); nothing was committed")
        return None
    busy = in_progress(root)
    if busy is not None:
        _warn(root, f"git is in the middle of a {busy}: nothing committed into it (finish it, then `memtree sync`)")
        return None
    added = _run(root, ["add", "-A", "--", *paths], read_only=False)
    done = _run(root, ["commit", "-q", "-m", message, "--", *paths], read_only=False) if added else None
    if added is None or done is None or added.returncode != 0 or done.returncode != 0:
        failed = next((d for d in (added, done) if d is not None and d.returncode != 0), None)
        why = (failed.stderr or failed.stdout).strip().splitlines()[-1:] if failed is not None else ["no answer"]
        _warn(root, f"git.autocommit: git did not commit ({why[0] if why else 'unknown error'})")
        return None
    head = _run(root, ["rev-parse", "HEAD"])
    return head.stdout.strip() if head is not None and head.returncode == 0 else None


def _warn(root: Path, message: str) -> None:
    """Say a notice once per root and message in this process."""
    key = (str(root), message)
    if key not in _warned:
        _warned.add(key)
        log_.warning("memtree: warning: %s", message)


DRIVER = "memtree"
"""The merge driver's name in .gitattributes (``merge=memtree``) and in git config (``merge.memtree.*``)."""
ATTRIBUTES = (
    "# memtree: merge memory by its structure (memtree merge-driver; `memtree git setup` in each clone)",
    f"tree-index.json merge={DRIVER}",
    f"conflicts.json merge={DRIVER}",
    f"bank/**/*.md merge={DRIVER}",
    f"memory/**/*.md merge={DRIVER}",
    f"recall/**/*.md merge={DRIVER}",
)
"""The lines `memtree init` puts in the root's .gitattributes."""


def attributes_missing(text: str) -> list[str]:
    """The lines of :data:`ATTRIBUTES` a .gitattributes text lacks (the comment only when a rule is missing)."""
    have = {ln.strip() for ln in text.splitlines()}
    rules = [ln for ln in ATTRIBUTES[1:] if ln not in have]
    return [ATTRIBUTES[0], *rules] if rules and ATTRIBUTES[0] not in have else rules


def driver_command(python: str) -> str:
    """The ``merge.memtree.driver`` value: this interpreter running memtree, so git finds it without PATH."""
    import shlex

    return f"{shlex.quote(python)} -m memtree merge-driver %O %A %B %P"


def setup(root: Path, python: str) -> list[str]:
    """Set ``merge.memtree.name`` and ``.driver`` in the root's repository; the settings changed.

    MemtreeError when git is missing or the root is in no repository.
    """
    from memtree.errors import MemtreeError

    if shutil.which("git") is None:
        raise MemtreeError("git is not installed: the merge driver needs it")
    if not in_repository(root):
        raise MemtreeError(f"{root} is not in a git repository: run `git init` (or clone) first")
    wanted = {
        f"merge.{DRIVER}.name": "memtree: merge memory by its structure",
        f"merge.{DRIVER}.driver": driver_command(python),
    }
    changed = []
    for key, value in wanted.items():
        now = _run(root, ["config", "--get", key])
        if now is not None and now.returncode == 0 and now.stdout.rstrip("\n") == value:
            continue
        done = _run(root, ["config", key, value], read_only=False)
        if done is None or done.returncode != 0:
            why = (done.stderr.strip() if done is not None else "") or "no answer"
            raise MemtreeError(f"git config {key} failed: {why}")
        changed.append(key)
    return changed


def configured_driver(root: Path) -> str | None:
    """This clone's ``merge.memtree.driver``, or None when unset (or no repository)."""
    done = _run(root, ["config", "--get", f"merge.{DRIVER}.driver"])
    return done.stdout.strip() if done is not None and done.returncode == 0 and done.stdout.strip() else None


def in_progress(root: Path) -> str | None:
    """What git is in the middle of in the root's repository ("merge", "rebase", …), or None.

    Why: a commit made now would land inside the merge or rebase a person (or git) has stopped.
    """
    done = _run(root, ["rev-parse", "--git-dir"])
    if done is None or done.returncode != 0:
        return None
    git_dir = (root / done.stdout.strip()).resolve()
    for name, what in (
        ("rebase-merge", "rebase"),
        ("rebase-apply", "rebase"),
        ("MERGE_HEAD", "merge"),
        ("CHERRY_PICK_HEAD", "cherry-pick"),
        ("REVERT_HEAD", "revert"),
    ):
        if (git_dir / name).exists():
            return what
    return None


SYNC_ATTEMPTS = 3
"""Pulls and pushes `memtree sync` tries when the remote moves in between, before it gives up."""
MEMORY_PATHS = ("bank", "memory", "recall", "tree-index.json", "conflicts.json", ".gitattributes")
"""What `memtree sync` commits: memory's tracked files (never other work in the repository)."""


@dataclass(frozen=True)
class Synced:
    """What `memtree sync` did: its outcome ("ok", "waiting", "local", "failed") and one line saying so."""

    outcome: str
    message: str
    commit: str | None = None
    attempts: int = 0


def _fails(done: subprocess.CompletedProcess[str] | None) -> str | None:
    """Why a git call failed (its last line), or None when it succeeded."""
    if done is None:
        return "git did not answer"
    if done.returncode == 0:
        return None
    lines = (done.stderr or done.stdout).strip().splitlines()
    return lines[-1] if lines else f"exit {done.returncode}"


def summary(names: list[tuple[str, str]]) -> str:
    """The commit message naming what changed ("memtree sync: 2 notes, 1 log, tree-index.json (bank/a.md, …)")
    from (status, path) pairs."""
    kinds = {"bank": "note", "memory": "log", "recall": "recall excerpt file"}
    counts: dict[str, int] = {}
    for _status, path in names:
        top = path.split("/", 1)[0]
        kind = kinds.get(top, path)
        counts[kind] = counts.get(kind, 0) + 1
    parts = [
        f"{n} {k}{'s' if n > 1 and k in kinds.values() else ''}" if k in kinds.values() else k
        for k, n in counts.items()
    ]
    shown = ", ".join(p for _s, p in names[:3]) + (", …" if len(names) > 3 else "")
    return f"memtree sync: {', '.join(parts)} ({shown})"


def sync(root: Path, rebase: bool = True, attempts: int = SYNC_ATTEMPTS) -> Synced:
    """Commit memory's changes, pull (the merge driver merging), push; retried while the remote moves.

    Never commits into a merge or rebase in progress: it waits (outcome "waiting") and says why.
    A pull git cannot finish is undone (``--abort``) so the clone is left as it was before it.
    """
    if shutil.which("git") is None or not in_repository(root):
        return Synced("failed", f"{root} is not in a git repository (or git is not installed)")
    busy = in_progress(root)
    if busy is not None:
        return Synced("waiting", f"git is in the middle of a {busy}: finish or abort it, then sync again")
    present = [p for p in MEMORY_PATHS if (root / p).exists() or _tracked(root, p)]
    why = _fails(_run(root, ["add", "-A", "--", *present], read_only=False))
    if why:
        return Synced("failed", f"git add: {why}")
    staged = _run(root, ["diff", "--cached", "--name-status", "--", *present])
    rows = [ln.split("\t") for ln in (staged.stdout.splitlines() if staged else []) if "\t" in ln]
    names = [(row[0], row[-1]) for row in rows]
    commit = None
    if names:
        paths = sorted({p for row in rows for p in row[1:]})
        why = _fails(_run(root, ["commit", "-q", "-m", summary(names), "--", *paths], read_only=False))
        if why:
            return Synced("failed", f"git commit: {why}")
        head = _run(root, ["rev-parse", "HEAD"])
        commit = head.stdout.strip() if head is not None and head.returncode == 0 else None
    upstream = _run(root, ["rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{u}"])
    if upstream is None or upstream.returncode != 0:
        said = f"committed {len(names)} file(s)" if names else "nothing to commit"
        return Synced("local", f"{said}; no upstream branch to pull from or push to", commit)
    for attempt in range(1, attempts + 1):
        how = "--rebase" if rebase else "--no-rebase"
        pulled = _run(root, ["pull", "-q", how, "--autostash", "--no-edit"], read_only=False)
        why = _fails(pulled)
        if why:
            stuck = in_progress(root)
            if stuck is not None:
                _run(root, ["rebase" if stuck == "rebase" else "merge", "--abort"], read_only=False)
            return Synced("failed", f"git pull: {why} (the clone is as it was before the pull)", commit, attempt)
        pushed = _run(root, ["push", "-q"], read_only=False)
        why = _fails(pushed)
        if why is None:
            said = f"committed {len(names)} file(s), " if names else ""
            return Synced("ok", f"{said}pulled and pushed ({upstream.stdout.strip()})", commit, attempt)
        moved = pushed is not None and any(w in pushed.stderr for w in ("rejected", "fetch first", "non-fast-forward"))
        if not moved:
            return Synced("failed", f"git push: {why}", commit, attempt)
    return Synced("failed", f"the remote kept moving: {attempts} pulls and pushes did not land", commit, attempts)


def _tracked(root: Path, path: str) -> bool:
    done = _run(root, ["ls-files", "--error-unmatch", "--", path])
    return done is not None and done.returncode == 0
