"""Three-way merges of memory's tracked files by their structure: what `memtree merge-driver` runs.

Every function takes the common ancestor, ours and theirs as values and returns a :class:`Merged`
value; nothing here touches disk, clock or git. Each kind is merged on its own structure:

- daily logs (``memory/``): the union of both sides' entries, in time order, each once;
- bank notes: entries with an id by id (added either side kept, edited one side taken, deleted
  on one side and untouched on the other deleted, edited both ways kept both with a clash mark);
  prose without ids by lines, where both sides rewrote the same lines both blocks are kept and
  the later one carries a clash mark — never conflict markers;
- ``tree-index.json``: by node id, keywords and children as sets, a field changed on one side
  taken; a field both sides changed keeps ours and records theirs (:class:`FieldClash`), which
  memtree files in conflicts.json (memtree.write.clashes) for `conflicts resolve`;
- ``conflicts.json``: by conflict id, a resolution (the record removed) winning over an open record;
- ``recall/``: the union of the excerpt lines, in an order no clone's counts decide.

A clash mark is ``clash=c-…`` in the memtree comment of the later kept version; `memtree
conflicts` lists it (memtree.write.clashes) and `conflicts resolve` settles it. The mark rides in
the merged note itself, so the record reaches every clone with the merge and needs no second file.

Determinism: wherever both sides changed the same place in a note, log or recall/, the two
versions are ordered by their text, not by which side is ours, so A merging B gives the bytes B
merging A gives. A node field of tree-index.json has room for one value, so there ours is kept:
the merge is symmetric up to which side is ours, and the recorded clash has one id either way.

Why one module over 300 lines: the five kinds share the line merge and the clash rules.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from difflib import SequenceMatcher
from typing import Any

import orjson

from memtree.notes import entries

CLASH_KEY = "clash"
"""The metadata key of a clash mark (``<!-- memtree: …; clash=c-1a2b3c4d5e6f -->``)."""
MARKER_RE = re.compile(r"^(?:<{7}|={7}|>{7}|\|{7})(?:[ \t].*)?$", re.MULTILINE)
"""A git conflict marker line (``<<<<<<<``, ``|||||||``, ``=======``, ``>>>>>>>``)."""
_LOG_ENTRY = re.compile(r"^- (?P<time>\d{2}:\d{2})(?=\s|$)")
_FROM = re.compile(r"from=(?P<path>[^;:>]*):(?P<a>\d+)-(?P<b>\d+)")


@dataclass(frozen=True)
class FieldClash:
    """A tree-index.json node field both sides changed differently: ours kept, theirs recorded.

    The id is made of the node, the field and both values in sorted order, so whichever clone
    merges records the same id (and conflicts.json, merged by id, keeps it once).
    """

    id: str
    node: str
    field: str
    ours: Any
    theirs: Any


@dataclass(frozen=True)
class Merged:
    """A merge's text, the clash ids it marked or recorded, and the node fields it recorded."""

    text: str
    clashes: tuple[str, ...] = ()
    fields: tuple[FieldClash, ...] = ()


# --- the line merge ---------------------------------------------------------------------------


def _sync_regions(base: Sequence[str], a: Sequence[str], b: Sequence[str]) -> list[tuple[int, ...]]:
    """Stretches of ``base`` both sides kept: (base start, base end, a start, a end, b start, b end)."""
    am = SequenceMatcher(None, base, a, autojunk=False).get_matching_blocks()
    bm = SequenceMatcher(None, base, b, autojunk=False).get_matching_blocks()
    ia = ib = 0
    out: list[tuple[int, ...]] = []
    while ia < len(am) and ib < len(bm):
        abase, amatch, alen = am[ia]
        bbase, bmatch, blen = bm[ib]
        lo, hi = max(abase, bbase), min(abase + alen, bbase + blen)
        if lo < hi:
            asub, bsub = amatch + lo - abase, bmatch + lo - bbase
            out.append((lo, hi, asub, asub + hi - lo, bsub, bsub + hi - lo))
        if abase + alen < bbase + blen:
            ia += 1
        else:
            ib += 1
    out.append((len(base), len(base), len(a), len(a), len(b), len(b)))
    return out


def hunks(base: Sequence[str], a: Sequence[str], b: Sequence[str]) -> list[tuple[list[str], list[str], list[str]]]:
    """diff3: the three inputs cut into aligned (base, a, b) pieces; a piece where all three agree is stable."""
    out: list[tuple[list[str], list[str], list[str]]] = []
    iz = ia = ib = 0
    for zs, ze, as_, ae, bs, be in _sync_regions(base, a, b):
        if as_ > ia or bs > ib or zs > iz:
            out.append((list(base[iz:zs]), list(a[ia:as_]), list(b[ib:bs])))
        if ze > zs:
            same = list(base[zs:ze])
            out.append((same, same, same))
        iz, ia, ib = ze, ae, be
    return out


