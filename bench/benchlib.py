"""Helpers shared by the memtree benchmark scripts (quality.py, scale.py, serve.py, ...).

Nothing here is a benchmark by itself: locating the shared benchmark data and the memtree
executable, running and timing subprocesses, summarising timings, turning memtree hits into
the score.py protocol, printing Markdown tables, and writing a run's results file (the JSON that
bench/charts.py draws from).
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# Why: a benchmark measures the tree it names; the runner's own user root ($MEMTREE_HOME, else
# ~/.local/share/memtree) must not be searched beside it, here or in the processes it starts
os.environ["MEMTREE_HOME"] = ""
SEARCH_OK = (0, 1)  # `memtree search` exits 1 when nothing matches confidently
DEFAULT_SHARED = REPO.parent / "shared" / "bench"
DEFAULT_WORK = Path(tempfile.gettempdir()) / "memtree-bench"
MAX_SPAN = 30  # score.py's default: a chunk-level hit may span at most this many lines


def add_common_args(ap: argparse.ArgumentParser) -> None:
    """SHARED_BENCH (positional, optional) and --work, as both scripts take them."""
    ap.add_argument(
        "shared",
        nargs="?",
        type=Path,
        default=DEFAULT_SHARED,
        metavar="SHARED_BENCH",
        help=f"the shared benchmark folder (default: {DEFAULT_SHARED})",
    )
    ap.add_argument(
        "--work", type=Path, default=DEFAULT_WORK, help=f"scratch folder for trees (default: {DEFAULT_WORK})"
    )


def fail(message: str) -> None:
    """Exit with one clear line on stderr."""
    sys.exit(f"error: {message}")


def check_shared(shared: Path, needed: Iterable[str]) -> Path:
    """Return SHARED_BENCH resolved, or exit with one line if it or a file in it is missing."""
    shared = shared.expanduser().resolve()
    if not shared.is_dir():
        fail(f"benchmark data directory not found: {shared} (pass SHARED_BENCH, e.g. ../shared/bench)")
    for name in needed:
        if not (shared / name).exists():
            fail(f"benchmark data incomplete: {shared / name} is missing")
    return shared


def memtree_exe() -> str:
    """The memtree command of the running interpreter's environment (else the one on PATH)."""
    beside = Path(sys.executable).parent / "memtree"
    if beside.exists():
        return str(beside)
    found = shutil.which("memtree")
    if not found:
        fail(f"memtree command not found beside {sys.executable} or on PATH (pip install -e {REPO})")
    return str(found)


def import_memtree() -> Any:
    """The MemTree class, or exit with one line if the package is not importable."""
    try:
        from memtree import MemTree
    except Exception as exc:  # ImportError, or a broken package mid-development
        fail(f"cannot import memtree ({type(exc).__name__}: {exc}); pip install -e {REPO}")
    return MemTree


