"""What Claude's memory tool ``view`` shows: a folder's files with sizes and the tree's nodes, or a note's lines.

The listing and the numbered lines are the tool's reference format (the ``anthropic`` SDK's local
memory tool: two levels deep, hidden items left out, sizes like ``4.0K``, lines numbered in a
six-wide column and a tab), so a model reads what it was trained on. Under a folder's listing
memtree adds its routing tree: each note's node id and keywords (tree-index.json), so the model
sees what each note is about without a search tool.
"""

from __future__ import annotations

import os
from pathlib import Path

from memtree.errors import MemtreeError
from memtree.notes import store
from memtree.notes.tree import Tree
from memtree.serve.claude_memory.commands import numbered
from memtree.serve.claude_memory.files import note_text
from memtree.serve.claude_memory.paths import ARCHIVE, WRITABLE_TIER, Refused, Target, resolve, shown

LISTING_DEPTH = 2
"""Levels a folder's listing goes down, as the reference implementation's."""
MAX_LINES = 999_999
TREE_NOTES_SHOWN = 100
"""Notes whose node a folder view shows at most; why: a 10,000-note bank must not fill the context."""
KEYWORDS_SHOWN = 12


def size(n_bytes: int) -> str:
    """A size as the reference listing writes it: 0B, 812B, 4.0K, 1.5M."""
    if n_bytes == 0:
        return "0B"
    units = ["B", "K", "M", "G"]
    i = min((n_bytes.bit_length() - 1) // 10, len(units) - 1)
    value = n_bytes / (1024**i)
    return f"{int(value)}{units[i]}" if value == int(value) else f"{value:.1f}{units[i]}"


def directory(root: Path, target: Target, tree: Tree | str) -> str:
    """A folder's files and folders two levels deep, then the nodes of the notes in it (``tree``: or why not)."""
    items: list[tuple[int, str, bool]] = []

    def collect(folder: Path, rel: str, depth: int) -> None:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            return
        for name in names:
            child = f"{rel}/{name}" if rel else name
            if name.startswith(".") or store.ignored(name) or store.is_temp(name):
                continue  # hidden files, editor leftovers and bank/_archive/ (viewed by its own path)
            if not rel and name not in store.TIERS:
                continue  # the root shows only its tiers: never tree-index.json, memtree.yaml, .memtree/
            try:
                real = resolve(root, shown(child)).full
                st = os.stat(real)
            except (MemtreeError, OSError):
                continue  # a symlink out of the root or its tiers is not shown
            if os.path.isdir(real):
                items.append((st.st_size, child + "/", False))
                if depth < LISTING_DEPTH:
                    collect(real, child, depth + 1)
            elif store.served(root, child) is not None:  # only notes: a .env or a key file is never listed
                items.append((st.st_size, child, True))

    collect(target.full, target.rel, 1)
    header = f"Here're the files and directories up to 2 levels deep in {target.shown}, excluding hidden items:"
    lines = [header, f"{size(os.stat(target.full).st_size)}\t{target.shown}"]
    lines += [f"{size(n)}\t{shown(rel)}" for n, rel, _ in items]
    if target.is_root or target.tier == WRITABLE_TIER:
        lines += _nodes(target, tree, [rel for _, rel, is_file in items if is_file])
        if not target.archived and (root / ARCHIVE).is_dir():
            lines.append(f"Deleted notes are kept in {shown(ARCHIVE)}/ (not listed; view it by its path).")
    return "\n".join(lines)


def _nodes(target: Target, tree: Tree | str, listed: list[str]) -> list[str]:
    """The routing tree's view of the notes under ``target``: path → node id: keywords."""
    if target.archived:
        return []
    if isinstance(tree, str):
        return ["", f"memtree's routing tree cannot be shown: {tree}"]
    prefix = "" if target.is_root else target.rel + "/"
    nodes = sorted((n for n in tree.nodes if n.path and n.path.startswith(prefix)), key=lambda n: n.path or "")
    lines = ["", f"memtree's routing tree (tree-index.json) for the notes in {target.shown}: note → node id: keywords"]
    for n in nodes[:TREE_NOTES_SHOWN]:
        words = ", ".join(n.keywords[:KEYWORDS_SHOWN]) + (", …" if len(n.keywords) > KEYWORDS_SHOWN else "")
        lines.append(f"{shown(n.path or '')} → {n.id}: {words}")
    if len(nodes) > TREE_NOTES_SHOWN:
        lines.append(f"… and {len(nodes) - TREE_NOTES_SHOWN} more notes: view a folder below to see theirs")
    bare = [
        rel
        for rel in listed
        if rel.startswith(WRITABLE_TIER + "/") and rel.endswith(store.NOTE_SUFFIXES) and rel not in tree.by_path
    ]
    lines += [f"{shown(rel)} → no node yet (`memtree index` adds one)" for rel in bare]
    if not nodes and not bare:
        lines.append("(no notes here yet)")
    return lines


def file(root: Path, target: Target, path: str, view_range: list[int] | None) -> str:
    """A note's lines, numbered from 1, or those of ``view_range`` ([start, end]; end -1: to the last line)."""
    text = note_text(store.read(root, target.rel), path)
    lines = text.split("\n")
    if len(lines) > MAX_LINES:
        raise Refused(f"File {path} exceeds maximum line limit of 999,999 lines.")
    start = 1
    if view_range is not None:
        start, end = _range(view_range, len(lines), path)
        lines = lines[start - 1 : end]
    return f"Here's the content of {path} with line numbers:\n" + "\n".join(numbered(lines, start))


def _range(view_range: list[int], n_lines: int, path: str) -> tuple[int, int]:
    """The 1-based inclusive lines a view_range names; Refused naming what is wrong with it."""
    if len(view_range) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in view_range):
        raise Refused(f"Invalid `view_range`: {view_range}. It should be a list of two integers [start, end]")
    start, end = view_range
    if not 1 <= start <= n_lines:
        raise Refused(f"Invalid `view_range`: {view_range}. Its first element should be within [1, {n_lines}]")
    if end != -1 and end < start:
        raise Refused(
            f"Invalid `view_range`: {view_range}. Its second element should be -1 (the last line) or at least {start}"
        )
    return start, n_lines if end == -1 else min(end, n_lines)
