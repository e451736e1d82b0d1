"""A team sharing one memory through git: clones of a bare repository doing random rounds, then the checks.

Each round every clone, in a random order, first makes a few memory changes — adds to a shared
note and to new notes, daily-log lines, updates, forgets, a line typed by hand — then each, in
another random order, shares them: `memtree sync` (rebase or merge) most rounds, a plain
`git commit` + `git pull` (rebase or merge) + `git push` the others. At the end every clone
syncs until all agree, and the run checks:

- all clones byte-identical; no conflict marker in any tracked file; `memtree check` clean;
- every acknowledged fact present exactly once by its id (or archived when forgotten), every
  hand-typed line exactly once;
- every entry a merge kept both ways (``e-….xxxxxx``) listed by `memtree conflicts`.

    python bench/team.py --rounds 30 --clones 3 --seeds 1 2 3

Prints one JSON line per seed and exits 1 when a check fails. The merge driver runs as git runs
it (a subprocess per merged file); memtree's verbs run in process through the Python API.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import string
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from memtree import MemTree
from memtree.errors import MemtreeError
from memtree.notes import entries
from memtree.write import markers
from memtree.write.check import find_problems


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run git; AssertionError with its output when it fails and ``check``."""
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} in {cwd.name}: {done.stderr}{done.stdout}")
    return done


def isolated_git(work: Path) -> None:
    """Point git at a config of its own (user, default branch), away from the person's."""
    config = work / "gitconfig"
    config.write_text("[user]\n\tname = team\n\temail = team@example.com\n[init]\n\tdefaultBranch = main\n")
    os.environ["GIT_CONFIG_GLOBAL"] = str(config)
    os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
    os.environ["MEMTREE_NO_DAEMON"] = "1"


def words(rng: random.Random, n: int) -> str:
    """``n`` made-up words: facts that share no words, so dedup never joins two of them."""
    return " ".join("".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(5, 9))) for _ in range(n))


@dataclass
class Fact:
    """An add memtree acknowledged, and what happened to it since."""

    id: str
    text: str
    forgotten: bool = False
    updated: bool = False


@dataclass
class Team:
    """The clones and what they were told was written."""

    clones: list[Path]
    facts: dict[str, Fact] = field(default_factory=dict)
    typed: list[str] = field(default_factory=list)
    actions: dict[str, int] = field(default_factory=dict)


def setup(work: Path, n: int) -> Team:
    """A bare repository and ``n`` clones: the first runs `memtree init`, the others `memtree git setup`."""
    git(work, "init", "-q", "--bare", "remote.git")
    clones = []
    for i in range(n):
        clone = work / f"clone{i}"
        git(work, "clone", "-q", "remote.git", clone.name)
        if i == 0:
            run = subprocess.run([sys.executable, "-m", "memtree", "init", str(clone)], capture_output=True, text=True)
            assert run.returncode == 0, run.stderr
            git(clone, "add", "-A")
            git(clone, "commit", "-qm", "memory")
            git(clone, "push", "-q", "origin", "main")
        else:
            argv = [sys.executable, "-m", "memtree", "git", "setup"]
            run = subprocess.run(argv, cwd=clone, capture_output=True, text=True)
            assert run.returncode == 0, run.stderr
        clones.append(clone)
    return Team(clones)


def _count(team: Team, what: str) -> None:
    team.actions[what] = team.actions.get(what, 0) + 1


def act(team: Team, rng: random.Random, clone: Path, mt: MemTree, now: datetime) -> None:
    """One random memory change in ``clone``."""
    what = rng.choices(["shared", "new", "log", "update", "forget", "hand"], [4, 2, 3, 2, 1, 1])[0]
    mine = [f for f in team.facts.values() if not f.forgotten and _has(clone, f.id)]
    try:
        if what in ("shared", "new"):
            text = words(rng, 6)
            to = "bank/shared.md" if what == "shared" else f"bank/topic-{words(rng, 1)}.md"
            decision = mt.add(text, to=to, now=now)
            entry_id = getattr(decision, "entry_id", None)
            assert entry_id, f"add was not written: {decision}"
            team.facts[entry_id] = Fact(entry_id, text)
        elif what == "log":
            mt.log(words(rng, 5), now=now)
        elif what == "update" and mine:
            fact = rng.choice(mine[-3:])  # the newest: two clones often change the same one in a round
            mt.update(fact.id, words(rng, 6), now=now)
            fact.updated = True
        elif what == "forget" and mine:
            fact = rng.choice(mine)
            mt.forget(fact.id, "team bench", now=now)
            fact.forgotten = True
        elif what == "hand":
            line = f"- typed by hand {words(rng, 4)}"
            note = clone / "bank/shared.md"
            if not note.is_file():
                return
            with open(note, "a", encoding="utf-8") as f:
                f.write(line + "\n")
            team.typed.append(line)
        else:
            return
    except MemtreeError as exc:
        # an entry another clone has just changed or forgotten: memtree says so, nothing is written
        _count(team, f"{what} refused ({str(exc)[:40]})")
        return
    _count(team, what)


def _has(clone: Path, entry_id: str) -> bool:
    """Whether the entry is live in this clone's bank (cheap: its id in a note)."""
    return any(entry_id in note.read_text(encoding="utf-8") for note in (clone / "bank").glob("*.md"))


