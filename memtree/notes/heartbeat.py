"""The watcher's heartbeat in ``.memtree/watch.json``: written by `memtree watch`, read by `memtree status`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from memtree.notes import store

HEARTBEAT_S = 5.0
"""How often a running watcher rewrites its heartbeat."""
HEARTBEAT_FILE = "watch.json"
STALE_AFTER_S = 3 * HEARTBEAT_S
"""A heartbeat older than this is a watcher that died without saying so."""


def heartbeat(root: Path, now: float) -> dict[str, Any] | None:
    """The watcher's last heartbeat as of ``now`` (epoch s), with ``alive`` set; None if no watcher ever ran here."""
    try:
        beat = orjson.loads((root / store.STATE_DIR / HEARTBEAT_FILE).read_bytes())
    except (OSError, ValueError):
        return None
    age = now - float(beat.get("time", 0))
    beat["age_s"] = round(max(age, 0.0), 1)  # a beat written a moment after `now` was read is 0 s old, not -0.0
    beat["alive"] = bool(beat.get("running")) and age < STALE_AFTER_S and pid_alive(beat.get("pid"))
    return beat


def pid_alive(pid: object) -> bool:
    """Whether a process with this id runs (one of another user counts: it exists)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
