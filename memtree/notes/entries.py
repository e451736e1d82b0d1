"""Entries: the unit memtree writes. An entry is a Markdown list item or paragraph of a note.

memtree's metadata for an entry rides at the end of the entry's last line as an HTML comment,
which Markdown renderers hide and which keeps a one-entry change to a few lines of diff:

    - Redis pool은 50으로 올렸다. <!-- memtree: id=e-1a2b3c4d5e; created=2026-11-29T14:20:00+09:00; tags=B -->

Entries people wrote by hand carry no comment and are first-class all the same: they are found,
compared and split like the rest. The comment is never indexed as text.

Time (docs/concepts/time.md): an entry holds from its ``created=`` day until the day in its
``superseded=`` (a newer entry, named by ``by=``, replaced it; its text stays in the note) or past
its ``valid_until=``. :func:`held` is the one rule that says whether an entry held on a day.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import date

META_RE = re.compile(r"[ \t]*<!--[ \t]*memtree:(?P<body>(?:(?!-->)[^\n])*)-->[ \t]*$", re.MULTILINE)
"""A memtree metadata comment at the end of a line (its body holds no ``-->``: in ``x <!-- memtree: id=A -->
<!-- memtree: id=B -->`` only the last comment is one)."""
METADATA_LOOKALIKE = re.compile(r"<!--(?=[ \t]*memtree)", re.IGNORECASE)
"""Where text from a person or an agent opens a comment memtree could read as its own (metadata, a split
marker): :func:`neutralize` escapes each."""
NEUTRALIZED = "&lt;!--"
"""What a lookalike's ``<!--`` becomes: Markdown shows it as the ``<!--`` that was typed, and no parser reads it."""
SPLIT_MARKER = "<!-- memtree:split -->"
"""Starts the index of children a split note keeps (memtree.write.split writes it)."""
_FIELD_ORDER = ("id", "created", "tags", "kind", "source", "scope", "merged")
LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+")
_SPACES = re.compile(r"\s+")
_TRAILING_PUNCT = " .。!?！？;:…"
SENTENCE_END = re.compile(r"(?<=[.!?。！？…])\s+")
"""Where one sentence of an entry ends: sentence punctuation, then white space.

Why not at a bare line break: hand-written paragraphs are hard-wrapped prose, and a wrapped
sentence cut at its line break would be removed by halves (`conflicts resolve`)."""


@dataclass(frozen=True)
class EntryMeta:
    """What memtree records about an entry it wrote (all optional for hand-written entries)."""

    id: str = ""
    created: str = ""
    tags: tuple[str, ...] = ()
    kind: str = ""
    source: str = ""
    scope: str = ""
    merged: tuple[str, ...] = ()
    extra: dict[str, str] = field(default_factory=dict)  # keys a newer memtree wrote: kept as they are

    def render(self) -> str:
        """The comment as written after the entry (empty when there is nothing to record)."""
        values = {
            "id": self.id,
            "created": self.created,
            "tags": ",".join(self.tags),
            "kind": self.kind,
            "source": self.source,
            "scope": self.scope,
            "merged": ",".join(self.merged),
            **self.extra,
        }
        pairs = [f"{k}={_clean(v)}" for k, v in values.items() if v]
        return f"<!-- memtree: {'; '.join(pairs)} -->" if pairs else ""


SUPERSEDED = "superseded"
"""Metadata key: the day an entry stopped holding because a newer one replaced it (``superseded=2026-12-01``)."""
BY = "by"
"""Metadata key: the id of the entry that replaced this one."""
UPDATED = "updated"
"""Metadata key: when `memtree update` last gave the entry new words."""
VALID_UNTIL = "valid_until"
"""Metadata key: the last day an entry holds (``valid_until=2027-03-31``); past it, it is no longer current."""


def day_of(value: str) -> date | None:
    """The day of an ISO date or date-time value (its first ten characters), None when it is none."""
    try:
        return date.fromisoformat(value.strip()[:10]) if value else None
    except ValueError:
        return None


_day = day_of


