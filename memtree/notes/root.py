"""Where the memory is: root discovery (like git's), the user's own root, and `memtree init`."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from memtree.errors import RootNotFound
from memtree.notes import store
from memtree.notes import tree as treemod

ENV_ROOT = "MEMTREE_ROOT"
ENV_HOME = "MEMTREE_HOME"
HOME_ENV = (ENV_HOME, "XDG_DATA_HOME", "APPDATA", "HOME")
"""The variables the user root's place depends on (memtree.serve.client.HOME_ENV sends the same to a daemon)."""
HOME_FOLDER = "memtree"


def user_home(env: Mapping[str, str | None] | None = None, platform: str = sys.platform) -> Path | None:
    """Where the user's own memory root lives, whether or not it exists; None when turned off.

    ``$MEMTREE_HOME``; set but empty, there is no user root. Else the platform's data folder:
    ``$XDG_DATA_HOME/memtree`` or ``~/.local/share/memtree`` (Linux, BSD), ``~/Library/Application
    Support/memtree`` (macOS), ``%APPDATA%\\memtree`` (Windows). ``env``: the variables of HOME_ENV
    (default: this process's).
    """
    env = {name: os.environ.get(name) for name in HOME_ENV} if env is None else env
    given = env.get(ENV_HOME)
    if given is not None:
        return Path(given).expanduser().absolute() if given.strip() else None
    home = Path(env.get("HOME") or Path.home())
    if platform == "darwin":
        return home / "Library" / "Application Support" / HOME_FOLDER
    if platform == "win32":
        return Path(env.get("APPDATA") or home / "AppData" / "Roaming") / HOME_FOLDER
    data = env.get("XDG_DATA_HOME") or ""
    # Why only an absolute one: the XDG spec says a relative $XDG_DATA_HOME is invalid and to be ignored
    return (Path(data) if os.path.isabs(data) else home / ".local" / "share") / HOME_FOLDER


def user_root(home: Path | None, project: Path | None = None) -> Path | None:
    """The user root to search beside ``project``: ``home`` when it is a memory root (it holds tree-index.json)
    other than ``project`` itself; never created here (`memtree init --user` makes it)."""
    if home is None or not (home / treemod.TREE_FILE).is_file():
        return None
    found = home.resolve()
    if found == project:  # the project root is the user root: searched once
        return None
    store.check_state_dir(found)
    return found


def find_root(explicit: str | os.PathLike[str] | None = None, cwd: Path | None = None) -> Path:
    """``--root``, else ``$MEMTREE_ROOT``, else the nearest parent holding tree-index.json.

    Refused (store.check_state_dir) when its ``.memtree`` is a symbolic link or holds one."""
    given = explicit if explicit is not None else os.environ.get(ENV_ROOT) or None
    if given is not None:
        root = Path(given).expanduser()
        if not root.is_dir():
            source = "--root" if explicit is not None else ENV_ROOT
            raise RootNotFound(f"memory root {root} ({source}) does not exist or is not a folder")
        root = root.resolve()
        if not (root / treemod.TREE_FILE).exists() and not any((root / t).is_dir() for t in store.TIERS):
            raise RootNotFound(
                f"{root} is not a memory root: it has no tree-index.json and no "
                f"bank/, memory/ or recall/ folder (create one with `memtree init {given}`)"
            )
        store.check_state_dir(root)
        return root
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / treemod.TREE_FILE).is_file():
            store.check_state_dir(folder)
            return folder
    raise RootNotFound(
        "no memory root found: pass --root DIR, set MEMTREE_ROOT, or run `memtree init` "
        f"(no {treemod.TREE_FILE} in {here} or any parent)"
    )


IGNORED = (f"{store.STATE_DIR}/", f".*{store.TEMP_MARK}*.tmp")
"""What `init` puts in .gitignore: the derived state, and the temp files a killed writer leaves."""


def init(directory: str | os.PathLike[str]) -> tuple[Path, list[str], list[str]]:
    """Scaffold an empty memory root; returns it, the paths created and those appended to (nothing is overwritten)."""
    root = Path(directory).expanduser().resolve()
    created: list[str] = []
    updated: list[str] = []
    for tier in store.TIERS:
        if not (root / tier).is_dir():
            try:
                (root / tier).mkdir(parents=True, exist_ok=True)
            except OSError as exc:  # DIR is a file, or not writable: one clear line, not a traceback
                raise RootNotFound(f"cannot create a memory root in {root}: {exc.strerror or exc}") from None
            created.append(f"{tier}/")
    tree_file = root / treemod.TREE_FILE
    if not tree_file.exists():
        store.atomic_write(tree_file, treemod.dumps(treemod.Tree()))
        created.append(treemod.TREE_FILE)
    if write_attributes(root):
        created.append(".gitattributes")
    gitignore = root / ".gitignore"
    lines = gitignore.read_text(encoding="utf-8").splitlines() if gitignore.is_file() else []
    wanted = [line for line in IGNORED if line not in lines and line.rstrip("/") not in lines]
    if wanted:
        (updated if gitignore.is_file() else created).append(".gitignore")
        store.atomic_write(gitignore, ("\n".join([*lines, *wanted]) + "\n").encode())
    return root, created, updated


def write_attributes(root: Path) -> bool:
    """Add memtree's merge rules to the root's .gitattributes (memtree.notes.git.ATTRIBUTES); whether it wrote."""
    from memtree.notes import git

    path = root / ".gitattributes"
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    missing = git.attributes_missing(text)
    if not missing:
        return False
    head = text if not text or text.endswith("\n") else text + "\n"
    store.atomic_write(path, (head + "\n".join(missing) + "\n").encode())
    return True
