"""Privacy sanitizer: secrets and personal data become ``[REDACTED:kind]`` before anything is written.

Pure (text in, text out, no I/O) and safe on any text: it never raises, a broken user regex is
skipped and named in ``Sanitizer.warnings``, and every built-in pattern runs in linear time.
Rules are tried in priority order (``BUILTIN_RULES``, then the custom patterns); a match that
overlaps a span already taken, or a ``[REDACTED:...]`` marker, is dropped, so a JWT inside
``token=`` is redacted once, by the more specific rule. A rule with a named group ``v`` (``v2``…)
redacts only that group: ``password=`` keeps its key, a URL its scheme, user and host.

Disguises are undone before matching, never in the output: each rule also runs on a *view* of the
text with %XX and HTML entities decoded (again while that changes anything: ``%253D``), NFKC applied
(full-width ``ｐａｓｓｗｏｒｄ＝``, NFD Hangul), Cyrillic and Greek look-alikes of Latin letters folded
(``раssword=`` with a Cyrillic р and а) and zero-width characters dropped; the token rules also on
a view with line breaks inside a token removed, and the base64 rule on one with a wrapped blob's
lines joined — a match across a break is taken before one within a line, so a key's tail goes
with its head. A match in a view redacts the original characters it came from.

Labels are one vocabulary (secret_rules._PASSWORD_LABEL, _TOKEN_LABEL, _KEY_LABEL): password words
in English and Korean and their compounds (``DB_PASS``, ``REDIS_PWD``, ``dbPassword``), PIN
(``ADMIN_PIN``, 핀번호), token/secret/API-key names, and generic key names (``*_KEY``, ``AccountKey``,
``auth``). Every form takes the same vocabulary: ``=``/``:``, a sentence (``the API key is X``,
``my pin is 4821``), a Korean label with no separator, a quoted value up to its closing quote (spaces
and all, “curly” too), a passphrase's words, and a command's ``-u user:X`` or ``--password X``. The
family decides the value: a password word takes any value but a placeholder or a type name; bare
``pass``, a value with no separator and ``비밀번호는 hunter2`` a password-like one (ASCII, a digit or
symbol, lower case unless a PIN); a PIN 4–12 digits; token names a token-like one; generic key names a
random-looking one (12+ characters, digits and capitals a quarter or more, ≥ 3.5 bits/character).
Known key prefixes (AKIA…, ghp_, xoxb-, sk-, AIza, eyJ…) count glued to a word before them when the
key looks random and is not inside a base64 blob. A bare 40-character AWS secret needs its AKIA… id
within 200 characters.

Encoded secrets and entropy (measured by ``bench/secret_scan.py`` on KorQuAD, LoCoMo, tests/data and
bank/, 3,750 documents, and the labelled corpus of bench/secret_corpus.py): a base64 or hex run of
16–4,096 characters is decoded and redacted as ``encoded-secret`` when the bytes are printable UTF-8
text in which the other rules (and one more decoding: base64 of hex) find a secret — 200 of 200
generated encodings caught, 0 ordinary documents flagged. No entropy rule: a bare
threshold (≥ 4.0 bits/char over 20+ characters) catches the same encodings (198/200) but flags
ordinary text (env settings like ``NODE_OPTIONS=--max-old-space-size=4096``) and would redact
every hash and id; with a label nearby it caught 0 encodings and 2 of 14 plain samples, all
already caught by the ``password`` rule.

Why not the ``detect-secrets`` library (measured, same sets): it caught 9 of 14 plain samples, 1
of 12 disguised variants and 0 of 200 encodings — it has no Korean labels, emails, phones, card
or resident numbers, and scans line by line, so it cannot see a wrapped token — flagged 0
ordinary documents like these rules, and ran at ~8 ms/KB against 0.3–0.85 ms/KB here. It would
add a dependency (with ``requests``) for less coverage.

Fields are not entry text: ``field`` redacts a free-text metadata value, ``require_clean``
refuses (QueryError) a tag, scope, id or path holding a secret, since a redacted name is useless
(``find_in_name``: as in text, and the stem without ``.md``). The change journal's copies of
old note text are redacted on record (this module registers with memtree.notes.recorder).
"""

from __future__ import annotations

import base64
import binascii
import re
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from memtree.notes import recorder
from memtree.text.terms import well_formed, writable
from memtree.write.disguises import _fold, _joined, _unwrapped, _View
from memtree.write.private import strip_private
from memtree.write.secret_rules import (
    BASE64,
    BASE64_MAX_CHARS,
    CUSTOM_KIND,
    ENCODED_KIND,
    MARKER,
    MARKER_RE,
    MAX_PASSES,
    PATTERN_PREVIEW,
    RULES,
    Rule,
)
from memtree.write.secret_rules import (
    rule as builtin_rule,
)


