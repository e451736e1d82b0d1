"""What the viewer (memtree.serve.viewer) asks the daemon for beyond the CLI's shapes: cards, the tree, a version.

Each is a verb of the JSON API (memtree.serve.verbs), so it runs behind the daemon's refresh like
every other one:

- ``entries``: every bank entry as a card — its words, metadata (kind, tags, source, scope, created,
  updated), node, file and lines, decay weight and recalls — most recently changed first, filtered
  (kind, bank, node) and paged; the whole list is built once per :func:`version` and kept.
- ``tree``: tree-index.json's nodes with their keywords, parents and children.
- ``version``: a short string that changes whenever anything the page shows may have changed (a note
  re-indexed, the tree, conflicts, settings, the change journal); the page polls it.
- ``explain``: ``search`` whose hits also carry the ``--explain`` arithmetic as text (``as_of``: as search's).
"""

from __future__ import annotations

import os
import threading
import time
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from memtree import schema

if TYPE_CHECKING:
    from memtree.api import MemTree

Json = dict[str, Any]
PAGE_SIZE = 100
"""Cards in one page of ``entries`` unless the caller says; why: a page of 100 renders well under the
viewer's 1 s first-paint budget, and the page asks for more as it is scrolled."""
MAX_PAGE_SIZE = 1000
CARDS_TTL_S = 60.0
"""How long a built card list is reused for one version; why: weights drift with time, slowly."""
KINDS = ("fact", "preference", "entity", "decision")
UNCLASSIFIED = "unclassified"
"""The kind filter's name for entries without a ``kind=``."""
_STAMPED = ("tree-index.json", "conflicts.json", "memtree.yaml", ".memtree/changes.jsonl")


@dataclass
class _Built:
    version: str
    made: float
    cards: list[Json]


_cache: dict[str, _Built] = {}
_cache_lock = threading.Lock()


def version(mt: MemTree) -> Json:
    """``{"version": …}``: changes when the index, the tree, conflicts, settings or the journal change."""
    parts = [str(getattr(mt.state.index, "version", 0))]
    for name in _STAMPED:
        try:
            st = os.stat(mt.root / name)
            parts.append(f"{st.st_mtime_ns:x}.{st.st_size:x}")
        except OSError:
            parts.append("-")
    return {"version": "-".join(parts)}


def bank_of(path: str) -> str:
    """The bank a note belongs to: ``bank/identity/values.md`` → ``identity`` (``bank/inbox.md`` → ``inbox``)."""
    parts = path.split("/")
    if len(parts) > 2:
        return parts[1]
    return parts[-1].rsplit(".", 1)[0]


def cards(mt: MemTree, now: datetime) -> list[Json]:
    """Every bank entry as a card, most recently changed first (built once per version and minute)."""
    stamp = version(mt)["version"]
    key = str(mt.root)
    with _cache_lock:
        built = _cache.get(key)
        if built is not None and built.version == stamp and time.monotonic() - built.made < CARDS_TTL_S:
            return built.cards
    made = _build(mt, now)
    with _cache_lock:
        _cache[key] = _Built(stamp, time.monotonic(), made)
    return made


