"""Banks: the top-level folders of bank/. `memtree banks` lists them; a disabled bank
(`banks.disabled` in memtree.yaml) is left out of `search` and `context` — its notes stay, untouched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memtree.config import CONFIG_FILE, load_settings
from memtree.errors import ConfigError, QueryError
from memtree.notes import entries, store
from memtree.notes.layout import LEGACY_NOTES


@dataclass(frozen=True)
class Bank:
    """One bank: its notes, entries and bytes, and whether search sees it."""

    name: str
    notes: int
    entries: int
    bytes: int
    enabled: bool


def list_banks(root: Path) -> list[Bank]:
    """Every top-level folder of bank/, with its counts."""
    disabled = set(load_settings(root).disabled_banks)
    disk, _ = store.walk(root, ("bank",))
    counts: dict[str, list[int]] = {}
    for f in disk:
        parts = f.path.split("/")
        name = parts[1] if len(parts) >= 3 else LEGACY_NOTES.get(f.path)
        if name is None:
            continue  # a note directly in bank/ belongs to no bank folder
        c = counts.setdefault(name, [0, 0, 0])
        c[0] += 1
        c[2] += f.size
        try:
            c[1] += len(entries.parse_entries(store.read_note(root / f.path)))
        except (OSError, UnicodeDecodeError):
            continue
    for name in disabled:
        counts.setdefault(name, [0, 0, 0])
    return [Bank(n, c[0], c[1], c[2], n not in disabled) for n, c in sorted(counts.items())]


def set_enabled(root: Path, name: str, enabled: bool) -> tuple[str, ...]:
    """Enable or disable a bank in memtree.yaml (other settings and comments kept); returns the disabled list."""
    name = store.check_name(name.strip(), "bank").strip("/")
    if not name or "/" in name:
        raise QueryError(f"{name!r} is not a bank name (a top-level folder of bank/)")
    if not enabled and not (root / "bank" / name).is_dir() and name not in {b.name for b in list_banks(root)}:
        known = ", ".join(b.name for b in list_banks(root)) or "none"
        raise QueryError(f"no bank {name!r} (banks: {known})")
    path = root / CONFIG_FILE
    disabled = [b for b in load_settings(root).disabled_banks if b != name]
    if not enabled:
        disabled.append(name)

    def edited(text: str) -> str:
        before = _load(text, path)
        new_text = _with_disabled(text, disabled)
        expected = dict(before)
        expected["banks"] = {**(before.get("banks") or {}), "disabled": disabled}
        if _load(new_text, path) != expected:  # an unusual layout: rewrite the whole file (comments are lost)
            import yaml

            new_text = yaml.safe_dump(expected, allow_unicode=True, sort_keys=False)
        return new_text

    with store.write_lock(root):
        store.rewrite(root, CONFIG_FILE, edited)
    return tuple(disabled)


def _load(text: str, path: Path) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError:
        raise ConfigError(f"{path}: invalid YAML; fix it before changing banks") from None
    return data if isinstance(data, dict) else {}


def _with_disabled(text: str, disabled: list[str]) -> str:
    """``text`` with `banks: disabled:` set to ``disabled`` as a one-line list."""
    line = f"  disabled: [{', '.join(disabled)}]"
    lines = text.split("\n")
    try:
        start = next(i for i, ln in enumerate(lines) if re.match(r"^banks:\s*(#.*)?$", ln))
    except StopIteration:
        body = text.rstrip("\n")
        return (body + "\n\n" if body else "") + f"banks:\n{line}\n"
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end].startswith((" ", "\t"))):
        end += 1
    block = lines[start + 1 : end]
    for i, ln in enumerate(block):
        if re.match(r"^\s+disabled:", ln):
            j = i + 1
            while j < len(block) and re.match(r"^\s+-\s", block[j]):
                j += 1  # a block-style list under `disabled:`
            block[i:j] = [line]
            break
    else:
        block.insert(0, line)
    return "\n".join([*lines[: start + 1], *block, *lines[end:]])