@dataclass(frozen=True)
class Redaction:
    """One redacted span, as positions in the original text."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class Sanitized:
    """The sanitized text, what was redacted, and the custom-pattern warnings (the same on every call)."""

    text: str
    redactions: tuple[Redaction, ...]
    warnings: tuple[str, ...]

    @property
    def changed(self) -> bool:
        """Whether anything was redacted."""
        return bool(self.redactions)


def _decoded(run: str) -> str | None:
    """The text a base64 (standard or URL-safe) or hex run encodes, or None when it is not printable UTF-8 text."""
    body = run.rstrip("=")
    raw: bytes | None = None
    hexed = body[2:] if body.startswith("0x") else body
    if len(hexed) % 2 == 0 and _HEX_RE.fullmatch(hexed):
        raw = bytes.fromhex(hexed)  # why first: a hex run is valid base64 too, and decodes to noise as that
    elif len(body) % 4 != 1:
        urlsafe = "-" in body or "_" in body
        try:
            raw = base64.b64decode(body + "=" * (-len(body) % 4), altchars=b"-_" if urlsafe else None, validate=True)
        except (binascii.Error, ValueError):
            return None
    try:
        decoded = raw.decode("utf-8") if raw is not None else None
    except UnicodeDecodeError:
        return None
    if decoded is None or not all(ch.isprintable() or ch in "\t\r\n" for ch in decoded):
        return None  # why: random bytes are never all printable text; images, hashes, commit ids stop here
    return decoded


def _encoded(match: re.Match[str]) -> bool:
    """A run whose decoded text holds a secret the other rules find (decoded again, once: base64 of hex)."""
    run = match.group(0)
    decoded = _decoded(run) if len(run) <= BASE64_MAX_CHARS else None
    return decoded is not None and bool(_inner_sanitizer().find(decoded))


def _encoded_inside(match: re.Match[str]) -> bool:
    """The same test on already decoded text, with the plain rules only (the decoding stops here)."""
    decoded = _decoded(match.group(0)) if len(match.group(0)) <= BASE64_MAX_CHARS else None
    return decoded is not None and bool(_plain_sanitizer().find(decoded))


_HEX_RE = re.compile(r"[0-9A-Fa-f]+")
_ENCODED_PATTERN = r"[A-Za-z0-9+/_-](?<![A-Za-z0-9+/=_-][\s\S])[A-Za-z0-9+/_-]{15,}={0,2}(?![A-Za-z0-9+/=_-])"
_ENCODED = builtin_rule(
    ENCODED_KIND,
    "base64 and hex runs (16–4096 characters, wrapped over lines too) whose decoded text holds a secret",
    _ENCODED_PATTERN,
    _encoded,
    joins=BASE64,
)
_ENCODED_INSIDE = builtin_rule(ENCODED_KIND, "an encoded run inside decoded text", _ENCODED_PATTERN, _encoded_inside)
BUILTIN_RULES: tuple[Rule, ...] = (*RULES, _ENCODED)
"""Every built-in rule in priority order; the encoded one last: a token, a JWT or a key body is a base64 run
too, and its own rule names it better."""


class Sanitizer:
    """The built-in rules plus memtree.yaml's ``privacy.custom_patterns``, compiled once."""

    def __init__(self, custom: Sequence[str | Mapping[str, object]] = ()) -> None:
        """Compile the custom patterns; a broken one is skipped and named once in ``warnings``."""
        rules, warnings = list(BUILTIN_RULES), []
        for index, item in enumerate([custom] if isinstance(custom, str) else custom or ()):
            rule = _custom_rule(item)
            if isinstance(rule, Rule):
                rules.append(rule)
            else:
                warnings.append(f"privacy.custom_patterns[{index}]: {rule}; skipped")
        self.rules: tuple[Rule, ...] = tuple(rules)
        self.warnings: tuple[str, ...] = tuple(warnings)

    def find(self, text: str) -> tuple[Redaction, ...]:
        """What ``sanitize`` would redact, in text order (for ``memtree check``)."""
        return self._scan(text)[0]

    def sanitize(self, text: str, controls: bool = False) -> Sanitized:
        """``text`` with every secret replaced by ``[REDACTED:kind]``; never raises.

        A character a note cannot carry (a lone surrogate: undecodable argv bytes, a JSON ``"\\ud800"``;
        a control character but tab and line ends, unless ``controls``: text already on disk, as the
        change journal keeps it) becomes ``�``, so the note can be written; a ``<private>`` span becomes
        ``[private]`` (memtree.write.private), so nothing written through here — add, log, update,
        import, the memory tool, ingest — keeps it.
        """
        text = strip_private(well_formed(text) if controls else writable(text))
        redactions, failures = self._scan(text)
        return Sanitized(_apply(text, redactions), redactions, self.warnings + failures)

    def field(self, value: str) -> str:
        """A free-text metadata value (an imported meta value) with its secrets redacted, like entry text."""
        return self.sanitize(value).text

    def require_clean(self, value: str, what: str) -> str:
        """``value`` unchanged, or QueryError when it holds a secret: a tag, scope, id or path is refused.

        Why refuse rather than redact: `[REDACTED:email]` as a tag or a file name is useless and
        collides with every other one. The message names ``what`` and the kind, never the value.
        Every name memtree takes (``--to``, ``--tag``, ``--scope``, tags, imported ids and paths, a
        memory-tool file or folder) passes here, so one rule decides.
        """
        kinds = sorted({r.kind for r in self.find_in_name(value)})
        if kinds:
            from memtree.errors import QueryError

            raise QueryError(f"{what} holds a secret ({', '.join(kinds)}); memtree will not write it: remove it")
        return value

    def find_in_name(self, value: str) -> tuple[Redaction, ...]:
        """The secrets in a name, as in text; the stem is scanned too.

        Why the stem: `bob@example.com.md` reads as a file name, `bob@example.com` is a secret. A token glued
        to a word (``teamghp_…``, ``notessk-ant-…``) is found as in text (secret_rules._glued).
        """
        found: list[Redaction] = []
        for text in dict.fromkeys((value, value.removesuffix(".md"))):
            found += self.find(text)
        return tuple(dict.fromkeys(found))

    def _scan(self, text: str) -> tuple[tuple[Redaction, ...], tuple[str, ...]]:
        """All redactions in text order, scanning the redacted text again until it holds no more."""
        found, failures = self._pass(text)
        fresh = found
        for _ in range(MAX_PASSES - 1):
            if not fresh:
                break
            # Why again: a match dropped for overlapping a taken span may hold a secret beyond it
            # (`sk-ant-…-----BEGIN …`); the redacted text shows it, and sanitize stays idempotent.
            found.sort(key=lambda r: r.start)
            more, more_failures = self._pass(_apply(text, found))
            fresh = _to_original(more, found)
            found += fresh
            failures += [failure for failure in more_failures if failure not in failures]
        return tuple(sorted(found, key=lambda r: r.start)), tuple(failures)

    def _pass(self, text: str) -> tuple[list[Redaction], list[str]]:
        """Disjoint redactions, earlier rules first, and the rules that failed at run time."""
        starts, ends = [], []  # taken spans, sorted and disjoint; markers already in the text count
        for marker in MARKER_RE.finditer(text):
            starts.append(marker.start())
            ends.append(marker.end())
        found: list[Redaction] = []
        failures: list[str] = []
        folded = _fold(text)
        views: list[tuple[str, _View | None, str, bool]] = [(text, None, text.lower(), False)]
        if folded is not None:
            views.append((folded.text, folded, folded.text.lower(), False))
        joined: dict[str, list[tuple[str, _View | None, str, bool]]] = {}  # built when a joining rule first runs
        for rule in self.rules:
            if rule.joins and rule.joins not in joined:
                joined[rule.joins] = []
                if "\n" in text:
                    join = _unwrapped if rule.joins == BASE64 else _joined
                    for view_text, view, _, _ in views:
                        whole = join(view_text, view)
                        if whole is not None:
                            joined[rule.joins].append((whole.text, whole, whole.text.lower(), True))
            try:
                # Why the joined views first: a key whose first line alone is long enough to match would
                # otherwise take that line, and the match across the break (its tail) would overlap it.
                for view_text, view, lowered, crossing in joined.get(rule.joins, []) + views:
                    if rule.needles and not any(needle in lowered for needle in rule.needles):
                        continue
                    for start, end in rule.spans(view_text):
                        if view is not None:
                            start, end = view.original(start, end)
                            if crossing and "\n" not in text[start:end]:
                                continue  # why: a match within one line is tried on the text itself
                        at = bisect_right(starts, start)
                        if end <= start or (at and ends[at - 1] > start) or (at < len(starts) and starts[at] < end):
                            continue
                        starts.insert(at, start)
                        ends.insert(at, end)
                        found.append(Redaction(rule.kind, start, end))
            except Exception as error:  # why: a user regex must never stop a write (RecursionError, …)
                failures.append(f"privacy rule {rule.kind} {_preview(rule.pattern.pattern)} failed: {error}; skipped")
        return found, failures