def _build(mt: MemTree, now: datetime) -> list[Json]:
    from memtree.notes import store
    from memtree.notes.entries import parse_entries

    aged = mt.decay(now)
    by_path: dict[str, list[Any]] = {}
    for a in aged:
        by_path.setdefault(a.path, []).append(a)
    with mt.state.lock:
        nodes = {n.path: n.id for n in mt.state.parsed_tree().nodes if n.path}
    out: list[Json] = []
    for path, rows in by_path.items():
        try:
            metas = {e.start: e.meta for e in parse_entries(store.read_note(mt.root / path))}
            modified = datetime.fromtimestamp(os.stat(mt.root / path).st_mtime).astimezone()
        except (OSError, UnicodeDecodeError):
            metas, modified = {}, now
        for a in rows:
            meta = metas.get(a.lines[0])
            updated = meta.extra.get("updated", "") if meta else ""
            created = meta.created if meta else ""
            # Why the file's own time for "modified": age_days is rounded to a tenth of a day
            estimated = modified if a.dated == "modified" else now - timedelta(days=a.age_days)
            when = schema.iso(updated) or schema.iso(created) or schema.iso(estimated)
            out.append(
                {
                    "id": a.id or None,
                    "path": path,
                    "lines": list(a.lines),
                    "node": nodes.get(path),
                    "bank": bank_of(path),
                    "content": unicodedata.normalize("NFC", a.content),
                    "kind": (meta.kind if meta else "") or None,
                    "tags": list(meta.tags) if meta else [],
                    "source": "auto" if a.auto else "manual",
                    "scope": (meta.scope if meta else "") or "global",
                    "created_at": schema.iso(created),
                    "updated_at": schema.iso(updated),
                    "changed_at": when,
                    "weight": round(a.weight, 4),
                    "recall_count": a.recalls,
                    "why": a.why or None,
                }
            )
    # Why by the parsed moment, not the string: offsets differ between entries written in different zones
    out.sort(key=lambda c: (-_epoch(c["changed_at"]), c["path"], c["lines"][0]))
    return out


def _epoch(value: str | None) -> float:
    if not value:
        return 0.0
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return 0.0


def entries(mt: MemTree, args: Json, now: datetime) -> Json:
    """A page of cards (``offset``, ``limit``) filtered by ``kind`` (or ``unclassified``), ``bank`` and ``node``."""
    found = cards(mt, now)
    kind, bank, node = args.get("kind"), args.get("bank"), args.get("node")
    kinds: dict[str, int] = {}
    shown = []
    for c in found:
        if bank and c["bank"] != bank:
            continue
        if node and c["node"] != node:
            continue
        name = c["kind"] or UNCLASSIFIED
        kinds[name] = kinds.get(name, 0) + 1
        if kind and name != kind:
            continue
        shown.append(c)
    offset = max(0, int(args.get("offset", 0)))
    limit = min(MAX_PAGE_SIZE, max(1, int(args.get("limit", PAGE_SIZE))))
    return {
        "entries": shown[offset : offset + limit],
        "total_count": len(shown),
        "entry_count": len(found),
        "kinds": kinds,
        "offset": offset,
        "generated_at": schema.iso(now),
    }


def tree(mt: MemTree) -> Json:
    """tree-index.json's nodes: id, path, keywords, parent, children (in the file's order)."""
    with mt.state.lock:
        found = mt.state.parsed_tree().nodes
    nodes = [
        {"id": n.id, "path": n.path, "keywords": list(n.keywords), "parent": n.parent, "children": list(n.children)}
        for n in found
    ]
    return {"nodes": nodes}


def explain(mt: MemTree, args: Json) -> Json:
    """``search`` with each hit's ``--explain`` arithmetic (``explain``) and the keywords that routed it;
    ``as_of`` (YYYY-MM-DD) answers with the facts that held that day, as ``search --as-of`` does."""
    from memtree.search.query import as_of_day

    day = as_of_day(args.get("as_of"))
    result = mt.search(
        args["query"], k=args.get("k"), tier=args.get("tier", "default"), scope=args.get("scope"), as_of=day
    )
    doc = schema.search(result, with_text=True)
    tw, bw = result.weights.get("tree", 0.4), result.weights.get("bm25", 0.6)
    for shown, hit in zip(doc["hits"], result.hits):
        try:
            shown["explain"] = hit.explain(tw, bw)
        except (KeyError, ZeroDivisionError):  # a recall/ hit or a semantic-only one lacks some signals
            shown["explain"] = ", ".join(f"{k} {v:g}" for k, v in hit.signals.items() if isinstance(v, (int, float)))
        shown["route"] = list(getattr(hit, "route", ()) or ())
    return doc
