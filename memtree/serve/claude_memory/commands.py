"""The text semantics of the memory tool's commands, as the reference implementation has them: pure functions.

``replace_once`` and ``insert_line`` return the new text and the span the model wrote (which the
sanitizer checks), or raise Refused with the reference's error text; ``snippet`` is what a
str_replace answers with; ``input_problem`` checks a tool_use block's input before any of it runs.
"""

from __future__ import annotations

from memtree.serve.claude_memory.paths import Refused

COMMAND_FIELDS: dict[str, dict[str, type]] = {
    "view": {"path": str},
    "create": {"path": str, "file_text": str},
    "str_replace": {"path": str, "old_str": str, "new_str": str},
    "insert": {"path": str, "insert_line": int, "insert_text": str},
    "delete": {"path": str},
    "rename": {"old_path": str, "new_path": str},
}
"""The memory tool's commands and the fields each needs (memory_20250818)."""
LINE_NUMBER_WIDTH = 6
"""Line numbers are right-aligned in a column this wide (up to 999,999 lines), then a tab."""
SNIPPET_BEFORE, SNIPPET_AFTER = 2, 3
"""Lines around a str_replace's change its result shows, as the reference does."""


def input_problem(raw: object) -> str:
    """What is wrong with a tool_use block's input, in one line ('' when it is a valid command)."""
    if not isinstance(raw, dict):
        return "The memory tool's input must be an object with a command"
    command = raw.get("command")
    if command not in COMMAND_FIELDS:
        return f"Unknown command {command!r}: the memory tool takes {', '.join(COMMAND_FIELDS)}"
    for name, kind in COMMAND_FIELDS[command].items():
        value = raw.get(name)
        wanted = "an integer" if kind is int else "a string"
        if value is None:
            return f"The {command} command needs {name} ({wanted})"
        if not isinstance(value, kind) or isinstance(value, bool):
            return f"The {command} command's {name} must be {wanted}"
    if command == "view" and not isinstance(raw.get("view_range", []), (list, type(None))):
        return "The view command's view_range must be a list of two integers [start, end]"
    return ""


def numbered(lines: list[str], first: int) -> list[str]:
    """Lines numbered from ``first`` the reference's way."""
    return [f"{str(i + first).rjust(LINE_NUMBER_WIDTH)}\t{line}" for i, line in enumerate(lines)]


def replace_once(text: str, old: str, new: str, path: str) -> tuple[str, int, int]:
    """``text`` with its one occurrence of ``old`` replaced; none, several or an empty ``old`` is refused."""
    if not old:
        raise Refused(f"No replacement was performed, old_str is empty; give the exact text to replace in {path}.")
    count = text.count(old)
    if count == 0:
        raise Refused(f"No replacement was performed, old_str `{old}` did not appear verbatim in {path}.")
    if count > 1:
        lines, at = [], text.find(old)
        while at != -1:  # overlapping occurrences count too, as in the reference
            lines.append(text[:at].count("\n") + 1)
            at = text.find(old, at + 1)
        raise Refused(
            f"No replacement was performed. Multiple occurrences of old_str `{old}` in lines: "
            f"{', '.join(map(str, lines))}. Please ensure it is unique"
        )
    at = text.find(old)
    return text[:at] + new + text[at + len(old) :], at, at + len(new)


def snippet(text: str, at: int, before: str) -> list[str]:
    """The numbered lines around a change made at offset ``at`` (its line counted in ``before``, the old text)."""
    line = before[:at].count("\n")
    lines = text.split("\n")
    first, last = max(0, line - SNIPPET_BEFORE), min(len(lines), line + SNIPPET_AFTER)
    return numbered(lines[first:last], first + 1)


def insert_line(text: str, n: int, inserted: str) -> tuple[str, int, int]:
    """``text`` with ``inserted`` (its trailing newlines dropped) as a line after line ``n`` (0: at the top)."""
    inserted = inserted.rstrip("\n")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    if n < 0 or n > len(lines):
        raise Refused(f"Invalid `insert_line` parameter: {n}. It should be within the range [0, {len(lines)}].")
    at = sum(len(line) + 1 for line in lines[:n])
    lines.insert(n, inserted)
    new = "\n".join(lines)
    return (new if new.endswith("\n") else new + "\n"), at, at + len(inserted)