def held(meta: EntryMeta, day: date) -> bool:
    """Whether an entry with ``meta`` held on ``day``: written by then, not yet replaced, not past its end.

    Its words hold from their ``updated=`` day (`memtree update` keeps the id, the old words stay
    above it, superseded that day), else its ``created=`` day; an entry with neither (written by
    hand) counts as written since always.
    """
    created = _day(meta.extra.get(UPDATED, "")) or _day(meta.created)
    if created is not None and created > day:
        return False
    superseded = _day(meta.extra.get(SUPERSEDED, ""))
    if superseded is not None and superseded <= day:
        return False
    until = _day(meta.extra.get(VALID_UNTIL, ""))
    return until is None or day <= until


def status(meta: EntryMeta, day: date) -> str:
    """``current``, or why not on ``day``: ``superseded YYYY-MM-DD by ID``, ``expired YYYY-MM-DD``, ``not yet``."""
    superseded = _day(meta.extra.get(SUPERSEDED, ""))
    if superseded is not None and superseded <= day:
        by = meta.extra.get(BY, "")
        return f"superseded {superseded}" + (f" by {by}" if by else "")
    until = _day(meta.extra.get(VALID_UNTIL, ""))
    if until is not None and until < day:
        return f"expired {until}"
    created = _day(meta.extra.get(UPDATED, "")) or _day(meta.created)
    if created is not None and created > day:
        return f"not yet (written {created})"
    return "current"


def retired(meta: EntryMeta, day: date, by: str) -> EntryMeta:
    """``meta`` marked as replaced on ``day`` by the entry ``by`` (its id; empty when it has none)."""
    extra = {k: v for k, v in meta.extra.items() if k not in (SUPERSEDED, BY)}
    extra[SUPERSEDED] = day.isoformat()
    if by:
        extra[BY] = by
    return replace(meta, extra=extra)


def is_retired(meta: EntryMeta) -> bool:
    """Whether an entry was replaced by another (on any day): dedup and conflicts compare with the rest only."""
    return bool(meta.extra.get(SUPERSEDED))


def _clean(value: str) -> str:
    # Why: the comment is one line of `k=v; k=v`: a ';', a newline or '-->' in a value would break it.
    return value.replace(";", ",").replace("-->", "→").replace("\n", " ").strip()


def parse_meta(body: str) -> EntryMeta:
    """The fields of a metadata comment's body (`id=…; tags=a,b; …`); unknown keys are kept."""
    fields_: dict[str, str] = {}
    for part in body.split(";"):
        key, sep, value = part.partition("=")
        if sep:
            fields_[key.strip()] = value.strip()
    extra = {k: v for k, v in fields_.items() if k not in _FIELD_ORDER}
    return EntryMeta(
        id=fields_.get("id", ""),
        created=fields_.get("created", ""),
        tags=tuple(t for t in fields_.get("tags", "").split(",") if t),
        kind=fields_.get("kind", ""),
        source=fields_.get("source", ""),
        scope=fields_.get("scope", ""),
        merged=tuple(m for m in fields_.get("merged", "").split(",") if m),
        extra=extra,
    )


def neutralize(text: str, keep: Counter[str] | None = None) -> str:
    """``text`` with every metadata-looking comment made inert: text from users and agents never
    becomes metadata (issue 28). The one rule every write of their words calls (add, update, import,
    log, ingest, Claude's memory tool).

    ``keep``: comments (exact text, with a count) that may stay — metadata memtree placed, which an
    edit of Claude's memory tool carried along from the text it replaced.
    """
    if "<!--" not in text:
        return text
    left = Counter(keep) if keep else Counter[str]()
    out, at = [], 0
    for m in METADATA_LOOKALIKE.finditer(text):
        whole = _COMMENT.match(text, m.start())
        if whole is not None and left[whole.group(0)] > 0:
            left[whole.group(0)] -= 1
            continue
        out += [text[at : m.start()], NEUTRALIZED]
        at = m.end()
    return "".join([*out, text[at:]])


_COMMENT = re.compile(r"<!--[ \t]*memtree(?:(?!-->)[^\n])*-->", re.IGNORECASE)


def comments(text: str) -> Counter[str]:
    """The metadata-looking comments of ``text``, each with how often it occurs."""
    return Counter(m.group(0) for m in _COMMENT.finditer(text)) if "<!--" in text else Counter()