def _is_entry(token: str) -> bool:
    return token.startswith("\x00")


def _settle(o: list[str], a: list[str], b: list[str]) -> tuple[list[str], int, int, bool]:
    """One piece both sides changed: (kept, start and end of the second-kept block in it, whether prose clashed).

    Lines both sides start or end the piece with are kept once around it; in between both blocks
    are kept, in the order of their text (so the result does not depend on which side is ours),
    without what either side deleted from the ancestor and without a token twice.
    """
    lead = 0
    while lead < min(len(a), len(b)) and a[lead] == b[lead]:
        lead += 1
    tail = 0
    while tail < min(len(a), len(b)) - lead and a[len(a) - 1 - tail] == b[len(b) - 1 - tail]:
        tail += 1
    head, end = a[:lead], a[len(a) - tail :]
    first, second = sorted((a[lead : len(a) - tail], b[lead : len(b) - tail]), key="\n".join)
    base_set, a_set, b_set = set(o), set(a), set(b)

    def keep(t: str) -> bool:
        return t not in base_set or (t in a_set and t in b_set)

    kept = [t for t in first if keep(t)]
    seen = set(kept) | set(head) | set(end)
    more = [t for t in second if keep(t) and (t not in seen or (not t.strip() and not _is_entry(t)))]
    new_a = [t for t in a if t not in base_set and t.strip() and not _is_entry(t)]
    new_b = [t for t in b if t not in base_set and t.strip() and not _is_entry(t)]
    # Why only with an ancestor: two sides appending at the same place (the common case) add, not clash
    clash = bool(o) and bool(new_a) and bool(new_b)
    return [*head, *kept, *more, *end], len(head) + len(kept), len(head) + len(kept) + len(more), clash


def merge_tokens(base: Sequence[str], ours: Sequence[str], theirs: Sequence[str]) -> tuple[list[str], list[int]]:
    """A three-way merge of token lists, and where each prose clash's second-kept block ends (its last words)."""
    if not "".join(base):  # added on both sides: the lines both begin with count as their ancestor
        n = next((i for i, (x, y) in enumerate(zip(ours, theirs, strict=False)) if x != y), min(len(ours), len(theirs)))
        base = list(ours[:n])
    out: list[str] = []
    clashes: list[int] = []
    for o, a, b in hunks(base, ours, theirs):
        if a == b:
            out += a
        elif a == o:
            out += b
        elif b == o:
            out += a
        else:
            kept, start, stop, clash = _settle(o, a, b)
            last = [i for i in range(start, stop) if kept[i].strip() and not _is_entry(kept[i])]
            if clash and last:
                clashes.append(len(out) + last[-1])
            out += kept
    return out, clashes


def merge_lines(base: str, ours: str, theirs: str) -> Merged:
    """Plain text merged by lines: where both sides rewrote the same lines, both blocks kept."""
    out, clashes = merge_tokens(base.split("\n"), ours.split("\n"), theirs.split("\n"))
    return Merged("\n".join(out), tuple(_clash_id([out[at]]) for at in clashes))


def _clash_id(lines: Sequence[str]) -> str:
    return "c-" + hashlib.blake2b("\n".join(lines).encode(), digest_size=6).hexdigest()


# --- bank notes -------------------------------------------------------------------------------


def _tokens(note: str) -> list[str]:
    """A note as tokens: an entry with an id is one token (``\\0id\\0text``), every other line its own."""
    lines = note.split("\n")
    starts = {e.start - 1: e for e in entries.parse_entries(note) if e.meta.id}
    out: list[str] = []
    i = 0
    while i < len(lines):
        e = starts.get(i)
        if e is None:
            out.append(lines[i])
            i += 1
            continue
        out.append(f"\x00{e.meta.id}\x00" + "\n".join(lines[i : e.end]))
        i = e.end
    return out


def _entry_id(token: str) -> str:
    return token[1:].split("\x00", 1)[0]


def _entry_text(token: str) -> str:
    return token[1:].split("\x00", 1)[1]


def _marked(text: str, clash: str, new_id: str | None = None) -> str:
    """``text`` (an entry or a line) with ``clash=`` added to its memtree comment (one made when it has none)."""
    lines = text.split("\n")
    last = lines[-1]
    m = entries.META_RE.search(last)
    meta = entries.parse_meta(m.group("body")) if m else entries.EntryMeta()
    meta = replace(meta, id=new_id or meta.id, extra={**meta.extra, CLASH_KEY: clash})
    head = last[: m.start()] if m else last.rstrip()
    lines[-1] = f"{head} {meta.render()}"
    return "\n".join(lines)


