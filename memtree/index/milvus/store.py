"""The Milvus side of memtree.index.milvus: connecting, the collection, and syncing rows by content hash.

One row per chunk: ``id`` (a hash of everything else in the row), ``path``, ``start``/``end``
(its 1-based lines), ``node``, ``tier``, ``bank``, ``scope`` (its note's), ``dates`` (its date
terms), ``terms`` (memtree's analysed terms, repeats kept), ``forms``, the sparse vector of
its terms and the forms a query word reaches them by (memtree.index.milvus.forms), and — when the
semantic layer is on — ``dense``, the chunk's passage vector (memtree.index.milvus.dense).

The collection records memtree's analyzer — index format, tokenizer, forms, BM25's k1 and b, and
the embedding model and its dimension when rows carry vectors — in its properties and its name;
one built with another analyzer is dropped and rebuilt, never mixed.
It also records an *epoch*, drawn when it is created: memtree's ledger (``.memtree/milvus/``)
says which rows it has sent under which epoch, so a collection deleted or rebuilt elsewhere is
noticed and filled again, and a sync interrupted half-way resumes from its last batch.

Everything here is derived: deleting the collection or the ledger loses nothing.

Why one module over 300 lines: the row's shape, the collection's schema and the ledger's keys are
one format; apart, a change to one would have to be made in three places.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from memtree.errors import MemtreeError
from memtree.index.milvus import forms
from memtree.notes import store
from memtree.text import terms as text

LITE_FILE = "milvus.db"  # under .memtree/: the default Milvus Lite database
LEDGER_DIR = "milvus"  # under .memtree/: which rows this root has sent, per collection
BATCH_ROWS = 1000
"""Rows sent per upsert; the ledger is saved after each batch, so an interrupted sync resumes there."""
ID_BATCH = 500
"""Ids per delete or fetch expression."""
_PROPS = ("memtree.analyzer", "memtree.epoch", "memtree.avgdl")
DENSE_FIELD = "dense"
DENSE_INDEX = "AUTOINDEX"
"""The vectors' index: Milvus chooses (a server its default graph index; Milvus Lite HNSW through faiss)."""


class MilvusUnavailable(MemtreeError):
    """Milvus cannot be used: the extra is not installed, the server does not answer, the file is held."""


def analyzer(index_format: int, k1: float, b: float) -> str:
    """What a collection's rows depend on besides the notes: index format, tokenizer, forms, k1, b."""
    return f"f{index_format}-t{text.TOKENIZER_VERSION}-v{forms.FORMS_VERSION}-k{k1:g}-b{b:g}"


def collection_name(root: Path, signature: str, given: str = "") -> str:
    """``given``, else ``memtree_<root digest>_<analyzer digest>``: one per root and analyzer."""
    if given:
        return given
    digest = hashlib.blake2b(str(root.resolve()).encode(), digest_size=6).hexdigest()
    return f"memtree_{digest}_{hashlib.blake2b(signature.encode(), digest_size=3).hexdigest()}"


def lite_path(root: Path, uri: str) -> str | None:
    """The Milvus Lite database a ``uri`` names (relative paths from the root), or None for a server."""
    if uri.startswith(("http://", "https://", "tcp://", "unix:")):
        return None
    path = Path(uri or os.path.join(store.STATE_DIR, LITE_FILE)).expanduser()
    return str(path if path.is_absolute() else root / path)


def connect(root: Path, uri: str, timeout: float) -> Any:
    """A MilvusClient for ``uri``; raises MilvusUnavailable saying why within about ``timeout`` seconds.

    A Milvus Lite file is held by one process at a time: memtree waits for it up to ``timeout``.
    """
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")  # grpc's own keepalive chatter is not memtree's to print
    try:
        from pymilvus import MilvusClient
    except ImportError:
        raise MilvusUnavailable("the milvus extra is not installed (pip install 'memtree[milvus]')") from None
    # Why: both log to stderr on their own (a traceback for a Lite file another process holds, each
    # retry against a server that is down, Lite's in-process server on a call it lacks); memtree says
    # what matters once, as a notice or an error
    for name in ("milvus_lite", "pymilvus", "grpc._server"):
        quiet = logging.getLogger(name)
        quiet.setLevel(logging.CRITICAL)
        quiet.propagate = False
    path = lite_path(root, uri)
    if path is None:
        try:
            return MilvusClient(uri=uri, timeout=timeout)
        except Exception as exc:
            raise MilvusUnavailable(f"cannot reach Milvus at {uri}: {_why(exc)}") from None
    if not path.endswith(".db"):
        raise MilvusUnavailable(f"index.milvus.uri {uri!r}: a Milvus Lite file's name must end in .db")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout
    pause = 0.02
    while True:
        try:
            return MilvusClient(uri=path, timeout=timeout)
        except Exception as exc:
            if time.monotonic() >= deadline:
                raise MilvusUnavailable(f"cannot open Milvus Lite {path}: {_why(exc)}") from None
        time.sleep(pause)
        pause = min(pause * 2, 0.5)