def supports_kwarg(func: Any, name: str) -> bool:
    """Whether callable func accepts keyword argument name (or **kwargs)."""
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def load_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def run(cmd: Sequence[str], *, stdin: str | None = None, ok: Sequence[int] = (0,)) -> tuple[float, str]:
    """Run cmd, return (wall seconds, stdout). Exits with the tail of stderr unless its code is in ok."""
    t0 = time.perf_counter()
    proc = subprocess.run(list(cmd), input=stdin, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode not in ok:
        tail = proc.stderr.strip().splitlines()[-1:] or ["(no stderr)"]
        fail(f"command failed ({proc.returncode}): {' '.join(cmd)}: {tail[0]}")
    return wall, proc.stdout


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, q in [0, 100]."""
    if not values:
        return float("nan")
    s = sorted(values)
    pos = (len(s) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def summarize_ms(seconds: Sequence[float]) -> dict[str, float]:
    """mean / p50 / p95 in milliseconds of a list of durations in seconds."""
    ms = [1000 * s for s in seconds]
    if not ms:
        return {"n": 0, "mean": float("nan"), "p50": float("nan"), "p95": float("nan")}
    return {
        "n": len(ms),
        "mean": statistics.fmean(ms),
        "p50": percentile(ms, 50),
        "p95": percentile(ms, 95),
    }


def rel_path(path: Any, root: Path) -> str:
    """A hit's path as score.py wants it: relative to root, POSIX separators."""
    p = Path(str(path))
    if p.is_absolute():
        with contextlib.suppress(ValueError):
            p = p.resolve().relative_to(root.resolve())
    return p.as_posix()


def hit_to_dict(hit: Any, root: Path) -> dict:
    """A memtree Hit as a score.py hit: {"path", "lines": [start, end]}."""
    out: dict[str, Any] = {"path": rel_path(hit.path, root)}
    lines = getattr(hit, "lines", None)
    if lines:
        out["lines"] = [int(lines[0]), int(lines[1])]
    return out


def first_rank(
    hits: Sequence[dict], targets: Sequence[dict], max_span: int = MAX_SPAN, chunk: bool = True
) -> int | None:
    """1-based rank of the first hit on any target, by score.py's rules.

    Chunk level: same path, overlapping lines, span <= max_span lines. File level: same path.
    """
    for rank, hit in enumerate(hits, 1):
        for t in targets:
            if hit.get("path") != t["path"]:
                continue
            if not chunk:
                return rank
            lines = hit.get("lines")
            if not lines:
                continue
            s, e = int(lines[0]), int(lines[1])
            if e - s + 1 <= max_span and s <= t["lines"][1] and e >= t["lines"][0]:
                return rank
    return None


def fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        if value != value:  # NaN
            return "—"
        return f"{value:.{digits}f}"
    return str(value)


def md_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A GitHub Markdown table; cells are str() of the values."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def progress(message: str) -> None:
    print(f"[bench] {message}", flush=True)


# ---------------------------------------------------------------- results files

RESULTS_DIGITS = 4  # figures are rounded to this many decimals: enough for hit@5 and ms, small diffs


def add_results_arg(ap: argparse.ArgumentParser) -> None:
    """--results FILE.json, as every script that charts.py draws from takes it."""
    ap.add_argument(
        "--results",
        type=Path,
        metavar="FILE.json",
        help="write what was measured, with the command line, date, commit and machine load, to FILE.json "
        "(bench/results/*.json are the files bench/charts.py draws from)",
    )


def load_now() -> list[float]:
    """The 1-, 5- and 15-minute load averages, rounded (empty where the system does not say)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def commit(script: str) -> str | None:
    """HEAD (short), with ``+dirty`` when memtree/, benchlib.py or the script differ from it; None outside git."""
    code = ["memtree", "bench/benchlib.py", f"bench/{script}"]  # what a run executes (not charts.py, the docs)
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no", "--", *code],
            capture_output=True,
            text=True,
        )
    except OSError:
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def rounded(value: Any, digits: int = RESULTS_DIGITS) -> Any:
    """value with every float rounded (NaN as None, which JSON can hold), recursively."""
    if isinstance(value, float):
        return None if value != value else round(value, digits)
    if isinstance(value, dict):
        return {str(k): rounded(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [rounded(v, digits) for v in value]
    return value


class ResultsRun:
    """One benchmark run's results file: the run's context taken at the start, the figures at the end.

    The file holds ``script``, ``command`` (as typed, from the repository root), ``started`` and
    ``finished`` (UTC), ``commit``, ``machine`` (cores, Python, system), ``load`` (the load averages
    before and after) and ``figures`` (the script's own shape; floats rounded to RESULTS_DIGITS).
    """

    def __init__(self, path: Path | None, script: str) -> None:
        self.path = path
        self.script = script
        self.started = _utc_now()
        self.commit = commit(script)  # at the start: the code that ran, whatever is edited meanwhile
        self.load_before = load_now()

    def write(self, figures: Any) -> None:
        """Write the file (nothing when no --results was given)."""
        if self.path is None:
            return
        data = {
            "script": f"bench/{self.script}",
            "command": shlex.join(["python", f"bench/{self.script}", *sys.argv[1:]]),
            "started": self.started,
            "finished": _utc_now(),
            "commit": self.commit,
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "system": platform.system()},
            "load": {"before": self.load_before, "after": load_now()},
            "figures": rounded(figures),
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        progress(f"wrote {self.path}")


def _utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
