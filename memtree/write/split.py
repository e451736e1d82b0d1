"""Size-driven splitting of bank notes: a pure plan, then a thin step that writes it.

A note over ``max_bytes`` (UTF-8) is cut before its headings at the coarsest level that makes every
part fit; failing that, a part still too big is cut at its own sub-headings, then between
paragraphs, then between tight blocks — always between the blocks of ``chunks``' scan, so fenced
code, tables and list items stay whole (one block over the limit gets a part and a warning). The
parent keeps its frontmatter, the text before the first cut and an index of links to its children,
which a later split extends. When that index alone would be over the limit (a 100,000-line list
makes hundreds of parts), the links go into index notes beside the parts (``stem/index-1.md``, …,
grouped again while they still do not fit) and the parent links to those: every file written is
under the limit. No byte of content is lost: ``join_parts`` gives it back.

Why one module over 300 lines: the plan and ``join_parts`` are inverses over the same block scan,
kept side by side so that the round trip (a hypothesis test) stays true.
"""

from __future__ import annotations

import bisect
import contextlib
import heapq
import itertools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from memtree.config import SPLIT_MAX_BYTES
from memtree.errors import MemtreeError
from memtree.index.chunk_index import KEYWORD_MIN_TF
from memtree.notes import intent, store
from memtree.notes.chunks import _blocks, _heading_level, _indent, split_frontmatter
from memtree.notes.entries import SPLIT_MARKER, strip_meta
from memtree.notes.tree import TREE_FILE, Node, Tree, check_path, validate
from memtree.text.terms import first_surfaces, normalize, terms
from memtree.write.catalog import BANK, HEADING_KEYWORD_MAX_CHARS, node_id_for

MARKER = SPLIT_MARKER
"""First line of a split parent's index; an HTML comment, so renderers and the indexer skip it."""
SLUG_MAX_CHARS = 60
CHILD_WORDS = 5
"""Distinctive words of a child added to its node's keywords."""
GROUP_LABEL_CHARS = 40
"""An index note's link reads "first … last" of the parts it lists, each label cut to this."""
_PARA, _TIGHT = 7, 8  # ranks of non-heading cuts: after a blank line, then between tight blocks
_ENTRY = re.compile(r"^- \[(?:[^\]\\]|\\.)*\]\((?:<(?P<a>[^<>\n]+)>|(?P<b>[^\s()<>]+))\)[ \t]*\r?$")
_SLUG_JUNK = re.compile(r"[^\w]+|_+")


@dataclass(frozen=True)
class SplitChild:
    """One part cut out of a note: its path under the parent's folder, its exact text, its heading."""

    path: str  # "<stem>/<slug>.md", relative to the parent's folder
    text: str
    heading: str  # "" when the part does not start with a heading
    level: int  # that heading's level, 0 without one
    oversized: bool = False  # a single block over the limit, kept whole

    @property
    def slug(self) -> str:
        """The file name without ``.md``."""
        return PurePosixPath(self.path).stem


@dataclass(frozen=True)
class SplitPlan:
    """What a split writes: the parent's new text, the content it keeps, its new children."""

    parent_text: str
    preamble: str  # content kept in the parent (frontmatter and index excluded)
    children: tuple[SplitChild, ...]
    warnings: tuple[str, ...] = ()
    indexes: tuple[SplitChild, ...] = ()  # index notes holding the links when the parent cannot

    @property
    def files(self) -> tuple[SplitChild, ...]:
        """Every new file the split writes besides the parent: the parts, then the index notes."""
        return self.children + self.indexes


@dataclass(frozen=True)
class SplitResult:
    """One note split on disk: the tree with the child nodes, files written, nodes added, warnings."""

    tree: Tree
    path: str
    children: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


def slugify(heading: str) -> str:
    """A file name for a heading: letters (Hangul too) and digits kept, the rest '-', Latin lowercased."""
    slug = _SLUG_JUNK.sub("-", unicodedata.normalize("NFC", heading).lower()).strip("-")
    return slug[:SLUG_MAX_CHARS].rstrip("-")