def merge_note(base: str, ours: str, theirs: str) -> Merged:
    """A bank note merged entry by entry (entries with ids) and line by line (the rest); see the module."""
    out, prose = merge_tokens(_tokens(base), _tokens(ours), _tokens(theirs))
    clashes: list[str] = []
    # a prose clash: the last words of the second-kept block carry the mark
    for at in prose:
        cid = _clash_id([out[at]])
        out[at] = _marked(out[at], cid)
        clashes.append(cid)
    # an entry edited both ways is in twice: the later version gets its own id and the mark
    first_text: dict[str, str] = {}
    result: list[str] = []
    for t in out:
        if not _is_entry(t):
            result.append(t)
            continue
        eid, text = _entry_id(t), _entry_text(t)
        if eid not in first_text:
            first_text[eid] = text
            result.append(text)
        elif text != first_text[eid]:
            cid = _clash_id([first_text[eid], text])
            result.append(_marked(text, cid, f"{eid}.{cid[2:8]}"))
            clashes.append(cid)
        # the same entry twice (both sides added it): once
    return Merged("\n".join(result), tuple(clashes))


# --- daily logs ---------------------------------------------------------------------------------


def _log_parts(log: str) -> tuple[list[str], list[str]]:
    """A log's head (lines before its first timed entry) and its entries (each with its continuation lines)."""
    lines = log.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    first = next((i for i, ln in enumerate(lines) if _LOG_ENTRY.match(ln)), len(lines))
    head, items = lines[:first], list[str]()
    for ln in lines[first:]:
        if _LOG_ENTRY.match(ln) or not items:
            items.append(ln)
        else:
            items[-1] += "\n" + ln
    return head, items


def merge_log(base: str, ours: str, theirs: str) -> Merged:
    """A daily log: both sides' entries in time order, each as often as a side has it (a removal stays)."""
    from collections import Counter

    bh, bi = _log_parts(base)
    oh, oi = _log_parts(ours)
    th, ti = _log_parts(theirs)
    head, _ = merge_tokens(bh, oh, th)
    b, o, t = Counter(bi), Counter(oi), Counter(ti)
    items: list[str] = []
    for e in sorted(o.keys() | t.keys(), key=_log_key):
        # a three-way merge of how often each entry is there: a side that left it alone takes the other's count
        n = t[e] if o[e] == b[e] else o[e] if t[e] == b[e] else max(o[e], t[e])
        items += [e] * n
    lines = head + items
    return Merged("\n".join(lines) + "\n" if lines else "")


def _log_key(entry: str) -> tuple[str, str]:
    m = _LOG_ENTRY.match(entry)
    return (m.group("time") if m else "", entry)


# --- recall/ ------------------------------------------------------------------------------------


def recall_key(line: str) -> tuple[str, int, int, str]:
    """The order of recall/hot.md's lines: by source note and lines (no clone's recall counts decide it)."""
    m = _FROM.search(line)
    return (m.group("path"), int(m.group("a")), int(m.group("b")), line) if m else ("", 0, 0, line)


def merge_recall(base: str, ours: str, theirs: str) -> Merged:
    """recall/ excerpts: the union of both sides' lines (one a side dropped stays dropped), in source order."""
    b = {ln for ln in base.split("\n") if ln.strip()}
    o = {ln for ln in ours.split("\n") if ln.strip()}
    t = {ln for ln in theirs.split("\n") if ln.strip()}
    kept = (o | t) - (b - (o & t))
    body = "\n".join(sorted(kept, key=recall_key))
    return Merged(body + "\n" if body else "")


# --- tree-index.json ------------------------------------------------------------------------------


def _set_field(o: Sequence[str], a: Sequence[str], b: Sequence[str]) -> list[str]:
    """A list merged as a set: what either side added, without what either side removed."""
    removed = (set(o) - set(a)) | (set(o) - set(b))
    out = [x for x in a if x not in removed]
    out += [x for x in b if x not in removed and x not in out]
    return sorted(out)


def _scalar(o: Any, a: Any, b: Any) -> tuple[Any, bool]:
    """A field changed on one side taken; changed both ways, ours (``a``) kept and flagged."""
    if a == b or b == o:
        return a, False
    if a == o:
        return b, False
    return a, True