def share(team: Team, rng: random.Random, clone: Path, mt: MemTree) -> None:
    """`memtree sync` most rounds; a plain commit, pull and push the others."""
    if rng.random() < 0.6:
        rebase = rng.random() < 0.5
        done = mt.sync(rebase=rebase)
        assert done.outcome in ("ok", "local"), f"{clone.name}: sync {done.outcome}: {done.message}"
        _count(team, "sync --rebase" if rebase else "sync --merge")
        return
    git(clone, "add", "-A")
    if git(clone, "diff", "--cached", "--quiet", check=False).returncode != 0:
        git(clone, "commit", "-qm", "by hand")
    how = rng.choice(["--rebase", "--no-rebase"])
    for _ in range(3):
        pulled = git(clone, "pull", "-q", how, "--no-edit", check=False)
        assert pulled.returncode == 0, f"{clone.name}: git pull {how} stopped: {pulled.stderr}{pulled.stdout}"
        if git(clone, "push", "-q", check=False).returncode == 0:
            _count(team, f"git pull {how}")
            return
    raise AssertionError(f"{clone.name}: push kept failing")


def settle(team: Team, mts: list[MemTree]) -> None:
    """Every clone syncs twice in turn, so the last change reaches all."""
    for _ in range(2):
        for clone, mt in zip(team.clones, mts, strict=True):
            done = mt.sync()
            assert done.outcome == "ok", f"{clone.name}: {done.message}"


def memory_files(root: Path) -> dict[str, bytes]:
    """Every tracked memory file of a clone, by path."""
    paths = [*root.glob("*.json"), *(p for t in ("bank", "memory", "recall") for p in root.glob(f"{t}/**/*.md"))]
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(paths)}


def verify(team: Team, mts: list[MemTree]) -> list[str]:
    """The end checks; the failures, each one line."""
    failed: list[str] = []
    first = memory_files(team.clones[0])
    for clone in team.clones[1:]:
        other = memory_files(clone)
        if other != first:
            differ = sorted(k for k in set(first) | set(other) if first.get(k) != other.get(k))
            failed.append(f"{clone.name} differs from clone0 in {', '.join(differ[:5])}")
    root, mt = team.clones[0], mts[0]
    marked = markers.find(root)
    if marked:
        failed.append(f"conflict markers in {', '.join(m.path for m in marked)}")
    problems = find_problems(root, mt.settings)
    if problems:
        failed.append("check: " + "; ".join(f"{p.path}: {p.kind}: {p.detail}" for p in problems[:3]))
    live: dict[str, int] = {}
    archived = ""
    clashed: list[str] = []
    for note in sorted((root / "bank").rglob("*.md")):
        text = note.read_text(encoding="utf-8")
        if "_archive" in note.parts:
            archived += text
            continue
        for e in entries.parse_entries(text):
            if e.meta.id:
                live[e.meta.id] = live.get(e.meta.id, 0) + 1
                if e.meta.extra.get("clash"):
                    clashed.append(e.meta.extra["clash"])
    for fact in team.facts.values():
        n = live.get(fact.id, 0)
        if fact.forgotten and not fact.updated and (n != 0 or fact.id not in archived):
            failed.append(f"forgotten {fact.id}: {n} live, {'in' if fact.id in archived else 'not in'} the archive")
        elif not fact.forgotten and n != 1:
            failed.append(f"fact {fact.id} is live {n} times")
        elif fact.forgotten and fact.updated and n > 1:
            failed.append(f"fact {fact.id} (forgotten and updated) is live {n} times")
    shared = (root / "bank/shared.md").read_text(encoding="utf-8") if (root / "bank/shared.md").is_file() else ""
    for line in team.typed:
        if shared.count(line) != 1:
            failed.append(f"hand-typed line {line!r} is there {shared.count(line)} times")
    listed = {c.id for c in mt.conflicts()}
    missing = [c for c in clashed if c not in listed]
    if missing:
        failed.append(f"clashes not listed by memtree conflicts: {', '.join(missing[:3])}")
    return failed


def run(seed: int, rounds: int, n: int, work: Path) -> dict[str, object]:
    """One seeded run in ``work``: its numbers and its failures."""
    isolated_git(work)
    rng = random.Random(seed)
    team = setup(work, n)
    mts = [MemTree(c) for c in team.clones]
    start = time.perf_counter()
    now = datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)
    for r in range(rounds):
        # every clone changes its memory before any shares: their changes meet in the merges
        for i in rng.sample(range(n), n):
            for _ in range(rng.randint(1, 3)):
                act(team, rng, team.clones[i], mts[i], now + timedelta(minutes=r))
        for i in rng.sample(range(n), n):
            share(team, rng, team.clones[i], mts[i])
    settle(team, mts)
    failed = verify(team, mts)
    return {
        "seed": seed,
        "rounds": rounds,
        "clones": n,
        "facts": len(team.facts),
        "clashes": sum(1 for c in mts[0].conflicts() if c.id.startswith("c-") and len(c.id) == 14),
        "actions": dict(sorted(team.actions.items())),
        "seconds": round(time.perf_counter() - start, 1),
        "failed": failed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--clones", type=int, default=3)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--workdir", type=Path, default=None, help="Keep the clones here (default: a temp folder).")
    args = parser.parse_args()
    bad = False
    for seed in args.seeds:
        if args.workdir is not None:
            work = args.workdir / f"seed{seed}"
            work.mkdir(parents=True, exist_ok=False)
            result = run(seed, args.rounds, args.clones, work)
        else:
            with tempfile.TemporaryDirectory(prefix="memtree-team-") as tmp:
                result = run(seed, args.rounds, args.clones, Path(tmp))
        print(json.dumps(result), flush=True)
        bad = bad or bool(result["failed"])
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