def join_parts(plan: SplitPlan) -> str:
    """The content that was split, rebuilt: the parent's preamble then every new child in order."""
    return plan.preamble + "".join(c.text for c in plan.children)


def plan_split(
    text: str, max_bytes: int = SPLIT_MAX_BYTES, stem: str = "note", *, taken: Collection[str] = ()
) -> SplitPlan | None:
    """How to split a note over ``max_bytes``; None when it fits. ``taken``: slugs not to use."""
    if len(text.encode()) <= max_bytes:
        return None
    units = _units(text)
    _, fm_end, _ = split_frontmatter([u.rstrip("\n") for u in units])
    head, body = "".join(units[:fm_end]), units[fm_end:]
    entries, content = _take_index(body)
    nl = "\r\n" if text.count("\r\n") * 2 > text.count("\n") else "\n"
    entries = [e if e.endswith("\n") else e + nl for e in entries]
    lines = [u.rstrip("\n") for u in content]
    sizes = [0, *itertools.accumulate(len(u.encode()) for u in content)]
    fixed = len((head + MARKER + nl + "".join(entries)).encode())
    cands = _candidates(lines)
    lead = next((i for i, line in enumerate(lines) if line.strip()), 0)
    used = {*taken, *(_target_slug(e) for e in entries)}

    def build(ranges: list[tuple[int, int]]) -> tuple[str, list[SplitChild], list[SplitChild]]:
        kids: list[SplitChild] = []
        links: list[_Link] = []
        names, previous = set(used), ""
        for s, e in ranges[1:]:
            first = next((k for k in range(s, e) if lines[k].strip()), s)
            level = cands.get(first, 0) if cands.get(first, 0) <= 6 else 0
            heading, ordinal = _heading_text(lines[first]) if level else "", len(entries) + len(kids) + 1
            slug = _dedupe(slugify(heading) or f"part-{ordinal}", names)
            names.add(slug)
            kids.append(
                SplitChild(f"{stem}/{slug}.md", "".join(content[s:e]), heading, level, sizes[e] - sizes[s] > max_bytes)
            )
            label = heading or (f"{previous} (continued)" if previous else f"part {ordinal}")
            links.append(_Link(label, label, kids[-1].path))
            previous = heading or previous
        index, notes = _index(links, stem, max_bytes - fixed, max_bytes, nl, names)
        preamble = "".join(content[: ranges[0][1]])
        return head + preamble + MARKER + nl + "".join(entries) + "".join(x + nl for x in index), kids, notes

    room = max_bytes - fixed
    for _ in range(3):  # the index's length is known only once the parts are: leave room for it, retry
        ranges = _ranges(cands, sizes, lead, max_bytes, room)
        parent, kids, notes = build(ranges)
        over = len(parent.encode()) - max_bytes
        if over <= 0 or ranges[0][1] == 0:
            break
        room -= over
    else:  # still no room: the preamble moves out too, so that the parent fits
        ranges = [(0, 0), *ranges]
        parent, kids, notes = build(ranges)
    if not kids or (len(kids) == 1 and ranges[0][1] == 0 and kids[0].oversized):
        why = "one block that is never cut" if sizes[-1] > max_bytes else "frontmatter and index, no content to move"
        return SplitPlan(text, "".join(content), (), (f"{stem}: over {max_bytes} bytes, but it holds {why}",))
    warnings = [f"{c.path}: one block of {len(c.text.encode())} bytes, never cut" for c in kids if c.oversized]
    if len(parent.encode()) > max_bytes:
        links = parent.count(nl + "- [")
        warnings.append(f"{stem}: still over {max_bytes} bytes: frontmatter and {links} links")
    warnings += [f"{c.path}: an index note over {max_bytes} bytes" for c in notes if len(c.text.encode()) > max_bytes]
    return SplitPlan(parent, "".join(content[: ranges[0][1]]), tuple(kids), tuple(warnings), tuple(notes))


@dataclass(frozen=True)
class _Link:
    """One line of an index: the first and last part it leads to (the same for a part) and its target."""

    first: str
    last: str
    target: str  # relative to the parent's folder: "<stem>/<slug>.md"

    @property
    def label(self) -> str:
        if self.first == self.last:
            return self.first
        short = [
            x if len(x) <= GROUP_LABEL_CHARS else x[: GROUP_LABEL_CHARS - 1] + "…" for x in (self.first, self.last)
        ]
        return " … ".join(short)