def merge_tree(base: str, ours: str, theirs: str) -> Merged:
    """tree-index.json by node id; children follow the merged parents so the tree stays whole."""
    docs = [_json(x, {"version": 1, "nodes": []}) for x in (base, ours, theirs)]
    nodes = [{n["id"]: n for n in d.get("nodes", []) if isinstance(n, dict) and "id" in n} for d in docs]
    bn, on, tn = nodes
    out: dict[str, dict[str, Any]] = {}
    clashes: list[FieldClash] = []
    for nid in sorted(set(on) | set(tn)):
        o, a, b = bn.get(nid), on.get(nid), tn.get(nid)
        if a is None or b is None:
            present = a if a is not None else b
            if o is not None and present == o:
                continue  # deleted on one side, untouched on the other
            out[nid] = dict(present or {})
            continue
        if a == b or b == o:
            out[nid] = a
            continue
        if a == o:
            out[nid] = b
            continue
        o = o or {}
        node: dict[str, Any] = {}
        for key in dict.fromkeys([*a, *b]):
            if key in ("keywords", "children"):
                node[key] = _set_field(o.get(key, []), a.get(key, []), b.get(key, []))
            else:
                node[key], clashed = _scalar(o.get(key), a.get(key), b.get(key))
                if clashed:
                    sides = sorted(orjson.dumps(v).decode() for v in (a.get(key), b.get(key)))
                    clashes.append(FieldClash(_clash_id([nid, key, *sides]), nid, key, a.get(key), b.get(key)))
        out[nid] = node
    for node in out.values():  # a parent deleted on one side while the other side added under it
        if node.get("parent") is not None and node["parent"] not in out:
            node["parent"] = None
    for nid, node in out.items():
        if "children" in node:
            node["children"] = sorted({c for c in node["children"] if out.get(c, {}).get("parent") == nid})
    for nid, node in out.items():
        parent = node.get("parent")
        if parent is not None and nid not in out[parent].get("children", []):
            out[parent]["children"] = sorted([*out[parent].get("children", []), nid])
    version = _scalar(docs[0].get("version"), docs[1].get("version"), docs[2].get("version"))[0]
    doc = {"version": version, "nodes": [out[k] for k in sorted(out)]}
    text = orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"
    return Merged(text, tuple(c.id for c in clashes), tuple(clashes))


# --- conflicts.json -----------------------------------------------------------------------------


def merge_conflicts(base: str, ours: str, theirs: str) -> Merged:
    """conflicts.json by conflict id: one a side resolved (removed) stays resolved; new ones from both kept."""
    docs = [_json(x, {"version": 1, "conflicts": []}) for x in (base, ours, theirs)]
    by_id = [{c["id"]: c for c in d.get("conflicts", []) if isinstance(c, dict) and "id" in c} for d in docs]
    bc, oc, tc = by_id
    out = []
    for cid in set(oc) | set(tc):
        if cid in bc and (cid not in oc or cid not in tc):
            continue  # resolved on one side
        versions = [c for c in (oc.get(cid), tc.get(cid)) if c is not None]
        out.append(min(versions, key=orjson.dumps))
    out.sort(key=lambda c: (str(c.get("created", "")), str(c["id"])))
    version = docs[1].get("version", docs[2].get("version", 1))
    return Merged(orjson.dumps({"version": version, "conflicts": out}, option=orjson.OPT_INDENT_2).decode() + "\n")


def _json(text: str, empty: dict[str, Any]) -> dict[str, Any]:
    """A JSON object; ``empty`` for an absent file. ValueError when the text is not one."""
    if not text.strip():
        return empty
    doc = orjson.loads(text)
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    return doc


# --- which kind ---------------------------------------------------------------------------------


def kind_of(path: str) -> str:
    """How a path merges: "tree", "conflicts", "log", "recall", "note" or "lines".

    The path may be the repository's (git gives the driver that): a memory root in a subfolder
    merges the same, told by the file name and the first tier folder on the way to it.
    """
    parts = path.replace("\\", "/").split("/")
    if parts[-1] == "tree-index.json":
        return "tree"
    if parts[-1] == "conflicts.json":
        return "conflicts"
    if not parts[-1].endswith(".md"):
        return "lines"
    tier = next((p for p in parts[:-1] if p in ("bank", "memory", "recall")), "")
    return {"memory": "log", "recall": "recall", "bank": "note"}.get(tier, "lines")


MERGERS = {
    "tree": merge_tree,
    "conflicts": merge_conflicts,
    "log": merge_log,
    "recall": merge_recall,
    "note": merge_note,
    "lines": merge_lines,
}


def merge(path: str, base: str, ours: str, theirs: str) -> Merged:
    """Merge one tracked file three ways by its kind (ValueError when a JSON side is not JSON)."""
    return MERGERS[kind_of(path)](base, ours, theirs)
