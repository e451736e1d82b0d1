"""One segment on disk: ``terms.txt``, ``files.json`` and one raw native array per column.

A segment folder is written under a temporary name and renamed into place, so a reader sees a
whole segment or none. Byte order is native; the manifest records it and a mismatch rebuilds.
"""

from __future__ import annotations

import os
import shutil
from array import array
from pathlib import Path

import orjson

from memtree.index.segment import Segment

COLUMNS = {
    "offsets": "q",
    "post_doc": "i",
    "post_tf": "H",
    "doc_len": "i",
    "doc_file": "i",
    "doc_start": "i",
    "doc_end": "i",
    "file_start": "q",
    "file_len": "q",
}
"""Segment columns and their array type codes, in Segment's field order."""


def write(parent: Path, name: str, seg: Segment) -> None:
    """Write ``seg`` as ``parent/name``, replacing any folder of that name."""
    tmp = parent / f".{name}.tmp{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    (tmp / "terms.txt").write_text("\n".join(seg.terms), encoding="utf-8")
    (tmp / "files.json").write_bytes(orjson.dumps(seg.files))
    for col in COLUMNS:
        (tmp / f"{col}.bin").write_bytes(getattr(seg, col).tobytes())
    final = parent / name
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)


def read(folder: Path) -> Segment:
    """Read the segment in ``folder``; raises OSError or ValueError when it is missing or torn."""
    files = orjson.loads((folder / "files.json").read_bytes())
    cols = {}
    for col, code in COLUMNS.items():
        arr = array(code)
        arr.frombytes((folder / f"{col}.bin").read_bytes())
        cols[col] = arr
    raw = (folder / "terms.txt").read_text(encoding="utf-8")
    terms = raw.split("\n") if raw else []
    if len(cols["offsets"]) != len(terms) + 1 or len(cols["file_start"]) != len(files) + 1:
        raise ValueError(f"segment {folder.name} is inconsistent")
    return Segment(
        terms,
        cols["offsets"],
        cols["post_doc"],
        cols["post_tf"],
        cols["doc_len"],
        cols["doc_file"],
        cols["doc_start"],
        cols["doc_end"],
        files,
        cols["file_start"],
        cols["file_len"],
    )