def _index(
    links: list[_Link], stem: str, room: int, max_bytes: int, nl: str, names: set[str]
) -> tuple[list[str], list[SplitChild]]:
    """The parent's new index lines within ``room`` bytes, and the index notes holding the rest.

    While the lines do not fit, consecutive links are packed into index notes of at most
    ``max_bytes`` (in ``stem/``, so their links are relative to it) and the parent lists those.
    """
    notes: list[SplitChild] = []
    head = len((MARKER + nl).encode())
    while sum(len((_line(x.label, x.target) + nl).encode()) for x in links) > room:
        groups: list[list[_Link]] = [[]]
        size = head
        for x in links:
            cost = len((_line(x.label, x.target.removeprefix(stem + "/")) + nl).encode())
            if groups[-1] and size + cost > max_bytes:
                groups.append([])
                size = head
            groups[-1].append(x)
            size += cost
        if len(groups) >= len(links):  # no links, or one per note: grouping would not shrink the index
            break
        grouped = []
        for group in groups:
            slug = next(f"index-{k}" for k in itertools.count(len(notes) + 1) if f"index-{k}" not in names)
            names.add(slug)
            body = "".join(_line(x.label, x.target.removeprefix(stem + "/")) + nl for x in group)
            notes.append(SplitChild(f"{stem}/{slug}.md", MARKER + nl + body, "", 0))
            grouped.append(_Link(group[0].first, group[-1].last, notes[-1].path))
        links = grouped
    return [_line(x.label, x.target) for x in links], notes


