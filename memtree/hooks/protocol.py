"""The hook protocol's two ends: the event JSON read from stdin, the answer JSON written to stdout.

Pure: bytes in, values out, and back. The shapes are Claude Code's (its hooks reference): every
event carries ``session_id``, ``transcript_path``, ``cwd`` and ``hook_event_name``; UserPromptSubmit
adds ``prompt``. An answer that adds context is ``{"hookSpecificOutput": {"hookEventName": EVENT,
"additionalContext": TEXT}}`` — read by SessionStart and UserPromptSubmit; the other events answer
nothing (an empty stdout).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from memtree.errors import QueryError

EVENTS = ("SessionStart", "UserPromptSubmit", "PreCompact", "Stop", "SessionEnd")
"""The events `memtree hook` answers."""
INJECTING = ("SessionStart", "UserPromptSubmit")
"""Events whose answer is added to the model's context."""
CAPTURING = ("PreCompact", "Stop", "SessionEnd")
"""Events that capture the session's transcript into memory."""
MAX_EVENT_BYTES = 4 * 1024 * 1024
"""An event bigger than this is refused (a prompt is at most a few hundred kB)."""


@dataclass(frozen=True)
class Event:
    """One hook event as read from stdin (missing keys are empty)."""

    name: str
    session_id: str = ""
    transcript_path: str = ""
    cwd: str = ""
    prompt: str = ""


def event_name(given: str) -> str:
    """The event named on the command line, in its canonical spelling (``sessionstart`` → ``SessionStart``)."""
    for name in EVENTS:
        if given.replace("-", "").replace("_", "").lower() == name.lower():
            return name
    raise QueryError(f"unknown hook event {given!r}: one of {', '.join(EVENTS)}")


def parse(name: str, data: bytes) -> Event:
    """The event ``name`` from its stdin bytes; an empty stdin is an event with no details.

    A payload naming another event (``hook_event_name``) is refused: the hook was wired to the wrong event.
    """
    if len(data) > MAX_EVENT_BYTES:
        raise QueryError(f"the {name} event is {len(data):,} bytes; at most {MAX_EVENT_BYTES:,} are read")
    if not data.strip():
        return Event(name)
    try:
        doc = json.loads(data.decode("utf-8", errors="replace"))
    except json.JSONDecodeError as exc:
        raise QueryError(f"the {name} event on stdin is not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(doc, dict):
        raise QueryError(f"the {name} event on stdin must be a JSON object")
    said = doc.get("hook_event_name")
    if isinstance(said, str) and said and said != name:
        raise QueryError(f"the hook was run for {name} but stdin holds a {said} event")

    def text(key: str) -> str:
        value = doc.get(key)
        return value if isinstance(value, str) else ""

    return Event(name, text("session_id"), text("transcript_path"), text("cwd"), text("prompt"))


def answer(event: str, context: str) -> str:
    """What the hook prints: the JSON adding ``context`` for an injecting event, else nothing."""
    if not context or event not in INJECTING:
        return ""
    doc = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}}
    return json.dumps(doc, ensure_ascii=False) + "\n"