def _why(exc: Exception) -> str:
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return " ".join(str(message).split())[:300]


@dataclass
class Row:
    """One chunk as a Milvus row (without its vectors, made when it is sent)."""

    key: str
    path: str
    start: int
    end: int
    tier: str
    scope: str
    terms: list[str]
    text: str = ""  # its passage, when rows carry the semantic layer's vectors

    def fields(self, node: str, avgdl: float, k1: float, b: float, dense: Any = None) -> dict[str, Any]:
        parts = self.path.split("/")
        out = {
            "id": self.key,
            "path": self.path,
            "start": self.start,
            "end": self.end,
            "node": node,
            "tier": self.tier,
            "bank": parts[1] if self.tier == "bank" and len(parts) > 2 else "",
            "scope": self.scope,
            "dates": forms.joined(t for t in self.terms if t[:1] == "@"),
            "terms": forms.joined(self.terms),
            "forms": forms.doc_vector(self.terms, k1, b, avgdl),
        }
        if dense is not None:
            out[DENSE_FIELD] = dense
        return out


def rows_of(
    path: str,
    tier: str,
    scope: str,
    chunks: Sequence[tuple[int, int, list[str]]],
    passages: Sequence[str] | None = None,
) -> list[Row]:
    """A note's chunks as rows; a row's key is the hash of its content, so an unchanged chunk keeps it.

    With ``passages`` (rows that carry vectors) the key covers the passage text too: two texts
    with the same terms (a changed comma, a capital) have different vectors."""
    out = []
    for i, (start, end, terms) in enumerate(chunks):
        text = passages[i] if passages is not None else ""
        body = f"{path}\0{start}\0{end}\0{tier}\0{scope}\0{forms.joined(terms)}"
        if passages is not None:
            body += "\0\0" + text
        key = hashlib.blake2b(body.encode(), digest_size=16).hexdigest()
        out.append(Row(key, path, start, end, tier, scope, terms, text))
    return out


