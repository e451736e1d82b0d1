# Over 300 lines by design: one home for all ~35 JSON shapes is the point (the issue keeps it one module).
"""Every ``--json`` shape in one place: memtree's results as JSON-ready dicts (CLI, ``--batch``, a server).

The convention, in every shape (docs/reference/json-output.md lists them; tests/test_schema.py holds the two together):

- the top level is an object, never a bare list (``{"banks": [...]}``);
- a time is ISO 8601 with its offset, in a key named ``time`` or ending in ``_at``; never epoch seconds;
- ``warnings`` (a list of strings) is the one name for notices;
- a key name has one type everywhere: a number of things ends in ``_count`` (``archive_candidate_count``),
  so no name is a list here and a count there; a measure is named by its unit (``bytes``, ``tokens``, ``seconds``);
- every shape has a fixed set of keys (``KEYS``, ``OBJECTS``): null where a value does not apply.
  Two exceptions: a hit's ``text`` and ``truncated`` come only with text (``search --json``, or
  ``--batch`` with ``--budget``), and eval's figures keep score.py's names (``n``, ``hit@1``…).

Cheap to import (the ``memtree context`` fast path uses it): result types only for type checking;
orjson and the few helpers a shape needs (entry metadata, decision classes) are imported when used.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    from memtree.api import IndexResult, Note
    from memtree.lifecycle.aging import Aged
    from memtree.lifecycle.banks import Bank
    from memtree.lifecycle.consolidate import Report as Consolidated
    from memtree.lifecycle.edits import Forgotten, Updated
    from memtree.lifecycle.ingest import IngestReport
    from memtree.lifecycle.promote import Promoted
    from memtree.lifecycle.recall import Excerpt, Sync
    from memtree.lifecycle.reflect import DistillReport, Proposal
    from memtree.lifecycle.status import Status
    from memtree.notes.changes import Change
    from memtree.notes.git import Commit
    from memtree.notes.links import Resolved
    from memtree.search.context import Context
    from memtree.search.evaluate import Report as Evaluation
    from memtree.search.links import NoteLinks
    from memtree.search.result import Hit, SearchResult
    from memtree.write.check import Problem
    from memtree.write.conflicts import Contradiction, OpenConflict, Side
    from memtree.write.exchange import Imported
    from memtree.write.history import History, Undone
    from memtree.write.journal import Logged
    from memtree.write.retain import Decision
    from memtree.write.split import SplitResult

Json = dict[str, Any]

_SEARCH = "query terms hits rejected warnings term_stats"
_SWITCH = "bank enabled disabled_banks"
KEYS: dict[str, frozenset[str]] = {
    name: frozenset(keys.split())
    for name, keys in {
        "init": "root created updated",
        "git": "root attributes driver",
        "git setup": "root attributes config",
        "sync": "outcome message commit attempts",
        "merge-driver": "path clean clashes",
        "index": "file_count chunk_count added changed removed rebuilt nodes_added nodes_dropped seconds warnings "
        "embedded",
        "search": _SEARCH,
        "search --batch": f"{_SEARCH} id",
        "search --batch (bad line)": "id line error hits",
        "context": "markdown sources tokens budget left_out_count",
        "get": "path node keywords text target_line",
        "links": "path node outgoing incoming",
        "hook": "event output",
        "claude": "user project",
        "claude install": "scope path written files",
        "status": "root tiers node_count oversized index dangling_nodes watcher open_conflict_count clash_count "
        "marker_file_count max_bytes banks archive_candidate_count consolidation recall semantic user_root warnings",
        "add": "decision node path similarity how redacted dry_run new_nodes entry_id merged_id strategy existing "
        "conflict_id other supersedes",
        "log": "path line text redacted",
        "conflicts": "conflicts",
        "conflicts --scan": "contradictions recorded",
        "conflicts resolve": "conflict keep outcome",
        "update": "decision node path lines entry_id similarity redacted existing conflict_id other supersedes",
        "forget": "entry_id path lines preview why archive",
        "promote": "entry_id to from_root to_root path lines moved already",
        "history": "target changes commits warnings chain",
        "undo": "dry_run undone paths change_id",
        "split": "splits",
        "check": "ok fixed problems",
        "watch": "time level message",
        "serve": "time level message",
        "mcp": "time level message",
        "distill": "written_count warnings proposals",
        "ingest": "dry_run turn_count logged_count known_count pending_count written_count logs cycles proposals "
        "warnings",
        "export": "memtree version bank nodes entries files",
        "import": "dry_run written_count skipped_count notes nodes_added restored added_conflict_count redacted_count",
        "banks": "banks",
        "banks disable": _SWITCH,
        "banks enable": _SWITCH,
        "decay": "entries bank_entry_count",
        "decay --archive": "archived dry_run",
        "consolidate": "dry_run seconds merges archive_candidates",
        "recall": "excerpts tokens budget over_budget last_sync_at last_evicted last_dropped",
        "recall sync": "dry_run kept promoted dropped evicted tokens budget",
        "eval": "overall categories latency_ms k tier max_span rejected_count error_count first_error",
        "view": "url pid started",
    }.items()
}
"""Command (and form) → the keys of its JSON object; ``watch`` prints one such object a line."""
OBJECTS: dict[str, frozenset[str]] = {
    name: frozenset(keys.split())
    for name, keys in {
        "hit": "node path lines score tier signals matched ids via status root text truncated",
        "conflict": "id created_at cause similarity new old",
        "contradiction": "similarity reason newer older newer_created_at older_created_at suggestion",
        "bank": "name note_count entry_count bytes enabled",
        "split": "path children nodes warnings",
        "problem": "kind path detail fixable",
        "proposal": "provenance outcome rule score section type text path",
        "cycle": "conversation trigger turns window_count written_count",
        "entry": "path lines preview age_days dated recall_count weight auto why id keys sha content candidate",
        "merge": "into merged similarity",
        "excerpt": "text path lines sha recall_count",
        "change": "id time command summary paths ids undoes commit",
        "commit": "commit time author subject",
        "link": "source line kind note anchor alias target target_line problem",
        "version": "id path lines created_at superseded by valid_until text",
    }.items()
}
"""The objects the lists hold, by name (docs/reference/json-output.md, second table)."""
_S, _I, _N, _B, _A, _O = "string", "integer", "number", "boolean", "array", "object"
_TYPES: dict[str, str | tuple[str, ...]] = {
    "archive": _S,
    "banks": _A,
    "budget": (_I, "null"),
    "cause": _S,
    "change_id": (_S, "null"),
    "changes": _A,
    "chain": _A,
    "commits": _A,
    "conflict": _O,
    "conflict_id": (_S, "null"),
    "conflicts": _A,
    "consolidation": (_O, "null"),
    "cycles": _A,
    "dangling_nodes": _A,
    "decision": _S,
    "dry_run": _B,
    "entry_id": (_S, "null"),
    "event": _S,
    "files": _O,
    "existing": (_S, "null"),
    "hits": _A,
    "incoming": _A,
    "how": (_S, "null"),
    "index": _O,
    "keep": _S,
    "keywords": _A,
    "line": _I,
    "lines": _A,
    "logs": _A,
    "markdown": _S,
    "max_bytes": _I,
    "merged_id": (_S, "null"),
    "new_nodes": _A,
    "node": (_S, "null"),
    "other": (_S, "null"),
    "outgoing": _A,
    "output": (_O, "null"),
    "outcome": _S,
    "oversized": _A,
    "path": (_S, "null"),
    "paths": _A,
    "preview": _S,
    "project": (_S, "null"),
    "proposals": _A,
    "query": _S,
    "recall": _O,
    "redacted": _A,
    "rejected": (_S, "null"),
    "root": _S,
    "scope": _S,
    "semantic": _O,
    "similarity": (_N, "null"),
    "sources": _A,
    "strategy": (_S, "null"),
    "supersedes": (_S, "null"),
    "target": (_S, "null"),
    "target_line": (_I, "null"),
    "term_stats": _A,
    "terms": _A,
    "text": _S,
    "tiers": _O,
    "tokens": _I,
    "undone": _A,
    "to": _S,
    "from_root": _S,
    "to_root": _S,
    "moved": _A,
    "already": _B,
    "user": (_S, "null"),
    "user_root": (_S, "null"),
    "watcher": (_O, "null"),
    "why": _S,
    "written": _B,
}


def json_type(key: str) -> dict[str, Any]:
    """The JSON-schema type of a top-level key (the MCP tools' ``outputSchema``): one type a name, as above.

    By the convention: ``…_count`` an integer, ``time`` and ``…_at`` a string or null, ``warnings`` a list.
    """
    if key.endswith("_count"):
        found: str | tuple[str, ...] = _I
    elif key == "time" or key.endswith("_at"):
        found = (_S, "null")
    elif key == "warnings":
        found = _A
    else:
        found = _TYPES[key]
    return {"type": list(found) if isinstance(found, tuple) else found}


TEXT_KEYS = frozenset({"text", "truncated"})
"""A hit's keys present only when the hit carries its text."""


def iso(value: object) -> str | None:
    """A time as ISO 8601 with its offset; epoch seconds and naive times are local time; None when there is none."""
    if value is None or value == "" or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        moment = datetime.fromtimestamp(value)
    elif isinstance(value, datetime):
        moment = value
    else:
        try:  # Why the replace: Python 3.10's fromisoformat does not read a trailing Z
            moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            return None  # "undated"
    return (moment if moment.tzinfo else moment.astimezone()).isoformat(timespec="seconds")


def dumps(doc: Json, indent: bool = True) -> bytes:
    """One JSON document and a newline (``indent=False``: one line, as ``--batch`` and ``watch`` write)."""
    import orjson

    return orjson.dumps(doc, option=orjson.OPT_NON_STR_KEYS | (orjson.OPT_INDENT_2 if indent else 0)) + b"\n"


# --- search, context, get -------------------------------------------------------------------------


def entry_ids(chunk_text: str) -> list[str]:
    """Ids of the entries memtree wrote in a hit's text; a recall/ excerpt names its source entry's."""
    from memtree.notes.entries import META_RE, parse_meta

    ids = []
    for m in META_RE.finditer(chunk_text):
        meta = parse_meta(m.group("body"))
        found = meta.id or meta.extra.get("key", "")
        if found and "#" not in found:  # `path#hash` keys a hand-written entry: it has no id
            ids.append(found)
    return list(dict.fromkeys(ids))


def hit(h: Hit, with_text: bool = True) -> Json:
    """A search hit: where, how it scored, the entry ids in it; with its text (no metadata comments)."""
    out = {
        "node": h.node,
        "path": h.path,
        "lines": list(h.lines),
        "score": h.score,
        "tier": h.tier,
        "signals": h.signals,
        "matched": list(h.matched),
        "ids": entry_ids(h.text),
        "via": h.via or None,
        "status": h.status,
        "root": h.root,
    }
    if with_text:
        from memtree.notes.entries import strip_meta

        out |= {"text": strip_meta(h.text), "truncated": h.truncated}
    return out


def search(result: SearchResult, with_text: bool = True) -> Json:
    """`search --json`; a `--batch` line is this with the line's ``id``."""
    return {
        "query": result.query,
        "terms": list(result.terms),
        "hits": [hit(h, with_text) for h in result.hits],
        "rejected": result.rejected,
        "warnings": list(result.warnings),
        "term_stats": [{"term": s.term, "df": s.df, "idf": round(s.idf, 4)} for s in result.term_stats],
    }


def bad_line(qid: object, line: int, error: str) -> Json:
    """A `--batch` line that could not be searched: its id (when it had one), line number and why."""
    return {"id": qid, "line": line, "error": error, "hits": []}


def context(ctx: Context) -> Json:
    """`context --json`: the block and what it holds."""
    return {
        "markdown": ctx.markdown,
        "sources": list(ctx.sources),
        "tokens": ctx.tokens,
        "budget": ctx.budget,
        "left_out_count": ctx.left_out,
    }


def note(n: Note) -> Json:
    """`get --json`."""
    return {"path": n.path, "node": n.node, "keywords": list(n.keywords), "text": n.text, "target_line": n.line}


def link(r: Resolved) -> Json:
    """One link of `links --json`: where it is, as written, and where it leads (``target`` null: nowhere)."""
    k = r.link
    return {
        "source": k.source,
        "line": k.line,
        "kind": k.kind,
        "note": k.note,
        "anchor": k.anchor or None,
        "alias": k.alias or None,
        "target": r.path if not r.problem else None,
        "target_line": r.line,
        "problem": r.problem or None,
    }


def note_links(found: NoteLinks) -> Json:
    """`links --json`: a note's links out and in."""
    return {
        "path": found.path,
        "node": found.node,
        "outgoing": [link(r) for r in found.outgoing],
        "incoming": [link(r) for r in found.incoming],
    }


# --- writing --------------------------------------------------------------------------------------


def decision(d: Decision) -> Json:
    """`add --json`: the decision's name and every decision's keys, null where this one has none."""
    from memtree.write.retain import Conflict, Created, Duplicate, Merged

    out: Json = {"decision": type(d).__name__.lower(), "node": d.node, "path": d.path, "similarity": d.similarity}
    out |= {"how": d.how, "redacted": list(d.redacted), "dry_run": d.dry_run, "new_nodes": list(d.new_nodes)}
    out |= dict.fromkeys(("entry_id", "merged_id", "strategy", "existing", "conflict_id", "other", "supersedes"))
    match d:
        case Created():
            out |= {"entry_id": d.entry_id, "supersedes": d.supersedes or None}
        case Merged():
            out |= {"entry_id": d.entry_id, "merged_id": d.merged_id, "strategy": d.strategy}
        case Duplicate():
            out["existing"] = d.existing
        case Conflict():
            out |= {"entry_id": d.entry_id, "conflict_id": d.conflict_id, "other": d.other}
    return out


def logged(done: Logged) -> Json:
    """`log --json`."""
    return {"path": done.path, "line": done.line, "text": done.text, "redacted": list(done.redacted)}


def _side(s: Side) -> Json:
    return {"path": s.path, "id": s.id or None, "text": s.text}  # no id: a hand-written entry


def conflict(c: OpenConflict) -> Json:
    """An open conflict: both sides, what differs (``cause``), their similarity, when it was found."""
    from memtree.write.conflicts import cause, measured

    return {
        "id": c.id,
        "created_at": iso(c.created),
        "cause": cause(c),
        "similarity": c.similarity if measured(c) else None,
        "new": _side(c.new),
        "old": _side(c.old),
    }


def conflicts(found: Iterable[OpenConflict]) -> Json:
    """`conflicts --json`."""
    return {"conflicts": [conflict(c) for c in found]}


def contradictions(found: Iterable[Contradiction], recorded: bool) -> Json:
    """`conflicts --scan --json`; a side's time is null when undated."""
    return {
        "contradictions": [
            {"similarity": c.similarity, "reason": c.reason, "newer": _side(c.newer), "older": _side(c.older)}
            | {"newer_created_at": iso(c.newer_created), "older_created_at": iso(c.older_created)}
            | {"suggestion": c.suggestion}
            for c in found
        ],
        "recorded": recorded,
    }


def updated(u: Updated) -> Json:
    """`update --json`: what became of the new words (updated, unchanged, duplicate or conflict), and where."""
    out: Json = {"decision": u.decision, "node": u.node, "path": u.path, "lines": list(u.lines)}
    out |= {"entry_id": u.entry_id, "similarity": u.similarity, "redacted": list(u.redacted)}
    return out | {"existing": u.existing, "conflict_id": u.conflict_id, "other": u.other, "supersedes": u.replaced}


def forgotten(f: Forgotten) -> Json:
    """`forget --json`: the entry that left, and the archive note that keeps it."""
    return {
        "entry_id": f.entry_id,
        "path": f.path,
        "lines": list(f.lines),
        "preview": f.preview,
        "why": f.why,
        "archive": f.archive,
    }


def promoted(p: Promoted) -> Json:
    """`promote --json`: the entry moved, with its older versions, and the two roots."""
    out: Json = {"entry_id": p.entry_id, "to": p.to, "from_root": p.from_root, "to_root": p.to_root, "path": p.path}
    return out | {"lines": list(p.lines), "moved": list(p.moved), "already": p.already}


def change(c: Change) -> Json:
    """One journaled change: when, by which command, the files and entries it touched."""
    return {
        "id": c.id,
        "time": iso(c.time),
        "command": c.command,
        "summary": c.summary,
        "paths": list(c.paths),
        "ids": list(c.ids),
        "undoes": list(c.undoes),
        "commit": c.commit,
    }


def commit(c: Commit) -> Json:
    """One git commit of a history."""
    return {"commit": c.commit, "time": iso(c.time), "author": c.author, "subject": c.subject}


def history(h: History) -> Json:
    """`history --json`: the journal's changes and git's commits, newest first."""
    return {
        "target": h.target,
        "changes": [change(c) for c in h.changes],
        "commits": [commit(c) for c in h.commits],
        "warnings": list(h.warnings),
        "chain": [
            {
                "id": v.id,
                "path": v.path,
                "lines": list(v.lines),
                "created_at": iso(v.created) if v.created else None,
                "superseded": v.superseded or None,
                "by": v.by or None,
                "valid_until": v.valid_until or None,
                "text": v.text,
            }
            for v in h.chain
        ],
    }


def undone(u: Undone) -> Json:
    """`undo --json`: the changes reverted (newest first), the files written back, the undo's own change."""
    return {
        "dry_run": u.dry_run,
        "undone": [change(c) for c in u.undone],
        "paths": list(u.paths),
        "change_id": u.change_id,
    }


def resolved(settled: OpenConflict, keep: str, outcome: str) -> Json:
    """`conflicts resolve --json`."""
    return {"conflict": conflict(settled), "keep": keep, "outcome": outcome}


def splits(results: Iterable[SplitResult]) -> Json:
    """`split --json`."""
    return {
        "splits": [
            {"path": r.path, "children": list(r.children), "nodes": list(r.nodes), "warnings": list(r.warnings)}
            for r in results
        ]
    }


def check(fixed: list[str], problems: list[Problem]) -> Json:
    """`check --json`."""
    found = [{"kind": p.kind, "path": p.path, "detail": p.detail, "fixable": p.fixable} for p in problems]
    return {"ok": not problems, "fixed": list(fixed), "problems": found}


def index(result: IndexResult) -> Json:
    """`index --json`."""
    rep, e = result.report, result.embedded
    return {
        "file_count": result.files,
        "chunk_count": result.chunks,
        "added": list(rep.added),
        "changed": list(rep.changed),
        "removed": list(rep.removed),
        "rebuilt": rep.rebuilt,
        "nodes_added": list(result.nodes_added),
        "nodes_dropped": [{"id": i, "path": p} for i, p in result.nodes_dropped],
        "seconds": round(result.seconds, 3),
        "warnings": list(rep.warnings),
        "embedded": e
        and {"model": e["model"], "chunk_count": e["chunks"], "embedded_count": e["embedded"], "seconds": e["seconds"]},
    }


def imported(r: Imported) -> Json:
    """`import --json`."""
    out = {"dry_run": r.dry_run, "written_count": r.written, "skipped_count": r.skipped, "notes": list(r.notes)}
    out |= {"nodes_added": list(r.nodes_added), "restored": list(r.restored)}
    return out | {"added_conflict_count": r.conflicts_added, "redacted_count": r.redacted}


def watch_event(line: str, now: datetime) -> Json:
    """One line of `watch --json`: a watcher's log line (``warning: …``, ``error: …`` or info) at ``now``."""
    level, _, message = line.partition(": ")
    if level not in ("warning", "error"):
        level, message = "info", line
    return {"time": iso(now), "level": level, "message": message}


# --- lifecycle ------------------------------------------------------------------------------------


def bank(b: Bank) -> Json:
    """One bank: its counts and whether search sees it."""
    return {"name": b.name, "note_count": b.notes, "entry_count": b.entries, "bytes": b.bytes, "enabled": b.enabled}


def banks(found: Iterable[Bank]) -> Json:
    """`banks --json`."""
    return {"banks": [bank(b) for b in found]}


def bank_switch(name: str, enabled: bool, disabled: Iterable[str]) -> Json:
    """`banks enable|disable --json`: the bank, its state now, and every disabled bank."""
    return {"bank": name, "enabled": enabled, "disabled_banks": list(disabled)}


def aged(a: Aged) -> Json:
    """A bank entry's decay (an archive candidate when ``why`` says so)."""
    out = {"path": a.path, "lines": list(a.lines), "preview": a.preview, "age_days": a.age_days, "dated": a.dated}
    out |= {"recall_count": a.recalls, "weight": round(a.weight, 4), "auto": a.auto, "why": a.why or None}
    out["id"] = a.id or None
    return out | {"keys": list(a.keys), "sha": a.sha, "content": a.content, "candidate": a.candidate}


def decay(shown: Iterable[Aged], total: int) -> Json:
    """`decay --json`: the entries shown (archive candidates, or all with --all) and how many there are in all."""
    return {"entries": [aged(a) for a in shown], "bank_entry_count": total}


def archived(moved: Iterable[Aged], dry_run: bool) -> Json:
    """`decay --archive --json`."""
    return {"archived": [aged(a) for a in moved], "dry_run": dry_run}


def consolidated(report: Consolidated) -> Json:
    """`consolidate --json`: each merge's kept entry, the entries folded into it (and their archive copy)."""
    from memtree.lifecycle.aging import archive_path

    def item(i: Any) -> Json:
        return {"path": i.path, "lines": [i.entry.start, i.entry.end], "text": i.entry.content}

    merges = [
        {"into": item(m.keep), "merged": [item(d) | {"archive": archive_path(d.path)} for d in m.drop]}
        | {"similarity": m.similarity}
        for m in report.merges
    ]
    candidates = [aged(a) for a in report.candidates]
    return {
        "dry_run": report.dry_run,
        "seconds": round(report.seconds, 3),
        "merges": merges,
        "archive_candidates": candidates,
    }


def excerpt(ex: Excerpt) -> Json:
    """A recall/ excerpt and its source."""
    return {"text": ex.text, "path": ex.path, "lines": list(ex.lines), "sha": ex.sha, "recall_count": ex.recalls}


def _recall_state(state: dict[str, Any]) -> Json:
    out = {k: state.get(k) for k in ("tokens", "budget", "over_budget")}
    return out | {
        "last_sync_at": iso(state.get("last_sync")),
        "last_evicted": list(state.get("evicted") or []),
        "last_dropped": list(state.get("dropped") or []),
    }


def recall(found: Iterable[Excerpt], state: dict[str, Any]) -> Json:
    """`recall --json`: the excerpts, the budget, and what the last sync evicted and dropped."""
    return {"excerpts": [excerpt(ex) for ex in found], **_recall_state(state)}


def recall_sync(sync: Sync, dry_run: bool) -> Json:
    """`recall sync --json`."""
    return {
        "dry_run": dry_run,
        "kept": [excerpt(ex) for ex in sync.kept],
        "promoted": [excerpt(ex) for ex in sync.promoted],
        "dropped": [excerpt(ex) | {"why": why} for ex, why in sync.dropped],
        "evicted": [excerpt(ex) for ex in sync.evicted],
        "tokens": sync.tokens,
        "budget": sync.budget,
    }


def distilled(report: DistillReport) -> Json:
    """`distill --json`."""
    proposals = [
        {"provenance": p.provenance, "outcome": p.outcome, "rule": p.candidate.rule, "score": p.candidate.score}
        | {"section": p.candidate.section, "type": p.candidate.type, "text": p.candidate.text}
        | {"path": getattr(p.decision, "path", None)}
        for p in report.proposals
    ]
    return {"written_count": report.written, "warnings": list(report.notices), "proposals": proposals}


def proposal(p: Proposal) -> Json:
    """A candidate entry `ingest` found, and what became of it (distill's proposal shape)."""
    return {"provenance": p.provenance, "outcome": p.outcome, "rule": p.candidate.rule, "score": p.candidate.score} | {
        "section": p.candidate.section,
        "type": p.candidate.type,
        "text": p.candidate.text,
        "path": getattr(p.decision, "path", None),
    }


def ingested(report: IngestReport) -> Json:
    """`ingest --json`: turns read, logged, already known and pending; the cycles examined; the proposals."""
    cycles = [
        {"conversation": c.conversation, "trigger": c.trigger, "turns": [c.first, c.last]}
        | {"window_count": c.windows, "written_count": c.written}
        for c in report.cycles
    ]
    return {
        "dry_run": report.dry_run,
        "turn_count": report.turns,
        "logged_count": len(report.logged),
        "known_count": report.known,
        "pending_count": report.pending,
        "written_count": report.written,
        "logs": list(report.logs),
        "cycles": cycles,
        "proposals": [proposal(p) for p in report.proposals],
        "warnings": list(report.notices),
    }


def evaluation(report: Evaluation) -> Json:
    """`eval --json`: the figures under score.py's names, overall and per category, and the latency."""
    lat = report.latency
    return {
        "overall": report.overall.to_json(),
        "categories": {name: m.to_json() for name, m in report.categories.items()},
        "latency_ms": {"n": lat.n, "mean": round(lat.mean, 3), "p50": round(lat.p50, 3), "p95": round(lat.p95, 3)},
        "k": report.k,
        "tier": report.tier,
        "max_span": report.max_span,
        "rejected_count": report.rejected,
        "error_count": report.errors,
        "first_error": report.first_error,
    }


def init(root: Path, created: Iterable[str], updated: Iterable[str] = ()) -> Json:
    """`init --json`: the root, what was created in it and what memtree added lines to (nothing when set up already)."""
    return {"root": str(root), "created": list(created), "updated": list(updated)}


def status(st: Status, max_bytes: int) -> Json:
    """`status --json`."""
    w, c, sem = st.watcher, st.consolidation, st.semantic or {}
    watcher = w and {"pid": w.get("pid"), "started_at": iso(w.get("started")), "time": iso(w.get("time"))} | {
        "running": w.get("running"),
        "action_count": w.get("actions"),
        "age_s": w.get("age_s"),
        "alive": w.get("alive"),
    }
    consolidation = c and {"started_at": iso(c.get("started")), "finished_at": iso(c.get("finished"))} | {
        "merged_count": c.get("merged"),
        "candidate_count": c.get("candidates"),
        "error": c.get("error"),
    } | {"last_error": c.get("last_error"), "last_error_at": iso(c.get("last_error_at"))}
    semantic = {"mode": str(sem.get("enabled", "off")), "active": bool(sem.get("active")), "model": sem.get("model")}
    semantic |= {
        "chunk_count": sem.get("chunks"),
        "vector_count": sem.get("with_vectors"),
        "seconds": sem.get("seconds"),
    }
    recall_ = st.recall or {}
    return {
        "root": st.root,
        "tiers": {
            t: {"file_count": s.files, "bytes": s.bytes, "node_count": s.nodes, "chunk_count": s.chunks}
            for t, s in st.tiers.items()
        },
        "node_count": st.nodes,
        "oversized": [{"path": p, "bytes": b} for p, b in st.oversized],
        "index": {"version": st.index_version, "fresh": not st.stale, "stale": list(st.stale)},
        "dangling_nodes": [{"id": i, "path": p} for i, p in st.dangling],
        "watcher": watcher,
        "open_conflict_count": st.open_conflicts,
        "clash_count": st.clashes,
        "marker_file_count": st.marker_files,
        "max_bytes": max_bytes,
        "banks": [bank(b) for b in st.banks],
        "archive_candidate_count": st.archive_candidates,
        "consolidation": consolidation,
        "recall": {"excerpt_count": recall_.get("excerpts", 0), **_recall_state(recall_)},
        "semantic": semantic,
        "user_root": st.user_root,
        "warnings": [*st.warnings, *([sem["notice"]] if sem.get("notice") else [])],
    }


def view(url: str, pid: int, started: bool) -> Json:
    """`view --json`: the viewer's one-time link, the daemon serving it, and whether this call started it."""
    return {"url": url, "pid": pid, "started": started}
