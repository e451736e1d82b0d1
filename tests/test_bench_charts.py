"""bench/charts.py: the benchmark page's charts, drawn from the bench scripts' results files."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import load_bench

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
SHARED = REPO.parent / "shared" / "bench"
DIGEST = re.compile(r"inputs digest ([0-9a-f]{16})")
DRAWN_WITH = re.compile(r"matplotlib ([0-9][^ ;<]*)")


charts = load_bench("charts")


def _run(**figures: object) -> dict:
    """A results file as the scripts write it (benchlib.ResultsRun), around ``figures``."""
    return {
        "script": "bench/test.py",
        "command": "python bench/test.py",
        "started": "2026-01-02T03:04:05Z",
        "finished": "2026-01-02T03:05:05Z",
        "commit": "abc1234",
        "machine": {"cpus": 2, "python": "3.11.0", "system": "Linux"},
        "load": {"before": [1.5, 1.0, 0.5], "after": [2.5, 1.2, 0.6]},
        "figures": figures,
    }


def _fixture(results: Path) -> None:
    """Small results files, one per chart input, with figures no real run gave (so they show up)."""
    results.mkdir()
    datasets = [
        {"dataset": "korquad", "semantic": False, "hit@5": 0.987, "file_hit@5": 0.991, "unanswerable_empty": 0.611},
        {"dataset": "locomo", "semantic": False, "hit@5": 0.654, "file_hit@5": 0.876, "unanswerable_empty": 0.051},
    ]
    mt = {"engine": "memtree", "build_s": 0.5, "cli_index_s": 0.7, "ms": {"mean": 0.9}, "cold_cli_ms": 150.0}
    bm25s = {"engine": "bm25s", "build_s": 0.3}
    sizes = [{"chunks": n, "engines": [{**mt, "refresh_ms": n / 100, "told_ms": 5.0}, bm25s]} for n in (1000, 10000)]
    timing = {"best_ms": 20.0, "median_ms": 40.0, "n": 3}
    trees = [{"tree": "serve-korquad", "bare": timing, "in_process": {**timing, "median_ms": 143.0},
              "daemon": {**timing, "median_ms": 77.0}, "load": [3.0, 4.0]}]  # fmt: skip
    peers = {"source_short": "somewhere", "engines": [
        {"label": "grep, lines", "kind": "baseline", "korquad": {"hit@5": 0.888, "unanswerable_empty": 0.03}},
        {"label": "a published tool", "kind": "published", "locomo": {"file_hit@5": 0.823}},
    ]}  # fmt: skip
    for name, data in (
        ("quality.json", _run(datasets=datasets)),
        ("peers.json", peers),
        ("scale.json", _run(sizes=sizes)),
        ("serve.json", _run(trees=trees, semantic=None)),
    ):
        (results / name).write_text(json.dumps(data), encoding="utf-8")


def test_without_matplotlib_it_says_how_to_install_it_and_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib → ImportError
    with pytest.raises(SystemExit) as exit_:
        charts.main(["--results", str(tmp_path), "--out", str(tmp_path)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install -e '.[bench]'" in err
    assert not list(tmp_path.iterdir())


def test_the_committed_charts_are_drawn_from_the_committed_results() -> None:
    """Each SVG names the digest of its results files and of charts.py: a changed figure or script needs a redraw."""
    for chart in charts.CHARTS:
        svg = REPO / "docs" / "img" / chart.file
        assert svg.is_file(), f"{svg} missing: python bench/charts.py"
        found = DIGEST.search(svg.read_text(encoding="utf-8"))
        assert found, f"{svg} names no inputs digest: python bench/charts.py"
        assert found.group(1) == charts.inputs_digest(charts.RESULTS, chart), (
            f"{svg} is stale against bench/results/{', '.join(chart.inputs)}: python bench/charts.py"
        )


def test_a_redraw_of_the_committed_results_changes_no_byte(tmp_path: Path) -> None:
    """With the matplotlib that drew them, the committed SVGs are exactly what charts.py draws now."""
    matplotlib = pytest.importorskip("matplotlib", reason="drawing needs the bench extra (matplotlib)")
    said = charts.draw_all(charts.RESULTS, tmp_path)
    assert all("drawn from" in line for line in said), said
    for chart in charts.CHARTS:
        committed = (REPO / "docs" / "img" / chart.file).read_text(encoding="utf-8")
        version = DRAWN_WITH.search(committed)
        if version is None or version.group(1) != matplotlib.__version__:
            pytest.skip(f"{chart.file} was drawn with another matplotlib than {matplotlib.__version__}")
        assert (tmp_path / chart.file).read_text(encoding="utf-8") == committed, chart.file


def test_the_charts_are_drawn_from_a_small_fixture_and_again_byte_for_byte(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="drawing needs the bench extra (matplotlib)")
    results = tmp_path / "results"
    _fixture(results)
    first, second = tmp_path / "first", tmp_path / "second"
    said = charts.draw_all(results, first)
    assert said == [f"{c.file}: drawn from {', '.join(c.inputs)}" for c in charts.CHARTS]
    charts.draw_all(results, second)
    for chart in charts.CHARTS:
        svg = (first / chart.file).read_text(encoding="utf-8")
        assert svg == (second / chart.file).read_text(encoding="utf-8"), f"{chart.file} is not deterministic"
        assert DIGEST.search(svg).group(1) == charts.inputs_digest(results, chart)  # type: ignore[union-attr]
        assert "<text" in svg and 'id="DejaVuSans-' not in svg  # text stays text, not glyph paths
    quality = (first / "bench-quality.svg").read_text(encoding="utf-8")
    for figure in ("0.987", "0.654", "0.876", "0.611", "0.888", "0.823", "grep, lines", "a published tool"):
        assert figure in quality
    assert "2026-01-02" in quality and "abc1234" in quality
    cli = (first / "bench-cli.svg").read_text(encoding="utf-8")
    assert "143 (best 20)" in cli and "77 (best 20)" in cli and "interpreter" in cli
    scale = (first / "bench-scale.svg").read_text(encoding="utf-8")
    assert "memtree index (a process)" in scale and "bm25s" in scale


def test_a_chart_whose_results_are_missing_is_skipped_with_a_line(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="drawing needs the bench extra (matplotlib)")
    results = tmp_path / "results"
    _fixture(results)
    (results / "serve.json").unlink()
    said = charts.draw_all(results, tmp_path / "out")
    assert said[-1] == f"bench-cli.svg: skipped, no serve.json in {results}"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["bench-quality.svg", "bench-scale.svg"]


@pytest.mark.skipif(not (SHARED / "synth.py").is_file(), reason="needs the shared benchmark data (../shared/bench)")
def test_scale_py_writes_a_results_file_the_scale_chart_reads(tmp_path: Path) -> None:
    """A tiny scale.py run: its --results file holds the run's context and the figures charts.py plots."""
    out = tmp_path / "scale.json"
    done = subprocess.run(
        [sys.executable, str(BENCH / "scale.py"), str(SHARED), "--work", str(tmp_path / "work"), "--chunks", "200",
         "--queries", "10", "--engines", "memtree,fts5", "--cold-runs", "1", "--results", str(out)],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:] or done.stdout[-2000:]
    run = json.loads(out.read_text(encoding="utf-8"))
    assert run["script"] == "bench/scale.py" and "--chunks 200" in run["command"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", run["started"])
    assert run["machine"]["cpus"] and len(run["load"]["before"]) == 3
    series = charts.scale_series(run)
    assert [n for n, _ in series["build"]["memtree (in-process)"]] == [200]
    assert set(series["warm"]) == {"memtree", "SQLite FTS5 unicode61"}
    assert [n for n, _ in series["memtree"]["cold CLI search (a process)"]] == [200]


def test_a_results_file_that_is_not_json_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib", reason="drawing needs the bench extra (matplotlib)")
    results = tmp_path / "results"
    _fixture(results)
    (results / "quality.json").write_text('{"figures": ', encoding="utf-8")  # cut short
    with pytest.raises(SystemExit) as exit_:
        charts.main(["--results", str(results), "--out", str(tmp_path / "out")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: cannot draw from {results}: JSONDecodeError")
