"""memtree.cli through typer's CliRunner: output, JSON, exit codes, one-line errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import assert_one_line_error, node, tree_json
from typer.testing import CliRunner, Result

from memtree.cli import app


def run(*args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(app, list(args), input=stdin, env=env)


# --- search --------------------------------------------------------------------------------------


def test_search_prints_the_matching_node(sample_root: Path) -> None:
    result = run("search", "가치관이 뭐야?", "--root", str(sample_root))
    assert result.exit_code == 0, result.stderr
    assert "identity/values" in result.stdout
    assert "bank/identity/values.md" in result.stdout


def test_search_json_has_hits_with_location_signals_and_text(sample_root: Path) -> None:
    result = run("search", "크론 스케줄", "--root", str(sample_root), "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["hits"] and doc["rejected"] is None
    assert doc["hits"][0]["node"] == "technical/cron-design"
    for hit in doc["hits"]:
        assert {"path", "lines", "node", "score", "signals", "text"} <= set(hit)
        assert {"tree", "bm25", "bm25_norm", "keyword", "coverage"} <= set(hit["signals"])
        start, end = hit["lines"]
        lines = (sample_root / hit["path"]).read_text(encoding="utf-8").split("\n")
        assert hit["text"] == "\n".join(lines[start - 1 : end])


def test_search_explain_prints_the_arithmetic(sample_root: Path) -> None:
    result = run("search", "Reflect 파이프라인 구조", "--root", str(sample_root), "--explain")
    assert result.exit_code == 0, result.stderr
    assert "0.4×" in result.stdout and "0.6×" in result.stdout and "=" in result.stdout
    assert "technical/heartbeat-reflect: keyword 0.4×" in result.stdout
    assert "× decay" in result.stdout and "× recency" in result.stdout and "× scope" in result.stdout


def test_a_rejected_search_exits_1_with_a_reason(sample_root: Path) -> None:
    result = run("search", "양자역학 블랙홀 증명", "--root", str(sample_root))
    assert result.exit_code == 1
    assert result.stderr.startswith("memtree: no confident match") and len(result.stderr.splitlines()) == 1
    as_json = run("search", "양자역학 블랙홀 증명", "--root", str(sample_root), "--json")
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout)["hits"] == [] and json.loads(as_json.stdout)["rejected"]


def test_batch_json_answers_every_line_and_survives_bad_ones(sample_root: Path) -> None:
    lines = [
        json.dumps({"id": "q1", "query": "가치관이 뭐야?"}, ensure_ascii=False),
        "this is not json",
        json.dumps({"id": 7, "query": "Reflect 파이프라인"}),
        json.dumps({"id": "q3", "query": "뭐야?"}, ensure_ascii=False),
        json.dumps(["no", "object"]),
        json.dumps({"id": "q5", "query": "양자역학 블랙홀"}, ensure_ascii=False),
        json.dumps({"id": "q6", "question": "가치관"}, ensure_ascii=False),
        json.dumps({"id": "q7", "query": 42}),
    ]
    result = run("search", "--batch", "--json", "--root", str(sample_root), stdin="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.stderr
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(out) == len(lines)
    assert [o["id"] for o in out] == ["q1", None, 7, "q3", None, "q5", "q6", "q7"]
    assert all("hits" in o for o in out)
    assert out[0]["hits"][0]["path"] == "bank/identity/values.md"
    assert all({"path", "lines"} <= set(h) for o in out for h in o["hits"])
    assert out[2]["hits"][0]["path"] == "bank/technical/heartbeat-reflect.md"
    assert all("error" in out[i] and out[i]["hits"] == [] for i in (1, 3, 4, 6, 7))
    assert "query" in out[6]["error"]
    assert out[5]["hits"] == [] and out[5]["rejected"]


def test_search_without_a_query_is_a_usage_error(sample_root: Path) -> None:
    assert_one_line_error(run("search", "--root", str(sample_root)), "QUERY")


def test_memtree_root_environment_variable_is_used(sample_root: Path) -> None:
    result = run("search", "가치관", env={"MEMTREE_ROOT": str(sample_root)})
    assert result.exit_code == 0, result.stderr
    assert "identity/values" in result.stdout


# --- get, status, index, init --------------------------------------------------------------------


@pytest.mark.parametrize("ref", ["identity/values", "bank/identity/values.md"])
def test_get_prints_the_note(sample_root: Path, ref: str) -> None:
    result = run("get", ref, "--root", str(sample_root))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == (sample_root / "bank/identity/values.md").read_text(encoding="utf-8")


def test_get_of_an_unknown_note_exits_2(sample_root: Path) -> None:
    assert_one_line_error(run("get", "identity/nothing", "--root", str(sample_root)), "identity/nothing")


def test_status_json_counts_tiers_and_oversized_notes(sample_root: Path) -> None:
    big = sample_root / "bank" / "big.md"
    big.write_text("# 큰 노트\n\n" + "가나다라 " * 2100, encoding="utf-8")
    result = run("status", "--root", str(sample_root), "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["tiers"]["bank"]["files"] == 7 and doc["tiers"]["memory"]["files"] == 2
    assert doc["tiers"]["recall"] == {"files": 0, "bytes": 0, "nodes": 0, "chunks": 0}
    assert doc["oversized"] == [{"path": "bank/big.md", "bytes": big.stat().st_size}]
    assert doc["nodes"] == 9 and doc["max_bytes"] == 10_240


def test_index_json_reports_nodes_added(sample_root: Path) -> None:
    (sample_root / "bank/zoo.md").write_text("# 동물원\n\n얼룩말과 기린\n", encoding="utf-8")
    result = run("index", "--root", str(sample_root), "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["nodes_added"] == ["zoo"] and doc["nodes_dropped"] == []
    assert doc["files"] == 9 and "bank/zoo.md" in doc["added"]
    again = json.loads(run("index", "--root", str(sample_root), "--json").stdout)
    assert again["nodes_added"] == [] and again["added"] == []


def test_init_scaffolds_and_is_idempotent(tmp_path: Path) -> None:
    first = run("init", str(tmp_path / "mem"), "--json")
    assert first.exit_code == 0, first.stderr
    assert set(json.loads(first.stdout)["created"]) == {"bank/", "memory/", "recall/", "tree-index.json", ".gitignore"}
    second = run("init", str(tmp_path / "mem"), "--json")
    assert second.exit_code == 0 and json.loads(second.stdout)["created"] == []
    assert ".memtree/" in (tmp_path / "mem" / ".gitignore").read_text(encoding="utf-8")


# --- every bad input: exit 2, one line ------------------------------------------------------------

NOTE = {"bank/a.md": "사과와 배\n"}
BAD_ROOTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "invalid json": ('{"version": 1,\n  "nodes": [}', ("invalid JSON", "line 2", "column")),
    "schema error": (tree_json([node("fruit", "bank/a.md", weight="heavy")]), ("node 'fruit'", "weight")),
    "path outside root": (tree_json([node("fruit", "../a.md")]), ("node 'fruit'", "../a.md")),
    "missing file": (tree_json([node("fruit", "bank/gone.md")]), ("node 'fruit'", "bank/gone.md")),
    "duplicate ids": (tree_json([node("fruit", "bank/a.md"), node("fruit")]), ("duplicate node id 'fruit'",)),
    "parent cycle": (
        tree_json([node("x", parent="y", children=["y"]), node("y", parent="x", children=["x"])]),
        ("parent cycle",),
    ),
}


COMMANDS = {"search": ["search", "사과"], "get": ["get", "fruit"], "status": ["status"]}


@pytest.mark.parametrize(
    ("case", "command"),
    [(case, "search") for case in BAD_ROOTS if case != "missing file"]
    + [(case, cmd) for case in ("invalid json", "duplicate ids") for cmd in ("get", "status")],
)
def test_a_broken_tree_index_is_one_line_and_exit_2(make_root: Callable[..., Path], case: str, command: str) -> None:
    raw, needles = BAD_ROOTS[case]
    root = make_root(NOTE)
    (root / "tree-index.json").write_text(raw, encoding="utf-8")
    assert_one_line_error(run(*COMMANDS[command], "--root", str(root)), *needles)


def test_a_node_whose_note_is_gone_never_stops_search(make_root: Callable[..., Path]) -> None:
    # Why: a note deleted or renamed in an editor; search names it once and goes on (issue 12)
    raw, _ = BAD_ROOTS["missing file"]
    root = make_root(NOTE)
    (root / "tree-index.json").write_text(raw, encoding="utf-8")
    result = run(*COMMANDS["search"], "--root", str(root))
    assert result.exit_code == 0, result.stderr
    assert "bank/gone.md" in result.stderr and "gone" in result.stderr


def test_empty_memory_is_exit_2(tmp_path: Path) -> None:
    run("init", str(tmp_path / "mem"))
    assert_one_line_error(run("search", "가치관", "--root", str(tmp_path / "mem")), "no notes")


def test_a_nonexistent_root_is_exit_2(tmp_path: Path) -> None:
    assert_one_line_error(run("search", "가치관", "--root", str(tmp_path / "nowhere")), "nowhere")
    assert_one_line_error(run("status", "--root", str(tmp_path / "nowhere")), "nowhere")


def test_no_root_found_is_exit_2() -> None:
    assert_one_line_error(run("search", "가치관"), "no memory root found")


def test_a_wrong_config_type_is_exit_2(sample_root: Path) -> None:
    (sample_root / "memtree.yaml").write_text("search:\n  tree_weight: heavy\n", encoding="utf-8")
    assert_one_line_error(run("search", "가치관", "--root", str(sample_root)), "search.tree_weight")


def test_init_on_a_file_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "file.txt").write_text("x", encoding="utf-8")
    assert_one_line_error(run("init", str(tmp_path / "file.txt")), "file.txt")


@pytest.mark.parametrize("args", [["-k", "0"], ["--tier", "bogus"], ["--budget", "0"]])
def test_nonsense_search_options_are_exit_2(sample_root: Path, args: list[str]) -> None:
    assert_one_line_error(run("search", "가치관", "--root", str(sample_root), *args))


# --- help ------------------------------------------------------------------------------------------


def test_every_command_has_help_text() -> None:
    names = [c.name or c.callback.__name__ for c in app.registered_commands if c.callback]
    assert {"init", "index", "search", "get", "status"} <= set(names)
    for name in names:
        result = run(name, "--help")
        assert result.exit_code == 0, name
        assert "Usage:" in result.stdout and len(result.stdout.strip().splitlines()) > 3, name
    top = run("--help")
    assert top.exit_code == 0 and all(name in top.stdout for name in names)


@pytest.mark.parametrize(
    ("args", "needle"),
    [(["search", "--jsn", "사과"], "--json"), (["serch", "사과"], "search"), (["search", "사과", "-k", "x"], "-k")],
)
def test_usage_errors_are_one_line_with_the_hint(make_root: Callable[..., Path], args: list[str], needle: str) -> None:
    import subprocess
    import sys

    root = make_root(NOTE)
    done = subprocess.run(
        [sys.executable, "-m", "memtree", *args, "--root", str(root)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("memtree: ") and needle in lines[0], done.stderr
