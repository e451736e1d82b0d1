"""Conversation turns for `memtree ingest`: read and validated whole, before anything is written.

A turn is one JSON object (a line of a transcript file, or a dict given to ``MemTree.ingest``):

- ``conversation``: the conversation's id, 1-128 characters, no ``;``, ``=``, ``<``, ``>`` or
  control characters (it is written into the log's metadata);
- ``role``: ``user``, ``assistant`` or ``system``;
- ``text``: a non-empty string of at most 50,000 characters (``retain.MANUAL_MAX_CHARS``);
- ``ts``: ISO 8601 with a UTC offset (``2026-11-29T14:20:05+09:00``, ``…Z``), or epoch seconds,
  read in the offset of ``now`` (the local one at the CLI). A time without an offset is refused:
  the day log a turn goes to and the gaps between turns depend on it.

Other keys are ignored. Within a conversation turns come oldest first (equal times are fine).
The first problem stops the whole input with one line naming where it is and what is wrong.

A Claude Code session file (``~/.claude/projects/<project>/<session>.jsonl``, a hook's
``transcript_path``) is read directly (:func:`from_claude_code`): each ``user`` or ``assistant`` line
with a ``message`` is a turn of its ``sessionId`` — what the person typed and what the assistant wrote, its
text blocks only. Tool calls and their results (files read, command output: their sources hold
them), thinking, subagents' side chains, Claude Code's own notices and slash-command echoes are left
out, as are the lines that are not messages (summaries, snapshots).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from memtree.errors import QueryError
from memtree.write.retain import MANUAL_MAX_CHARS

ROLES = ("user", "assistant", "system")
MAX_CONVERSATION_CHARS = 128
_FORBIDDEN = frozenset(";=<>")


@dataclass(frozen=True)
class Turn:
    """One validated turn: who said what, when, in which conversation; ``where`` names it in errors."""

    conversation: str
    role: str
    text: str
    ts: datetime  # aware
    where: str  # "chat.jsonl line 3" or "turn 3"

    @property
    def key(self) -> str:
        """A short digest of role and text: tells two turns apart that share a timestamp."""
        return turn_key(self.role, self.text)


def turn_key(role: str, text: str) -> str:
    """The digest :attr:`Turn.key` is (12 hex digits of SHA-256 over role and text)."""
    return hashlib.sha256(f"{role}\0{text}".encode()).hexdigest()[:12]


def read_jsonl(data: bytes, source: str) -> list[tuple[str, object]]:
    """The JSON value of every non-blank line, each with where it is (``"<source> line N"``)."""
    items: list[tuple[str, object]] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        where = f"{source} line {number}"
        if number == 1:
            raw = raw.removeprefix(b"\xef\xbb\xbf")  # a BOM some editors write
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise QueryError(f"{where}: not UTF-8 text; nothing was written") from None
        if not line.strip():
            continue
        try:
            items.append((where, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise QueryError(f"{where}: not JSON ({exc.msg} at column {exc.colno}); nothing was written") from None
    return items


CLAUDE_CODE_TYPES = ("user", "assistant")
"""Line types of a Claude Code session file that carry a message (others: summary, system, snapshots, …)."""
CLAUDE_CODE_NOISE = ("<command-", "<local-command-", "[Request interrupted")
"""How Claude Code's own lines in a session file start (slash-command echoes, their output, interruptions)."""
CLIPPED = " …"


def from_claude_code(items: Sequence[tuple[str, object]]) -> list[tuple[str, object]]:
    """Lines of a Claude Code session file as turns (see the module docstring); other lines pass unchanged.

    A line is Claude Code's when it is an object with a ``type`` and no ``conversation`` (memtree's turns
    have no type); a text longer than a turn may be is clipped (a pasted log must not cost the session's
    capture).
    """
    out: list[tuple[str, object]] = []
    for where, item in items:
        if not (isinstance(item, dict) and isinstance(item.get("type"), str) and "conversation" not in item):
            out.append((where, item))
            continue
        if item.get("type") not in CLAUDE_CODE_TYPES or item.get("isSidechain") or item.get("isMeta"):
            continue
        if item.get("isCompactSummary") or item.get("isVisibleInTranscriptOnly"):
            continue
        message = item["message"]
        role = message.get("role") if isinstance(message, dict) else None
        text = _message_text(message.get("content") if isinstance(message, dict) else None).strip()
        if role not in CLAUDE_CODE_TYPES or not text or text.startswith(CLAUDE_CODE_NOISE):
            continue
        if len(text) > MANUAL_MAX_CHARS:
            text = text[: MANUAL_MAX_CHARS - len(CLIPPED)] + CLIPPED
        turn = {"conversation": item["sessionId"], "role": role, "text": text, "ts": item.get("timestamp")}
        out.append((where, turn))
    return out


