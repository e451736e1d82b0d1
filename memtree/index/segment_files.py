"""One segment on disk: a single file ``seg-N`` holding the terms, the notes and one raw native array per column.

Layout: ``MAGIC``, the length of a JSON header (8 bytes, little-endian), the header (the notes'
paths and the byte length of each part), then the parts: the terms (UTF-8, one a line) and each
column in Segment's field order. Byte order is native; the manifest records it and a mismatch
rebuilds. The file is written under a temporary name and renamed into place, so a reader sees a
whole segment or none; one whose lengths do not add up is refused (ValueError).

Why one file (a segment was a folder of eleven): writing a one-note delta's eleven files, and
deleting a replaced segment's, cost more than all the rest a one-note refresh writes.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from array import array
from pathlib import Path
from typing import BinaryIO

import orjson

from memtree.index.segment import Segment
from memtree.notes import store

MAGIC = b"memtree segment 1\n"
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
    """Write ``seg`` as ``parent/name``, replacing anything of that name."""
    terms = "\n".join(seg.terms).encode("utf-8")
    columns = [getattr(seg, col).tobytes() for col in COLUMNS]
    head = orjson.dumps({"files": seg.files, "sizes": [len(terms), *map(len, columns)]})
    final = parent / name
    if final.is_dir():  # a segment folder of the former layout
        shutil.rmtree(final)
    data = b"".join([MAGIC, len(head).to_bytes(8, "little"), head, terms, *columns])
    store.atomic_write(final, data, durable=False)


def read(path: Path) -> Segment:
    """Read the segment at ``path``; raises OSError or ValueError when it is missing, torn or foreign.

    Why part by part, not the whole file at once: each column is copied into its array from a read
    of its own size, which is then let go; a 15 MB read held while copying cost ~4 ms more a load."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if _exactly(f, len(MAGIC)) != MAGIC:
            raise ValueError(f"{path.name} is not a memtree segment")
        n = int.from_bytes(_exactly(f, 8), "little")
        head = orjson.loads(_exactly(f, n))
        files, sizes = head["files"], head["sizes"]
        if len(sizes) != len(COLUMNS) + 1 or len(MAGIC) + 8 + n + sum(sizes) != size:
            raise ValueError(f"segment {path.name} is torn")
        raw = _exactly(f, sizes[0])
        terms = raw.decode("utf-8").split("\n") if raw else []
        cols = []
        for code, part in zip(COLUMNS.values(), sizes[1:]):
            arr = array(code)
            arr.frombytes(_exactly(f, part))
            cols.append(arr)
    offsets, post_doc, post_tf, doc_len, doc_file, doc_start, doc_end, file_start, file_len = cols
    if len(offsets) != len(terms) + 1 or len(file_start) != len(files) + 1:
        raise ValueError(f"segment {path.name} is inconsistent")
    return Segment(
        terms, offsets, post_doc, post_tf, doc_len, doc_file, doc_start, doc_end, files, file_start, file_len
    )


def _exactly(f: BinaryIO, n: int) -> bytes:
    """The next ``n`` bytes of ``f``; ValueError when the file ends before."""
    data = f.read(n)
    if len(data) != n:
        raise ValueError("a segment ends early")
    return data


def remove(path: Path) -> None:
    """Delete the segment at ``path`` if it is there (a file, or a folder of the former layout)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
        return
    with contextlib.suppress(OSError):
        os.unlink(path)