def strip_meta(text: str) -> str:
    """Text without memtree metadata comments (what is indexed, compared and shown)."""
    return META_RE.sub("", text) if "memtree:" in text else text


@dataclass(frozen=True)
class Entry:
    """One entry of a note: 1-based inclusive line range, its text without metadata, its metadata."""

    start: int
    end: int
    text: str
    meta: EntryMeta
    is_item: bool

    @property
    def content(self) -> str:
        """The entry's words: no list marker (nor the continuation lines' indent), no metadata."""
        if not self.is_item:
            return self.text.strip()
        m = LIST_MARKER.match(self.text)
        width = m.end() if m else 0
        first, *rest = self.text[width:].split("\n")
        # continuation lines are indented under the item's text; that indent is layout, not content
        body = [first, *(ln[width:] if ln[:width].isspace() else ln.lstrip() for ln in rest)]
        return "\n".join(body).strip()


def parse_entries(note: str) -> list[Entry]:
    """Every list item and paragraph of a note's body (headings, code and tables are not entries)."""
    from memtree.notes.chunks import _blocks, split_frontmatter

    lines = note.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    _, body, _ = split_frontmatter(lines)
    out = []
    index_lines = _split_index_lines(lines)
    for s, e, kind in _blocks(lines, body):
        if kind not in ("item", "para") or s in index_lines:
            continue
        raw = "\n".join(lines[s : e + 1])
        # Why only the last line's: memtree places an entry's metadata there, last; a comment elsewhere is text
        own = META_RE.search(lines[e])
        meta = parse_meta(own.group("body")) if own else EntryMeta()
        out.append(Entry(s + 1, e + 1, strip_meta(raw).rstrip(), meta, kind == "item"))
    return out


def _split_index_lines(lines: list[str]) -> set[int]:
    """0-based lines of a split note's index (the marker and the links right after it)."""
    out: set[int] = set()
    for i, line in enumerate(lines):
        if line.strip() == SPLIT_MARKER:
            out.add(i)
            j = i + 1
            while j < len(lines) and lines[j].startswith("- ["):
                out.add(j)
                j += 1
    return out


def iter_ids(note: str) -> Iterator[str]:
    """Ids of the entries memtree wrote in a note, merged ids included."""
    for m in META_RE.finditer(note):
        meta = parse_meta(m.group("body"))
        if meta.id:
            yield meta.id
        yield from meta.merged


def normalize(text: str) -> str:
    """The form two entries are compared in: no metadata or list marker, NFC, casefold, one space."""
    text = LIST_MARKER.sub("", strip_meta(text), count=1)
    text = _SPACES.sub(" ", unicodedata.normalize("NFC", text).casefold()).strip()
    return text.rstrip(_TRAILING_PUNCT)


def format_entry(content: str, meta: EntryMeta) -> str:
    """An entry as written to a bank note: a list item, continuation lines indented, metadata last.

    The content's own metadata-looking comments are made inert (:func:`neutralize`)."""
    lines = [ln.rstrip() for ln in neutralize(content).strip().split("\n")]
    text = "- " + "\n  ".join(ln for ln in lines)
    comment = meta.render()
    return f"{text} {comment}" if comment else text


def with_meta(entry: Entry, content: str, meta: EntryMeta) -> str:
    """``entry`` rewritten with ``content`` and ``meta``, keeping its form (list item or paragraph)."""
    return format_entry(content, meta) if entry.is_item else format_paragraph(content, meta)


def format_paragraph(content: str, meta: EntryMeta) -> str:
    """An entry written as a paragraph: its content (lookalike comments made inert), metadata last."""
    comment = meta.render()
    content = neutralize(content)
    return f"{content} {comment}" if comment else content


def replace_lines(note: str, start: int, end: int, new_text: str) -> str:
    """``note`` with its 1-based lines start..end replaced by ``new_text``."""
    lines = note.split("\n")
    return "\n".join([*lines[: start - 1], *new_text.split("\n"), *lines[end:]])


