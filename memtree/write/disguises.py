"""Views of a text with its disguises undone — %XX and HTML entities decoded (again while that changes
anything: ``%253D`` is ``=``), NFKC, Cyrillic and Greek look-alikes of Latin letters folded, zero-width
characters dropped, tokens wrapped over lines joined — that map every match back to the original characters.

Pure; used by memtree.write.sanitize.
"""

from __future__ import annotations

import html
import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes

# Why views: `password%3D…`, `password&#61;…`, `ｐａｓｓｗｏｒｄ＝…` and `ghp_ab\u200bcd…` hide from the rules
# as typed. A view is a decoded copy that remembers where each piece came from, so a match found in
# it redacts the original characters (the encoded or full-width ones), never a re-encoded copy.
_ZERO_WIDTH = "\u00ad\u180e\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff"
_ZERO_WIDTH_RE = re.compile(f"[{_ZERO_WIDTH}]")
_FOLD_RE = re.compile(
    r"(?:%[0-9A-Fa-f]{2})+|&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});?|[^\x00-\x7f가-힣]+"
)
_JOIN_RE = re.compile(r"\r?\n[ \t]*(?=[A-Za-z0-9_-])")
_WRAPPED_RE = re.compile(
    r"[A-Za-z0-9+/_-](?<![A-Za-z0-9+/=_-][A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{15,}={0,2}"
    r"(?P<gap>[ \t]*\r?\n[ \t]*)(?=[A-Za-z0-9+/_-]+={0,2}[ \t]*(?:\r?\n|$))"
)
"""A line ending in a base64 run of 16+ characters, then a line that is one base64 run: a wrapped blob."""
FOLD_ROUNDS = 3
"""Decodings of a decoded view: a double-encoded ``%253D`` needs two; each costs a scan only when it changes."""
_CONFUSABLES = str.maketrans(
    # Why: `раssword=` with a Cyrillic р and а reads as password and hides from every Latin rule. These are
    # the letters Unicode's confusables.txt maps to one Latin letter (lower and upper case), Cyrillic and Greek.
    "аеорсухѕіјԁһӏԛԝвкмнтАВЕЅІЈКМНОРСТХУԌαοριυνκχτεΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxsijdhlqwbkmhtABESIJKMHOPCTXYGaopiuvkxteABEZHIKMNOPTYX",
)
_CONFUSABLE_RE = re.compile(f"[{''.join(chr(c) for c in _CONFUSABLES)}]")
_TAIL_RE = re.compile(r"[A-Za-z0-9_-]+")
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


