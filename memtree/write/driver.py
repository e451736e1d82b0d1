"""`memtree merge-driver %O %A %B %P`: git's merge driver, run by git inside a merge or rebase.

git hands over three temp files — the ancestor (%O), ours (%A) and theirs (%B) — and the path
(%P); the driver writes the result into %A and exits 0 when it merged. memtree merges by the
file's kind (memory.write.merge) and writes no conflict marker: a clash both sides made is kept
both ways and marked for `memtree conflicts`. A side that already holds conflict blocks (a merge
made without the driver, committed) is taken apart first (memtree.write.markers). A node field of
tree-index.json both sides changed keeps ours; theirs is left in the clone's ``.memtree/`` for
memtree to file in conflicts.json (memtree.write.clashes: the driver may write only ``%A``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from memtree.notes import store
from memtree.write import markers, merge


def _side(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


def run(base: Path, ours: Path, theirs: Path, path: str) -> tuple[merge.Merged, bool]:
    """Merge the three files into ``ours``; the merge and whether it was clean (False: git marks the path).

    Not clean only when a side cannot be read as memory (not UTF-8, JSON that is not JSON even
    after its conflict blocks are taken apart): then ``ours`` gets the line merge, both blocks kept.
    """
    try:
        b, o, t = _side(base), _side(ours), _side(theirs)
    except (OSError, UnicodeDecodeError):
        return merge.Merged(""), False
    clean = True
    try:
        merged = merge.merge(path, b, o, t)
    except ValueError:
        try:
            fixed = [markers.repair(path, x).text if markers.first_marker(x) else x for x in (b, o, t)]
            merged = merge.merge(path, *fixed)
        except ValueError:
            merged, clean = merge.merge_lines(b, o, t), False
    store.atomic_write(ours, merged.text.encode("utf-8"))
    if merged.fields:
        from memtree.write import clashes

        try:  # git runs the driver at the top of the work tree, and %P is relative to it
            clashes.note_pending(Path(path).parent, merged.fields)
        except OSError as exc:
            ids = ", ".join(c.id for c in merged.fields)
            print(f"memtree merge-driver: {path}: ours kept, theirs not recorded ({ids}: {exc})", file=sys.stderr)
    return merged, clean


def main(argv: list[str]) -> int:
    """``merge-driver %O %A %B [%P]`` without the CLI's imports (git starts one per merged file): exit code."""
    base, ours, theirs, *rest = argv
    path = rest[0] if rest else ours
    try:
        merged, clean = run(Path(base), Path(ours), Path(theirs), path)
    except OSError as exc:
        sys.stderr.write(f"memtree merge-driver: {path}: cannot write the merge ({exc.strerror or exc})\n")
        return 1
    fields = {c.id: c for c in merged.fields}
    for cid in merged.clashes:
        c = fields.get(cid)
        said = f"node '{c.node}' {c.field}: ours kept, theirs recorded" if c else "changed both ways, both kept"
        sys.stderr.write(f"memtree merge-driver: {path}: {said} ({cid}: memtree conflicts)\n")
    if not clean:
        sys.stderr.write(f"memtree merge-driver: {path}: a side is not readable memory; merged by lines, check it\n")
        return 1
    return 0
