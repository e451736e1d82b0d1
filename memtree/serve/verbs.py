"""The daemon's JSON API: ``{"verb": …, "args": {…}}`` → a ``memtree.schema`` object, or one error line.

Each verb is one MemTree call with typed, checked arguments (the names the CLI's options have);
its answer is the object the CLI prints with ``--json``. Anything wrong with a request — not an
object, an unknown verb or argument, a wrong type, a string over ``MAX_ARGUMENT_CHARS`` or with a NUL
byte (:func:`argument_problem`, which MCP's tools call too) — is a
:class:`BadRequest`, answered as ``{"error": "<one line>", "kind": "BadRequest"}``; a memtree
error is answered the same way with its class as ``kind``. The Unix socket and ``POST /v1/<verb>``
(memtree.serve.http) both answer through :func:`call`.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memtree import schema
from memtree.errors import MemtreeError, OutsideRoot, QueryError

if TYPE_CHECKING:
    from memtree.api import MemTree

MAX_ARGUMENT_CHARS = 1_000_000
"""A string argument longer than this is refused; why: a 1 MB query takes ~0.3 s to search, a 10 MB
one seconds, and the daemon serves everyone (an entry takes at most 50,000 characters anyway)."""
Json = dict[str, Any]


class BadRequest(MemtreeError):
    """A request the daemon cannot run: bad JSON, not an object, an unknown verb, a wrong argument."""


class UnknownVerb(BadRequest):
    """A verb the API does not have."""


@dataclass(frozen=True)
class Param:
    """One argument of a verb: its JSON type(s), and whether it must be given."""

    types: tuple[type, ...]
    required: bool = False


_STR, _INT, _BOOL = Param((str,)), Param((int,)), Param((bool,))
_TEXT = Param((str,), required=True)


@dataclass(frozen=True)
class Verb:
    """A verb of the API: what it does (one line), its arguments, and the call."""

    doc: str
    params: dict[str, Param]
    run: Callable[[MemTree, Json], Json]


def _search(mt: MemTree, a: Json) -> Json:
    from memtree.search.query import as_of_day

    tier, budget, scope = a.get("tier", "default"), a.get("budget"), a.get("scope")
    day = as_of_day(a.get("as_of"))
    result = mt.search(
        a["query"], k=a.get("k"), tier=tier, budget=budget, scope=scope, semantic=a.get("semantic"), as_of=day
    )
    return schema.search(result, with_text=True)


def _context(mt: MemTree, a: Json) -> Json:
    from memtree.search.query import as_of_day

    day = as_of_day(a.get("as_of"))
    ctx = mt.context(a["query"], budget=a.get("budget", 2000), k=a.get("k", 10), scope=a.get("scope"), as_of=day)
    return schema.context(ctx)


def _add(mt: MemTree, a: Json) -> Json:
    tags = a.get("tags") or ()
    labels = tuple(t.strip() for t in (tags.split(",") if isinstance(tags, str) else tags) if t.strip())
    decision = mt.add(
        a["text"],
        tag=a.get("tag"),
        to=a.get("to"),
        tags=labels,
        kind=a.get("kind", "fact"),
        source=a.get("source", "manual"),
        scope=a.get("scope", "global"),
        dry_run=a.get("dry_run", False),
        until=a.get("until") or "",
    )
    return schema.decision(decision)


def _resolve(mt: MemTree, a: Json) -> Json:
    settled, outcome = mt.resolve_conflict(a["id"], a["keep"])
    return schema.resolved(settled, a["keep"], outcome)


def _ping(mt: MemTree, a: Json) -> Json:
    return {"root": str(mt.root), "pid": os.getpid()}


VERBS: dict[str, Verb] = {
    "search": Verb(
        "ranked hits for a query",
        {"query": _TEXT, "k": _INT, "tier": _STR, "budget": _INT, "scope": _STR, "semantic": _BOOL, "as_of": _STR},
        _search,
    ),
    "context": Verb(
        "a prompt-ready Markdown block",
        {"query": _TEXT, "budget": _INT, "k": _INT, "scope": _STR, "as_of": _STR},
        _context,
    ),
    "get": Verb("one note by node id or path", {"ref": _TEXT}, lambda mt, a: schema.note(mt.get(a["ref"]))),
    "add": Verb(
        "remember a text (sanitize, route, dedup, write)",
        {"text": _TEXT, "tag": _STR, "to": _STR, "tags": Param((list, str)), "kind": _STR, "source": _STR}
        | {"scope": _STR, "dry_run": _BOOL, "until": _STR},
        _add,
    ),
    "log": Verb(
        "append a line to today's log",
        {"text": _TEXT, "source": _STR},
        lambda mt, a: schema.logged(mt.log(a["text"], source=a.get("source", "manual"))),
    ),
    "status": Verb("the memory's state", {}, lambda mt, a: schema.status(mt.status(), mt.settings.split.max_bytes)),
    "conflicts": Verb("open conflicts", {}, lambda mt, a: schema.conflicts(mt.conflicts())),
    "resolve_conflict": Verb(
        "settle a conflict: keep new, old or both", {"id": _TEXT, "keep": Param((str,), True)}, _resolve
    ),
    "banks": Verb("the banks", {}, lambda mt, a: schema.banks(mt.banks())),
    "consolidate": Verb(
        "merge near-duplicates, list archive candidates, sync recall/",
        {"dry_run": _BOOL},
        lambda mt, a: schema.consolidated(mt.consolidate(dry_run=a.get("dry_run", False))),
    ),
    "ping": Verb("the daemon's root, pid and requests served (the daemon adds request_count)", {}, _ping),
}

# --- the verbs the viewer uses (issue 15; memtree.serve.viewer): the write contract, and its own views ------


def _import(mt: MemTree, a: Json) -> Json:
    import orjson

    return schema.imported(mt.import_(orjson.dumps(a["document"]), dry_run=a.get("dry_run", False)))


def _decay(mt: MemTree, a: Json) -> Json:
    found = mt.decay()
    return schema.decay(found if a.get("all") else [x for x in found if x.candidate], len(found))


def _viewer(name: str) -> Callable[[MemTree, Json], Json]:
    def run(mt: MemTree, a: Json) -> Json:
        from memtree.api import clock
        from memtree.serve.viewer import data as viewer_data

        if name == "entries":
            return viewer_data.entries(mt, a, clock())
        if name == "explain":
            return viewer_data.explain(mt, a)
        return viewer_data.tree(mt) if name == "tree" else viewer_data.version(mt)

    return run


VERBS |= {
    "update": Verb(
        "replace one entry's words (its id or PATH:LINE)",
        {"ref": _TEXT, "text": _TEXT},
        lambda mt, a: schema.updated(mt.update(a["ref"], a["text"])),
    ),
    "forget": Verb(
        "move one entry to bank/_archive/ (never deleted)",
        {"ref": _TEXT, "reason": _STR},
        lambda mt, a: schema.forgotten(mt.forget(a["ref"], a.get("reason", ""))),
    ),
    "history": Verb(
        "memtree's changes, newest first",
        {"ref": _STR, "limit": _INT},
        lambda mt, a: schema.history(mt.history(a.get("ref"), a.get("limit"))),
    ),
    "undo": Verb(
        "revert the last memtree writes",
        {"count": _INT, "dry_run": _BOOL},
        lambda mt, a: schema.undone(mt.undo(a.get("count", 1), dry_run=a.get("dry_run", False))),
    ),
    "set_bank": Verb(
        "enable or disable a bank",
        {"name": _TEXT, "enabled": Param((bool,), True)},
        lambda mt, a: schema.bank_switch(a["name"], a["enabled"], mt.set_bank(a["name"], a["enabled"])),
    ),
    "export": Verb("the export document", {"bank": _STR}, lambda mt, a: mt.export(a.get("bank"))),
    "import": Verb(
        "import an export document (an object)", {"document": Param((dict,), True), "dry_run": _BOOL}, _import
    ),
    "decay": Verb("archive candidates (every entry with all)", {"all": _BOOL}, _decay),
    "entries": Verb(
        "bank entries as the viewer's cards, newest first",
        {"offset": _INT, "limit": _INT, "kind": _STR, "bank": _STR, "node": _STR},
        _viewer("entries"),
    ),
    "tree": Verb("tree-index.json's nodes and keywords", {}, _viewer("tree")),
    "links": Verb(
        "one note's links, out and in (node id or path)",
        {"ref": _TEXT},
        lambda mt, a: schema.note_links(mt.links(a["ref"])),
    ),
    "version": Verb("a stamp that changes when anything shown may have", {}, _viewer("version")),
    "explain": Verb(
        "search, each hit with its --explain arithmetic (as_of: the facts that held that day)",
        {"query": _TEXT, "k": _INT, "tier": _STR, "scope": _STR, "as_of": _STR},
        _viewer("explain"),
    ),
}


def call(mt: MemTree, verb: object, args: object) -> Json:
    """Run one verb on ``mt``; its schema object (BadRequest or the memtree error it raised otherwise)."""
    if not isinstance(verb, str) or verb not in VERBS:
        raise UnknownVerb(f"unknown verb {str(verb)[:40]!r}: choose one of {', '.join(VERBS)}")
    spec = VERBS[verb]
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise BadRequest(f"{verb}: args must be an object of named arguments")
    for name, value in args.items():
        param = spec.params.get(name)
        if param is None:
            known = ", ".join(spec.params) or "none"
            raise BadRequest(f"{verb}: unknown argument {str(name)[:40]!r} (known: {known})")
        _check(verb, name, value, param)
    missing = [name for name, p in spec.params.items() if p.required and name not in args]
    if missing:
        raise BadRequest(f"{verb}: missing argument {missing[0]!r}")
    return spec.run(mt, {k: v for k, v in args.items() if v is not None})


def _check(verb: str, name: str, value: object, param: Param) -> None:
    """A value of the declared type (null allowed where optional), no string over MAX_ARGUMENT_CHARS."""
    if value is None and not param.required:
        return
    ok = isinstance(value, param.types) and not (isinstance(value, bool) and bool not in param.types)
    if list in param.types and isinstance(value, list):
        ok = all(isinstance(v, str) for v in value)
    if not ok:
        wanted = " or ".join("list of strings" if t is list else t.__name__ for t in param.types)
        raise BadRequest(f"{verb}: {name} must be {wanted}, got {type(value).__name__}")
    problem = argument_problem(verb, name, value)
    if problem:
        raise BadRequest(problem)


def argument_problem(verb: str, name: str, value: object) -> str | None:
    """Why a value can be no argument of any transport's (socket, /v1, MCP), in one line; None if it can.

    The one home of the limits: at most ``MAX_ARGUMENT_CHARS`` characters in all its strings (a
    list's or an object's together), and no NUL byte (no file name or text holds one).
    """
    size = _chars(value)
    if size > MAX_ARGUMENT_CHARS:
        return f"{verb}: {name} has {size:,} characters; memtree takes at most {MAX_ARGUMENT_CHARS:,}"
    if _has_nul(value):
        return f"{verb}: {name} holds a NUL byte (\\x00), which no name or text of memory may hold"
    return None


def _chars(value: object) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(map(_chars, value))
    if isinstance(value, dict):
        return sum(_chars(k) + _chars(v) for k, v in value.items())
    return 0


def _has_nul(value: object) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, list):
        return any(map(_has_nul, value))
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    return False


INPUT_ERRORS: tuple[type[BaseException], ...] = (BadRequest, QueryError, OutsideRoot, ValueError)
"""What the caller's input caused: HTTP 400 (an unknown verb 404), an MCP tool error, never a traceback.

Why ValueError: the standard library raises it for input no check foresaw (``embedded null byte``)."""


def status_of(exc: BaseException) -> int:
    """The HTTP status of a failed request: 404 an unknown verb, 400 bad input, 422 another memtree
    error (the request was understood; the memory's state refuses it), 500 a bug."""
    if isinstance(exc, UnknownVerb):
        return 404
    if isinstance(exc, INPUT_ERRORS) or (isinstance(exc, OSError) and exc.errno in _INPUT_ERRNOS):
        return 400
    return 422 if isinstance(exc, MemtreeError) else 500


_INPUT_ERRNOS = frozenset({errno.ENAMETOOLONG, errno.EINVAL, errno.EILSEQ})
"""OSErrors a name given by the caller causes (too long, invalid), not the machine."""


def error(exc: BaseException) -> Json:
    """The answer to a request that failed: its one line, and what kind of failure it was."""
    message = " ".join(str(exc).split()) or type(exc).__name__
    return {"error": message, "kind": type(exc).__name__}