def _apply(text: str, redactions: Sequence[Redaction]) -> str:
    """``text`` with each of the sorted, disjoint ``redactions`` replaced by its marker."""
    parts, position = [], 0
    for redaction in redactions:
        parts += [text[position : redaction.start], MARKER.format(kind=redaction.kind)]
        position = redaction.end
    return "".join([*parts, text[position:]])


def _to_original(spans: list[Redaction], done: list[Redaction]) -> list[Redaction]:
    """Map ``spans`` found in ``_apply(text, done)`` back to ``text``; none overlaps a marker."""
    marker_ends, shifts, shift = [], [], 0
    for redaction in done:
        shift += len(MARKER.format(kind=redaction.kind)) - (redaction.end - redaction.start)
        marker_ends.append(redaction.end + shift)
        shifts.append(shift)
    mapped = []
    for span in spans:
        at = bisect_right(marker_ends, span.start)
        offset = shifts[at - 1] if at else 0
        mapped.append(Redaction(span.kind, span.start - offset, span.end - offset))
    return mapped


def _preview(pattern: object) -> str:
    """A pattern quoted on one line, cut to PATTERN_PREVIEW characters."""
    shown = repr(pattern)
    return shown if len(shown) <= PATTERN_PREVIEW else shown[: PATTERN_PREVIEW - 1] + "…"


