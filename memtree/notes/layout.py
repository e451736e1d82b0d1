"""Banks as search sees them: the top-level folders of bank/, and the notes directly in bank/ that belong to one."""

from __future__ import annotations

LEGACY_NOTES = {"bank/inbox.md": "inbox"}
"""Notes directly in bank/ that belong to a bank: the inbox of roots made before it had its own
folder (bank/inbox/inbox.md). Their files are never moved; they are counted and named here."""


def skipped(disabled: tuple[str, ...]) -> tuple[str, ...]:
    """Path prefixes search leaves out for the disabled banks (a legacy note directly in bank/ too)."""
    return tuple(f"bank/{b}/" for b in disabled) + tuple(p for p, b in LEGACY_NOTES.items() if b in disabled)