def quote(value: str) -> str:
    """A string literal for a Milvus filter expression."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def listed(values: Iterable[str]) -> str:
    return "[" + ", ".join(map(quote, values)) + "]"


class Collection:
    """memtree's collection in one Milvus: created, checked against the analyzer, written and read."""

    def __init__(self, client: Any, name: str, signature: str, avgdl: float, dim: int = 0) -> None:
        self.client, self.name, self.signature, self.dim = client, name, signature, dim
        self.epoch, self.avgdl = self._open(avgdl)

    def _open(self, avgdl: float) -> tuple[str, float]:
        c = self.client
        if c.has_collection(self.name):
            props = c.describe_collection(self.name).get("properties", {})
            if props.get("memtree.analyzer") == self.signature and props.get("memtree.epoch"):
                c.load_collection(self.name)
                return props["memtree.epoch"], float(props.get("memtree.avgdl") or avgdl)
            c.drop_collection(self.name)  # another analyzer's rows: rebuilt, never mixed
        for other in c.list_collections():  # the same root under an older analyzer (derived names only)
            if other != self.name and other.rsplit("_", 1)[0] == self.name.rsplit("_", 1)[0] != "memtree":
                with contextlib.suppress(Exception):
                    c.drop_collection(other)
        epoch = uuid.uuid4().hex
        avgdl = avgdl or 1.0
        c.create_collection(
            self.name,
            schema=self._schema(),
            index_params=self._indexes(),
            properties={"memtree.analyzer": self.signature, "memtree.epoch": epoch, "memtree.avgdl": repr(avgdl)},
        )
        props = c.describe_collection(self.name).get("properties", {})  # a racing creator's epoch wins
        return props.get("memtree.epoch", epoch), float(props.get("memtree.avgdl") or avgdl)

    def _schema(self) -> Any:
        from pymilvus import DataType

        s = self.client.create_schema(auto_id=False, enable_dynamic_field=False)
        s.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
        s.add_field("path", DataType.VARCHAR, max_length=4096)
        s.add_field("start", DataType.INT64)
        s.add_field("end", DataType.INT64)
        for name in ("node", "tier", "bank", "scope"):
            s.add_field(name, DataType.VARCHAR, max_length=1024)
        s.add_field("dates", DataType.VARCHAR, max_length=65535)
        s.add_field("terms", DataType.VARCHAR, max_length=65535)
        s.add_field("forms", DataType.SPARSE_FLOAT_VECTOR)
        if self.dim:
            s.add_field(DENSE_FIELD, DataType.FLOAT_VECTOR, dim=self.dim)
        return s

    def _indexes(self) -> Any:
        params = self.client.prepare_index_params()
        params.add_index("forms", index_type="SPARSE_INVERTED_INDEX", metric_type="IP")
        if self.dim:
            params.add_index(DENSE_FIELD, index_type=DENSE_INDEX, metric_type="IP")
        return params

    # --- writing ----------------------------------------------------------------------------

    def upsert(self, rows: list[dict[str, Any]]) -> None:
        if rows:
            self.client.upsert(self.name, rows)

    def seal(self) -> None:
        """Make the rows just written searchable from sealed segments (Milvus Lite searches unsealed
        rows far more slowly: 0.3 s against 10 ms a query on the KorQuAD tree)."""
        self.client.flush(self.name)

    def delete_ids(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        for i in range(0, len(ids), ID_BATCH):
            self.client.delete(self.name, filter=f"id in {listed(ids[i : i + ID_BATCH])}")

    def delete_stale(self, paths: Sequence[str], keep: Iterable[str]) -> None:
        """Delete the rows of ``paths`` whose id is not in ``keep``: older versions, and rows an
        interrupted sync left behind."""
        if not paths:
            return
        kept = list(keep)
        where = f"path in {listed(paths)}"
        self.client.delete(self.name, filter=f"{where} and not (id in {listed(kept)})" if kept else where)

    def ids(self) -> Iterator[str]:
        """Every row id in the collection."""
        it = self.client.query_iterator(self.name, batch_size=4096, filter="", output_fields=["id"])
        try:
            while True:
                page = it.next()
                if not page:
                    return
                yield from (r["id"] for r in page)
        finally:
            it.close()

    # --- reading ----------------------------------------------------------------------------

    def search(self, vector: dict[int, float], where: str, limit: int) -> list[dict[str, Any]]:
        """The ``limit`` rows whose forms best match ``vector`` (inner product), among those ``where`` holds."""
        if not vector:
            return []
        found = self.client.search(
            self.name,
            data=[vector],
            anns_field="forms",
            limit=limit,
            filter=where,
            output_fields=["path", "terms"],
            search_params={"metric_type": "IP"},
        )
        return [{"id": hit["id"], "path": hit["entity"]["path"], "terms": hit["entity"]["terms"]} for hit in found[0]]

    def fetch(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        """The rows with these ids (their terms)."""
        out: list[dict[str, Any]] = []
        for i in range(0, len(ids), ID_BATCH):
            part = ids[i : i + ID_BATCH]
            out += self.client.query(self.name, filter=f"id in {listed(part)}", output_fields=["id", "terms"])
        return out


@dataclass
class Ledger:
    """What this root has sent to one collection: per note, its content hash and its rows' keys in
    chunk order. Saved in ``.memtree/milvus/<collection>.json`` after every batch."""

    path: Path
    epoch: str = ""
    notes: dict[str, tuple[str, list[str]]] = field(default_factory=dict)

    @classmethod
    def read(cls, path: Path) -> Ledger:
        try:
            doc = orjson.loads(path.read_bytes())
            return cls(path, doc["epoch"], {p: (h, list(keys)) for p, (h, keys) in doc["notes"].items()})
        except (OSError, ValueError, KeyError, TypeError):
            return cls(path)

    def save(self) -> None:
        doc = {"epoch": self.epoch, "notes": self.notes}
        store.atomic_write(self.path, orjson.dumps(doc), durable=False)
