"""`memtree check` (the pre-commit hook) and MemTree.check(): oversized notes, tree problems, secrets."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import grown, node, snapshot
from typer.testing import CliRunner, Result

from memtree import MemTree
from memtree.cli.app import app
from memtree.notes import tree as treemod

# Built in code, so that this file holds no literal secret for a scanner (or memtree check) to flag.
GITHUB_TOKEN = "ghp" + "_" + "Zq8Lm2Xv5Rt1Wy7Np4Kc9Hd3Fs6Bj0Ga1Ue"
EMAIL = "park.seoyeon" + "@" + "example.com"


def run(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def check(root: Path, *args: str) -> Result:
    return run("check", "--root", str(root), *args)


def check_json(root: Path, *args: str) -> tuple[int, dict]:
    result = check(root, *args, "--json")
    assert result.exit_code in (0, 1), (result.stdout, result.stderr, result.exception)
    return result.exit_code, json.loads(result.stdout)


def problem_lines(result: Result) -> list[str]:
    return [ln for ln in result.stdout.splitlines() if not ln.startswith("fixed:")]


# --- a clean root --------------------------------------------------------------------------------


def test_the_clean_sample_is_ok(sample_root: Path) -> None:
    result = check(sample_root)
    assert result.exit_code == 0, result.stdout
    assert result.stdout.strip() == "memtree check: ok"
    code, doc = check_json(sample_root)
    assert code == 0 and doc == {"ok": True, "fixed": [], "problems": []}


def test_check_writes_nothing(sample_root: Path) -> None:
    grow(sample_root / "bank/project/rules.md")
    (sample_root / "bank/zoo.md").write_text("# 동물원\n\n얼룩말과 기린\n", encoding="utf-8")
    before = snapshot(sample_root)
    assert check(sample_root).exit_code == 1
    assert MemTree(sample_root).check()
    assert snapshot(sample_root) == before


# --- each problem, then --fix ----------------------------------------------------------------------


def test_an_oversized_bank_note_fails_and_fix_splits_it(sample_root: Path) -> None:
    note = sample_root / "bank/project/rules.md"
    grow(note)
    size = note.stat().st_size
    result = check(sample_root)
    assert result.exit_code == 1
    assert problem_lines(result) == [
        f"bank/project/rules.md: oversized: {size:,} bytes, over the 10,240-byte limit (memtree check --fix)"
    ]
    fixed = check(sample_root, "--fix")
    assert fixed.exit_code == 0, fixed.stdout
    assert any(ln.startswith("fixed: split bank/project/rules.md into ") for ln in fixed.stdout.splitlines())
    assert fixed.stdout.rstrip().endswith("memtree check: ok")
    assert note.stat().st_size <= 10_240
    tree = treemod.load(sample_root)
    assert len(tree.by_id["project/rules"].children) >= 2
    assert check(sample_root).exit_code == 0


def test_an_oversized_note_that_is_one_block_is_not_fixable(sample_root: Path) -> None:
    note = sample_root / "bank/technical/cron-design.md"
    block = "```text\n" + "".join(f"{i:05d} 크론 로그 한 줄: 작업이 끝났다\n" for i in range(400)) + "```\n"
    note.write_text("# 로그 덤프\n\n" + block, encoding="utf-8")
    before = snapshot(sample_root)
    code, doc = check_json(sample_root)
    assert code == 1
    assert [(p["kind"], p["path"], p["fixable"]) for p in doc["problems"]] == [
        ("oversized", "bank/technical/cron-design.md", False)
    ]
    assert "one block" in doc["problems"][0]["detail"]
    human = check(sample_root)
    assert "(memtree check --fix)" not in human.stdout
    fixed = check(sample_root, "--fix")
    assert fixed.exit_code == 1 and "oversized" in fixed.stdout
    assert snapshot(sample_root) == before  # nothing to split, nothing to index: nothing written


def test_a_bank_note_without_a_node_fails_and_fix_adds_the_node(sample_root: Path) -> None:
    (sample_root / "bank/zoo").mkdir()
    (sample_root / "bank/zoo/animals.md").write_text("# 동물원\n\n얼룩말과 기린이 산다.\n", encoding="utf-8")
    result = check(sample_root)
    assert result.exit_code == 1
    assert problem_lines(result) == ["bank/zoo/animals.md: no-node: no node in tree-index.json (memtree check --fix)"]
    code, doc = check_json(sample_root, "--fix")
    assert code == 0 and doc["ok"] is True and doc["problems"] == []
    assert any("zoo/animals" in f and f.startswith("added node") for f in doc["fixed"])
    assert treemod.load(sample_root).by_path["bank/zoo/animals.md"].id == "zoo/animals"


def test_a_dangling_node_fails_and_fix_drops_it(sample_root: Path) -> None:
    (sample_root / "bank/identity/personality.md").unlink()
    result = check(sample_root)
    assert result.exit_code == 1
    lines = problem_lines(result)
    assert len(lines) == 1 and lines[0].startswith("bank/identity/personality.md: dangling: ")
    assert "'identity/personality'" in lines[0]
    fixed = check(sample_root, "--fix")
    assert fixed.exit_code == 0, fixed.stdout
    assert "fixed: dropped node identity/personality (bank/identity/personality.md is gone)" in fixed.stdout
    tree = treemod.load(sample_root)
    assert "identity/personality" not in tree.by_id
    assert "identity/personality" not in tree.by_id["identity"].children


def test_an_empty_category_fails_and_fix_drops_it_unless_a_person_gave_it_keywords(sample_root: Path) -> None:
    raw = json.loads((sample_root / "tree-index.json").read_text(encoding="utf-8"))
    raw["nodes"] += [
        node("trip", keywords=["trip"], children=["trip/2026"]),  # as memtree makes them for a folder
        node("trip/2026", keywords=["2026"], parent="trip"),
        node("travel", keywords=["여행", "travel"]),  # keywords of its own: routing a person set up
    ]
    (sample_root / "tree-index.json").write_text(json.dumps(raw, ensure_ascii=False), encoding="utf-8")
    result = check(sample_root)
    assert result.exit_code == 1
    assert problem_lines(result) == [
        f"tree-index.json: empty-category: category node '{c}' holds no note and no keywords of its own"
        " (memtree check --fix)"
        for c in ("trip", "trip/2026")
    ]
    fixed = check(sample_root, "--fix")
    assert fixed.exit_code == 0, fixed.stdout
    assert "fixed: dropped category trip (no note under it)" in fixed.stdout
    tree = treemod.load(sample_root)
    assert {"trip", "trip/2026"}.isdisjoint(tree.by_id) and "travel" in tree.by_id


def test_fix_handles_every_fixable_problem_at_once(sample_root: Path) -> None:
    grow(sample_root / "bank/technical/cron-design.md")
    (sample_root / "bank/zoo.md").write_text("# 동물원\n\n얼룩말과 기린\n", encoding="utf-8")
    (sample_root / "bank/identity/personality.md").unlink()
    code, doc = check_json(sample_root)
    assert code == 1 and doc["ok"] is False
    assert sorted(p["kind"] for p in doc["problems"]) == ["dangling", "no-node", "oversized"]
    assert all(p["fixable"] for p in doc["problems"])
    code, doc = check_json(sample_root, "--fix")
    assert code == 0 and doc == {"ok": True, "fixed": doc["fixed"], "problems": []}
    assert len(doc["fixed"]) >= 3
    assert check(sample_root).exit_code == 0


def test_a_note_over_the_configured_limit_is_oversized(sample_root: Path) -> None:
    sizes = {p.relative_to(sample_root).as_posix(): p.stat().st_size for p in (sample_root / "bank").rglob("*.md")}
    limit = sorted(sizes.values())[len(sizes) // 2]  # about half the sample notes are over it
    (sample_root / "memtree.yaml").write_text(f"split:\n  max_bytes: {limit}\n", encoding="utf-8")
    code, doc = check_json(sample_root)
    assert code == 1
    over = {p["path"] for p in doc["problems"] if p["kind"] == "oversized"}
    assert over == {path for path, size in sizes.items() if size > limit} and over
    assert all(f"over the {limit:,}-byte limit" in p["detail"] for p in doc["problems"])


# --- tree-index.json problems --------------------------------------------------------------------


def test_a_duplicate_node_id_is_one_line_naming_it(sample_root: Path) -> None:
    doc = json.loads((sample_root / "tree-index.json").read_text(encoding="utf-8"))
    twin = next(n for n in doc["nodes"] if n["id"] == "project/rules")
    doc["nodes"].append(dict(twin, path="bank/project/decisions.md"))
    (sample_root / "tree-index.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    result = check(sample_root)
    assert result.exit_code == 1, result.stdout
    lines = result.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tree-index.json: tree: ")
    assert "duplicate" in lines[0] and "'project/rules'" in lines[0]
    code, as_json = check_json(sample_root)
    assert code == 1 and [p["kind"] for p in as_json["problems"]] == ["tree"]


def test_a_parent_cycle_is_one_line_naming_it(make_root: Callable[..., Path]) -> None:
    root = make_root(
        {"bank/a.md": "# 가\n\n첫 노트\n"},
        nodes=[
            node("a", "bank/a.md"),
            node("x", None, parent="y", children=["y"]),
            node("y", None, parent="x", children=["x"]),
        ],
    )
    result = check(root)
    assert result.exit_code == 1, result.stdout
    lines = result.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tree-index.json: tree: ") and "cycle" in lines[0]


def test_invalid_json_in_the_tree_is_a_problem_with_its_position(make_root: Callable[..., Path]) -> None:
    root = make_root({"bank/a.md": "# 가\n"}, nodes=[node("a", "bank/a.md")])
    (root / "tree-index.json").write_text('{"version": 1, "nodes": [\n  {"id": "a",,}\n]}\n', encoding="utf-8")
    result = check(root)
    assert result.exit_code == 1, (result.stdout, result.stderr)
    lines = result.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tree-index.json: tree: ") and "line 2" in lines[0]


# --- secrets -------------------------------------------------------------------------------------


def test_secrets_are_reported_with_their_line_and_never_rewritten(sample_root: Path) -> None:
    rules = sample_root / "bank/project/rules.md"
    rules.write_text(rules.read_text(encoding="utf-8") + f"\n배포 봇 토큰: {GITHUB_TOKEN}입니다\n", encoding="utf-8")
    log = sample_root / "memory/2026-11-28.md"
    log.write_text(log.read_text(encoding="utf-8") + f"- 18:00 담당자 메일 {EMAIL}\n", encoding="utf-8")
    token_line = rules.read_text(encoding="utf-8").split("\n").index(f"배포 봇 토큰: {GITHUB_TOKEN}입니다") + 1
    mail_line = log.read_text(encoding="utf-8").rstrip("\n").count("\n") + 1
    before = snapshot(sample_root)
    result = check(sample_root)
    assert result.exit_code == 1
    assert sorted(problem_lines(result)) == sorted(
        [
            f"bank/project/rules.md: secret: line {token_line}: looks like github-token; remove it by hand",
            f"memory/2026-11-28.md: secret: line {mail_line}: looks like email; remove it by hand",
        ]
    )
    assert GITHUB_TOKEN not in result.stdout and EMAIL not in result.stdout  # the report does not leak them
    fixed = check(sample_root, "--fix")
    assert fixed.exit_code == 1  # secrets are reported, not rewritten
    assert len(problem_lines(fixed)) == 2
    assert snapshot(sample_root) == before


def test_files_restrict_file_checks_to_the_given_paths(sample_root: Path) -> None:
    rules = sample_root / "bank/project/rules.md"
    rules.write_text(rules.read_text(encoding="utf-8") + f"\n연락처: {EMAIL}\n", encoding="utf-8")
    grow(sample_root / "bank/technical/cron-design.md")
    assert check(sample_root, "bank/project/decisions.md").exit_code == 0
    only_rules = check(sample_root, "bank/project/rules.md")
    assert only_rules.exit_code == 1
    assert [ln.split(": ")[1] for ln in problem_lines(only_rules)] == ["secret"]
    # paths as pre-commit gives them: relative to the working directory (here the root's parent)
    code, doc = check_json(sample_root, "sample/bank/technical/cron-design.md", "sample/bank/project/decisions.md")
    assert code == 1 and [(p["kind"], p["path"]) for p in doc["problems"]] == [
        ("oversized", "bank/technical/cron-design.md")
    ]
    absolute = check(sample_root, str(sample_root / "bank/project/rules.md"))
    assert absolute.exit_code == 1 and "secret" in absolute.stdout


def test_files_outside_the_root_check_no_file(sample_root: Path, tmp_path: Path) -> None:
    """A commit touching only files outside the memory root is not failed by a note it did not touch."""
    rules = sample_root / "bank/project/rules.md"
    rules.write_text(rules.read_text(encoding="utf-8") + f"\n연락처: {EMAIL}\n", encoding="utf-8")
    outside = tmp_path / "notes-elsewhere.md"
    outside.write_text("# 다른 저장소의 문서\n", encoding="utf-8")
    result = check(sample_root, str(outside))
    assert result.exit_code == 0, result.stdout
    assert MemTree(sample_root).check([str(outside)]) == []


def test_files_do_not_hide_tree_problems(sample_root: Path) -> None:
    (sample_root / "bank/identity/personality.md").unlink()
    result = check(sample_root, "bank/project/rules.md")
    assert result.exit_code == 1 and "dangling" in result.stdout


# --- the API -------------------------------------------------------------------------------------


def test_memtree_check_returns_problems_as_values(sample_root: Path) -> None:
    mt = MemTree(sample_root)
    assert mt.check() == []
    grow(sample_root / "bank/project/rules.md")
    (sample_root / "bank/zoo.md").write_text(f"# 동물원\n\n사육사 메일 {EMAIL}\n", encoding="utf-8")
    (sample_root / "bank/identity/values.md").unlink()
    problems = mt.check()
    by_kind = {(p.kind, p.path) for p in problems}
    assert by_kind == {
        ("oversized", "bank/project/rules.md"),
        ("no-node", "bank/zoo.md"),
        ("secret", "bank/zoo.md"),
        ("dangling", "bank/identity/values.md"),
    }
    fixable = {p.kind: p.fixable for p in problems}
    assert fixable == {"oversized": True, "no-node": True, "dangling": True, "secret": False}
    secret = next(p for p in problems if p.kind == "secret")
    assert secret.detail.startswith("line 3: looks like email")
    assert {(p.kind, p.path) for p in mt.check(["bank/zoo.md"])} == {
        ("no-node", "bank/zoo.md"),
        ("secret", "bank/zoo.md"),
        ("dangling", "bank/identity/values.md"),
    }


@pytest.mark.parametrize("name", ["bank/.draft.md", "bank/x.md~", "bank/.#x.md", "bank/x.md.swp"])
def test_ignored_editor_files_are_not_checked(sample_root: Path, name: str) -> None:
    (sample_root / name).write_text(f"# 임시\n\n{EMAIL}\n" + "가" * 5000, encoding="utf-8")
    assert check(sample_root).exit_code == 0


def grow(note: Path, past: int = 10_240) -> None:
    """Append Korean sections until the note is over ``past`` bytes."""
    note.write_text(grown(note, past), encoding="utf-8")


# --- hostile sizes -------------------------------------------------------------------------------


def test_a_note_too_big_to_index_is_reported(make_root: Callable[..., Path]) -> None:
    root = make_root({"bank/a.md": "# a\n\nsmall\n", "memory/2026-11-28.md": "# log\n\n" + "- 한 줄 로그\n" * 200})
    (root / "memtree.yaml").write_text("index:\n  max_note_bytes: 1000\n", encoding="utf-8")
    code, doc = check_json(root)
    unindexed = [p for p in doc["problems"] if p["kind"] == "unindexed"]
    assert code == 1 and [p["path"] for p in unindexed] == ["memory/2026-11-28.md"]
    assert "index.max_note_bytes (1,000)" in unindexed[0]["detail"] and not unindexed[0]["fixable"]


def test_a_list_whose_index_is_over_the_limit_passes_after_fix(make_root: Callable[..., Path]) -> None:
    items = "".join(f"- 항목 {i}: 메모리 분할 목록의 한 줄\n" for i in range(5000))
    root = make_root({"bank/list.md": "# 긴 목록\n\n" + items}, [node("list", "bank/list.md")])
    (root / "memtree.yaml").write_text("split:\n  max_bytes: 2048\n", encoding="utf-8")
    assert check(root).exit_code == 1
    fixed = check(root, "--fix")
    assert fixed.exit_code == 0, fixed.stdout
    assert check(root).exit_code == 0
    notes = sorted((root / "bank").rglob("*.md"))
    assert len(notes) > 100 and all(p.stat().st_size <= 2048 for p in notes)
    assert any(p.name.startswith("index-") for p in notes)  # the parent links to index notes
    written = "".join(p.read_text(encoding="utf-8") for p in notes)
    assert all(f"- 항목 {i}: " in written for i in (0, 2500, 4999))


def test_a_note_that_is_not_utf8_says_so_and_what_to_do(sample_root: Path) -> None:
    # Why: it was reported as "no node … (memtree check --fix)", which --fix cannot mend
    (sample_root / "bank/legacy.md").write_bytes("# 옛 메모\n\n- 배포 기록\n".encode("euc-kr"))
    runner = CliRunner()
    for args in (["check"], ["check", "--fix"]):
        result = runner.invoke(app, [*args, "--root", str(sample_root)])
        assert result.exit_code == 1
        assert "bank/legacy.md: not-utf8: not UTF-8 text" in result.stdout and "UTF-8" in result.stdout
        assert "no-node" not in result.stdout and "--fix" not in result.stdout.split("legacy.md")[1].split("\n")[0]


# --- an interrupted split -------------------------------------------------------------------------

ITEMS = [[f"- 항목 {k}-{j}: 내용을 적는다\n" for j in range(20)] for k in range(4)]
SECTIONS = "".join(f"## 주제 {k}\n\n" + "".join(items) + "\n" for k, items in enumerate(ITEMS))
NOTE = "# 큰 노트\n\n" + SECTIONS


def test_a_copy_left_by_an_older_interrupted_split_is_found_and_removed(make_root: Callable[..., Path]) -> None:
    from memtree.write.split import plan_split

    plan = plan_split(NOTE, 1500, "big")
    assert plan is not None and len(plan.children) == 4
    # older memtree wrote the parts, then died before rewriting the note; the note then grew
    grown_note = NOTE + "- 그 뒤에 덧붙인 항목\n"
    files = {"bank/big.md": grown_note, **{f"bank/{c.path}": c.text for c in plan.children}}
    root = make_root(files, [node("big", "bank/big.md", keywords=["노트"])])
    code, doc = check_json(root)
    copies = sorted(p["path"] for p in doc["problems"] if p["kind"] == "split-copy")
    assert code == 1 and copies == sorted(f"bank/{c.path}" for c in plan.children)
    result = check(root, "--fix")
    assert result.exit_code == 0, result.stdout
    assert "memtree check: ok" in result.stdout and "copy left by an interrupted split" in result.stdout
    notes = [p.read_text(encoding="utf-8") for p in (root / "bank").rglob("*.md")]
    for line in grown_note.splitlines():
        if line.strip():
            assert sum(n.splitlines().count(line) for n in notes) == 1, line


def test_a_linked_part_or_one_with_lines_of_its_own_is_no_copy(make_root: Callable[..., Path]) -> None:
    from memtree.write.check import split_copies

    files = {
        "bank/big.md": "# 큰 노트\n\n<!-- memtree:split -->\n- [하나](big/one.md)\n",
        "bank/big/one.md": "- 하나\n",
        "bank/big/two.md": "- 하나\n- 둘만의 줄\n",
        "bank/big/three.md": "- 하나\n",
    }
    root = make_root(files, [])
    # one.md is linked; two.md has a line of its own; three.md repeats one.md's only line
    assert split_copies(root, sorted(files)) == [("bank/big/three.md", "bank/big.md")]
