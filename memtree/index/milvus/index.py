"""``index.backend: milvus``: memtree's chunk index with a Milvus collection as its search engine.

Markdown stays the truth and memtree's own segments stay its catalogue — which notes exist, their
chunks, and the statistics BM25 needs (N, the average length, each query term's df over the tiers
searched). The collection is a shadow of the segments (memtree.index.milvus.store), kept in step
on every refresh by chunk content hash: only new or changed chunks are sent, gone ones deleted.

A query asks Milvus for its best ``index.milvus.candidates`` chunks by the inner product of sparse
vectors that carry memtree's matching rule (memtree.index.milvus.forms) — once over the tiers
searched, once over the notes the tree routed to — and re-scores those candidates with memtree's
exact BM25 over the terms their rows hold, so a hit's score, evidence and ``--explain`` are what
the local engine gives whenever it is among the candidates (memtree.index.milvus.scores).

With the semantic layer on, rows also carry the chunks' vectors and the layer's candidates come
from the collection's dense search (memtree.index.milvus.dense; :meth:`MilvusIndex.nearest`).

Failure: the extra missing, Milvus unreachable or its Milvus Lite file held too long → one notice
(a search warning) and the local engine for this process (tried again after ``RETRY_S``); with
``index.milvus.required: true``, :class:`MilvusUnavailable` (exit 2).

Why one module over 300 lines: keeping the collection in step and naming its rows as local chunks
are one ledger's two sides; the scoring and the Milvus calls live in the modules named above.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cachetools import LRUCache

from memtree.index.chunk_index import INDEX_FORMAT, Index, Report, _Parsed
from memtree.index.milvus import dense as milvus_dense
from memtree.index.milvus.dense import Dense
from memtree.index.milvus.scores import MilvusScores, where
from memtree.index.milvus.store import (
    BATCH_ROWS,
    LEDGER_DIR,
    Collection,
    Ledger,
    MilvusUnavailable,
    Row,
    analyzer,
    collection_name,
    connect,
    rows_of,
)
from memtree.index.vectors import passages, wanted
from memtree.index.vocab import NO_TERM, Vocabulary
from memtree.notes import store

if TYPE_CHECKING:
    import numpy as np

    from memtree.config import SearchSettings, Settings
    from memtree.index.protocol import ChunkRef, Scores

RETRY_S = 60.0
"""After a failure, how long a long-lived process (daemon, MCP server) searches locally before it tries Milvus again."""


def make_index(root: Path, settings: Settings) -> Index:
    """The chunk index ``index.backend`` asks for: memtree's own, or one searched through Milvus."""
    if settings.index.backend == "milvus":
        return MilvusIndex(root, settings)
    return Index(root, settings.index.max_note_bytes)


DF_CACHE_TERMS = 16_384
"""Query terms whose document frequency (per tiers searched) stays known until the index changes;
the least recently used leave first."""