def _units(text: str) -> list[str]:
    """Lines with their '\\n' kept, so that joining them gives the text back byte for byte."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _take_index(body: list[str]) -> tuple[list[str], list[str]]:
    """(the index's link lines, the body without its index) — the first marker outside code counts."""
    lines = [u.rstrip("\n") for u in body]
    # Why: after a preamble ending in a text line the marker is that paragraph's last line, not a block.
    marks = (k for s, e, kind in _blocks(lines, 0) if kind != "code" for k in range(s, e + 1))
    s = next((k for k in marks if lines[k].strip() == MARKER), None)
    if s is None:
        return [], body
    j = s + 1
    while j < len(lines) and _ENTRY.match(lines[j]):
        j += 1
    return body[s + 1 : j], body[:s] + body[j:]


def _target_slug(entry: str) -> str:
    m = _ENTRY.match(entry.rstrip("\n"))
    return PurePosixPath(m.group("a") or m.group("b")).stem if m else ""


def _candidates(lines: list[str]) -> dict[int, int]:
    """Where a cut may fall → its rank: 1–6 before a heading of that level, then _PARA, then _TIGHT."""
    out: dict[int, int] = {}
    blocks = _blocks(lines, 0)
    for i, (s, _, kind) in enumerate(blocks):
        if kind == "heading":
            out[s] = _heading_level(lines[s])
        # Why: a heading belongs with the text under it; a part opening with '---' would read as
        # frontmatter; a line indented 4+ spaces may continue an indented code block.
        elif not (i and blocks[i - 1][2] == "heading") and lines[s].strip() != "---" and _indent(lines[s]) < 4:
            out[s] = _PARA if s > 0 and not lines[s - 1].strip() else _TIGHT
    return out


def _ranges(
    cands: dict[int, int], sizes: list[int], lead: int, max_bytes: int, parent_max: int
) -> list[tuple[int, int]]:
    """Cut lines into contiguous ranges; the first (maybe empty) is the preamble kept in the parent.

    ``lead`` is the first non-blank line: a heading there with no sibling is the note's title.
    """
    points = sorted(cands)

    def fits(a: int, b: int, head: bool) -> bool:
        return a == b or sizes[b] - sizes[a] <= (parent_max if head else max_bytes)

    def inner(a: int, b: int, top: bool) -> list[tuple[int, int]]:
        lo, hi = bisect.bisect_left(points, a), bisect.bisect_left(points, b)
        found = [(p, cands[p]) for p in points[lo:hi] if p > a or top]
        if top and found and found[0][0] == lead and all(r > found[0][1] for _, r in found[1:]):
            found = found[1:]  # a heading opening the note with no sibling is its title: it stays put
        return found

    def cut(a: int, b: int, head: bool, top: bool) -> list[tuple[int, int]]:
        if fits(a, b, head):
            return [(a, b)]
        found = inner(a, b, top)
        levels = sorted({r for _, r in found if r <= 6})
        for level in levels:  # the coarsest heading level at which every part fits
            parts = _between(a, b, [p for p, r in found if r <= level])
            if all(fits(s, e, head and i == 0) for i, (s, e) in enumerate(parts)):
                return parts
        if levels:  # none: cut at the coarsest, then look inside each part still too big
            parts = _between(a, b, [p for p, r in found if r <= levels[0]])
            return [piece for i, (s, e) in enumerate(parts) for piece in cut(s, e, head and i == 0, False)]
        return pack(a, b, head, [[p for p, r in found if r == rank] for rank in (_PARA, _TIGHT)])

    def pack(a: int, b: int, head: bool, tiers: list[list[int]]) -> list[tuple[int, int]]:
        """Greedy: consecutive blocks share a part while it fits; a block too big is looked into."""
        if not tiers:  # one block that cannot be cut: it goes whole into a part of its own
            return [(a, a), (a, b)] if head and not fits(a, b, True) else [(a, b)]
        out: list[tuple[int, int]] = []
        start = end = a
        for s, e in _between(a, b, [p for p in tiers[0] if a < p < b]):
            if fits(start, e, head and not out):
                end = e
                continue
            if end > start or (head and not out):
                out.append((start, end))
            start = end = s
            if fits(s, e, head and not out):
                end = e
            else:
                out += pack(s, e, head and not out, tiers[1:])
                start = end = e
        if end > start or (head and not out):
            out.append((start, end))
        return out

    return cut(0, len(sizes) - 1, True, True)


def _between(a: int, b: int, cuts: Sequence[int]) -> list[tuple[int, int]]:
    return list(itertools.pairwise([a, *cuts, b]))


def _heading_text(line: str) -> str:
    return re.sub(r"\s+#+$", "", line.strip().lstrip("#").strip())


def _dedupe(base: str, names: set[str]) -> str:
    slug, k = base, 2
    while slug in names:
        suffix = f"-{k}"
        slug, k = base[: SLUG_MAX_CHARS - len(suffix)].rstrip("-") + suffix, k + 1
    return slug


def _line(label: str, target: str) -> str:
    """``- [Heading](stem/slug.md)``, the label escaped, the target in <> when it holds a space."""
    label = label.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
    target = target if not re.search(r"[\s()<>]", target) else f"<{target}>"
    return f"- [{label}]({target})"


def child_keywords(
    child: SplitChild, parent_keywords: Sequence[str], df: dict[str, int], n_docs: int
) -> tuple[str, ...]:
    """The parent's keywords found in the child, its heading, then its most distinctive words."""
    words = strip_meta(child.text)
    tf = Counter(terms(words))
    out = [kw for kw in parent_keywords if (ts := terms(kw)) and all(t in tf for t in ts)]
    heading = normalize(child.heading)
    if heading and len(heading) <= HEADING_KEYWORD_MAX_CHARS:
        out.append(heading)
    have = {t for kw in out for t in terms(kw)}
    log_n = math.log(n_docs + 1)
    scored = [
        (-n * (log_n - math.log(df.get(t, 0) + 1)), t)
        for t, n in tf.items()
        if n >= KEYWORD_MIN_TF and len(t) >= 2 and not t.isdigit() and t not in have
    ]
    ranked = [t for _, t in heapq.nsmallest(CHILD_WORDS, [x for x in scored if x[0] < 0])]
    surface = first_surfaces(words, set(ranked))
    return tuple(dict.fromkeys([*out, *(surface.get(t, t) for t in ranked)]))


def split_file(root: Path, rel_path: str, tree: Tree, max_bytes: int = SPLIT_MAX_BYTES) -> SplitResult:
    """Split a bank note on disk: children first, then the parent; the tree gains the child nodes.

    All or nothing: its intent is recorded first (memtree.notes.intent), so a split killed between
    the children and the parent is rolled back by the next writer. Call it under the root's write
    lock; the caller saves the returned tree (nothing here does).
    """
    check_path(rel_path, "split")
    rel = PurePosixPath(rel_path)
    if rel.parts[0] != BANK or rel.suffix not in store.NOTE_SUFFIXES:
        raise MemtreeError(f"{rel_path}: only notes in {BANK}/ are split (memory/ logs are append-only)")
    try:
        snap = store.read(root, rel_path)
        path = snap.path
        if not snap.exists:
            raise FileNotFoundError(2, "no such file")
        original = snap.text
    except (OSError, UnicodeDecodeError) as exc:
        raise MemtreeError(f"{rel_path}: cannot be read ({getattr(exc, 'strerror', None) or exc}); not split") from None
    node = tree.by_path.get(rel_path)
    if node is None:
        same_id = tree.by_id.get(node_id_for(rel_path))
        node = same_id if same_id is not None and same_id.path in (None, rel_path) else None

    def clashes(c: SplitChild) -> bool:
        # Why: never overwrite another file, nor reuse a node id or path the tree already has.
        child_rel, target = str(rel.parent / c.path), path.parent / c.path
        if node is not None and (f"{node.id}/{c.slug}" in tree.by_id or child_rel in tree.by_path):
            return True
        return target.exists() and (not target.is_file() or target.read_bytes() != c.text.encode())

    taken: set[str] = set()
    while True:
        plan = plan_split(original, max_bytes, rel.stem, taken=taken)
        if plan is None or not plan.children:
            return SplitResult(tree, rel_path, warnings=plan.warnings if plan else ())
        clash = {c.slug for c in plan.files if clashes(c)}
        if not clash:
            break
        taken |= clash
    paths = [str(rel.parent / c.path) for c in plan.files]
    warnings = list(plan.warnings)
    ids: list[str] = []
    new_tree = tree
    if node is None:
        warnings.append(f"{rel_path}: no node in {TREE_FILE}; children written without nodes (run `memtree index`)")
    else:
        parts = [plan.preamble, *(c.text for c in plan.children)]
        df: Counter[str] = Counter(t for part in parts for t in set(terms(strip_meta(part))))
        n_docs = len(plan.children) + 1
        kids = [
            Node(f"{node.id}/{c.slug}", p, child_keywords(c, node.keywords, dict(df), n_docs), node.id, (), 1.0)
            for c, p in zip(plan.files, paths)
        ]
        ids = [k.id for k in kids]
        parent = replace(node, children=tuple(sorted({*node.children, *ids})))
        new_tree = validate([parent if n.id == node.id else n for n in tree.nodes] + kids)
    written: list[store.Snapshot] = []
    new = [(p, store.read(root, p), c.text.encode()) for c, p in zip(plan.files, paths)]
    new = [(p, child, data) for p, child, data in new if not child.exists]  # an identical file is kept
    # Why written ahead: killed between the children and the parent, the next writer rolls it back
    try:
        intent.begin(root, rel_path, snap.data or b"", plan.parent_text.encode(), [(p, d) for p, _, d in new])
    except OSError as exc:
        raise store.refused(intent.INTENT_FILE, exc) from None
    try:
        for _, child, data in new:
            written.append(store.save(root, child, data))
        # appended lines (a person typing at the end) stay at the parent's end; any other change
        # since the read undoes the children and raises ChangedOnDisk for the caller to retry
        store.save(root, snap, plan.parent_text.encode())
    except MemtreeError:
        for done in written:  # Why: the parent still holds everything; a child left behind would repeat it
            with contextlib.suppress(MemtreeError):
                store.remove(root, done)  # journaled, so the change nets out to nothing
        intent.end(root)
        raise
    intent.end(root)
    return SplitResult(new_tree, rel_path, tuple(paths), tuple(ids), tuple(warnings))
