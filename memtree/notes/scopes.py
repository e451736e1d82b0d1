"""Scopes: ``global`` ⊃ ``project:NAME`` ⊃ ``workspace:NAME`` — parsing a current scope and who sees what.

The current scope is a chain from the top, e.g. ``project:api/workspace:alice``; an entry is visible when
its scope is ``global`` or in that chain (an upper scope is visible below, never the reverse).
"""

from __future__ import annotations

import re

from memtree.errors import QueryError

SCOPE_RE = re.compile(r"^(global|(?:project|workspace):[^\s/;,<>]+)$")
"""One scope level: global, project:NAME or workspace:NAME."""


def parse_scope(value: str) -> tuple[str, ...]:
    """A current scope (``global``, ``project:api``, ``project:api/workspace:alice``) → its chain."""
    parts = tuple(p.strip() for p in value.strip().split("/") if p.strip())
    bad = [p for p in parts if not SCOPE_RE.match(p)]
    if not parts or bad:
        raise QueryError(
            f"scope {value!r} is not global, project:NAME, workspace:NAME or a chain such as project:api/workspace:me"
        )
    return tuple(p for p in parts if p != "global")


def check_entry_scope(value: str, what: str = "scope") -> str:
    """An entry's own scope (one level); raises QueryError when malformed."""
    if not SCOPE_RE.match(value.strip()):
        raise QueryError(f"{what} {value!r} must be global, project:NAME or workspace:NAME")
    return value.strip()


def visible(scopes: tuple[str, ...], chain: tuple[str, ...] | None) -> bool:
    """Whether a chunk whose entries have ``scopes`` is visible from the current scope ``chain``.

    ``None`` means no current scope was given: everything is visible. A chunk is visible only
    when every entry in it is, so text of a lower scope never leaks through a shared chunk.
    """
    if chain is None:
        return True
    return all(s == "global" or s in chain for s in scopes)