class MilvusIndex(Index):
    """memtree's chunk index, searched through a Milvus collection kept in step with it."""

    parallel_ok = False  # its _parse keeps each note's terms for the collection, in this process

    def __init__(self, root: Path, settings: Settings) -> None:
        super().__init__(root, settings.index.max_note_bytes)
        self.config = settings.index.milvus
        self.embed = settings.embed
        self.k1, self.b = settings.search.k1, settings.search.b
        self.signature = analyzer(INDEX_FORMAT, self.k1, self.b)
        self.name = collection_name(root, self.signature, self.config.collection)
        self.dense: Dense | None = None  # the model whose vectors the rows carry (the semantic layer on)
        self._embedder: Any = None
        self._embed_error: Exception | None = None
        self.held = False  # True: refreshes leave the collection as it is (see :meth:`hold`)
        self.collection: Collection | None = None
        self.ledger: Ledger | None = None
        self.synced_version = -1  # the index version the collection was last brought in step with
        self.sent = 0  # rows the last refresh sent, and deleted
        self.deleted = 0
        self._failed_at: float | None = None
        self._said: list[str] = []  # notices already handed to one refresh's caller
        # path → (hash, scope, chunks, text: kept only while rows may carry vectors, for their passages)
        self._parsed_now: dict[str, tuple[str, str, list[tuple[int, int, list[str]]], str | None]] = {}
        self._keys: dict[str, dict[str, int]] = {}  # path → row key → chunk number (from the ledger)
        self.df_cache: MutableMapping[tuple[str, float, float, frozenset[str] | None], int] = LRUCache(DF_CACHE_TERMS)
        self.df_version = -1  # the index version df_cache was filled at

    # --- keeping the collection in step ------------------------------------------------------

    def _parse(self, f: store.FileStat, body: str, digest: str, warnings: list[str], vocab: Vocabulary) -> _Parsed:
        parsed = super()._parse(f, body, digest, warnings, vocab)
        terms = vocab.terms
        chunks = [(start, end, [terms[i] for i in ids if i != NO_TERM]) for start, end, ids in parsed.chunks]
        kept = body if self.dense is not None or self.held else None
        self._parsed_now[f.path] = (digest, _scope(body), chunks, kept)
        return parsed

    def shared_embedder(self, model_dir: str | None = None) -> Any:
        """The embedder of embed.model_dir, loaded once per process for the rows and the semantic
        layer both (memtree.search.query hands this to the layer); raises what loading raised."""
        if self._embed_error is not None:
            raise self._embed_error
        if self._embedder is None:
            from memtree import embedding

            try:
                self._embedder = embedding.load_embedder(self.embed.model_dir or None)
            except Exception as exc:
                self._embed_error = exc
                raise
        return self._embedder

    def _arrange(self) -> None:
        """Rows carry vectors exactly when the semantic layer is on and its model loads; when that
        changes, the analyzer signature does, and the collection is another one (rebuilt)."""
        dense = None
        if wanted(self.root, self.embed.enabled):
            with contextlib.suppress(Exception):  # the layer says why it is off at the first search
                dense = Dense(self.shared_embedder(), self.root)
        signature = analyzer(INDEX_FORMAT, self.k1, self.b)
        if dense is not None:
            signature += milvus_dense.signature(dense.model_id, dense.dim)
        self.dense = dense
        if signature != self.signature:
            self.signature = signature
            self.name = collection_name(self.root, signature, self.config.collection)
            self.collection, self.ledger, self.synced_version = None, None, -1

    @contextlib.contextmanager
    def hold(self, force: bool = False) -> Iterator[None]:
        """Refreshes inside leave the collection as it is; it is synced once on the way out
        (`memtree index --embed` embeds first, so its rows go once, with their vectors)."""
        self.held = True
        try:
            yield
        finally:
            self.held = False
        self._arrange()
        self.sync(force)
        self._parsed_now.clear()

    def refresh(
        self,
        force: bool = False,
        progress: Callable[[int, int], None] | None = None,
        paths: list[str] | None = None,
    ) -> Report:
        """The local refresh (memtree.index.chunk_index), then the collection brought in step with it."""
        for said in self._said:  # a notice is news once: it went out with the previous refresh
            if said in self.warnings:
                self.warnings.remove(said)
        self._said = []
        self.sent = self.deleted = 0
        if not self.held:
            self._arrange()
        report = super().refresh(force=force, progress=progress, paths=paths)
        if self.held:  # what was parsed is kept for the sync after
            return report
        if force or self.version != self.synced_version or self.collection is None:
            self.sync(force)
        self._parsed_now.clear()
        return report

    def sync(self, force: bool = False) -> bool:
        """Send new and changed chunks, delete gone ones; True when the collection is in step.

        ``force`` (and a collection or ledger new to this root) compares every row id in the
        collection with the chunks on disk, so rows left by anything else go too.
        """
        if self.collection is None and not self._connect():
            return False
        try:
            self._sync(force)
        except MilvusUnavailable:
            raise
        except Exception as exc:  # Milvus went away mid-sync: the ledger keeps what landed
            self._fail(f"the sync to Milvus collection {self.name} failed ({type(exc).__name__}: {exc})")
            return False
        return True

    def _connect(self) -> bool:
        if self._failed_at is not None and time.monotonic() - self._failed_at < RETRY_S:
            return False
        try:
            client = connect(self.root, self.config.uri, self.config.timeout_s)
            n = sum(seg.n_live for seg in self.segments.values())
            avgdl = sum(seg.live_len for seg in self.segments.values()) / n if n else 1.0
            dim = self.dense.dim if self.dense is not None else 0
            self.collection = Collection(client, self.name, self.signature, avgdl, dim)
        except MilvusUnavailable as exc:
            self._fail(str(exc))
            return False
        except Exception as exc:
            self._fail(f"Milvus collection {self.name} cannot be used ({type(exc).__name__}: {exc})")
            return False
        self._failed_at = None
        return True

    def _fail(self, why: str) -> None:
        self.collection = None
        self._failed_at = time.monotonic()
        if self.config.required:
            raise MilvusUnavailable(f"{why} (index.milvus.required is true)")
        notice = f"{why}; searching with the local engine"
        self.warnings.append(notice)
        self._said.append(notice)

    def _sync(self, force: bool) -> None:
        coll = self.collection
        assert coll is not None
        folder = self.dir.parent / LEDGER_DIR
        with store.locked(folder / f"{self.name}.lock"):
            ledger = Ledger.read(folder / f"{self.name}.json")  # another process may have sent rows since
            remote: set[str] | None = None
            if force or ledger.epoch != coll.epoch:
                remote = set(coll.ids())  # compare with what is there, not with what we think we sent
                ledger = Ledger(ledger.path, coll.epoch)
            nodes = _nodes(self.root)
            sent = deleted = 0
            batch: list[Row] = []
            done: dict[str, tuple[str, list[str]]] = {}
            changed: list[str] = []
            dense, cache = self.dense, None

            def pending() -> Iterator[tuple[str, str, list[Row], list[Row]]]:
                """Each note not sent as it is now: its path, hash, rows and the rows the collection lacks."""
                for path, entry in self.files.items():
                    if ledger.notes.get(path, ("",))[0] == entry.hash:
                        continue
                    rows = self._rows(path, entry.hash)
                    if rows is not None:
                        have = remote if remote is not None else set(ledger.notes.get(path, ("", []))[1])
                        yield path, entry.hash, rows, [row for row in rows if row.key not in have]

            if dense is not None:  # embed what the vector cache lacks in one pass, before any row goes
                cache = dense.cache()
                dense.prepare(cache, [row.text for *_, new in pending() for row in new])

            def flush() -> None:
                vecs: list[Any] = [None] * len(batch)
                if cache is not None and dense is not None and batch:
                    vecs = cache.vectors_for([row.text for row in batch], dense.embedder).tolist()
                coll.upsert(
                    [row.fields(nodes.get(row.path, ""), coll.avgdl, self.k1, self.b, v) for row, v in zip(batch, vecs)]
                )
                if changed:  # the notes' older rows, and any an interrupted sync left behind
                    coll.delete_stale(changed, [k for p in changed for k in done[p][1]])
                ledger.notes.update(done)
                ledger.save()
                batch.clear()
                done.clear()
                changed.clear()

            for path, digest, rows, new in pending():
                batch += new
                sent += len(new)
                done[path] = (digest, [row.key for row in rows])
                if remote is None:
                    changed.append(path)
                if len(batch) >= BATCH_ROWS:
                    flush()
            flush()
            gone = [p for p in ledger.notes if p not in self.files]
            if gone:
                coll.delete_stale(gone, [])
                for p in gone:
                    deleted += len(ledger.notes.pop(p)[1])
                ledger.save()
            if remote is not None:
                wanted = {k for _, keys in ledger.notes.values() for k in keys}
                extra = remote - wanted
                coll.delete_ids(sorted(extra))
                deleted += len(extra)
            if sent or deleted:
                coll.seal()
        self.ledger, self._keys = ledger, {}
        self.synced_version = self.version
        self.sent, self.deleted = sent, deleted

    def _rows(self, path: str, digest: str) -> list[Row] | None:
        """A note's rows, parsed now if the refresh did not just parse it (None: it cannot be read)."""
        parsed = self._parsed_now.get(path)
        if parsed is None or parsed[0] != digest or (self.dense is not None and parsed[3] is None):
            e = self.files[path]
            self._load(store.FileStat(path, e.tier, e.mtime_ns, e.size), [], Vocabulary())
            parsed = self._parsed_now.get(path)
            if parsed is None or parsed[0] != digest:  # changed again since: the next refresh sends it
                return None
        texts = None
        if self.dense is not None:
            lines = (parsed[3] or "").split("\n")
            texts = passages(lines, [(start, end) for start, end, _ in parsed[2]])
        return rows_of(path, self.files[path].tier, parsed[1], parsed[2], texts)

    # --- searching ------------------------------------------------------------------------

    @property
    def in_step(self) -> bool:
        """Whether Milvus answers searches: connected, and in step with this index."""
        return self.collection is not None and self.ledger is not None and self.synced_version == self.version

    def score(
        self,
        qterms: Sequence[str],
        tiers: frozenset[str] | None,
        settings: SearchSettings,
        boosts: Sequence[float] | None = None,
        vectorize: bool = True,
    ) -> Scores:
        """memtree.index.protocol.Engine.score through Milvus; the local scorer while Milvus is off."""
        if not self.in_step:
            return super().score(qterms, tiers, settings, boosts, vectorize)
        return MilvusScores(self, qterms, tiers, settings, boosts, vectorize)

    def dense_model(self) -> str | None:
        """The model whose vectors every row carries and :meth:`nearest` searches (memtree.index.protocol.DenseEngine);
        None while rows carry none or Milvus is not in step (the semantic layer then scans its local vectors)."""
        return self.dense.model_id if self.dense is not None and self.in_step else None

    def nearest(
        self, queries: np.ndarray, n: int, tiers: frozenset[str] | None, skip: tuple[str, ...] = ()
    ) -> list[list[tuple[ChunkRef, float]]]:
        """Per query vector, the ``n`` live chunks of ``tiers`` (none under ``skip``) with the highest inner
        product with it, best first — asked of the collection's dense index."""
        return milvus_dense.nearest_chunks(self, queries, n, where(tiers, skip))

    def vectors(self, refs: Sequence[ChunkRef]) -> dict[ChunkRef, list[float]]:
        """The vectors the collection holds for these chunks (a chunk without one is left out)."""
        return milvus_dense.chunk_vectors(self, refs)

    def local_score(
        self, qterms: Sequence[str], tiers: frozenset[str] | None, settings: SearchSettings, vectorize: bool
    ) -> Scores:
        """The local scorer's answer (what :meth:`MilvusScores.matched` enumerates)."""
        return super().score(qterms, tiers, settings, None, vectorize)

    def chunk_of(self, path: str, key: str) -> ChunkRef | None:
        """The local chunk a row names, when the row was sent from the note as it is now."""
        ledger = self.ledger
        entry = self.files.get(path)
        sent = ledger.notes.get(path) if ledger is not None else None
        if entry is None or sent is None or sent[0] != entry.hash:
            return None
        keys = self._keys.get(path)
        if keys is None:
            keys = self._keys[path] = {k: i for i, k in enumerate(sent[1])}
        i = keys.get(key)
        if i is None:
            return None
        names = self.segment_numbers()
        seg = self.segments[entry.segment]
        f = seg.file_id(path)
        if f is None:
            return None
        return names[entry.segment], seg.file_start[f] + i

    def key_of(self, ref: ChunkRef) -> str | None:
        """The row key of a local chunk (None: its note is not in the collection as it is now)."""
        name, seg = self.segment_list()[ref[0]]
        path = seg.files[seg.doc_file[ref[1]]]
        sent = self.ledger.notes.get(path) if self.ledger is not None else None
        if sent is None or sent[0] != self.files[path].hash or self.files[path].segment != name:
            return None
        i = ref[1] - seg.file_start[seg.doc_file[ref[1]]]
        return sent[1][i] if i < len(sent[1]) else None

    def segment_numbers(self) -> dict[str, int]:
        """Segment name → its position in :meth:`segment_list` (a ChunkRef's first part)."""
        cached = self.__dict__.get("_numbers")
        if cached is None or cached[0] != self.version:
            cached = (self.version, {name: i for i, (name, _) in enumerate(self.segment_list())})
            self.__dict__["_numbers"] = cached
        numbers: dict[str, int] = cached[1]
        return numbers


def _scope(body: str) -> str:
    """A note's frontmatter scope (``global`` when it names none)."""
    if not body.startswith("---"):
        return "global"
    from memtree.notes.chunks import split_frontmatter

    meta, _, _ = split_frontmatter(body.split("\n", 500)[:500])
    scope = meta.get("scope")
    return scope if isinstance(scope, str) and scope else "global"


def _nodes(root: Path) -> dict[str, str]:
    """Note path → node id, from tree-index.json as it is (empty when it cannot be read)."""
    from memtree.notes import tree as treemod

    try:
        tree = treemod.load(root, check_files=False)
    except Exception:  # a broken tree stops no sync: the rows just carry no node
        return {}
    return {path: node.id for path, node in tree.by_path.items()}
