"""The recall/ tier: short excerpts of the bank entries search keeps finding, searched first.

`memtree recall sync` (and every `memtree consolidate`) reconciles ``recall/hot.md``:

1. an excerpt whose source entry changed or vanished is dropped (no entry of its source note has
   its hash any more; an entry that only moved is followed to its new lines);
2. a bank entry search found at least ``recall.promote_after`` times (3) is promoted: its first
   ``recall.excerpt_chars`` characters become one list item whose metadata names the source
   (``from=bank/x.md:12-14``), the source's hash (``sha=``) and the usage key it counts under;
3. while the excerpts exceed ``recall.budget_tokens`` (2000, CJK-aware estimate), the weakest
   (fewest recalls × decay weight) is evicted — and named in `memtree status`, never silently.

The ``recall.*`` numbers are memtree.yaml's (memtree.config.RecallSettings), passed in by the caller.
A search hit on an excerpt reports the source's path and lines, with ``tier="recall"``.
The file is memtree's: hand edits to it are overwritten by the next sync.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from memtree.errors import OutsideRoot
from memtree.lifecycle.aging import ARCHIVE_DIR, Aged, survey
from memtree.notes import entries, store
from memtree.notes.usage import Usage
from memtree.text import terms as text

if TYPE_CHECKING:
    from memtree.config import ConsolidateSettings, DecaySettings

HOT_FILE = "recall/hot.md"
STATE_FILE = "recall.json"


@dataclass(frozen=True)
class Excerpt:
    """One line of recall/hot.md."""

    text: str
    path: str  # the source note
    lines: tuple[int, int]
    sha: str
    key: str  # the usage key of the source (its entry id, or path#hash for a hand-written chunk)
    recalls: int = 0
    weight: float = 1.0

    @property
    def strength(self) -> float:
        return self.recalls * self.weight

    def render(self) -> str:
        meta = entries.EntryMeta(
            extra={"from": f"{self.path}:{self.lines[0]}-{self.lines[1]}", "sha": self.sha, "key": self.key}
        )
        return entries.format_entry(self.text, meta)


def read(
    root: Path,
    now: float,
    curve: DecaySettings,
    stale: ConsolidateSettings,
    recalls: Callable[[tuple[str, ...]], int] | None = None,
) -> list[Excerpt]:
    """The excerpts now in recall/hot.md, each with its source entry's recalls and weight now.

    The numbers are the ones `recall sync` and `decay` show: the source entry is found by its
    words (``sha``) and counted under all its usage keys by :func:`memtree.lifecycle.aging.survey`. An
    excerpt whose source changed or vanished counts under its own ``key``. ``recalls`` is a usage
    lookup (``Usage.retrievals()``); without one, the counts saved in .memtree/usage.json.
    ``curve`` and ``stale`` are the root's decay and consolidate settings, as the survey takes them.
    """
    current = _parse(root)
    if not current:
        return current
    lookup = Usage(root).retrievals() if recalls is None else recalls
    sources = {ex.path for ex in current if _is_bank_note(root, ex.path)}
    by_content = {(a.path, a.sha): a for a in survey(root, sources, lookup, now, curve, stale)}
    return [
        _refreshed(ex, by_content[(ex.path, ex.sha)])
        if (ex.path, ex.sha) in by_content
        else replace(ex, recalls=lookup((ex.key,)) if ex.key else 0)
        for ex in current
    ]


def _is_bank_note(root: Path, path: str) -> bool:
    """Whether an excerpt's ``from=`` names a live bank note inside the root (hot.md may be hand-edited)."""
    if not path.startswith("bank/") or path.startswith(ARCHIVE_DIR + "/"):
        return False
    try:
        store.inside(root, path)
    except OutsideRoot:
        return False
    return True


def _parse(root: Path) -> list[Excerpt]:
    """The excerpts as written in recall/hot.md, uncounted (lines memtree did not write are ignored)."""
    try:
        note = store.read_note(root / HOT_FILE)
    except (OSError, UnicodeDecodeError):
        return []
    out = []
    for e in entries.parse_entries(note):
        src = entries.source_of(e.meta)
        if src is not None and e.meta.extra.get("sha"):
            out.append(Excerpt(e.content, src[0], src[1], e.meta.extra["sha"], e.meta.extra.get("key", "")))
    return out


@dataclass(frozen=True)
class Sync:
    """What a reconcile did (or would do)."""

    kept: tuple[Excerpt, ...]
    promoted: tuple[Excerpt, ...]
    dropped: tuple[tuple[Excerpt, str], ...]  # (excerpt, why): source changed, superseded or gone
    evicted: tuple[Excerpt, ...]
    tokens: int
    budget: int


