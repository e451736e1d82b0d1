"""Writing an entry: sanitize → route (TAG_ROUTING, tree, inbox) → dedup or conflict → atomic write.

Every step before the write is a pure decision; the write happens once, under the root's write
lock, after the target note has been re-read under that lock — so concurrent agents never lose
each other's entries. The result is one of four frozen decisions, consumed with ``match``:

    Created    a new entry was appended; when it states the same thing as an entry of the note with
               another value (:func:`verdict`: "replace"), that entry is marked superseded by it
               (memtree.notes.entries.retired), its text kept
    Merged     it restated an existing entry (similarity ≥ retain.merge_threshold): one entry kept
    Duplicate  it is already there, word for word after normalization: nothing written
    Conflict   it is close to an existing entry but differs (≥ retain.conflict_threshold): both
               kept, the pair recorded in conflicts.json

Why one module over 300 lines: the pipeline is one decision taken under one lock on a note re-read
under it; split, that rule would have to be kept in several places.
"""

from __future__ import annotations

import contextlib
import secrets
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TypedDict

from memtree.config import Settings
from memtree.errors import ChangedOnDisk, MemtreeError, QueryError, TreeError
from memtree.notes import entries, store
from memtree.notes.tree import Node, Tree, check_path, validate
from memtree.text import terms as text
from memtree.write import conflicts as conflict_store
from memtree.write.sanitize import Sanitizer
from memtree.write.similarity import distinct_facts, frame, lost_words, one_value, similarity

MAX_TAGS = 10
MANUAL_MAX_CHARS = 50_000
AUTO_MAX_CHARS = 10_000
"""Longest entry text (characters) by source; why: auto-extracted text that long is a log, not a fact."""
KINDS = ("fact", "preference", "entity", "decision")
SOURCES = ("manual", "auto")
INBOX_NODE = "inbox"
INBOX_PATH = "bank/inbox/inbox.md"
"""Where text no note fits goes: a note of its own bank, so `memtree banks` lists it and it can be
disabled. A root made before keeps its inbox node's path (bank/inbox.md), read and written as is."""


@dataclass(frozen=True)
class Request:
    """What to remember, and how."""

    text: str
    tag: str | None = None
    to: str | None = None
    tags: tuple[str, ...] = ()
    kind: str = "fact"
    source: str = "manual"
    scope: str = "global"
    origin: str | None = None  # where auto-extracted text came from, e.g. memory/2026-11-27.md:5-6
    until: str = ""  # the last day the fact holds (YYYY-MM-DD): written as valid_until=