def _message_text(content: object) -> str:
    """A Claude Code message's text: a string, or its ``text`` blocks joined (tool calls, results, thinking not)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return "\n\n".join(p for p in parts if isinstance(p, str))


def numbered(turns: Iterable[object]) -> list[tuple[str, object]]:
    """Turns given as values (the API, an MCP tool), named ``turn 1``, ``turn 2``, … in errors."""
    return [(f"turn {i}", t) for i, t in enumerate(turns, start=1)]


def validate(items: Sequence[tuple[str, object]], now: datetime) -> list[Turn]:
    """Every item as a :class:`Turn`, or a QueryError naming the first bad one (see the module docstring)."""
    turns: list[Turn] = []
    last: dict[str, Turn] = {}
    for where, item in items:
        turn = _turn(where, item, now)
        before = last.get(turn.conversation)
        if before is not None and turn.ts < before.ts:
            raise _bad(
                where,
                f"ts {turn.ts.isoformat()} is earlier than the turn before it in conversation "
                f"{turn.conversation!r} ({before.where}); give each conversation's turns oldest first",
            )
        last[turn.conversation] = turn
        turns.append(turn)
    return turns


def _bad(where: str, what: str) -> QueryError:
    return QueryError(f"{where}: {what}; nothing was written")


def _turn(where: str, item: object, now: datetime) -> Turn:
    if not isinstance(item, dict):
        raise _bad(where, f"expected a JSON object with conversation, role, text and ts, got {type(item).__name__}")
    for key in ("conversation", "role", "text", "ts"):
        if key not in item:
            raise _bad(where, f"missing {key!r}")
    conversation, role, text = item["conversation"], item["role"], item["text"]
    if not isinstance(conversation, str) or not conversation.strip():
        raise _bad(where, "'conversation' must be a non-empty string")
    if (
        len(conversation) > MAX_CONVERSATION_CHARS
        or conversation != conversation.strip()
        or any(c in _FORBIDDEN or not c.isprintable() for c in conversation)
    ):
        raise _bad(
            where,
            f"conversation {conversation[:40]!r} must be at most {MAX_CONVERSATION_CHARS} printable characters "
            "without ';', '=', '<', '>' or surrounding spaces",
        )
    if role not in ROLES:
        raise _bad(where, f"role {role!r} is not one of {', '.join(ROLES)}")
    if not isinstance(text, str) or not text.strip():
        raise _bad(where, "'text' must be a non-empty string")
    if len(text) > MANUAL_MAX_CHARS:
        raise _bad(where, f"the text has {len(text):,} characters; a turn takes at most {MANUAL_MAX_CHARS:,}")
    return Turn(conversation, role, text, parse_ts(where, item["ts"], now), where)


def parse_ts(where: str, value: object, now: datetime) -> datetime:
    """ISO 8601 with an offset, or epoch seconds read in ``now``'s offset; anything else is bad input."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise _bad(where, f"ts {value!r} is not a time")
        try:
            return datetime.fromtimestamp(value, tz=now.tzinfo or timezone.utc)
        except (OverflowError, OSError, ValueError):
            raise _bad(where, f"ts {value!r} is out of range for epoch seconds") from None
    if not isinstance(value, str):
        raise _bad(where, f"ts must be ISO 8601 with an offset or epoch seconds, got {type(value).__name__}")
    try:  # Why the replace: Python 3.10's fromisoformat does not read a trailing Z
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise _bad(where, f"ts {value[:40]!r} is not ISO 8601 (2026-11-29T14:20:05+09:00) or epoch seconds") from None
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise _bad(where, f"ts {value[:40]!r} has no UTC offset (add +09:00, Z, …)")
    return moment
