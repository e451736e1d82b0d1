"""Candidates from a window of conversation turns: distill's detectors and the optional ``extract.llm_command``.

A rule candidate becomes an entry of the kind its distill type maps to, in the auto bank's note of
its section (``bank/auto/debugging.md``); a fact the LLM command proposes goes to the note of its
kind (``bank/auto/preferences.md``). memtree.lifecycle.ingest decides which are written.
"""

from __future__ import annotations

import json
import math
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from memtree.lifecycle.distill import Candidate, LogLine, detect, instructivity
from memtree.lifecycle.reflect import KIND_OF_TYPE, LLM_TIMEOUT_S
from memtree.write.retain import KINDS

if TYPE_CHECKING:
    from memtree.config import ExtractSettings
    from memtree.lifecycle.cadence import Logged

AUTO_BANK = "auto"
"""The bank extracted entries go to: `bank/auto/<section>.md`, one note per distill section or fact kind."""
KIND_NOTE = {"fact": "facts", "preference": "preferences", "entity": "entities", "decision": "decisions"}
"""The note of the auto bank an LLM-proposed fact of each kind goes to."""
LLM_RULE = "llm"


@dataclass(frozen=True)
class Found:
    """A candidate with the entry kind it becomes and the note it goes to."""

    candidate: Candidate
    kind: str
    note: str


def candidates(window: Sequence[Logged], cfg: ExtractSettings, min_score: int) -> tuple[list[Found], str | None]:
    """What one window yields: the detectors' candidates (rescored by the LLM command, if set) and its facts."""
    lines = [LogLine(t.path, t.line, f"{t.ts:%H:%M}", " ".join(t.text.split())) for t in window]
    found = detect(lines, min_score)
    facts: list[Found] = []
    failure = None
    if cfg.llm_command:
        found, facts, failure = _ask_llm(cfg, window, found)
    rules = [Found(c, KIND_OF_TYPE.get(c.type, "fact"), f"{AUTO_BANK}/{c.section.lower()}") for c in found]
    return facts + rules, failure


def _ask_llm(
    cfg: ExtractSettings, window: Sequence[Logged], rules: list[Candidate]
) -> tuple[list[Candidate], list[Found], str | None]:
    """``extract.llm_command`` on one window: the rule candidates rescored (as distill's), and the facts it proposes.

    It reads ``{"conversation", "turns": [{"turn", "role", "text", "ts"}], "candidates": [distill's items]}``
    on stdin and prints a JSON array: ``{"i", "score"}`` rescores rule candidate ``i`` (averaged with the
    rules' score), ``{"text", "kind"?, "score"?, "turns"?}`` proposes a fact (kind: fact, preference, entity
    or decision; score 0-100, else the instructivity of its text; turns: the turn numbers it comes from,
    else the whole window). On any failure the rules alone decide, and a warning says so.
    """
    payload = {
        "conversation": window[0].conversation,
        "turns": [{"turn": t.turn, "role": t.role, "text": t.text, "ts": t.ts.isoformat()} for t in window],
        "candidates": [
            {"i": i, "text": c.text, "rule": c.rule, "section": c.section, "type": c.type, "score": c.score}
            for i, c in enumerate(rules)
        ],
    }
    failed = f"extract.llm_command failed on {window[0].conversation!r} turns {window[0].turn}-{window[-1].turn}"
    try:
        proc = subprocess.run(
            shlex.split(cfg.llm_command),
            input=json.dumps(payload, ensure_ascii=False),
            text=True,
            capture_output=True,
            timeout=LLM_TIMEOUT_S,
            check=True,
        )
        answer = json.loads(proc.stdout)
        if not isinstance(answer, list) or not all(isinstance(a, dict) for a in answer):
            raise TypeError("not a JSON array of objects")
        scores = {int(a["i"]): _score(a["score"]) for a in answer if "i" in a}
        facts = [_fact(a, window) for a in answer if "i" not in a]
    except (OSError, ValueError, KeyError, TypeError, subprocess.SubprocessError) as exc:
        return rules, [], f"{failed} ({type(exc).__name__}); rules alone decided"
    # distill's rule (reflect.llm_rescore): the rules' score and the command's, averaged
    rescored = [replace(c, score=round((c.score + scores[i]) / 2)) if i in scores else c for i, c in enumerate(rules)]
    return rescored, facts, None


def _score(value: object) -> float:
    """A score the command gave, clamped to 0-100 (ValueError when it is no finite number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"score {value!r} is not a number")
    return max(0.0, min(100.0, float(value)))


def _fact(item: Mapping[str, object], window: Sequence[Logged]) -> Found:
    """One fact the LLM command proposed, as a candidate naming the turns it came from."""
    text = item["text"]
    if not isinstance(text, str) or not text.strip():
        raise ValueError("a fact without text")
    kind = item.get("kind") if item.get("kind") in KINDS else "fact"
    value = round(_score(item["score"])) if item.get("score") is not None else instructivity(1.0, text)
    named = item.get("turns")
    wanted = {n for n in named if isinstance(n, int)} if isinstance(named, list) else set()
    picked = [t for t in window if t.turn in wanted] or list(window)
    section, kind_type = ("PREFERENCES", "PREFERENCE") if kind == "preference" else ("GENERAL", "KNOWLEDGE")
    source = tuple((t.path, t.line) for t in picked)
    candidate = Candidate(LLM_RULE, 1.0, section, kind_type, value, " ".join(text.split()), source)
    return Found(candidate, str(kind), f"{AUTO_BANK}/{KIND_NOTE[str(kind)]}")
