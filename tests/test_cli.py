"""memtree.cli.app through typer's CliRunner: output, JSON, exit codes, one-line errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import assert_one_line_error, node, tree_json
from typer.testing import CliRunner, Result

from memtree.cli.app import app


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
    assert [out[i]["line"] for i in (1, 3, 4, 6, 7)] == [2, 4, 5, 7, 8]
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
    assert doc["tiers"]["bank"]["file_count"] == 7 and doc["tiers"]["memory"]["file_count"] == 2
    assert doc["tiers"]["recall"] == {"file_count": 0, "bytes": 0, "node_count": 0, "chunk_count": 0}
    assert doc["oversized"] == [{"path": "bank/big.md", "bytes": big.stat().st_size}]
    assert doc["node_count"] == 9 and doc["max_bytes"] == 10_240


def test_index_json_reports_nodes_added(sample_root: Path) -> None:
    (sample_root / "bank/zoo.md").write_text("# 동물원\n\n얼룩말과 기린\n", encoding="utf-8")
    result = run("index", "--root", str(sample_root), "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["nodes_added"] == ["zoo"] and doc["nodes_dropped"] == []
    assert doc["file_count"] == 9 and "bank/zoo.md" in doc["added"]
    again = json.loads(run("index", "--root", str(sample_root), "--json").stdout)
    assert again["nodes_added"] == [] and again["added"] == []


def test_init_scaffolds_and_is_idempotent(tmp_path: Path) -> None:
    first = run("init", str(tmp_path / "mem"), "--json")
    assert first.exit_code == 0, first.stderr
    assert set(json.loads(first.stdout)["created"]) == {
        "bank/",
        "memory/",
        "recall/",
        "tree-index.json",
        ".gitignore",
        ".gitattributes",
    }
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


@pytest.mark.parametrize("case", [case for case in BAD_ROOTS if case != "missing file"])
def test_search_answers_from_the_notes_while_the_tree_index_is_broken(
    make_root: Callable[..., Path], case: str
) -> None:
    # Why: an agent that has just pulled a tree-index.json with conflict markers must not go blind (issue 29)
    raw, needles = BAD_ROOTS[case]
    root = make_root(NOTE)
    (root / "tree-index.json").write_text(raw, encoding="utf-8")
    result = run(*COMMANDS["search"], "--root", str(root))
    assert result.exit_code == 0, result.stderr
    assert "bank/a.md" in result.stdout
    assert result.stderr.count("warning") == 1 and all(n in result.stderr for n in needles), result.stderr


@pytest.mark.parametrize(
    ("case", "command"), [(case, cmd) for case in ("invalid json", "duplicate ids") for cmd in ("get", "status")]
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


def test_init_says_it_added_to_a_gitignore_it_did_not_create(tmp_path: Path) -> None:
    (tmp_path / "mem").mkdir()
    (tmp_path / "mem" / ".gitignore").write_text("*.pyc\n", encoding="utf-8")
    said = run("init", str(tmp_path / "mem"))
    assert said.exit_code == 0 and "; added memtree's lines to .gitignore" in said.stdout
    assert "added memtree's lines to .gitignore" in said.stdout and "created .gitignore" not in said.stdout
    doc = json.loads(run("init", str(tmp_path / "again"), "--json").stdout)
    assert ".gitignore" in doc["created"] and doc["updated"] == []


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


# --- output hygiene and flags (issue 12) -----------------------------------------------------------

ENTRY_ID = "e-20260301-aaaa1111"
OPS_NOTE = f"# 운영\n\n- Redis 커넥션 풀은 50개로 올렸다 <!-- memtree: id={ENTRY_ID}; kind=fact -->\n"
HOT = f"# recall\n\n- Redis 커넥션 풀은 50개 <!-- memtree: from=bank/ops.md:3-3; sha=ab12; key={ENTRY_ID} -->\n"


@pytest.mark.parametrize("tier", ["bank", "recall"])
def test_hit_text_has_no_metadata_comments_and_ids_name_the_entries(make_root: Callable[..., Path], tier: str) -> None:
    root = make_root({"bank/ops.md": OPS_NOTE, "recall/hot.md": HOT}, [node("ops", "bank/ops.md")])
    for batch in (False, True):
        args = ["search", "--batch", "--budget", "400"] if batch else ["search", "Redis 커넥션 풀", "--budget", "400"]
        stdin = json.dumps({"id": 1, "query": "Redis 커넥션 풀"}, ensure_ascii=False) if batch else None
        result = run(*args, "--tier", tier, "--json", "--root", str(root), stdin=stdin)
        assert result.exit_code == 0, result.stderr
        hit = json.loads(result.stdout.splitlines()[0] if batch else result.stdout)["hits"][0]
        assert hit["tier"] == tier and "Redis 커넥션 풀은 50개" in hit["text"]
        assert "<!--" not in hit["text"] and hit["ids"] == [ENTRY_ID]
    human = run("search", "Redis 커넥션 풀", "--budget", "400", "--tier", tier, "--root", str(root))
    assert "Redis 커넥션 풀은 50개" in human.stdout and "<!--" not in human.stdout


def test_a_hand_written_hit_has_no_ids(sample_root: Path) -> None:
    hit = json.loads(run("search", "크론 스케줄", "--root", str(sample_root), "--json").stdout)["hits"][0]
    assert hit["ids"] == []


def test_a_huge_query_is_quoted_by_a_few_words_and_a_count(make_root: Callable[..., Path]) -> None:
    root = make_root(NOTE)
    unknown = " ".join("xq" + "".join(chr(97 + (i // 26**p) % 26) for p in range(3)) for i in range(3000))
    rejected = run("search", unknown, "--root", str(root))
    assert rejected.exit_code == 1 and len(rejected.stderr.splitlines()) == 1
    assert "(xqaaa, xqbaa, xqcaa, xqdaa, xqeaa, xqfaa, xqgaa, xqhaa … and " in rejected.stderr  # how many: capped
    assert len(rejected.stderr) < 400
    no_terms = assert_one_line_error(run("search", " ".join(["뭐야?"] * 20_000), "--root", str(root)))
    assert "'뭐야? 뭐야? 뭐야? 뭐야? 뭐야? 뭐야? 뭐야? 뭐야? …' (20,000 words)" in no_terms and len(no_terms) < 400


def test_help_keeps_square_brackets() -> None:
    assert "'memtree[embed]'" in run("index", "--help").stdout


def test_shell_completion_is_offered(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "--install-completion" in run("--help").stdout
    monkeypatch.setenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", "1")
    script = run("--show-completion", "bash")
    assert script.exit_code == 0 and "complete" in script.stdout and "_COMPLETE" in script.stdout


def test_init_takes_root_like_every_command(tmp_path: Path) -> None:
    made = run("init", "--root", str(tmp_path / "메모리"), "--json")
    assert made.exit_code == 0, made.stderr
    assert "tree-index.json" in json.loads(made.stdout)["created"] and (tmp_path / "메모리/bank").is_dir()
    same = run("init", str(tmp_path / "메모리"), "--root", str(tmp_path / "메모리"), "--json")
    assert same.exit_code == 0 and json.loads(same.stdout)["created"] == []
    assert_one_line_error(run("init", str(tmp_path / "a"), "--root", str(tmp_path / "b")), "not both")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_export_accepts_json(sample_root: Path) -> None:
    plain = run("export", "--bank", "identity", "--root", str(sample_root))
    flagged = run("export", "--bank", "identity", "--root", str(sample_root), "--json")
    assert flagged.exit_code == 0, flagged.stderr
    assert flagged.stdout == plain.stdout and json.loads(flagged.stdout)


def test_group_options_count_for_the_subcommand(sample_root: Path) -> None:
    synced = run("recall", "--json", "--root", str(sample_root), "sync", "--dry-run")
    assert synced.exit_code == 0, synced.stderr
    assert json.loads(synced.stdout)["dry_run"] is True


def test_a_query_with_bytes_no_utf8_can_hold_is_searched_and_printed(sample_root: Path) -> None:
    # Why: a shell hands Python undecodable argv bytes as lone surrogates; JSON output cannot carry them
    result = run("search", "크론 스케줄 \udced\udca0\udc80", "--root", str(sample_root), "--json")
    doc = json.loads(result.stdout)
    assert result.exit_code == 0 and doc["query"] == "크론 스케줄 \ufffd\ufffd\ufffd" and doc["hits"]


def test_an_entry_with_bytes_no_utf8_can_hold_is_written_with_replacement_marks(sample_root: Path) -> None:
    result = run("add", "야간 배치 \udced\udca0\udc80 점검 절차", "--root", str(sample_root), "--json")
    doc = json.loads(result.stdout)
    assert result.exit_code == 0, result.output
    assert "야간 배치 \ufffd\ufffd\ufffd 점검 절차" in (sample_root / doc["path"]).read_text(encoding="utf-8")
