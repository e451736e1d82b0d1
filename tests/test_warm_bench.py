"""bench/warm.py --instructions: the run callgrind counts, and what it refuses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

WARM = Path(__file__).resolve().parent.parent / "bench" / "warm.py"


def _tree(root: Path) -> Path:
    queries = ["크론 스케줄은 언제 도나요?", "가치관이 뭐야?", "안녕하세요! 배포할 때 롤백은 어떻게 하나요?"]
    lines = [json.dumps({"id": f"q{i}", "query": q}, ensure_ascii=False) for i, q in enumerate(queries)]
    (root / "queries.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def _warm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(WARM), *args], capture_output=True, text=True, check=False, timeout=120)


def test_the_counted_run_searches_a_warm_pass_then_the_sample(sample_root: Path) -> None:
    done = _warm(str(_tree(sample_root)), "--instructions", "1:2", "--counted")
    assert done.returncode == 0, done.stderr
    assert "sample: 3 queries warm, then 2 counted" in done.stderr


def test_a_sample_past_the_last_query_or_a_malformed_one_is_refused(sample_root: Path) -> None:
    tree = _tree(sample_root)
    past = _warm(str(tree), "--instructions", "2:5", "--counted")
    assert past.returncode != 0 and "3 queries, no 5 from the 2th" in past.stderr
    for spec in ("300", "a:b", "10:0"):
        bad = _warm(str(tree), "--instructions", spec)
        assert bad.returncode != 0 and "--instructions wants LO:N" in bad.stderr


def test_a_search_setting_is_run_with_and_a_bad_one_refused(sample_root: Path, tmp_path: Path) -> None:
    tree = _tree(sample_root)
    factors = {}
    for setting in ("adjacency_weight=0.5", "adjacency_weight=0"):
        out = tmp_path / f"{setting}.json"
        done = _warm(str(tree), "--passes", "1", "--search", setting, "--hits-out", str(out))
        assert done.returncode == 0, done.stderr
        hits = [h for q in json.loads(out.read_text(encoding="utf-8"))[tree.name].values() for h in q.get("hits", [])]
        factors[setting] = {h["signals"]["adjacency"] for h in hits}
    assert factors["adjacency_weight=0"] == {1.0}  # the factor is 1 − w + w × adjacency: off, always 1
    assert min(factors["adjacency_weight=0.5"]) < 1.0  # on, some hit holds its question's words apart
    unknown = _warm(str(tree), "--passes", "1", "--search", "adjacency=0")
    assert unknown.returncode != 0 and "--search adjacency: no such search setting" in unknown.stderr
    malformed = _warm(str(tree), "--search", "adjacency_weight")
    assert malformed.returncode != 0 and "--search wants KEY=VALUE" in malformed.stderr