@dataclass(frozen=True)
class _View:
    """A decoded copy of a text, cut in pieces that each know the span of the text they came from."""

    text: str
    starts: tuple[int, ...]  # where each piece starts in ``text``; the pieces cover it
    origins: tuple[tuple[int, int], ...]
    exact: tuple[bool, ...]  # a verbatim piece maps position to position, a decoded one as a whole
    base: _View | None = None  # the view ``origins`` point into, if not the original text

    def original(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original text that ``text[start:end]`` came from."""
        first, last = bisect_right(self.starts, start) - 1, bisect_right(self.starts, end - 1) - 1
        begin = self.origins[first][0] + (start - self.starts[first] if self.exact[first] else 0)
        stop = self.origins[last][0] + end - self.starts[last] if self.exact[last] else self.origins[last][1]
        return self.base.original(begin, stop) if self.base else (begin, stop)


class _Pieces:
    """Builds a view piece by piece: verbatim copies and decoded replacements of ``source``."""

    def __init__(self, source: str) -> None:
        self.source, self.size, self.changed = source, 0, False
        self.parts: list[str] = []
        self.starts: list[int] = []
        self.origins: list[tuple[int, int]] = []
        self.exact: list[bool] = []

    def copy(self, start: int, end: int) -> None:
        """Copy ``source[start:end]`` as it is."""
        if start >= end:
            return
        self.parts.append(self.source[start:end])
        if self.exact and self.exact[-1] and self.origins[-1][1] == start:
            self.origins[-1] = (self.origins[-1][0], end)  # one piece for a whole verbatim stretch
        else:
            self.starts.append(self.size)
            self.origins.append((start, end))
            self.exact.append(True)
        self.size += end - start

    def put(self, start: int, end: int, new: str) -> None:
        """Replace ``source[start:end]`` by ``new`` (nothing, for an invisible character)."""
        if new == self.source[start:end]:
            return self.copy(start, end)
        self.changed = True
        if new:
            self.parts.append(new)
            self.starts.append(self.size)
            self.origins.append((start, end))
            self.exact.append(False)
            self.size += len(new)

    def view(self, base: _View | None = None) -> _View | None:
        """The view, or None when nothing was decoded."""
        if not self.changed or not self.parts:
            return None
        return _View("".join(self.parts), tuple(self.starts), tuple(self.origins), tuple(self.exact), base)


def _fold(text: str) -> _View | None:
    """``text`` with its disguises undone, decoded again while that changes anything; None if the same."""
    view = _fold_once(text, None)
    for _ in range(FOLD_ROUNDS - 1):
        again = _fold_once(view.text, view) if view is not None else None
        if again is None:
            break
        view = again
    return view


def _fold_once(text: str, base: _View | None) -> _View | None:
    """``text`` with %XX and HTML entities decoded, NFKC applied, look-alikes folded, invisible characters dropped."""
    plain = text.isascii() or (
        not _ZERO_WIDTH_RE.search(text) and not _CONFUSABLE_RE.search(text) and unicodedata.is_normalized("NFKC", text)
    )
    if plain and "%" not in text and "&" not in text:
        return None  # why: the common case (plain English or NFC Korean) costs a few C-speed scans
    out, position = _Pieces(text), 0
    for match in _FOLD_RE.finditer(text):
        start, end = match.span()
        out.copy(position, start)
        position, chunk = end, match.group()
        if chunk[0] == "%":
            raw = unquote_to_bytes(chunk)
            if raw.isascii():
                for i, byte in enumerate(raw):
                    out.put(start + 3 * i, start + 3 * i + 3, chr(byte))
            else:
                try:
                    out.put(start, end, raw.decode("utf-8"))
                except UnicodeDecodeError:
                    out.copy(start, end)
        elif chunk[0] == "&":
            out.put(start, end, html.unescape(chunk))
        elif (
            not _ZERO_WIDTH_RE.search(chunk)
            and not _CONFUSABLE_RE.search(chunk)
            and unicodedata.is_normalized("NFKC", chunk)
        ):
            out.copy(start, end)
        else:
            _fold_run(out, start, chunk)
    out.copy(position, len(text))
    return out.view(base)


def _fold_run(out: _Pieces, start: int, run: str) -> None:
    """NFKC each character with its combining marks (an NFD syllable's vowel and final too); drop invisible ones."""
    i = 0
    while i < len(run):
        j = i + 1
        while j < len(run) and (unicodedata.combining(run[j]) or "\u1160" <= run[j] <= "\u11ff"):
            j += 1
        cluster = "".join(ch for ch in run[i:j] if ch not in _ZERO_WIDTH)
        out.put(start + i, start + j, unicodedata.normalize("NFKC", cluster).translate(_CONFUSABLES))
        i = j


def _joined(text: str, base: _View | None) -> _View | None:
    """``text`` with each line break between a token character and a key's tail removed (a wrapped key made whole).

    Why only before a tail: the word starting the next line (`export`, `The`, a `- ` bullet) would go with the
    key. A tail holds a digit, or a capital after its first character (`nO5pQ`, `CDEF`, `AA`); a tail of
    lower-case letters alone is left apart (3 in 100 four-character tails of a random key).
    """
    out, position = _Pieces(text), 0
    for match in _JOIN_RE.finditer(text):
        start, end = match.span()
        tail = _TAIL_RE.match(text, end)
        if start and text[start - 1] in _TOKEN_CHARS and tail is not None and _key_tail(tail.group()):
            out.copy(position, start)
            out.put(start, end, "")
            position = end
    out.copy(position, len(text))
    return out.view(base)


def _key_tail(run: str) -> bool:
    """Whether a run starting a line reads as the rest of a key rather than a word."""
    return any(ch.isdigit() for ch in run) or any(ch.isupper() for ch in run[1:])


def _unwrapped(text: str, base: _View | None) -> _View | None:
    """``text`` with a wrapped base64 blob's line breaks removed: a line ending in a base64 run, then whole-run lines.

    Why not every break between two base64 characters: the line after a blob (`Next steps`) would join its last
    line and spoil the decoding, which then leaves that line alone.
    """
    out, position = _Pieces(text), 0
    for match in _WRAPPED_RE.finditer(text):
        start, end = match.span("gap")
        out.copy(position, start)
        out.put(start, end, "")
        position = end
    out.copy(position, len(text))
    return out.view(base)
