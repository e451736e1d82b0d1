"""The MCP tools: memtree's verbs, each with a description an LLM can act on, typed parameters and honest hints.

A tool is one call into ``MemTree`` answered with memtree.schema's object for that verb — the very
shape ``memtree <verb> --json`` prints — so an agent reads one format whichever way it calls. A
MemtreeError becomes a tool error (isError) carrying its one line. The tools are plain functions:
the SDK runs them in a worker thread, so the event loop never waits on the disk, and MemTree's lock
makes concurrent calls safe. The clock is read at this edge (each verb's ``now`` left to the API).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Annotated, Any, Literal

from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import ToolAnnotations
from pydantic import Field, ValidationError

from memtree import schema
from memtree.api import MemTree, Note
from memtree.errors import MemtreeError, QueryError
from memtree.search.query import as_of_day
from memtree.serve import verbs
from memtree.write.retain import MAX_TAGS

# The choices memtree accepts; tests/test_mcp.py holds each to its home (TIER_CHOICES, KINDS, SOURCES, KEEP).
Tier = Literal["default", "recall", "bank", "memory", "all"]
Kind = Literal["fact", "preference", "entity", "decision"]
Source = Literal["manual", "auto"]
Keep = Literal["new", "old", "both"]

Query = Annotated[
    str,
    Field(description="What to look for, in Korean, English or both (가치관이 finds 가치관: particles are handled)."),
]
ScopeArg = Annotated[
    str | None,
    Field(
        description="The current scope: global, project:NAME, workspace:NAME or a chain project:NAME/workspace:NAME. "
        "Entries of this scope and the scopes above it are found, its own ranked higher (default: search.scope)."
    ),
]
AsOf = Annotated[
    str | None,
    Field(
        description="A day YYYY-MM-DD: answer with the facts that held then (written by then, not yet superseded "
        "or expired). Default: today's current facts; a superseded one only when nothing current answers, marked."
    ),
]
Until = Annotated[
    str | None,
    Field(description="The last day the fact holds (YYYY-MM-DD); past it, search no longer serves it as current."),
]
K = Annotated[int | None, Field(ge=1, description="How many hits, at least 1 (default: search.max_results, 5).")]
TierArg = Annotated[
    Tier,
    Field(
        description="Where to look: default (recall/ and bank/, the curated memory), recall, bank, "
        "memory (the daily logs in memory/) or all."
    ),
]
SearchBudget = Annotated[
    int | None,
    Field(ge=1, description="Cap the hits' text at about this many tokens in all (CJK-aware); default: no cap."),
]
ContextBudget = Annotated[int, Field(ge=1, description="Token budget of the whole block (CJK-aware estimate).")]
Ref = Annotated[
    str,
    Field(
        description="A node id (identity/values), a path inside the memory (bank/identity/values.md), "
        "or a link's target (identity/values#e-…, identity/values#Heading)."
    ),
]
Line = Annotated[int | None, Field(ge=1, description="A 1-based line number (inclusive), as in a search hit's lines.")]
Text = Annotated[str, Field(description="The text, in the user's language; secrets in it are redacted.")]
Tag = Annotated[str | None, Field(description="Route by a routing-table tag (this tool's description lists them).")]
To = Annotated[
    str | None,
    Field(description="Write to this node id or bank/….md path (created when it does not exist yet)."),
]
Tags = Annotated[list[str] | None, Field(max_length=MAX_TAGS, description="Labels for the entry, one word each.")]
KindArg = Annotated[Kind, Field(description="What the entry is.")]
SourceArg = Annotated[Source, Field(description="manual: the user said it; auto: you inferred it.")]
EntryScope = Annotated[str, Field(description="Scope of the entry: global, project:NAME or workspace:NAME.")]
DryRun = Annotated[bool, Field(description="Decide and report, write nothing.")]
ConflictId = Annotated[str, Field(description="The conflict's id, from the conflicts tool (c-…).")]
KeepArg = Annotated[Keep, Field(description="new, old or both.")]

EntryRef = Annotated[
    str,
    Field(description="The entry: its id (e-20261201-1a2b3c4d, from search hits' ids) or PATH:LINE (bank/x.md:12)."),
]
Reason = Annotated[str, Field(description="Why it is forgotten, kept beside the archived text.")]
Target = Annotated[
    str | None,
    Field(description="A node id, note path or entry id to show the history of (default: the whole memory)."),
]
Limit = Annotated[int | None, Field(ge=1, description="At most this many changes (default 20).")]
Count = Annotated[int, Field(ge=1, description="How many of memtree's last writes to revert, newest first.")]
Turns = Annotated[
    list[dict[str, Any]],
    Field(
        description="Conversation turns, oldest first: objects with conversation (an id), role (user, assistant or "
        "system), text and ts (ISO 8601 with offset, or epoch seconds)."
    ),
]

READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
"""Reading tools. Why read-only although search and get count recalls: that is .memtree/'s derived
state (rebuildable, never the memory), so for the user nothing changes."""

SEARCH_DOC = """Search the user's long-term memory (Markdown notes) for passages about something, best first.
Use it before answering about the user, their projects, decisions, preferences or past work, and to find
the note to read with `get`. Korean, English and mixed queries work.
Returns {query, terms, hits, rejected, warnings, term_stats}; each hit has path, lines [start, end], node,
score, tier, matched terms, the ids of the entries it holds and its text. No confident match: hits is
empty and `rejected` says why — memory has no answer; that is not an error."""

CONTEXT_DOC = """A prompt-ready Markdown block of the memory most relevant to a message, within a token budget:
the quickest way to ground an answer in what the user told you before. Each passage sits under its source
(path:start-end). Korean works.
Returns {markdown, sources, tokens, budget, left_out_count}; markdown is empty when nothing matches."""

GET_DOC = """Read one note whole, or only its lines start..end (1-based, inclusive: a search hit's `lines`).
ref is a node id (identity/values), a path (bank/identity/values.md; bank/ and .md optional) or a link's
target (identity/values#e-20261201-1a2b3c4d, identity/values#Heading): target_line is where that entry or
heading is. Returns {path, node, keywords, text, target_line}."""

ADD_DOC = """Remember something worth keeping across conversations: a fact, preference, entity or decision,
one idea per call, in the user's language (Korean works). memtree redacts secrets, routes the entry to
the right note (or to `to` / `tag`) and deduplicates: the same fact again is a `duplicate` and nothing
is written (a retry is safe); a restatement is `merged`; a close but contradicting one is written and
recorded as a `conflict` (see `conflicts`). For events and progress use `log`.
Returns {decision, node, path, similarity, how, redacted, entry_id, conflict_id, other, …}."""

LOG_DOC = """Append a timestamped line to today's journal, memory/YYYY-MM-DD.md: events and progress
("deployed v2", "크론 경합 고침"), not lasting facts (use `add`). Earlier lines are never rewritten.
Returns {path, line, text, redacted}."""

STATUS_DOC = """The memory's health: notes, bytes and chunks per tier, banks, oversized notes, whether the
index is fresh, open conflicts, archive candidates, the recall/ buffer, the last consolidation.
Returns memtree's status object (as `memtree status --json`)."""

CONFLICTS_DOC = """Open conflicts: pairs of entries that may contradict each other ("pool 10 is enough" vs
"at least 50"), each with both texts, files, entry ids and similarity. Ask the user which holds, then
settle it with `resolve_conflict`. Returns {conflicts: [{id, created_at, similarity, new, old}]}."""

RESOLVE_DOC = """Settle an open conflict (its id from `conflicts`): keep `new` (the older entry's text is
removed from its note), `old` (the newer one's is removed) or `both` (nothing removed; the conflict
closes). It deletes text: ask the user which is right first.
Returns {conflict, keep, outcome}."""

BANKS_DOC = """The banks — top-level folders of bank/ (identity, project, technical, …) — with their note
and entry counts, bytes, and whether search sees them. Returns {banks: [{name, note_count, entry_count,
bytes, enabled}]}."""

UPDATE_DOC = """Replace one remembered entry's text when a fact changed (a new number, a corrected name).
The entry keeps its id and metadata and gets updated=<date>; the new text is sanitized and checked against
the note's other entries (it may come back as duplicate or conflict). Find the entry's id with search first.
Returns the decision, the note and lines, and the entry id."""

FORGET_DOC = """Forget one remembered entry the user withdrew or that is wrong: it moves, with the reason, to
bank/_archive/ (never deleted; undo brings it back) and search stops finding it. Returns where it was and the
archive note."""

HISTORY_DOC = """What memtree changed in this memory, newest first: each change's time, command and files
(and, when the memory is a git repository, its commits). Use it to see what was remembered or edited
recently, or before undo."""

UNDO_DOC = """Revert memtree's last write(s) to the memory, newest first, restoring the files byte for byte.
Refused, writing nothing, when a file changed since by another hand. An undo is itself a change: undoing it
redoes. Returns what was undone."""

INGEST_DOC = """Hand memtree conversation turns to remember: they are kept in the day's log (sanitized) and,
every few assistant turns or after a pause, examined for knowledge worth keeping, written to the auto bank.
A turn already seen is skipped, so sending the whole conversation again is safe. Returns counts, the cycles
examined and what was written."""


def tools(mt: MemTree) -> list[Tool]:
    """The tools over one memory root, each answering with memtree.schema's object for its verb."""

    def search(
        query: Query,
        k: K = None,
        tier: TierArg = "default",
        scope: ScopeArg = None,
        budget: SearchBudget = None,
        as_of: AsOf = None,
    ) -> dict[str, Any]:
        return _answer(
            lambda: schema.search(mt.search(query, k=k, tier=tier, budget=budget, scope=scope, as_of=as_of_day(as_of)))
        )

    def context(
        query: Query, budget: ContextBudget = 2000, scope: ScopeArg = None, as_of: AsOf = None
    ) -> dict[str, Any]:
        return _answer(lambda: schema.context(mt.context(query, budget=budget, scope=scope, as_of=as_of_day(as_of))))

    def get(ref: Ref, start: Line = None, end: Line = None) -> dict[str, Any]:
        def call() -> dict[str, Any]:
            note = mt.get(ref)
            return schema.note(note if start is None and end is None else line_range(note, start, end))

        return _answer(call)

    def add(
        text: Text,
        tag: Tag = None,
        to: To = None,
        tags: Tags = None,
        kind: KindArg = "fact",
        scope: EntryScope = "global",
        source: SourceArg = "manual",
        dry_run: DryRun = False,
        until: Until = None,
    ) -> dict[str, Any]:
        labels = tuple(tags or ())
        return _answer(
            lambda: schema.decision(
                mt.add(
                    text,
                    tag=tag,
                    to=to,
                    tags=labels,
                    kind=kind,
                    source=source,
                    scope=scope,
                    dry_run=dry_run,
                    until=until or "",
                )
            )
        )

    def log(text: Text, source: SourceArg = "manual") -> dict[str, Any]:
        return _answer(lambda: schema.logged(mt.log(text, source=source)))

    def status() -> dict[str, Any]:
        return _answer(lambda: schema.status(mt.status(), mt.settings.split.max_bytes))

    def conflicts() -> dict[str, Any]:
        return _answer(lambda: schema.conflicts(mt.conflicts()))

    def resolve_conflict(id: ConflictId, keep: KeepArg) -> dict[str, Any]:
        def call() -> dict[str, Any]:
            settled, outcome = mt.resolve_conflict(id, keep)
            return schema.resolved(settled, keep, outcome)

        return _answer(call)

    def banks() -> dict[str, Any]:
        return _answer(lambda: schema.banks(mt.banks()))

    def update(ref: EntryRef, text: Text) -> dict[str, Any]:
        return _answer(lambda: schema.updated(mt.update(ref, text)))

    def forget(ref: EntryRef, reason: Reason = "") -> dict[str, Any]:
        return _answer(lambda: schema.forgotten(mt.forget(ref, reason)))

    def history(target: Target = None, limit: Limit = None) -> dict[str, Any]:
        return _answer(lambda: schema.history(mt.history(target, limit)))

    def undo(count: Count = 1, dry_run: DryRun = False) -> dict[str, Any]:
        return _answer(lambda: schema.undone(mt.undo(count, dry_run)))

    def ingest(turns: Turns, dry_run: DryRun = False) -> dict[str, Any]:
        return _answer(lambda: schema.ingested(mt.ingest(turns, source="the turns", dry_run=dry_run)))

    routes = "; ".join(f"{tag} → {route.node}" for tag, route in sorted(mt.settings.routing.items()))
    add_doc = f"{ADD_DOC}\nTags of this memory's routing table: {routes or 'none'}."
    # Why idempotent: add's dedup turns the same text again into `duplicate`, nothing written.
    write = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
    append = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
    destroy = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)
    return [
        _tool(search, "search", "Search memory", SEARCH_DOC, READ),
        _tool(context, "context", "Memory context for a prompt", CONTEXT_DOC, READ),
        _tool(get, "get", "Read a note", GET_DOC, READ),
        _tool(add, "add", "Remember", add_doc, write),
        _tool(log, "log", "Log to today's journal", LOG_DOC, append),
        _tool(status, "status", "Memory status", STATUS_DOC, READ),
        _tool(conflicts, "conflicts", "Open conflicts", CONFLICTS_DOC, READ),
        _tool(resolve_conflict, "conflicts resolve", "Resolve a conflict", RESOLVE_DOC, destroy),
        _tool(banks, "banks", "Banks", BANKS_DOC, READ),
        _tool(update, "update", "Change a remembered entry", UPDATE_DOC, write),
        _tool(forget, "forget", "Forget an entry (archived)", FORGET_DOC, destroy),
        _tool(history, "history", "What changed", HISTORY_DOC, READ),
        _tool(undo, "undo", "Undo memtree's last write", UNDO_DOC, destroy),
        _tool(ingest, "ingest", "Remember a conversation", INGEST_DOC, write),
    ]


class MemtreeTool(Tool):
    """An SDK tool whose arguments are checked first as every transport checks them, each refusal one line.

    Why: the SDK drops an argument it does not know, takes a string of any length, and reports a
    bad argument as pydantic's four lines and a URL. Here an unknown argument is refused by name,
    a string over memtree.serve.verbs' limit (or with a NUL byte) too, and a value of the wrong
    type or range is named with the rule it breaks: ``search: k: Input should be greater than or equal to 1``.
    """

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        known = self.parameters.get("properties", {})
        unknown = sorted(str(name)[:40] for name in arguments if name not in known)
        if unknown:
            listed = ", ".join(known) or "none"
            raise ToolError(f"{self.name}: unknown argument {', '.join(map(repr, unknown))} (known: {listed})")
        for name, value in arguments.items():
            problem = verbs.argument_problem(self.name, name, value)
            if problem:
                raise ToolError(problem)
        try:
            return await super().run(arguments, context, convert_result)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(_invalid(self.name, exc.__cause__)) from None
            raise


def _invalid(tool: str, exc: ValidationError) -> str:
    """pydantic's errors as one line: the argument, what it must be (and how many more there are)."""
    errors = exc.errors(include_url=False, include_input=False)
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"]) or "arguments"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    if first["type"] == "missing":
        return f"{tool}: missing argument {where!r}{more}"
    return f"{tool}: {where}: {first['msg']}{more}"


def _tool(fn: Callable[..., dict[str, Any]], shape: str, title: str, doc: str, hints: ToolAnnotations) -> Tool:
    """A tool whose output schema names the keys of memtree.schema's ``shape`` (schema.KEYS)."""
    hints = hints.model_copy(update={"title": title})
    made = Tool.from_function(fn, title=title, description=doc, annotations=hints, structured_output=True)
    tool = MemtreeTool(**dict(made))
    # Why: a dict return publishes only {"type": "object"}; the keys tell a client what comes back.
    # (FuncMetadata's fields are read live, so the schema set here is the one listed and checked.)
    keys = sorted(schema.KEYS[shape])
    tool.fn_metadata.output_schema = {
        "type": "object",
        "title": f"memtree {shape}",
        "properties": {key: schema.json_type(key) for key in keys},
        "required": keys,
    }
    return tool


def _answer(call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The call's result, or a tool error carrying the memtree error's one line."""
    try:
        return call()
    except MemtreeError as exc:
        raise ToolError(one_line(exc)) from None
    except (ValueError, OSError) as exc:  # the caller's input (a name too long): one line, no traceback
        if verbs.status_of(exc) != 400:
            raise
        raise ToolError(one_line(exc)) from None


def one_line(exc: BaseException) -> str:
    """An error's message on one line (a message quoting user text may hold a newline)."""
    return " ".join(str(exc).split("\n")).strip() or type(exc).__name__


def line_range(note: Note, start: int | None, end: int | None) -> Note:
    """``note`` with only its lines start..end (1-based, inclusive; end past the last line means the last)."""
    text = note.text
    parts = text.split("\n")
    count = len(parts) - 1 if text.endswith("\n") else len(parts)  # a final newline ends a line, opens none
    first = 1 if start is None else start
    last = count if end is None else min(end, count)
    if first > count:
        raise QueryError(f"{note.path} has {count} lines; line {first} is past its end")
    if end is not None and end < first:
        raise QueryError(f"the line range {first}-{end} is empty: end comes before start")
    kept = "\n".join(parts[first - 1 : last])
    return replace(note, text=kept + "\n" if last < count or text.endswith("\n") else kept)
