"""`memtree distill`: knowledge found in memory/ logs by the rule detectors, written through `add`.

For each log (all of memory/, the given files, or those dated on or after ``--since``) the
detectors of :mod:`memtree.lifecycle.distill` propose candidates; an optional LLM command
(``distill.llm_command``) may rescore them (rule and LLM scores are averaged); candidates under
``distill.min_score`` are dropped; the rest go through `add` as ``source=auto`` entries whose
metadata names the log lines they came from. A run writes at most ``distill.max_writes`` entries.
Distilling the same log twice writes nothing new: a candidate whose provenance is already in the
bank is skipped, and `add`'s dedup catches the rest.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from memtree.errors import QueryError
from memtree.lifecycle.distill import Candidate, detect, parse_log
from memtree.notes import entries, store
from memtree.write.verbs import add

if TYPE_CHECKING:
    from datetime import datetime

    from memtree.config import DistillSettings
    from memtree.state import RootState
    from memtree.write.retain import Decision

LLM_TIMEOUT_S = 60
_LOG_NAME = re.compile(r"^(\d{4}-\d{2}-\d{2})")
KIND_OF_TYPE = {"PREFERENCE": "preference", "KNOWLEDGE": "fact", "METHOD": "fact", "TRICK": "fact", "PITFALL": "fact"}


@dataclass(frozen=True)
class Proposal:
    """One candidate and what became of it."""

    candidate: Candidate
    provenance: str  # "memory/2026-11-27.md:5-6"
    outcome: str  # "written", "duplicate", "merged", "conflict", "known", "below-score", "over-limit", "dry-run"
    decision: Decision | None = None


@dataclass(frozen=True)
class DistillReport:
    """A distill run: the proposals in log order, how many were written, and notices."""

    proposals: tuple[Proposal, ...]
    written: int
    notices: tuple[str, ...] = ()


def provenance(c: Candidate) -> str:
    """Where a candidate came from: `path:first-last` of its log lines, per log (a chore may span days)."""
    by_path: dict[str, list[int]] = {}
    for path, line in c.source:
        by_path.setdefault(path, []).append(line)
    return ",".join(f"{p}:{min(ns)}-{max(ns)}" for p, ns in sorted(by_path.items()))


def log_files(state: RootState, files: Sequence[str] | None, since: date | None) -> list[str]:
    """The logs to read, root-relative: the given ones, or every memory/ log (dated ≥ since)."""
    if files:
        rel = [state.relative(f) for f in files]
        bad = [r for r in rel if not r.startswith("memory/")]
        if bad:
            raise QueryError(f"distill reads memory/ logs only; not: {', '.join(bad)}")
        return rel
    disk, _ = store.walk(state.root, ("memory",))
    out = []
    for f in disk:
        m = _LOG_NAME.match(Path(f.path).name)
        if since is not None and (m is None or date.fromisoformat(m.group(1)) < since):
            continue
        out.append(f.path)
    return out


def known_provenance(root: Path) -> set[str]:
    """Provenance already recorded on bank entries (`from=` in their metadata)."""
    disk, _ = store.walk(root, ("bank",))
    seen: set[str] = set()
    for f in disk:
        try:
            note = store.read_note(root / f.path)
        except (OSError, UnicodeDecodeError):
            continue
        for m in entries.META_RE.finditer(note):
            origin = entries.parse_meta(m.group("body")).extra.get("from")
            if origin:
                seen.add(origin)
    return seen


def llm_rescore(command: str, candidates: list[Candidate]) -> tuple[list[Candidate], str | None]:
    """Average each candidate's score with the LLM command's (JSON in, JSON out); rules alone on failure."""
    payload = [
        {"i": i, "text": c.text, "rule": c.rule, "section": c.section, "type": c.type, "score": c.score}
        for i, c in enumerate(candidates)
    ]
    try:
        proc = subprocess.run(
            shlex.split(command),
            input=json.dumps(payload, ensure_ascii=False),
            text=True,
            capture_output=True,
            timeout=LLM_TIMEOUT_S,
            check=True,
        )
        scored = {int(item["i"]): float(item["score"]) for item in json.loads(proc.stdout)}
    except (OSError, ValueError, KeyError, TypeError, subprocess.SubprocessError) as exc:
        return candidates, f"distill.llm_command failed ({type(exc).__name__}); rules alone decided"
    out = [
        replace(c, score=round((c.score + max(0.0, min(100.0, scored[i]))) / 2)) if i in scored else c
        for i, c in enumerate(candidates)
    ]
    return out, None


def run(
    state: RootState,
    now: datetime,
    cfg: DistillSettings,
    files: Sequence[str] | None = None,
    since: date | None = None,
    dry_run: bool = False,
) -> DistillReport:
    """Distill logs into the bank (see the module docstring) with the ``distill.*`` settings ``cfg``."""
    notices: list[str] = []
    lines = []
    for rel in log_files(state, files, since):
        try:
            body = store.read_note(state.root / rel)
        except (OSError, UnicodeDecodeError) as exc:
            notices.append(f"{rel}: skipped ({exc})")
            continue
        lines += parse_log(rel, body)
    candidates = detect(lines, cfg.min_score)  # all logs at once: a chore repeated across days is one candidate
    # Why no notice without a command: rules alone is the default, nothing for a user to fix.
    if cfg.llm_command:
        candidates, failure = llm_rescore(cfg.llm_command, candidates)
        if failure:
            notices.append(failure)
    seen = known_provenance(state.root)
    proposals: list[Proposal] = []
    written = 0
    for c in candidates:
        origin = provenance(c)
        if c.score < cfg.min_score:  # rescored by the LLM under the minimum
            proposals.append(Proposal(c, origin, "below-score"))
        elif origin in seen:
            proposals.append(Proposal(c, origin, "known"))
        elif written >= cfg.max_writes:
            proposals.append(Proposal(c, origin, "over-limit"))
        else:
            decision = add(
                state,
                c.text,
                now,
                tags=(c.section.lower(), c.type.lower()),
                kind=KIND_OF_TYPE.get(c.type, "fact"),
                source="auto",
                dry_run=dry_run,
                origin=origin,
            )
            name = type(decision).__name__.lower()
            outcome = "dry-run" if dry_run else {"created": "written"}.get(name, name)
            written += outcome in ("written", "merged", "conflict")
            seen.add(origin)
            proposals.append(Proposal(c, origin, outcome, decision))
    return DistillReport(tuple(proposals), written, tuple(notices))