def plan(root: Path, aged: list[Aged], promote_after: int, budget: int, excerpt_chars: int) -> Sync:
    """Reconcile recall/hot.md against the bank's entries (``aged``: memtree.lifecycle.aging.survey)."""
    current = _parse(root)
    # Why not a superseded entry: recall/ is served first, and its words no longer hold
    by_content = {(a.path, a.sha): a for a in aged if not a.retired}
    past = {(a.path, a.sha) for a in aged if a.retired}
    kept: list[Excerpt] = []
    dropped: list[tuple[Excerpt, str]] = []
    for ex in current:
        src = by_content.get((ex.path, ex.sha))
        if src is not None:
            kept.append(_refreshed(ex, src))  # same words, maybe moved: follow them
        elif (ex.path, ex.sha) in past:
            dropped.append((ex, "source superseded"))
        elif (root / ex.path).is_file():
            dropped.append((ex, "source changed"))
        else:
            dropped.append((ex, "source gone"))
    have = {(ex.path, ex.sha) for ex in kept}
    promoted = [
        _excerpt(a, excerpt_chars)
        for a in sorted(aged, key=lambda a: (-a.recalls, a.path, a.lines))
        if a.recalls >= promote_after and a.keys and (a.path, a.sha) not in have and not a.retired
    ]
    chosen = kept + promoted
    evicted: list[Excerpt] = []
    tokens = sum(text.estimate_tokens(ex.text) for ex in chosen)
    while tokens > budget and chosen:
        weakest = min(chosen, key=lambda ex: (ex.strength, ex.recalls, ex.path, ex.lines))
        chosen.remove(weakest)
        evicted.append(weakest)
        tokens -= text.estimate_tokens(weakest.text)
    left = set(map(id, chosen))
    return Sync(
        tuple(ex for ex in kept if id(ex) in left),
        tuple(ex for ex in promoted if id(ex) in left),
        tuple(dropped),
        tuple(evicted),
        tokens,
        budget,
    )


def _excerpt(a: Aged, chars: int) -> Excerpt:
    words = " ".join(a.content.split())
    short = words if len(words) <= chars else words[: chars - 1].rstrip() + "…"
    return Excerpt(short, a.path, a.lines, a.sha, a.keys[0], a.recalls, a.weight)


def _refreshed(ex: Excerpt, a: Aged) -> Excerpt:
    return Excerpt(ex.text, a.path, a.lines, ex.sha, ex.key, a.recalls, a.weight)


def write(root: Path, sync: Sync, now: float) -> None:
    """Write recall/hot.md (caller holds the write lock) and record the sync, made at ``now``, for `status`."""
    # Why by source, not by strength: recall counts differ per clone, and an order they decided
    # would make two clones' recall/ differ (and conflict in git) with the same excerpts
    chosen = sorted([*sync.kept, *sync.promoted], key=lambda ex: (ex.path, ex.lines, ex.sha))
    body = "\n".join(ex.render() for ex in chosen)
    new = body + "\n" if chosen else ""
    if chosen or (root / HOT_FILE).is_file():
        store.rewrite(root, HOT_FILE, lambda _old: new)
    state = {
        "at": now,
        "excerpts": len(chosen),
        "tokens": sync.tokens,
        "budget": sync.budget,
        "promoted": [f"{ex.path}:{ex.lines[0]}" for ex in sync.promoted],
        "dropped": [f"{ex.path}:{ex.lines[0]} ({why})" for ex, why in sync.dropped],
        "evicted": [f"{ex.path}:{ex.lines[0]}" for ex in sync.evicted],
    }
    with contextlib.suppress(OSError):
        store.atomic_write(root / store.STATE_DIR / STATE_FILE, orjson.dumps(state), durable=False)


def drop_source(root: Path, path: str, sha: str) -> bool:
    """Remove recall/hot.md's excerpts of one bank entry whose words changed or that was forgotten.

    The caller holds the write lock. Why not wait for the next sync: recall/ is searched first, and a
    forgotten fact must not be found there meanwhile. Returns whether hot.md changed.
    """
    if not (root / HOT_FILE).is_file():
        return False

    def without(note: str) -> str | None:
        gone = [
            e
            for e in entries.parse_entries(note)
            if (src := entries.source_of(e.meta)) is not None and src[0] == path and e.meta.extra.get("sha") == sha
        ]
        for e in reversed(gone):  # bottom up, so the line numbers above stay right
            note = entries.remove_lines(note, e.start, e.end)
        return note if gone else None

    return store.rewrite(root, HOT_FILE, without)


def status(root: Path, budget: int) -> dict[str, Any]:
    """recall/ now (excerpts, tokens, budget) and the last sync's promotions, drops and evictions."""
    now = _parse(root)
    tokens = sum(text.estimate_tokens(ex.text) for ex in now)
    try:
        last = orjson.loads((root / store.STATE_DIR / STATE_FILE).read_bytes())
    except (OSError, ValueError):
        last = {}
    last = last if isinstance(last, dict) else {}
    return {
        "excerpts": len(now),
        "tokens": tokens,
        "budget": budget,
        "over_budget": tokens > budget,
        "last_sync": last.get("at"),
        "evicted": last.get("evicted", []),
        "dropped": last.get("dropped", []),
    }
