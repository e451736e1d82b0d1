"""`memtree check`: what a pre-commit hook refuses — oversized or unindexable notes, index problems, secrets.

Problems are values (``Problem``), found without writing anything; ``--fix`` then settles an
interrupted split (memtree.notes.intent) and removes the copies one left (:func:`split_copies`),
splits the oversized bank notes, removes the temp files a killed write left behind, cuts parent
cycles of the tree and re-runs `memtree index`, which adds nodes for notes that have none and drops
nodes whose file is gone, and drops the category nodes left with no note
(memtree.write.catalog.empty_categories). Secrets in notes are reported, never rewritten behind the
user's back; those the change journal still keeps in old note text (after the person removed them
from the note) are redacted there by ``--fix``.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memtree.config import Settings
from memtree.errors import TreeError
from memtree.notes import intent, store
from memtree.notes import tree as treemod
from memtree.notes.entries import SPLIT_MARKER as MARKER

if TYPE_CHECKING:
    from memtree.write.sanitize import Sanitizer


@dataclass(frozen=True)
class Problem:
    """One thing the check refuses: its kind, the file (or tree-index.json) and what is wrong."""

    kind: str  # "oversized", "unindexed", "tree", "no-node", "dangling", "empty-category", "secret", "leftover",
    # "not-utf8", "nfc-twin", "split-copy", "split-interrupted", "markers" (git conflict blocks), "conflicts"
    # (conflicts.json unreadable), "dangling-link" (a [[link]] to no note, entry or heading)
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


def _journal_secrets(root: Path, sanitizer: Sanitizer) -> list[Problem]:
    """The journaled changes whose kept old note text (for undo) holds a secret: one problem, fixable."""
    from memtree.notes import changes

    holding: dict[str, set[str]] = {}
    for change_id, text in changes.kept_texts(root):
        kinds = {r.kind for r in sanitizer.find(text)}
        if kinds:
            holding.setdefault(change_id, set()).update(kinds)
    if not holding:
        return []
    named = ", ".join(sorted(set().union(*holding.values())))
    detail = f"{len(holding)} change(s) keep old note text holding a secret ({named}) for undo"
    return [Problem("secret", f"{changes.STATE_DIR}/{changes.JOURNAL_FILE}", detail, True)]


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
            out.append(Problem("conflicts", conflicts.CONFLICTS_FILE, f"{exc}", True))
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
        return [*problems, Problem("tree", treemod.TREE_FILE, str(exc), isinstance(exc, treemod.TreeCycle))]
    if intent.pending(root):
        detail = "a split was killed halfway; the next write or `check --fix` finishes or rolls it back"
        problems.append(Problem("split-interrupted", intent.INTENT_FILE, detail, True))
    for copy, source in split_copies(root, [f.path for f in disk if f.tier == "bank"]):
        if wanted is None or copy in wanted or source in wanted:
            detail = f"a copy left by an interrupted split of {source}: every line of it is still there"
            problems.append(Problem("split-copy", copy, detail, True))
    on_disk = {f.path for f in disk}
    for node in tree.nodes:
        if node.path and node.path not in on_disk and not (root / node.path).is_file():
            problems.append(Problem("dangling", node.path, f"node '{node.id}' points to a missing file", True))
    if files is None:
        from memtree.write.catalog import empty_categories

        for node_id in empty_categories(tree):
            detail = f"category node '{node_id}' holds no note and no keywords of its own"
            problems.append(Problem("empty-category", treemod.TREE_FILE, detail, True))
    problems += _dangling_links(root, disk, tree, wanted)
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
    if files is None:
        secrets += _journal_secrets(root, sanitizer)
    for f in disk:
        if (
            f.tier == "bank"
            and f.path not in with_node
            and f.path not in unreadable
            and (wanted is None or f.path in wanted)
        ):
            problems.append(Problem("no-node", f.path, "no node in tree-index.json", True))
    return [*problems, *secrets]


def _dangling_links(
    root: Path, disk: list[store.FileStat], tree: treemod.Tree, wanted: set[str] | None
) -> list[Problem]:
    """Links that lead to no note, or to no entry or heading of it (memtree.notes.links): a person decides
    whether the link or the note is wrong, so ``--fix`` leaves them."""
    from memtree.notes import links

    graph = links.scan(root, disk, {unicodedata.normalize("NFC", n.id): n.path for n in tree.nodes if n.path})
    return [
        Problem("dangling-link", r.link.source, f"line {r.link.line}: {r.link.written} leads nowhere: {r.problem}")
        for r in graph.dangling()
        if wanted is None or r.link.source in wanted
    ]


def split_copies(root: Path, bank: list[str]) -> list[tuple[str, str]]:
    """(copy, source) for each note an interrupted split left behind: a note in a note's folder
    (``x/part.md`` beside ``x.md``) that neither it nor its index notes link to, every line of which
    is still in the source or its other parts. Why: a split killed between writing the parts and
    rewriting the source (before splits were all or nothing) left every moved entry twice.
    """
    notes = set(bank)
    found: list[tuple[str, str]] = []
    for source in bank:
        stem = source.rsplit(".", 1)[0]
        parts = [p for p in bank if p.startswith(stem + "/") and "/" not in p[len(stem) + 1 :]]
        if not parts or source not in notes:
            continue
        texts = {p: _text(root, p) for p in [source, *parts]}
        folder = stem.rsplit("/", 1)[-1]
        links = texts[source]
        indexes = "".join(t for p, t in texts.items() if p != source and t.startswith(MARKER))
        counts = Counter(line.strip() for t in texts.values() for line in t.splitlines())
        for part in parts:
            name = part[len(stem) + 1 :]
            linked = f"]({folder}/{name})" in links or f"](<{folder}/{name}>)" in links
            if linked or f"]({name})" in indexes or f"](<{name}>)" in indexes or texts[part].startswith(MARKER):
                continue
            own = Counter(line.strip() for line in texts[part].splitlines())
            lines = [line for line in own if line]
            if lines and all(counts[line] > own[line] for line in lines):
                found.append((part, source))
                counts -= own  # Why: of two copies of each other, one stays
    return found


def _text(root: Path, rel: str) -> str:
    try:
        return store.read_note(root / rel)
    except (OSError, UnicodeDecodeError):
        return ""