@dataclass(frozen=True)
class Target:
    """Where an entry goes: the node, its note, how it was chosen, and nodes to create for it."""

    node: str
    path: str
    how: str  # "to", "tag", "tree" or "inbox"
    new_nodes: tuple[Node, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """What every decision tells: the node and note, the similarity that decided, how it was routed."""

    node: str
    path: str
    similarity: float
    how: str  # "to", "tag", "tree" or "inbox"
    redacted: tuple[str, ...] = ()  # kinds the sanitizer replaced
    dry_run: bool = False
    new_nodes: tuple[str, ...] = ()  # nodes created for the entry (its note did not exist yet), parents first


@dataclass(frozen=True, kw_only=True)
class Created(Outcome):
    """A new entry was appended (``supersedes``: the entry it replaced, marked so, its id or lines)."""

    entry_id: str
    supersedes: str = ""


@dataclass(frozen=True, kw_only=True)
class Merged(Outcome):
    """The text restated an existing entry; one entry (the better, or both contents) was kept."""

    entry_id: str  # the entry kept
    merged_id: str  # the id the new text would have had, now recorded in the kept entry's merged ids
    strategy: str


@dataclass(frozen=True, kw_only=True)
class Duplicate(Outcome):
    """The entry is already in the note: nothing was written."""

    existing: str  # the existing entry's id, or its line range for a hand-written entry


@dataclass(frozen=True, kw_only=True)
class Conflict(Outcome):
    """The entry was written, and recorded as possibly contradicting an existing one."""

    entry_id: str
    conflict_id: str
    other: str  # the existing entry's text


class _Common(TypedDict):
    node: str
    path: str
    how: str
    redacted: tuple[str, ...]
    dry_run: bool


Decision = Created | Merged | Duplicate | Conflict


def check_request(req: Request, settings: Settings) -> None:
    """Refuse bad input with one clear line (QueryError) before anything is read or written."""
    if not req.text.strip():
        raise QueryError("nothing to add: the text is empty")
    # Why first: the fields below land raw in notes, tree-index.json and keywords.json, and the
    # format errors further down quote the value; a secret is refused before either can happen.
    fields = {"--to": req.to, "--tag": req.tag, "--scope": req.scope, "origin": req.origin}
    sanitizer = sanitizer_for(settings)
    for what, value in [*fields.items(), *((f"tag {i + 1}", tag) for i, tag in enumerate(req.tags))]:
        if value:
            sanitizer.require_clean(value, what)
    if req.source not in SOURCES:
        raise QueryError(f"--source must be one of {', '.join(SOURCES)}, got {req.source!r}")
    limit = MANUAL_MAX_CHARS if req.source == "manual" else AUTO_MAX_CHARS
    if len(req.text) > limit:
        raise QueryError(f"the text has {len(req.text):,} characters; {req.source} entries take at most {limit:,}")
    if req.kind not in KINDS:
        raise QueryError(f"--kind must be one of {', '.join(KINDS)}, got {req.kind!r}")
    if len(req.tags) > MAX_TAGS:
        raise QueryError(f"{len(req.tags)} tags given; at most {MAX_TAGS}")
    for tag in req.tags:
        if not tag or any(c in tag for c in " ;,=\n<>"):
            raise QueryError(f"tag {tag!r} must be one word without spaces, ';', ',', '=', '<' or '>'")
    from memtree.notes.scopes import check_entry_scope

    check_entry_scope(req.scope, "--scope")
    if req.until and entries.day_of(req.until) is None:
        raise QueryError(f"--until wants a day as YYYY-MM-DD (e.g. 2027-03-31), got {req.until[:40]!r}")
    if req.tag is not None and _table_key(req.tag, settings) is None:
        known = ", ".join(f"{t} → {r.node}" for t, r in sorted(settings.routing.items()))
        raise QueryError(f"unknown tag {req.tag!r}; known tags: {known or 'none (see routing: in memtree.yaml)'}")


def _table_key(tag: str, settings: Settings) -> str | None:
    for key in settings.routing:
        if key.casefold() == tag.casefold():
            return key
    return None


def route_blend(
    tree_scores: dict[str, float], coverage: dict[str, float], tree_weight: float, bm25_weight: float
) -> dict[str, float]:
    """Route score of each note for untagged text: ``tree_weight × tree + bm25_weight × coverage``.

    ``tree_scores`` are the keyword routes (memtree.index.routing.route); ``coverage`` is, per note, the
    idf-weighted share of the text's words its best chunk holds. Why both, with search's own blend
    weights: a fact about crontab escapes rarely repeats a node keyword, but shares its words with
    the note it belongs to (bench/routing.py, report half: 10 of 57 right by keywords alone, 45 with both).
    """
    nodes = tree_scores.keys() | coverage.keys()
    return {n: tree_weight * tree_scores.get(n, 0.0) + bm25_weight * coverage.get(n, 0.0) for n in nodes}


def confident_route(routes: dict[str, float], threshold: float, margin: float) -> str | None:
    """The best-routed node when it scores ≥ ``threshold`` and ≥ ``margin`` × the runner-up, else None."""
    ranked = sorted(routes.items(), key=lambda kv: (-kv[1], kv[0]))
    if not ranked or ranked[0][1] < threshold or ranked[0][1] <= 0:
        return None
    if len(ranked) > 1 and ranked[0][1] < margin * ranked[1][1]:
        return None
    return ranked[0][0]


def choose_target(req: Request, tree: Tree, routes: dict[str, float], settings: Settings) -> Target:
    """`--to`, else the tag's TAG_ROUTING row, else a confident route, else the inbox.

    ``routes`` are the route scores of untagged text (:func:`route_blend`). A note named by ``--to``
    (node id or bank/….md path) or by a tag that does not exist yet is created with its node.
    """
    if req.to is not None:
        ref = store.check_name(req.to.strip(), "--to").strip("/")
        node = tree.by_id.get(ref) or tree.by_path.get(ref)
        if node is None:
            # Why both spellings: `--to work/meetings` and `--to bank/work/meetings.md` name one note
            if ref.startswith("bank/") != ref.endswith(".md"):
                raise QueryError(
                    f"--to {req.to!r}: no such node or note; give a node id (topic/name) or a note path "
                    "(bank/topic/name.md)"
                )
            path = ref if ref.startswith("bank/") else f"bank/{ref}.md"
            node = tree.by_path.get(path)
            if node is None:
                _check_new_note_path(path, req.to)
                node_id = path[len("bank/") : -len(".md")]
                _check_new_node_id(tree, node_id, req.to)
                return Target(node_id, path, "to", _new_note_nodes(tree, node_id, path, ()))
        if node.path is None:
            raise QueryError(f"--to {node.id!r} is a category with no note; pick one of: {', '.join(node.children)}")
        return Target(node.id, node.path, "to")
    if req.tag is not None:
        row = settings.routing[_table_key(req.tag, settings) or req.tag]
        node = tree.by_id.get(row.node)
        if node is not None and node.path:
            return Target(node.id, node.path, "tag")
        path = f"bank/{row.node}.md"
        return Target(row.node, path, "tag", _new_note_nodes(tree, row.node, path, row.keywords))
    best = confident_route(routes, settings.retain.route_threshold, settings.retain.route_margin)
    node = tree.by_id.get(best) if best is not None else None
    if node is not None and node.path:
        return Target(node.id, node.path, "tree")
    inbox = tree.by_id.get(INBOX_NODE)
    if inbox is not None and inbox.path:
        return Target(inbox.id, inbox.path, "inbox")
    return Target(INBOX_NODE, INBOX_PATH, "inbox", _new_note_nodes(tree, INBOX_NODE, INBOX_PATH, ("inbox", "미분류")))


def _check_new_note_path(ref: str, given: str) -> None:
    """A new note named by --to must be a plain bank/…/name.md path that memtree will index."""
    try:
        check_path(ref, "--to")
    except TreeError as exc:
        raise QueryError(str(exc)) from None
    parts = ref.split("/")
    if any(p in ("", ".") for p in parts) or any(store.ignored(p) for p in parts) or len(parts[-1]) <= len(".md"):
        raise QueryError(
            f"--to {given!r}: give a node id like topic/name or a plain note path like bank/topic/name.md "
            "(no empty or '.' parts, no hidden or temporary names)"
        )


def _check_new_node_id(tree: Tree, node_id: str, given: str) -> None:
    """A new note's node may not take the id of a node that exists (a category, or another note's)."""
    node = tree.by_id.get(node_id)
    if node is not None:
        what = (
            f"a category; pick one of: {', '.join(node.children)}" if node.path is None else f"the node of {node.path}"
        )
        raise QueryError(f"--to {given!r}: {node_id!r} is {what}")


def _new_note_nodes(tree: Tree, node_id: str, path: str, keywords: tuple[str, ...]) -> tuple[Node, ...]:
    """The node for a note that does not exist yet, with any missing category above it."""
    out: list[Node] = []
    parts = node_id.split("/")
    for depth in range(1, len(parts)):
        cat = "/".join(parts[:depth])
        if cat not in tree.by_id:
            out.append(Node(cat, None, (text.normalize(parts[depth - 1]),), "/".join(parts[: depth - 1]) or None))
    parent = "/".join(parts[:-1]) or None
    out.append(Node(node_id, path, tuple(text.normalize(k) for k in keywords), parent))
    return tuple(out)


def with_nodes(tree: Tree, new: tuple[Node, ...]) -> Tree:
    """The tree with new nodes linked under their parents (validated)."""
    if not new:
        return tree
    nodes = {n.id: n for n in tree.nodes}
    for n in new:
        nodes.setdefault(n.id, n)
    for n in new:
        if n.parent and n.id not in nodes[n.parent].children:
            p = nodes[n.parent]
            nodes[p.id] = replace(p, children=tuple(sorted({*p.children, n.id})))
    return validate(list(nodes.values()))


def new_id(now: datetime) -> str:
    """An entry id no other clone or clock makes: the day and 64 random bits from the OS.

    ``e-20261201-3fa9c2d17b0e5a48``.

    Why random, not a clock or a counter: two machines with the same clock (or one set back) and no
    shared counter still never meet; 2^64 ids a day keep the odds of one clash among a team's
    million entries under one in 10^7.
    """
    return f"e-{now:%Y%m%d}-{secrets.token_hex(8)}"


def best_match(content: str, existing: list[entries.Entry]) -> tuple[entries.Entry | None, float, bool]:
    """The existing entry most similar to ``content``, its similarity, and whether it is identical."""
    norm = entries.normalize(content)
    best, best_s = None, 0.0
    for e in existing:
        if entries.normalize(e.content) == norm:
            return e, 1.0, True
        s = similarity(content, e.content)
        if s > best_s:
            best, best_s = e, s
    return best, best_s, False


SIDE_BY_SIDE = frozenset({"environment"})
"""distinct_facts reasons that name two facts true side by side (the flag is on in production, off in
staging), never one replacing the other: no conflict."""
SAME_FRAME = 0.5
"""Least :func:`memtree.write.similarity.frame` for a changed value to read as a replacement.
Why 0.5: on bench/conflicts.py's tune half every update is at 0.5 or more, every different fact that
distinct_facts gives a reason for at 0.4 or less, and restatements in another word order at 0."""


def verdict(new: str, old: str, score: float, merge_at: float, conflict_at: float) -> str:
    """What `add` makes of a new text beside one existing entry, ``score`` their similarity; the conflict rule.

    "merge" (a restatement: ≥ merge_at); "replace" (the same sentence with another value — a number,
    date, name, state, unit or a negation, in the same frame, and one value of one statement
    (memtree.write.similarity.one_value): the newer supersedes the older);
    "conflict" (a negation worded otherwise: a person decides); "distinct" (anything else: another
    fact on the topic, or the same fact in other words, kept beside it — no one's time is asked).
    Measured by bench/conflicts.py on labelled pairs (tuned on one half, reported on the other).
    """
    if score >= merge_at:
        return "merge"
    if score < conflict_at:
        return "distinct"
    reason = distinct_facts(new, old)
    if reason is None or reason in SIDE_BY_SIDE:
        return "distinct"
    if frame(new, old) >= SAME_FRAME and one_value(new, old, reason):
        return "replace"
    return "conflict" if reason == "negation" else "distinct"


def judge(new: str, old: entries.Entry, score: float, merge_at: float, conflict_at: float) -> str:
    """:func:`verdict` for an existing entry: a hand-written paragraph of several facts is judged by
    its sentences too, and one that a sentence of it would be replaced by is a conflict (resolve then
    retires that sentence alone), never replaced whole."""
    said = verdict(new, old.content, score, merge_at, conflict_at)
    if replaceable(old) or said == "merge":
        return said
    if said == "replace":
        return "conflict"
    for sentence in entries.sentences(old.content):
        if verdict(new, sentence, similarity(new, sentence), merge_at, conflict_at) in ("replace", "conflict"):
            return "conflict"
    return said


def replaceable(old: entries.Entry) -> bool:
    """Whether a newer text may mark ``old`` superseded as a whole: an entry memtree wrote, or one sentence.

    Why: a hand-written paragraph holds several facts; the newer one replaces one of them, which
    `conflicts resolve` moves out (memtree.write.conflicts), never the whole paragraph.
    """
    return bool(old.meta.id) or len(entries.sentences(old.content)) < 2


def merge(old: entries.Entry, content: str, strategy: str) -> str:
    """The content kept when a new text restates ``old``."""
    if strategy == "merge_content":
        have = entries.normalize(old.content)
        extra = [s for s in _sentences(content) if entries.normalize(s) not in have]
        return " ".join([old.content, *extra]).strip()
    # keep_best: the more informative of the two (longer once normalized); the old one on a tie
    return content if len(entries.normalize(content)) > len(entries.normalize(old.content)) else old.content


def keep(old: entries.Entry, content: str, strategy: str) -> str | None:
    """The content a merge of ``content`` into ``old`` keeps, or None when every choice would lose words.

    Why: no add makes a user's text vanish. The strategy's choice (:func:`merge`) is kept when it
    holds every content word of both texts; else the old content, when it holds the new one's; else
    None — both are written and flagged as a conflict (a state, region or unit the guard has no row
    for, or a restatement in other words).
    """
    for kept in (merge(old, content, strategy), old.content):
        if not lost_words(kept, content) and not lost_words(kept, old.content):
            return kept
    return None


def _sentences(content: str) -> list[str]:
    import re

    return [s.strip() for s in re.split(r"(?<=[.!?。])\s+|\n+", content) if s.strip()]


def sanitizer_for(settings: Settings) -> Sanitizer:
    """The sanitizer with the user's patterns (a broken one is reported by the sanitizer, once)."""
    return Sanitizer(settings.custom_patterns)


def retain(
    root: Path, req: Request, tree: Tree, routes: dict[str, float], settings: Settings, now: datetime, dry_run: bool
) -> Decision:
    """Run the whole pipeline for one request; see the module docstring. Raises QueryError on bad input."""
    check_request(req, settings)
    clean = sanitizer_for(settings).sanitize(req.text.strip())
    redacted = tuple(sorted({r.kind for r in clean.redactions}))
    content = clean.text
    target = choose_target(req, tree, routes, settings)
    store.inside(root, target.path)  # a note behind a symlink out of the root is refused before any work
    common = _Common(node=target.node, path=target.path, how=target.how, redacted=redacted, dry_run=dry_run)
    with store.write_lock(root) if not dry_run else contextlib.nullcontext():
        # Why: a person (or script) may append to this note while we decide; the save refuses
        # bytes it did not see, and the decision is made again on what is there now.
        for _ in range(store.REWRITE_ATTEMPTS):
            try:
                return _retain_once(root, req, tree, target, content, common, settings, now, dry_run)
            except ChangedOnDisk:
                continue
    raise ChangedOnDisk(f"{target.path} kept changing while memtree tried to add to it; nothing was written")


def subtree_notes(tree: Tree, node_id: str) -> list[str]:
    """The notes below ``node_id`` (the parts a split made of its note, and theirs), in tree order.

    Why dedup reads them: after a split the entries of a note live in its children, and the same
    text added again would otherwise be created a second time ("similarity 0.00").
    """
    out: list[str] = []
    node = tree.by_id.get(node_id)
    todo = list(node.children) if node is not None else []
    seen = {node_id}
    while todo:
        child = tree.by_id.get(todo.pop(0))
        if child is None or child.id in seen:  # a cycle is check's to report, not add's to follow
            continue
        seen.add(child.id)
        if child.path:
            out.append(child.path)
        todo.extend(child.children)
    return out


def _read_part(root: Path, path: str) -> store.Snapshot | None:
    """A split part read for dedup, or None when it cannot be (gone, outside the root, not UTF-8)."""
    try:
        snap = store.read(root, path)
        snap.text  # noqa: B018 - decodes, or raises UnicodeDecodeError
    except (MemtreeError, OSError, UnicodeDecodeError):
        return None
    return snap if snap.exists else None


def _retain_once(
    root: Path,
    req: Request,
    tree: Tree,
    target: Target,
    content: str,
    common: _Common,
    settings: Settings,
    now: datetime,
    dry_run: bool,
) -> Decision:
    """One attempt: read the note and its split parts, decide, write (ChangedOnDisk when a note moved under it)."""
    snap = store.read(root, target.path)
    try:
        note = snap.text
    except UnicodeDecodeError:
        raise QueryError(f"{target.path} is not UTF-8 text; memtree will not rewrite it") from None
    # Why only the same scope: "API deploys use blue-green" (project:api) and "Web deploys use
    # blue-green" (project:web) are two true facts side by side, not a duplicate or a conflict
    scope = "" if req.scope == "global" else req.scope
    snaps = {target.path: snap}
    for path in subtree_notes(tree, target.node):
        part = _read_part(root, path)
        if part is not None and path not in snaps:
            snaps[path] = part
    match, score, identical, where = None, 0.0, False, target.path
    for path, s in snaps.items():
        # Why current only: a replaced entry is the past; the same value said again is news, not a duplicate
        found = [e for e in entries.parse_entries(s.text) if e.meta.scope == scope and not entries.is_retired(e.meta)]
        m, sc, same = best_match(content, found)
        if m is not None and (same, sc) > (identical, score):
            match, score, identical, where = m, sc, same, path
        if identical:
            break
    if where != target.path:  # the match sits in a split part: a merge or duplicate answers for it
        node = tree.by_path.get(where)
        matched = _Common(**{**common, "node": node.id if node else target.node, "path": where})
    else:
        matched = common
    if identical and match is not None:
        existing = match.meta.id or f"lines {match.start}-{match.end}"
        return Duplicate(existing=existing, similarity=1.0, **matched)
    entry_id = new_id(now)
    meta = entries.EntryMeta(
        id=entry_id,
        created=now.isoformat(timespec="seconds"),
        tags=req.tags,
        kind=req.kind,
        source=req.source,
        scope="" if req.scope == "global" else req.scope,
        extra={
            **({"from": req.origin} if req.origin else {}),
            **({entries.VALID_UNTIL: str(entries.day_of(req.until))} if req.until else {}),
        },
    )
    merge_at = settings.retain.merge_threshold
    conflict_at = settings.retain.conflict_threshold
    kept = keep(match, content, settings.retain.merge_strategy) if match is not None and score >= merge_at else None
    if match is not None and kept is not None:
        write = snaps[where]
        old_id = match.meta.id or f"lines {match.start}-{match.end}"
        keep_meta = match.meta if kept == match.content else replace(meta, id=match.meta.id or entry_id)
        merged_ids = tuple(
            dict.fromkeys(i for i in (*match.meta.merged, match.meta.id, entry_id) if i and i != keep_meta.id)
        )
        keep_meta = replace(keep_meta, merged=merged_ids)
        new_note = entries.replace_lines(write.text, match.start, match.end, entries.with_meta(match, kept, keep_meta))
        decision: Decision = Merged(
            entry_id=keep_meta.id or old_id,
            merged_id=entry_id,
            similarity=round(score, 4),
            strategy=settings.retain.merge_strategy,
            **matched,
        )
    else:
        write = snap
        said = judge(content, match, score, merge_at, conflict_at) if match is not None else "distinct"
        if said == "merge":
            said = "conflict"  # a restatement no merge keeps every word of: both written, a person decides
        if said == "replace" and where != target.path:
            said = "conflict"  # the old entry sits in another note (a split part): a person settles it
        if said == "replace" and match is not None:
            note = entries.remark(note, match, entries.retired(match.meta, now.date(), entry_id))
        new_note = entries.append_entry(note, entries.format_entry(content, meta), target.node.split("/")[-1])
        if said == "conflict" and match is not None:
            decision = Conflict(
                entry_id=entry_id, conflict_id="", similarity=round(score, 4), other=match.content, **common
            )
        else:
            replaced = (match.meta.id or f"lines {match.start}-{match.end}") if said == "replace" and match else ""
            decision = Created(entry_id=entry_id, similarity=round(score, 4), supersedes=replaced, **common)
    # Why first: a write that reports failure has written nothing, so every other file this one
    # needs is read before the note is touched (an unreadable conflicts.json or tree-index.json)
    if isinstance(decision, Conflict):
        conflict_store.load(root)
    if target.new_nodes:
        _reload_tree(root, Tree())
    if dry_run:
        return decision
    store.save(root, write, new_note.encode("utf-8"))
    try:
        if target.new_nodes:
            from memtree.notes.tree import update

            update(root, lambda current: with_nodes(current, target.new_nodes))
        if isinstance(decision, Conflict) and match is not None:
            new_side = conflict_store.Side(target.path, entry_id, content)
            old_side = conflict_store.Side(where, match.meta.id, match.content)
            cid = conflict_store.open_conflict(root, new_side, old_side, score, now)
            decision = replace(decision, conflict_id=cid)
    except MemtreeError as exc:  # changed since it was read just now: the entry is written, and the error says so
        raise MemtreeError(f"entry {entry_id} was written to {target.path}, but then: {exc}") from None
    return decision


def _reload_tree(root: Path, fallback: Tree) -> Tree:
    """tree-index.json as it is now (another agent may have added nodes), checked, not file-checked."""
    from memtree.notes.tree import load

    return load(root, check_files=False) if (root / "tree-index.json").exists() else fallback
