"""How long git takes to merge two clones' memory through memtree's merge driver.

A memory of ``--notes`` bank notes (each with a node in tree-index.json) is committed; two
branches then each change ``--changed`` notes (an entry added; half the notes are the same on
both sides, so git calls the driver for them), add a node each to tree-index.json and log a line
to the same day. The run times ``git merge`` of one branch into the other (the driver runs once per
file both sides changed; wall and CPU seconds, since a loaded machine stretches the wall time) and
the pure merge of tree-index.json alone.

    python bench/merge_time.py --notes 5000 --changed 50

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memtree.notes import git as gitmod
from memtree.notes import tree as treemod
from memtree.write import merge


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(args)}: {done.stderr}{done.stdout}")
    return done.stdout


def entry(rng: random.Random, n: int) -> str:
    text = " ".join(f"w{rng.randrange(10**6)}" for _ in range(8))
    return f"- {text} <!-- memtree: id=e-20261201-{rng.getrandbits(64):016x}; created=2026-12-01T09:00:00+00:00 -->"


def build(root: Path, notes: int, rng: random.Random) -> None:
    (root / "bank").mkdir(parents=True)
    (root / "memory").mkdir()
    nodes = []
    for i in range(notes):
        rel = f"bank/n{i:05d}.md"
        body = "\n".join(entry(rng, i) for _ in range(5))
        (root / rel).write_text(f"# note {i}\n\n{body}\n", encoding="utf-8")
        nodes.append(treemod.Node(f"n{i:05d}", rel, (f"k{i}",)))
    (root / treemod.TREE_FILE).write_bytes(treemod.dumps(treemod.Tree(tuple(nodes))))
    (root / "memory/2026-12-01.md").write_text("# 2026-12-01\n\n- 09:00 start\n", encoding="utf-8")
    (root / ".gitattributes").write_text("\n".join(gitmod.ATTRIBUTES) + "\n")


def change(root: Path, picks: list[int], rng: random.Random, side: str) -> None:
    for i in picks:
        path = root / f"bank/n{i:05d}.md"
        path.write_text(path.read_text(encoding="utf-8") + entry(rng, i) + "\n", encoding="utf-8")
    tree = treemod.load(root, check_files=False)
    (root / f"bank/new-{side}.md").write_text(f"# {side}\n\n{entry(rng, 0)}\n", encoding="utf-8")
    extra = treemod.Node(f"new-{side}", f"bank/new-{side}.md", (side,))
    (root / treemod.TREE_FILE).write_bytes(treemod.dumps(treemod.Tree((*tree.nodes, extra))))
    with open(root / "memory/2026-12-01.md", "a", encoding="utf-8") as f:
        f.write(f"- 10:00 {side} was here\n")


def _children_cpu() -> float:
    """CPU seconds (user + system) the finished child processes took: git and the drivers it ran."""
    import resource

    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--notes", type=int, default=5000)
    parser.add_argument("--changed", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="memtree-merge-") as tmp:
        work = Path(tmp)
        config = work / "gitconfig"
        config.write_text("[user]\n\tname = b\n\temail = b@example.com\n[init]\n\tdefaultBranch = main\n")
        os.environ.update(GIT_CONFIG_GLOBAL=str(config), GIT_CONFIG_NOSYSTEM="1")
        root = work / "mem"
        root.mkdir()
        git(root, "init", "-q")
        build(root, args.notes, rng)
        git(root, "config", "merge.memtree.driver", gitmod.driver_command(sys.executable))
        git(root, "add", "-A")
        git(root, "commit", "-qm", "base")
        base_tree = (root / treemod.TREE_FILE).read_text(encoding="utf-8")
        half = args.changed // 2
        both = rng.sample(range(args.notes), half)
        rest = [i for i in range(args.notes) if i not in set(both)]
        only = rng.sample(rest, 2 * (args.changed - half))
        git(root, "checkout", "-qb", "theirs")
        change(root, both + only[: args.changed - half], rng, "theirs")
        git(root, "commit", "-qam", "theirs")
        git(root, "add", "-A")
        git(root, "commit", "-qm", "theirs new", "--allow-empty")
        theirs_tree = (root / treemod.TREE_FILE).read_text(encoding="utf-8")
        git(root, "checkout", "-q", "main")
        change(root, both + only[args.changed - half :], rng, "ours")
        git(root, "add", "-A")
        git(root, "commit", "-qm", "ours")
        ours_tree = (root / treemod.TREE_FILE).read_text(encoding="utf-8")
        start, cpu = time.perf_counter(), _children_cpu()
        git(root, "merge", "-q", "--no-edit", "theirs")
        merged_s, merged_cpu = time.perf_counter() - start, _children_cpu() - cpu
        marked = subprocess.run(["git", "grep", "-l", "^<<<<<<< "], cwd=root, capture_output=True, text=True).stdout
        treemod.load(root)  # the merged tree is valid
        start = time.perf_counter()
        merge.merge_tree(base_tree, ours_tree, theirs_tree)
        tree_s = time.perf_counter() - start
        print(
            json.dumps(
                {
                    "notes": args.notes,
                    "changed_each_side": args.changed,
                    "changed_both_sides": half,
                    "git_merge_s": round(merged_s, 2),
                    "git_merge_cpu_s": round(merged_cpu, 2),
                    "driver_runs": half + 2,
                    "load_average": round(os.getloadavg()[0], 1),
                    "tree_merge_s": round(tree_s, 3),
                    "files_with_markers": len(marked.split()),
                }
            )
        )


if __name__ == "__main__":
    main()