_CACHE_MAX = 16
"""Sanitizers kept for distinct custom-pattern lists (one per memory root in practice)."""


def _custom_rule(item: object) -> Rule | str:
    """A rule from a regex string or a ``{pattern, kind}`` mapping, or why it cannot be one."""
    pattern, kind = item, CUSTOM_KIND
    if isinstance(item, Mapping):
        pattern, raw_kind = item.get("pattern"), item.get("kind")
        if isinstance(raw_kind, str):  # why: markers must stay `[a-z0-9-]` so re-sanitizing leaves them alone
            kind = re.sub(r"[^a-z0-9]+", "-", raw_kind.lower()).strip("-") or CUSTOM_KIND
    if not isinstance(pattern, str):
        return f"{_preview(item)} is not a regex string"
    try:
        compiled = re.compile(pattern)
    except (re.error, OverflowError, RecursionError) as error:
        return f"{_preview(pattern)} is not a valid regex ({error})"
    if compiled.fullmatch(""):
        return f"{_preview(pattern)} matches the empty string"
    return Rule(kind, compiled, f"custom pattern {pattern}")


_cache: dict[tuple[str, ...], Sanitizer] = {}
_plain: list[Sanitizer] = []
_inner: list[Sanitizer] = []


def _plain_sanitizer() -> Sanitizer:
    """The built-in rules but the encoded one: what text decoded twice is scanned with."""
    if not _plain:
        plain = Sanitizer()
        plain.rules = tuple(rule for rule in BUILTIN_RULES if rule.kind != ENCODED_KIND)
        _plain.append(plain)
    return _plain[0]


def _inner_sanitizer() -> Sanitizer:
    """What decoded text is scanned with: the plain rules and one more decoding (hex inside base64, …)."""
    if not _inner:
        inner = Sanitizer()
        inner.rules = (*_plain_sanitizer().rules, _ENCODED_INSIDE)
        _inner.append(inner)
    return _inner[0]


def sanitize(text: str, custom: Sequence[str | Mapping[str, object]] = (), controls: bool = False) -> Sanitized:
    """Sanitize ``text`` with the built-in rules plus ``custom``, reusing one Sanitizer per ``custom``
    (``controls``: see :meth:`Sanitizer.sanitize`)."""
    items = [custom] if isinstance(custom, str) else list(custom or ())
    key = tuple(item if isinstance(item, str) else repr(item) for item in items)
    sanitizer = _cache.get(key)
    if sanitizer is None:
        if len(_cache) >= _CACHE_MAX:
            _cache.clear()
        sanitizer = _cache[key] = Sanitizer(items)
    return sanitizer.sanitize(text, controls)


def _journal_text(text: str) -> str:
    """What the change journal keeps of old note text: redacted with the built-in rules, every other byte
    as it was (undo rebuilds the old file exactly)."""
    return sanitize(text, controls=True).text


recorder.redact_with(_journal_text)
