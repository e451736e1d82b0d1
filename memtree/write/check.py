"""`memtree check`: what a pre-commit hook refuses — oversized or unindexable notes, index problems, secrets.

Problems are values (``Problem``), found without writing anything; ``--fix`` then splits the
oversized bank notes, removes the temp files a killed write left behind and re-runs `memtree
index`, which adds nodes for notes that have none and drops nodes whose file is gone. Secrets are
reported, never rewritten behind the user's back.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import Path

from memtree.config import Settings
from memtree.errors import TreeError
from memtree.notes import store
from memtree.notes import tree as treemod


@dataclass(frozen=True)
class Problem:
    """One thing the check refuses: its kind, the file (or tree-index.json) and what is wrong."""

    kind: str  # "oversized", "unindexed", "tree", "no-node", "dangling", "secret", "leftover", "not-utf8", "nfc-twin",
    # "markers" (git conflict blocks), "conflicts" (conflicts.json unreadable)
    path: str
    detail: str
    fixable: bool = False


def _oversized(root: Path, f: store.FileStat, limit: int) -> Problem:
    """An oversized note, fixable when split can cut it (one huge block cannot be)."""
    from memtree.write.split import plan_split

    detail = f"{f.size:,} bytes, over the {limit:,}-byte limit"
    try:
        plan = plan_split(store.read_note(root / f.path), limit, Path(f.path).stem)
    except (OSError, UnicodeDecodeError):
        return Problem("oversized", f.path, detail)
    if plan is not None and plan.children:
        return Problem("oversized", f.path, detail, True)
    return Problem("oversized", f.path, detail + "; one block too big to split: shorten it by hand")


def _merge_problems(root: Path, wanted: set[str] | None) -> list[Problem]:
    """Git conflict blocks in tracked files, and a conflicts.json memtree cannot read."""
    from memtree.errors import MemtreeError
    from memtree.write import conflicts, markers

    files = None if wanted is None else [f for f in markers.tracked_files(root) if f in wanted or f in markers.TRACKED]
    found = markers.find(root, files)
    out = [
        Problem("markers", m.path, f"line {m.line}: git conflict markers, never memory: --fix merges both sides", True)
        for m in found
    ]
    if not any(m.path == conflicts.CONFLICTS_FILE for m in found):
        try:
            conflicts.load(root)
        except MemtreeError as exc:
            out.append(Problem("conflicts", conflicts.CONFLICTS_FILE, f"{exc}"))
    return out


def find_problems(root: Path, settings: Settings, files: list[str] | None = None) -> list[Problem]:
    """Everything wrong in the root (or only in ``files``, root-relative, plus the tree's own state)."""
    from memtree.write.retain import sanitizer_for

    disk, _ = store.walk(root)
    wanted = None if files is None else {f.replace("\\", "/").removeprefix("./") for f in files}
    limit, index_limit = settings.split.max_bytes, settings.index.max_note_bytes
    problems: list[Problem] = []
    for f in disk:
        if wanted is not None and f.path not in wanted:
            continue
        if f.tier == "bank" and f.size > limit:
            problems.append(_oversized(root, f, limit))
        if f.size > index_limit:
            detail = f"{f.size:,} bytes, over index.max_note_bytes ({index_limit:,}): search skips it"
            fixable = f.tier == "bank" and f.size > limit and problems[-1].fixable  # a split leaves small notes
            problems.append(Problem("unindexed", f.path, detail, fixable))
    if files is None:
        twins: dict[str, list[str]] = {}
        for f in disk:
            twins.setdefault(unicodedata.normalize("NFC", f.path), []).append(f.path)
        for same in twins.values():
            if len(same) > 1:  # Why: an NFD name (macOS) beside its NFC twin looks like one file to a person
                detail = f"{len(same)} files whose names differ only in Unicode normalization: merge them by hand"
                problems.extend(Problem("nfc-twin", p, detail) for p in same)
        for rel in store.leftovers(root):
            problems.append(Problem("leftover", rel, "a temp file left by a memtree write that was killed", True))
    problems += _merge_problems(root, wanted)
    try:
        tree = treemod.load(root, check_files=False)
    except TreeError as exc:
        if any(p.kind == "markers" and p.path == treemod.TREE_FILE for p in problems):
            return problems  # the markers are the problem, and --fix merges them
        return [*problems, Problem("tree", treemod.TREE_FILE, str(exc))]
    on_disk = {f.path for f in disk}
    for node in tree.nodes:
        if node.path and node.path not in on_disk and not (root / node.path).is_file():
            problems.append(Problem("dangling", node.path, f"node '{node.id}' points to a missing file", True))
    with_node = {n.path for n in tree.nodes if n.path}
    sanitizer = sanitizer_for(settings)
    unreadable: set[str] = set()
    secrets: list[Problem] = []
    for f in disk:  # each note read once: for its encoding and for secrets
        if wanted is not None and f.path not in wanted:
            continue
        try:
            body = store.read_note(root / f.path)
        except UnicodeDecodeError:
            # Why its own kind: `check --fix` cannot index it, so "no node" would send the user in circles
            unreadable.add(f.path)
            detail = "not UTF-8 text, so search skips it: re-save it as UTF-8, or move it out of the memory"
            problems.append(Problem("not-utf8", f.path, detail))
            continue
        except OSError:
            continue
        for r in sanitizer.find(body):
            line = body.count("\n", 0, r.start) + 1
            secrets.append(Problem("secret", f.path, f"line {line}: looks like {r.kind}; remove it by hand"))
    for f in disk:
        if (
            f.tier == "bank"
            and f.path not in with_node
            and f.path not in unreadable
            and (wanted is None or f.path in wanted)
        ):
            problems.append(Problem("no-node", f.path, "no node in tree-index.json", True))
    return [*problems, *secrets]