def remark(note: str, entry: Entry, meta: EntryMeta) -> str:
    """``note`` with ``entry``'s metadata comment set to ``meta``; every other byte, its words included, kept."""
    lines = note.split("\n")
    last = lines[entry.end - 1]
    own = META_RE.search(last)
    bare = last[: own.start()] if own else last.rstrip()
    comment = meta.render()
    lines[entry.end - 1] = f"{bare} {comment}" if comment else bare
    return "\n".join(lines)


def append_entry(note: str, entry_text: str, heading: str) -> str:
    """``note`` with an entry appended: after a list directly, after other text past a blank line."""
    if not note.strip():
        return f"# {heading}\n\n{entry_text}\n"
    body = note.rstrip("\n")
    last = body.split("\n")[-1]
    in_list = last.lstrip().startswith(("- ", "* ", "+ ")) or last.startswith("  ")
    # a split note ends with its index of children: an entry must not join that list
    joiner = "\n" if in_list and not _ends_with_split_index(body) else "\n\n"
    return f"{body}{joiner}{entry_text}\n"


def _ends_with_split_index(body: str) -> bool:
    at = body.rfind(SPLIT_MARKER)
    return at >= 0 and all(ln.startswith("- [") or not ln.strip() for ln in body[at:].split("\n")[1:])


def remove_lines(note: str, start: int, end: int) -> str:
    """``note`` without its 1-based lines start..end (and without a blank line left doubled)."""
    lines = note.split("\n")
    kept = [*lines[: start - 1], *lines[end:]]
    if 1 < start <= len(kept) and not kept[start - 2].strip() and not kept[start - 1].strip():
        del kept[start - 1]
    return "\n".join(kept)


def sentences(text: str) -> list[str]:
    """The sentences of an entry's words, each with its white space made one space."""
    return [_SPACES.sub(" ", s) for s in SENTENCE_END.split(text.strip()) if s]


def remove_sentence(note: str, entry: Entry, sentence: str) -> str | None:
    """``note`` without one sentence of ``entry``, every other byte kept; None unless it is there exactly once.

    The sentence goes with the white space after it (the last one with the white space before
    it), so the sentences around it keep their punctuation, line breaks and indent. Words compare
    exactly, white space as one space; an entry of that one sentence goes whole (remove_lines).
    """
    lines = note.split("\n")
    before = sum(len(ln) + 1 for ln in lines[: entry.start - 1])
    block = "\n".join(lines[entry.start - 1 : entry.end])
    marker = LIST_MARKER.match(block) if entry.is_item else None
    lead = marker.end() if marker else len(block) - len(block.lstrip())
    meta = META_RE.search(block)
    tail = len((block[: meta.start()] if meta else block).rstrip())
    spans, at = [], lead
    for m in SENTENCE_END.finditer(block, lead, tail):
        spans.append((at, m.start()))
        at = m.end()
    spans.append((at, tail))
    want = _SPACES.sub(" ", sentence.strip())
    hits = [i for i, (a, b) in enumerate(spans) if _SPACES.sub(" ", block[a:b]) == want]
    if len(hits) != 1:
        return None
    if len(spans) == 1:
        return remove_lines(note, entry.start, entry.end)
    i = hits[0]
    cut = (spans[i][0], spans[i + 1][0]) if i + 1 < len(spans) else (spans[i - 1][1], spans[i][1])
    return note[: before + cut[0]] + note[before + cut[1] :]


def find(note: str, entry_id: str, content: str) -> Entry | None:
    """The entry with this id, else (hand-written entries have none) the one with this content."""
    parsed = parse_entries(note)
    if entry_id:
        for e in parsed:
            if e.meta.id == entry_id:
                return e
    norm = normalize(content)
    return next((e for e in parsed if normalize(e.content) == norm), None)


def source_of(meta: EntryMeta) -> tuple[str, tuple[int, int]] | None:
    """``from=bank/x.md:12-14`` → (path, (12, 14)), or None when absent or malformed."""
    raw = meta.extra.get("from", "")
    path, _, span = raw.rpartition(":")
    start, _, end = span.partition("-")
    if not path or not start.isdigit() or not end.isdigit():
        return None
    return path, (int(start), int(end))
