"""The helper process's side of memtree.index.helper: parse notes from the last, send them in frames.

Apart from memtree.index.helper because it builds an ``Index`` (memtree.index.chunk_index), which
itself starts helpers: one module would make the two import each other.
"""

from __future__ import annotations

import gc
import pickle
import sys
from pathlib import Path

from memtree.index.chunk_index import Index
from memtree.index.helper import BATCH, Outcome
from memtree.index.vocab import Vocabulary
from memtree.notes.store import FileStat


def serve(job: tuple[str, int, bool, list[tuple[str, str, int, int]]]) -> None:
    """The helper's side: parse the notes from the last, one frame every ``BATCH`` notes, until done."""
    gc.disable()  # as in the build (chunk_index._collector_paused): nothing parsed here is a cycle
    root, max_note_bytes, collect, notes = job
    index = Index(Path(root), max_note_bytes)
    vocab = Vocabulary()
    sent = 0  # terms of the Vocabulary sent so far (NO_TERM's '' first)
    out = sys.stdout.buffer
    batch: list[tuple[int, Outcome]] = []
    for i in range(len(notes) - 1, -1, -1):
        f = FileStat(*notes[i])
        index.collect = {} if collect else None
        warnings: list[str] = []
        read = index._read(f, warnings)
        parsed = None if read is None else index._parse(f, read[0], read[1], warnings, vocab)
        collected = index.collect.get(f.path) if index.collect is not None else None
        batch.append((i, (warnings, index.skipped.pop(f.path, None), parsed, collected)))
        if len(batch) == BATCH or i == 0:
            frame = pickle.dumps((batch, vocab.terms[sent:]), protocol=5)
            sent = len(vocab.terms)
            out.write(len(frame).to_bytes(8, "little"))
            out.write(frame)
            out.flush()
            batch = []
