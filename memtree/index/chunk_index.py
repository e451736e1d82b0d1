"""The persisted chunk index in ``.memtree/index``: build, load, and refresh file by file.

Layout: ``manifest.json`` names the live segments and records every note's mtime, size and
content hash (memtree.index.manifest: a journal over a rows file); each ``seg-N`` file holds one
immutable segment (memtree.index.segment_files). A full build writes one *base* segment.
A refresh re-reads only notes whose mtime or size changed (and whose content hash really
differs), writes them as a small *delta* segment, and marks those notes' older chunks in the base
and earlier deltas dead — so an edit made in any editor is searchable on the next call while the
base stays untouched. When the deltas grow past a fifth of the memory, the next refresh rebuilds
the base instead.

Everything here is derived: deleting ``.memtree/`` loses nothing. If it cannot be written
(a read-only checkout), the index lives in memory for the process and a warning says so.

What is on disk, and so what a refresh must read and drop, is decided in memtree.index.survey, by
stat alone; this module reads the notes, installs segments and commits the manifest.

Why one module over 300 lines: build, load and refresh share one manifest and its invariants (which
segment holds which note, which chunks are dead); they are only correct together.
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import os
import shutil
import sys
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memtree import config
from memtree.index import bm25, dense, manifest, segment_files, survey
from memtree.index.manifest import FileEntry, FileTable
from memtree.index.segment import Segment, build_segment_ids, merge_segments
from memtree.index.term_cache import TermCache
from memtree.index.vocab import NO_TERM, Vocabulary
from memtree.notes import store
from memtree.notes.chunks import Document
from memtree.notes.entries import strip_meta
from memtree.text import terms as text

if TYPE_CHECKING:
    from datetime import date

    from memtree.config import SearchSettings
    from memtree.index.helper import Helper
    from memtree.index.protocol import ChunkRef, Location, Scores


INDEX_FORMAT = 5  # 5: chunks carry date terms (memtree.text.dates) and the words of the headings above them
INDEX_DIR = "index"
STAMP = {
    "format": INDEX_FORMAT,
    "layout": manifest.LAYOUT,
    "byteorder": sys.byteorder,
    "tokenizer": text.TOKENIZER_VERSION,
}
"""What a manifest must say it was made with, or the index is rebuilt."""
KEYWORD_MIN_TF = 2
"""A term seen fewer times in a note cannot become one of its keywords (memtree.write.catalog)."""

Parsed = tuple[Document, Mapping[str, int], Mapping[str, str] | None]
"""A note as the index has just read it: the document, the counts of its terms (at least of those
seen ``KEYWORD_MIN_TF`` times) and the first word that yields each of those terms (None: find them
in the chunks' text)."""
MAX_DELTAS = 6
"""More delta segments than this, and the newest are folded into one (from their postings: nothing is
read again), see ``Index._merge_deltas``."""
DELTA_REBUILD_SHARE = 0.2
"""A delta holding more than this share of all bytes triggers a full rebuild."""
_OVER = "over index.max_note_bytes"  # in a skipped note's reason: the note is too big to index


@dataclass
class Report:
    """What a refresh did: files added, changed and removed, skipped notes, and timings."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    rebuilt: bool = False

    @property
    def touched(self) -> bool:
        """True when the searchable content changed."""
        return bool(self.added or self.changed or self.removed or self.rebuilt)


def content_hash(data: bytes) -> str:
    """A short, stable content hash (blake2b, 16 bytes)."""
    import hashlib  # lazy: a search that finds nothing changed never hashes

    return hashlib.blake2b(data, digest_size=16).hexdigest()


@dataclass
class _Parsed:
    path: str
    tier: str
    mtime_ns: int
    size: int
    hash: str
    chunks: list[tuple[int, int, tuple[int, ...]]]  # (start, end, term ids in the build's Vocabulary)


class Index:
    """All segments of one memory root, kept in step with the notes on disk."""

    parallel_ok = True
    """Whether a build may hand notes to a helper process (a subclass whose _parse keeps more says no)."""

    def __init__(self, root: Path, max_note_bytes: int | None = None, parallel: bool | None = None) -> None:
        self.root = root
        if max_note_bytes is None or parallel is None:  # the caller did not pass its settings: read them
            from memtree.config import load_settings

            settings = load_settings(root).index
            max_note_bytes = settings.max_note_bytes if max_note_bytes is None else max_note_bytes
            parallel = settings.parallel if parallel is None else parallel
        self.max_note_bytes = max_note_bytes
        self.parallel = parallel  # a large build parses notes in a second process too (memtree.index.helper)
        self.dir = root / store.STATE_DIR / INDEX_DIR
        self.files = FileTable()
        self.segments: dict[str, Segment] = {}
        self.base: str | None = None
        self.deltas: list[str] = []  # small segments of notes changed since the base, oldest first
        self.version = 0
        self.rows = ""  # the manifest's rows file, which self.files.changed is relative to (memtree.index.manifest)
        self.seq, self.committed = 0, b""  # the manifest as this process last read or wrote it: number, bytes
        self.persist = True
        self.warnings: list[str] = []
        self.term_cache = TermCache()  # the IDF cache: per-term matches and df
        # while `memtree index` runs: bank notes as just parsed, so the catalog need not read them again
        self.collect: dict[str, Parsed] | None = None
        self.skipped: dict[str, tuple[int, int, str]] = {}  # unreadable notes: mtime, size, reason
        self.listings = store.Listings()  # folders as last listed: a refresh lists only changed ones again

    # --- loading ------------------------------------------------------------------------

    def load(self) -> bool:
        """Load the persisted index; False when there is none (or it is unusable)."""
        try:
            m = manifest.read(self.dir, STAMP)
            segments = {name: segment_files.read(self.dir / name) for name in m.segments}
        except (OSError, ValueError, KeyError, TypeError):
            return False
        self.files, self.segments, self.skipped, self.base, self.deltas = m.files, segments, m.skipped, m.base, m.deltas
        self.version, self.rows, self.seq, self.committed = m.version, m.rows, m.seq, m.committed
        # Why: index.max_note_bytes may have changed since: a note now under it is read again, one over it dropped.
        self.skipped = {p: v for p, v in self.skipped.items() if not (_OVER in v[2] and v[1] <= self.max_note_bytes)}
        for p in [p for p, e in self.files.items() if e.size > self.max_note_bytes]:
            del self.files[p]
        self._mark_dead()
        self.term_cache.clear()
        return True

    def _forget(self) -> None:
        """Drop what this process holds: the next refresh builds the index anew, its manifest
        numbered past any left on disk."""
        self.files, self.segments, self.skipped = FileTable(), {}, {}
        self.base, self.deltas, self.rows, self.committed = None, [], "", b""
        self.seq = manifest.newest(self.dir)[0]
        self.term_cache.clear()

    def _mark_dead(self, paths: Iterable[str] | None = None) -> None:
        """Mark dead, in every segment, the notes whose entry names another segment or none: all of
        them, or only ``paths`` (those whose entries a change just set or removed)."""
        files = self.files
        if paths is not None:
            paths = list(paths)
        for name, seg in self.segments.items():
            if paths is None:
                dead = frozenset(i for i, p in enumerate(seg.files) if (e := files.get(p)) is None or e.segment != name)
            else:
                now = set(seg.dead_files)
                for p in paths:
                    i = seg.file_id(p)
                    if i is not None:
                        if (e := files.get(p)) is None or e.segment != name:
                            now.add(i)
                        else:
                            now.discard(i)
                dead = frozenset(now)
            if dead != seg.dead_files:
                seg.set_dead(dead)

    # --- refreshing ---------------------------------------------------------------------

    def refresh(
        self,
        force: bool = False,
        progress: Callable[[int, int], None] | None = None,
        paths: list[str] | None = None,
    ) -> Report:
        """Bring the index in step with the notes on disk (a full build when needed or forced).

        Checking costs one stat per note and takes no lock; only when something changed does
        the refresh lock the index, re-read it (another process may have just refreshed) and
        write the new segment. ``paths`` limits the check to those notes (a writer's own).
        """
        with _collector_paused():
            return self._refresh(force, progress, paths)

    def _refresh(self, force: bool, progress: Callable[[int, int], None] | None, paths: list[str] | None) -> Report:
        report = Report()
        if not self.segments and self.persist and not force:
            self.load()
        if paths is not None and (force or not self.segments):
            paths = None
        look = survey.look_at(self.root, self.listings, paths)
        report.warnings = list(look.warnings)
        changes = survey.changes(look, self.files, self.skipped, force) if self.segments else None
        if not force and changes is not None and changes.none:
            report.warnings += [f"{p}: skipped, {why}" for p, (_, _, why) in self.skipped.items()]
            return report
        try:
            ctx = store.locked(self.dir.parent / "index.lock") if self.persist else contextlib.nullcontext()
            with ctx:
                if self.persist and manifest.committed(self.dir) != (self.seq, self.committed):
                    # Another process refreshed while we waited for the lock (or the index is gone).
                    # Why even when forced: a build names its segment after the version it starts from
                    if not self.load():
                        self._forget()
                    changes = None
                    if paths is not None:
                        # Why: the notes as last indexed are those just loaded, not the ones we
                        # had; the old list would read another writer's new notes as removed.
                        look = survey.look_at(self.root, self.listings, paths if self.segments else None)
                        report.warnings = list(look.warnings)
                self._apply(look, changes, report, force, progress)
        except OSError as exc:  # .memtree/ cannot be created or locked: read-only checkout, a file, …
            self.persist = False
            reason = exc.strerror or type(exc).__name__
            self.warnings.append(f"{self.dir.parent} is not usable ({reason}); the index is kept in memory only")
            self._apply(look, None, report, force, progress)
        return report

    def _apply(
        self,
        look: survey.Look,
        changes: survey.Changes | None,
        report: Report,
        force: bool,
        progress: Callable[[int, int], None] | None,
    ) -> None:
        if changes is None:
            changes = survey.changes(look, self.files, self.skipped, force)
        skipped_before = dict(self.skipped)
        report.warnings += [f"{p}: skipped, {self.skipped[p][2]}" for p in changes.still_skipped]
        suspects = changes.suspects
        total = survey.total_bytes(look, self.files, self.skipped) if suspects or changes.removed or force else 0
        parsed: dict[str, _Parsed | None] = {}
        vocab = Vocabulary()
        stat_only = False
        # Why only when every suspect is parsed whatever its hash (a first build, --force): the helper's
        # notes then need nothing but their outcome, taken in order after the build's own
        helper = self._helper(suspects) if force or not self.files else None
        try:
            end = len(suspects)
            for i, f in enumerate(suspects):
                if helper is not None and helper.reached() <= i:  # the helper has parsed the rest
                    end = i
                    break
                if progress:
                    progress(i + 1 + (len(suspects) - helper.low if helper else 0), len(suspects))
                read = self._read(f, report.warnings)
                if read is None:
                    parsed[f.path] = None
                    continue
                old = self.files.get(f.path)
                if old is not None and old.hash == read[1] and not force:  # touched or racy, not changed
                    if (old.mtime_ns, old.size) != (f.mtime_ns, f.size):
                        self.files[f.path] = old._replace(mtime_ns=f.mtime_ns, size=f.size)
                        stat_only = True
                    continue
                parsed[f.path] = self._parse(f, read[0], read[1], report.warnings, vocab)
            if helper is not None:
                for f, (warnings, skip, item, collected) in zip(suspects[end:], helper.results(end, vocab)):
                    report.warnings += warnings  # what _read and _parse said, as in this process
                    if skip is not None:
                        self.skipped[f.path] = skip
                    elif item is not None:
                        self.skipped.pop(f.path, None)
                    if collected is not None and self.collect is not None:
                        self.collect[f.path] = collected
                    parsed[f.path] = item
        finally:
            if helper is not None:
                helper.close()
        # unreadable notes leave the index like removed ones
        removed = changes.removed + [p for p, item in parsed.items() if item is None and p in self.files]
        fresh = {p: item for p, item in parsed.items() if item is not None}
        for p in changes.skipped_gone:
            self.skipped.pop(p, None)
        if not fresh and not removed and not force and self.segments:
            if stat_only or self.skipped != skipped_before:
                self._commit()
            return
        for p in fresh:
            (report.changed if p in self.files else report.added).append(p)
        report.removed = sorted(set(removed))
        for p in report.removed:
            self.files.pop(p, None)
        if force or self.base is None or self._outside_bytes(fresh) > DELTA_REBUILD_SHARE * (total or 1):
            report.rebuilt = True
            on_disk = survey.on_disk(look, self.files, self.skipped)
            everything = {p: fresh.get(p) for p in on_disk}
            for p, item in everything.items():
                skip = self.skipped.get(p)
                if skip is not None and skip[:2] == (on_disk[p].mtime_ns, on_disk[p].size):
                    continue  # too big or not UTF-8, and already said so: one warning per note
                if item is None:
                    everything[p] = self._load(on_disk[p], report.warnings, vocab)
            self._install([it for it in everything.values() if it is not None], vocab, as_base=True)
        else:
            # only the notes changed now are parsed: older deltas keep theirs, their copies go dead
            # (no note changed, only removals: no new segment, their chunks go dead)
            self._install(list(fresh.values()), vocab, as_base=False, gone=report.removed)

    def _outside_bytes(self, parsed: Mapping[str, _Parsed]) -> int:
        """The bytes of the notes outside the base once ``parsed`` is in: those of the deltas and the new."""
        files = self.files
        sizes = {}
        for name in self.deltas:
            for p in self.segments[name].files:
                e = files.get(p)
                if e is not None and e.segment == name:
                    sizes[p] = e.size
        sizes.update((p, it.size) for p, it in parsed.items())
        return sum(sizes.values())

    def _helper(self, notes: list[store.FileStat]) -> Helper | None:
        """A helper process parsing ``notes`` from the last, when they are many and one can start."""
        if not (self.parallel and self.parallel_ok and len(notes) > 1):
            return None
        if sum(map(itemgetter(3), notes)) < config.INDEX_PARALLEL_MIN_BYTES:
            return None
        from memtree.index import helper  # lazy: only a large build starts one

        return helper.start(self.root, self.max_note_bytes, self.collect is not None, notes)

    def _read(self, f: store.FileStat, warnings: list[str]) -> tuple[str, str] | None:
        """A note's text and content hash, or None (with a warning) when it cannot be indexed."""
        try:
            # never more than one byte past the limit: the note may have grown since the stat
            data = store.read_upto(os.path.join(self.root, f.path), self.max_note_bytes + 1, f.size)
            if len(data) > self.max_note_bytes:
                why = (
                    f"{max(f.size, len(data)):,} bytes, {_OVER} ({self.max_note_bytes:,}): split it or raise the limit"
                )
                warnings.append(f"{f.path}: skipped, {why}")
                self.skipped[f.path] = (f.mtime_ns, f.size, why)
                return None
            body = store.decode_note(data)
        except UnicodeDecodeError:
            warnings.append(f"{f.path}: skipped, not UTF-8 text")
            self.skipped[f.path] = (f.mtime_ns, f.size, "not UTF-8 text")
            return None
        except OSError as exc:
            warnings.append(f"{f.path}: skipped ({exc.strerror})")
            return None
        self.skipped.pop(f.path, None)
        return body, content_hash(data)

    def _parse(self, f: store.FileStat, body: str, digest: str, warnings: list[str], vocab: Vocabulary) -> _Parsed:
        """Chunk and tokenize one note (its terms as ids in ``vocab``)."""
        from memtree.notes import chunks as chunking  # lazy: only a changed note is parsed

        doc = chunking.parse(body)
        if doc.meta_error:
            warnings.append(f"{f.path}: {doc.meta_error}; the note is indexed without it")
        texts = [strip_meta(c.text) if "memtree:" in c.text else c.text for c in doc.chunks]
        pairs = [vocab.words(t) for t in texts]  # each chunk's words and their term ids (0: a stopword)
        days = _days(f.path, doc, texts)
        own = [ids + vocab.of(day) if day else ids for (_, ids), day in zip(pairs, days)]  # words and dates
        # Why the headings above a chunk: "## Session 3" or "## 배포" names what each item under it is about
        heading_ids: dict[tuple[str, ...], tuple[int, ...]] = {(): ()}  # chunks of a section share their headings
        items: list[tuple[int, int, tuple[int, ...]]] = []
        for c, ids in zip(doc.chunks, own):
            above = heading_ids.get(c.headings)
            if above is None:
                above = heading_ids[c.headings] = vocab.of(text.terms(" ".join(c.headings)))
            items.append((c.start, c.end, ids + above if above else ids))
        if self.collect is not None and f.tier == "bank":  # keyword suggestions count each word once, where it is
            # Why only the frequent terms, and the note without its text: no other term can be a
            # keyword, and 5,000 notes' full counts and lines would weigh ~100 MB until the catalog runs
            counts = Counter(chain.from_iterable(own))
            counts.pop(NO_TERM, None)
            wanted = [t for t, n in counts.items() if n >= KEYWORD_MIN_TF]
            terms = vocab.terms
            frequent = dict(zip(map(terms.__getitem__, wanted), map(counts.__getitem__, wanted)))
            self.collect[f.path] = (replace(doc, chunks=(), lines=()), frequent, _first_words(pairs, wanted, terms))
        return _Parsed(f.path, f.tier, f.mtime_ns, f.size, digest, items)

    def _load(self, f: store.FileStat, warnings: list[str], vocab: Vocabulary) -> _Parsed | None:
        read = self._read(f, warnings)
        return None if read is None else self._parse(f, read[0], read[1], warnings, vocab)

    def _install(self, items: list[_Parsed], vocab: Vocabulary, as_base: bool, gone: Sequence[str] = ()) -> None:
        """Make ``items`` live: as the new base, or as one more delta segment (none for removals);
        ``gone``, the notes a delta refresh removed, go dead."""
        before = set(self.segments)
        name = f"seg-{self.version + 1}"
        written: list[tuple[str, Segment]] = []
        if items or as_base:
            segment = build_segment_ids(((it.path, it.chunks) for it in items), vocab.terms)
            written.append((name, segment))
            if as_base:
                self.files = FileTable()
                self.segments = {name: segment}
                self.base, self.deltas = name, []
            else:
                self.segments[name] = segment
                self.deltas.append(name)
        for it in items:
            self.files[it.path] = FileEntry(it.tier, it.mtime_ns, it.size, it.hash, name, len(it.chunks))
        self.version += 1
        self._mark_dead(None if as_base else chain((it.path for it in items), gone))
        self._drop_empty_deltas()
        if len(self.deltas) > MAX_DELTAS:
            written.append(self._merge_deltas())
        self.term_cache.clear()
        if self.persist:
            try:
                for seg_name, seg in written:
                    if seg_name in self.segments:
                        segment_files.write(self.dir, seg_name, seg)
                self._commit(fold=as_base)
            except OSError as exc:
                self.persist = False
                self.warnings.append(f"cannot write {self.dir} ({exc.strerror}); the index is kept in memory only")
                return
            for stale in before - set(self.segments):
                segment_files.remove(self.dir / stale)

    def _drop_empty_deltas(self) -> None:
        for name in list(self.deltas):
            if self.segments[name].n_live == 0:
                self.deltas.remove(name)
                del self.segments[name]

    def _merge_deltas(self) -> tuple[str, Segment]:
        """Fold the newest deltas into one segment, from their postings (no note is read again): as
        many as keep ``MAX_DELTAS``, and then each older one no larger than those folded so far.

        Why not all of them: the oldest deltas grow with every note changed since the base, and
        folding them again every seventh refresh took 80-150 ms once 300 notes of 5,000 had changed.
        Folded this way, deltas grow geometrically from the newest to the oldest, and a chunk is
        folded again only when the deltas newer than it have grown as large as its own."""
        deltas, segments = self.deltas, self.segments
        k = len(deltas) - MAX_DELTAS + 1
        size = sum(segments[n].n_live for n in deltas[-k:])
        while k < len(deltas) and segments[deltas[-k - 1]].n_live <= size:
            k += 1
            size += segments[deltas[-k]].n_live
        folded = deltas[-k:]
        name = f"seg-{self.version + 1}"
        self.version += 1
        merged = merge_segments([segments[n] for n in folded])
        for n in folded:
            del segments[n]
        for path in merged.files:
            self.files[path] = self.files[path]._replace(segment=name)
        segments[name] = merged
        self.deltas = [*deltas[:-k], name]
        self._mark_dead(merged.files)  # the merged notes were dead in the base and older deltas already
        return name, merged

    def _commit(self, fold: bool = False) -> None:
        """Write the manifest (memtree.index.manifest); after one that started a new rows file, sweep."""
        segments = list(self.segments)
        m = manifest.Manifest(
            self.version, self.base, self.deltas, segments, self.skipped, self.files, self.rows, self.seq
        )
        folded = manifest.write(self.dir, m, STAMP, fold)
        self.rows, self.seq, self.committed = m.rows, m.seq, m.committed
        if folded:
            self._sweep()

    def _sweep(self) -> None:
        """Delete what no manifest names any more: older rows files, segments a killed writer left,
        older manifests, temp files and folders, the former layout's manifest.json and version file
        (holding the lock, just after a commit that started a new rows file; a segment this process is
        about to delete goes too)."""
        keep = {f"manifest-{self.seq}.json", self.rows, *self.segments}
        with contextlib.suppress(OSError):
            for name in os.listdir(self.dir):
                if name in keep:
                    continue
                path = self.dir / name
                if manifest.SEGMENT_NAME.fullmatch(name):
                    segment_files.remove(path)
                elif name.startswith(".seg-") and path.is_dir():  # the temp folder of a former layout's segment
                    shutil.rmtree(path, ignore_errors=True)
                elif (
                    manifest.ROWS_NAME.fullmatch(name)
                    or manifest.MANIFEST_NAME.fullmatch(name)
                    or name in manifest.LEGACY
                    or store.is_temp(name)
                ):
                    with contextlib.suppress(OSError):
                        os.unlink(path)

    # --- reading ------------------------------------------------------------------------

    def segment_list(self) -> list[tuple[str, Segment]]:
        """Segments in a stable order (base first)."""
        return sorted(self.segments.items(), key=lambda kv: int(kv[0].split("-")[1]))

    @property
    def n_chunks(self) -> int:
        """Live chunks across segments."""
        return sum(s.n_live for s in self.segments.values())

    # --- searching: the index is a memtree.index.protocol.Engine, chunks named (segment, chunk) ---

    def score(
        self,
        qterms: Sequence[str],
        tiers: frozenset[str] | None,
        settings: SearchSettings,
        boosts: Sequence[float] | None = None,
        vectorize: bool = True,
    ) -> Scores:
        """BM25 of the live chunks for ``qterms`` (memtree.index.protocol.Engine.score): by the numpy
        scorer from ``dense.DENSE_MIN_POSTINGS`` postings up, else in pure Python; each term's
        matches and statistics are kept in ``term_cache`` until the index changes."""
        segments = [seg for _, seg in self.segment_list()]
        backend: Any = bm25
        if vectorize and sum(len(seg.post_doc) for seg in segments) >= dense.DENSE_MIN_POSTINGS and dense.available():
            backend = dense
        s = settings
        return backend.score(  # type: ignore[no-any-return]
            segments, qterms, s.partial_match, s.k1, s.b, self.term_cache, s.infix_match, tiers, boosts
        )

    def vocabulary(self, prefix: str) -> Iterator[str]:
        """Terms of the index that start with ``prefix`` (memtree.index.protocol.Engine.vocabulary)."""
        for _, seg in self.segment_list():
            yield from seg.starting(prefix)

    def chunks(
        self, tiers: frozenset[str] | None = None, skip: tuple[str, ...] = ()
    ) -> Iterator[tuple[ChunkRef, Location]]:
        """Every live chunk of ``tiers`` (None: all) not under a ``skip`` prefix, note by note."""
        for si, (_, seg) in enumerate(self.segment_list()):
            for d, where in seg.chunks(tiers, skip):
                yield (si, d), where


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off while a refresh runs (back on after).

    Why: a build allocates lists and tuples by the hundred thousand, none of them in a cycle, and
    each full collection walks the whole heap: 0.5 s of a 100k-chunk build in a process holding
    much else (measured with gc.callbacks in bench/scale.py's process). A refresh that finds little
    changed still holds a FileStat per note while it compares them: promoted to the oldest
    generation, they set off full collections of 20-120 ms inside one refresh in ten (gc.callbacks,
    100k chunks, 40 refreshes of a process that had searched); freed at its end, they set off none.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _first_words(
    pairs: list[tuple[list[str], tuple[int, ...]]], wanted: Collection[int], terms: Sequence[str]
) -> dict[str, str]:
    """The first word yielding each wanted term (by id into ``terms``), from each chunk's words and
    their aligned term ids (text.first_surfaces over the chunks, without tokenizing them again)."""
    found: dict[str, str] = {}
    left = set(wanted)
    for words, ids in pairs:
        here = left.intersection(ids)
        if here:
            for t in here:
                found[terms[t]] = words[ids.index(t)]
            left -= here
            if not left:
                break
    return found


def _days(path: str, doc: Document, texts: list[str] | None = None) -> list[list[str]]:
    """Each chunk's date terms (memtree.text.dates): its text's dates, its entries' created= days, the
    day of the heading above it and its note's day, so a query naming a day finds that day's chunks.

    ``texts`` are the chunks' texts without their metadata, when the caller has them already."""
    from memtree.notes.entries import META_RE
    from memtree.text import date_terms as dates

    note = dates.note_day(path, doc.meta)
    heads = [i for i, line in enumerate(doc.lines, 1) if line[:1] == "#"]  # 1-based heading lines
    days: list[date | None] = [dates.date_from_heading(doc.lines[i - 1]) for i in heads]
    if texts is None:
        texts = [strip_meta(c.text) for c in doc.chunks]
    out = []
    for c, body in zip(doc.chunks, texts):
        at = bisect.bisect_right(heads, c.start)  # the nearest heading at or above the chunk's first line
        metas = [m.group("body") for m in META_RE.finditer(c.text)] if "memtree:" in c.text else []
        out.append(dates.chunk_terms(body, metas, days[at - 1] if at else None, note))
    return out
