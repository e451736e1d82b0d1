"""Claude's memory tool over a memtree root, driven the way the ``anthropic`` SDK drives it, with no network.

A whole session runs through the SDK's own tool runner (``client.beta.messages.tool_runner``)
against a scripted model: an httpx2 ``MockTransport`` answers each request with the next assistant
turn of ``tool_use`` blocks, and the tool results the runner sends back are read from the next
request. Single commands go through ``tool.call(input)`` as the runner's ``_run_tool`` makes them:
a ``ToolError`` becomes an ``is_error`` result. The SDK's own local-filesystem tool is the
reference for output formats and error texts. Every write is checked on disk, in tree-index.json
and in the index; every refusal against a snapshot of the root (nothing written).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "anthropic.lib.tools", reason="the anthropic SDK is not installed (pip install 'memtree[anthropic]')"
)

# after the skip: these come with the SDK
import anyio
import httpx2
from anthropic import Anthropic
from anthropic.lib.tools import BetaAbstractMemoryTool, ToolError
from anthropic.tools.memory import BetaLocalFilesystemMemoryTool
from anthropic.types.beta import (
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
    BetaToolUseBlock,
)
from helpers import snapshot

from memtree.api import MemTree
from memtree.notes import entries
from memtree.notes import tree as treemod
from memtree.serve.claude_memory.tool import AsyncMemtreeMemoryTool, MemtreeMemoryTool
from memtree.write import conflicts

ARCHIVED_ON = datetime(2026, 12, 3, 9, 30, tzinfo=timezone(timedelta(hours=9)))
"""The moment the tool's clock gives: an archive mark names its day, whatever day the test runs."""
AWS_ID = "AKIA" + "IOSFODNN7EXAMPLE"  # split so that secret scanners leave this file alone
GITHUB = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
EMAIL = "kim.minsu@" + "example.com"
KYOTO = "# 교토 여행\n\n- 료칸은 기온 근처로 예약했다\n- 가이세키 저녁은 7시\n"


@pytest.fixture
def tool(sample_root: Path) -> MemtreeMemoryTool:
    """The tool over a copy of the sample memory; its MemTree never re-checks the disk by itself."""
    return MemtreeMemoryTool(MemTree(sample_root, refresh_interval=3600), clock=lambda: ARCHIVED_ON)


def run(tool: BetaAbstractMemoryTool, **raw: Any) -> tuple[str, bool]:
    """One tool_use block through the tool as the SDK's runner calls it: (content, is_error)."""
    block = BetaToolUseBlock(id="toolu_01", type="tool_use", name="memory", input=raw)
    try:
        return str(tool.call(block.input)), False
    except ToolError as exc:
        return str(exc.content), True


def ok(tool: BetaAbstractMemoryTool, **raw: Any) -> str:
    content, failed = run(tool, **raw)
    assert not failed, content
    return content


def refused(tool: BetaAbstractMemoryTool, **raw: Any) -> str:
    content, failed = run(tool, **raw)
    assert failed, content
    return content


def nodes(root: Path) -> dict[str, treemod.Node]:
    """tree-index.json's nodes by id, loaded and validated with their files."""
    return dict(treemod.load(root).by_id)


def hits(mt: MemTree, query: str) -> list[str]:
    return [h.path for h in mt.search(query, tier="bank").hits]


# --- a session through the SDK's tool runner ------------------------------------------------


def _scripted_client(turns: list[list[dict[str, Any]]], sent: list[dict[str, Any]]) -> Anthropic:
    """A client whose model answers with ``turns`` in order; each request body is kept in ``sent``."""

    def answer(request: httpx2.Request) -> httpx2.Response:
        sent.append(json.loads(request.content))
        content = turns[len(sent) - 1]
        stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
        message = {"id": f"msg_{len(sent)}", "type": "message", "role": "assistant", "model": "claude-test"}
        message |= {"content": content, "stop_reason": stop, "stop_sequence": None}
        return httpx2.Response(200, json=message | {"usage": {"input_tokens": 1, "output_tokens": 1}})

    transport = httpx2.MockTransport(answer)
    return Anthropic(api_key="test", base_url="http://anthropic.test", http_client=httpx2.Client(transport=transport))


def _use(n: int, **raw: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_{n:02d}", "name": "memory", "input": raw}


def test_a_session_through_the_sdk_tool_runner(tool: MemtreeMemoryTool, sample_root: Path) -> None:
    kyoto, trips = "/memories/bank/travel/kyoto.md", "/memories/bank/trips/kyoto.md"
    turns = [
        [_use(1, command="view", path="/memories")],
        [_use(2, command="create", path=kyoto, file_text=KYOTO + f"- 숙소 확인 메일: {EMAIL}\n")],
        [
            _use(3, command="str_replace", path=kyoto, old_str="7시", new_str="7시 반"),
            _use(4, command="insert", path=kyoto, insert_line=2, insert_text="- 교통: 간사이 패스"),
            _use(5, command="view", path=kyoto),
        ],
        [_use(6, command="rename", old_path=kyoto, new_path=trips)],
        [_use(7, command="view", path="/memories/../../etc/passwd"), _use(8, command="delete", path=trips)],
        [{"type": "text", "text": "기억해 두었습니다."}],
    ]
    sent: list[dict[str, Any]] = []
    runner = _scripted_client(turns, sent).beta.messages.tool_runner(
        model="claude-test", max_tokens=256, messages=[{"role": "user", "content": "교토 여행 기억해"}], tools=[tool]
    )
    assert runner.until_done().content[0].text == "기억해 두었습니다."  # type: ignore[union-attr]

    assert sent[0]["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    results = {r["tool_use_id"]: r for body in sent[1:] for r in body["messages"][-1]["content"]}
    assert [k for k, r in results.items() if r.get("is_error")] == ["toolu_07"]
    assert "identity/values: 가치관" in results["toolu_01"]["content"]
    assert "tree-index.json: added node travel/kyoto" in results["toolu_02"]["content"]
    assert "email" in results["toolu_02"]["content"]  # said to be redacted
    assert "7시 반" in results["toolu_03"]["content"] and "간사이 패스" in results["toolu_05"]["content"]
    assert "would escape /memories" in results["toolu_07"]["content"]
    assert "/memories/bank/_archive/trips/kyoto.md" in results["toolu_08"]["content"]

    archived = (sample_root / "bank/_archive/trips/kyoto.md").read_text(encoding="utf-8")
    assert "# 교토 여행\n\n- 교통: 간사이 패스\n- 료칸은" in archived and "- 가이세키 저녁은 7시 반\n" in archived
    assert EMAIL not in archived
    assert not (sample_root / "bank/trips").exists() and not (sample_root / "bank/travel").exists()
    assert not {"travel/kyoto", "trips/kyoto"} & set(nodes(sample_root))


def test_the_guides_example_runs(sample_root: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    """docs/guides/claude-memory-tool.md's example, with a scripted client (tests/test_docs.py skips it: the API)."""
    page = Path(__file__).resolve().parent.parent / "docs" / "guides" / "claude-memory-tool.md"
    code = page.read_text(encoding="utf-8").split("```python\n", 1)[1].split("```", 1)[0]
    turns = [
        [_use(1, command="create", path="/memories/bank/project/deploys.md", file_text="- 금요일 배포 없음\n")],
        [{"type": "text", "text": "기억했어요."}],
    ]
    client = _scripted_client(turns, [])
    monkeypatch.setattr("anthropic.Anthropic", lambda: client)
    exec(compile(code.replace("path/to/memory", str(sample_root)), str(page), "exec"), {})
    out = capsys.readouterr().out
    assert out.startswith("기억했어요.\n") and "/memories/bank/project/deploys.md → project/deploys" in out


# --- view ----------------------------------------------------------------------------------


def test_view_of_the_root_shows_the_tiers_and_the_tree_never_memtree_state(
    tool: MemtreeMemoryTool, sample_root: Path
) -> None:
    (sample_root / ".git").mkdir()
    (sample_root / "memtree.yaml").write_text("split:\n  max_bytes: 10240\n", encoding="utf-8")
    tool.memtree.refresh()  # makes .memtree/
    out = ok(tool, command="view", path="/memories")
    listing = out.split("\n\n")[0]
    for hidden in (".memtree", ".git", "tree-index.json", "memtree.yaml"):
        assert hidden not in listing
    assert "\t/memories/bank/identity/\n" in out and "\t/memories/memory/2026-11-27.md\n" in out
    assert "/memories/bank/identity/values.md → identity/values: 가치관, 판단기준, 원칙" in out
    assert "/memories/bank/technical/cron-design.md → technical/cron-design: 크론" in out
    for invisible in ("/memories/.memtree", "/memories/.git", "/memories/tree-index.json", "/memories/memtree.yaml"):
        assert refused(tool, command="view", path=invisible).startswith(f"The path {invisible} does not exist")


def test_views_match_the_sdks_reference_tool(tool: MemtreeMemoryTool, sample_root: Path, tmp_path: Path) -> None:
    reference = BetaLocalFilesystemMemoryTool(str(tmp_path / "reference"))
    (reference.memory_root / "identity").mkdir()
    for name in ("values.md", "personality.md"):
        (reference.memory_root / "identity" / name).write_bytes((sample_root / "bank/identity" / name).read_bytes())
    for view_range in (None, [3, 7], [10, -1], [1, 999]):
        ours = ok(tool, command="view", path="/memories/bank/identity/values.md", view_range=view_range)
        theirs = reference.view(
            BetaMemoryTool20250818ViewCommand(
                command="view", path="/memories/identity/values.md", view_range=view_range
            )
        )
        assert ours.replace("/memories/bank/", "/memories/") == theirs
    ours = ok(tool, command="view", path="/memories/bank/identity")
    theirs = reference.view(BetaMemoryTool20250818ViewCommand(command="view", path="/memories/identity"))
    listing = ours.split("\n\n")[0]
    assert listing.replace("/memories/bank/", "/memories/") == theirs
    assert "/memories/bank/identity/personality.md → identity/personality: 성격" in ours


@pytest.mark.parametrize(
    ("view_range", "needle"),
    [([0, 3], "first element"), ([500, 501], "first element"), ([5, 2], "second element"), ([1], "two integers")],
)
def test_a_bad_view_range_is_named_in_one_line(tool: MemtreeMemoryTool, view_range: list[int], needle: str) -> None:
    out = refused(tool, command="view", path="/memories/bank/identity/values.md", view_range=view_range)
    assert "\n" not in out and out.startswith("Invalid `view_range`") and needle in out


# --- create, str_replace, insert -------------------------------------------------------------


def test_create_writes_a_note_with_its_node_and_search_finds_it_at_once(
    tool: MemtreeMemoryTool, sample_root: Path
) -> None:
    out = ok(tool, command="create", path="/memories/bank/travel/kyoto.md", file_text=KYOTO)
    assert out.startswith("File created successfully at: /memories/bank/travel/kyoto.md")
    assert (sample_root / "bank/travel/kyoto.md").read_text(encoding="utf-8") == KYOTO
    tree = nodes(sample_root)
    assert tree["travel/kyoto"].path == "bank/travel/kyoto.md" and tree["travel/kyoto"].parent == "travel"
    assert "travel/kyoto" in tree["travel"].children and "교토 여행" in tree["travel/kyoto"].keywords
    assert hits(tool.memtree, "가이세키") == ["bank/travel/kyoto.md"]  # no re-check of the disk: indexed by the write
    assert "travel/kyoto: 교토 여행" in ok(tool, command="view", path="/memories/bank/travel")

    before = snapshot(sample_root)
    assert refused(tool, command="create", path="/memories/bank/travel/kyoto.md", file_text="x") == (
        "File /memories/bank/travel/kyoto.md already exists"
    )
    assert "name it *.md" in refused(tool, command="create", path="/memories/bank/notes.txt", file_text="x")
    assert "under /memories/bank/" in refused(tool, command="create", path="/memories/notes.md", file_text="x")
    assert "daily logs" in refused(tool, command="create", path="/memories/memory/2026-12-01.md", file_text="x")
    assert "keeps deleted notes" in refused(tool, command="create", path="/memories/bank/_archive/a.md", file_text="x")
    for hidden in ("/memories/bank/.draft.md", "/memories/.git/config", "/memories/.memtree/x.md"):
        assert "hidden name" in refused(tool, command="create", path=hidden, file_text="x")
    assert snapshot(sample_root) == before


def test_a_value_the_model_replaces_in_place_keeps_the_old_one_superseded(
    tool: MemtreeMemoryTool, sample_root: Path
) -> None:
    # Why: issue 30 — an edit in place through the memory tool is a hand edit: the old value stays, marked
    tool.memtree.add("Redis pool size is 50", to="infra/redis", now=ARCHIVED_ON - timedelta(days=30))
    path, note = "/memories/bank/infra/redis.md", sample_root / "bank/infra/redis.md"
    ok(tool, command="str_replace", path=path, old_str="Redis pool size is 50", new_str="Redis pool size is 80")
    found = {e.content: e.meta for e in entries.parse_entries(note.read_text(encoding="utf-8"))}
    old, new = found["Redis pool size is 50"], found["Redis pool size is 80"]
    assert old.extra["superseded"] == ARCHIVED_ON.date().isoformat() and old.extra["by"] == new.id
    assert not entries.is_retired(new)
    ok(tool, command="str_replace", path=path, old_str="size is 80", new_str="size is 80 on the main cluster")
    text = note.read_text(encoding="utf-8")  # words added: no other value, nothing split
    assert text.count("Redis pool size is") == 2 and "80 on the main cluster <!-- memtree: id=" + new.id in text


SECRETS = {"email": EMAIL, "aws-access-key": AWS_ID, "github-token": GITHUB}


@pytest.mark.parametrize("how", ["create", "str_replace", "insert"])
def test_what_the_model_writes_is_sanitized(tool: MemtreeMemoryTool, sample_root: Path, how: str) -> None:
    note, path = sample_root / "bank/project/rules.md", "/memories/bank/project/rules.md"
    written = f"배포 계정 {EMAIL}, 키 {AWS_ID}, 토큰 {GITHUB}"
    hand = "password=" + "hunter2x!"  # a person's secret already in the note: theirs to fix, left as it was
    note.write_text(note.read_text(encoding="utf-8") + f"\n- 오래된 메모 {hand}\n", encoding="utf-8")
    if how == "create":
        path, note = "/memories/bank/ops/accounts.md", sample_root / "bank/ops/accounts.md"
        out = ok(tool, command="create", path=path, file_text=f"# 계정\n\n- {written}\n")
    elif how == "str_replace":
        out = ok(tool, command="str_replace", path=path, old_str="오래된 메모", new_str=f"오래된 메모 ({written})")
    else:
        out = ok(tool, command="insert", path=path, insert_line=3, insert_text=f"- {written}")
    text = note.read_text(encoding="utf-8")
    for kind, secret in SECRETS.items():
        assert secret not in text and f"[REDACTED:{kind}]" in text
    assert "redacted before writing: aws-access-key, email, github-token" in out
    assert (hand in text) == (how != "create")


def test_a_secret_the_edit_joins_across_its_edge_is_redacted(tool: MemtreeMemoryTool, sample_root: Path) -> None:
    ok(tool, command="create", path="/memories/bank/ops/keys.md", file_text="- 키 AKIA 로 시작\n")
    ok(tool, command="str_replace", path="/memories/bank/ops/keys.md", old_str="AKIA 로 시작", new_str=AWS_ID[4:])
    assert AWS_ID not in (sample_root / "bank/ops/keys.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "path",
    [f"/memories/bank/{GITHUB}.md", f"/memories/bank/{GITHUB}/notes.md", f"/memories/bank/keys{GITHUB}.md"],
)
def test_a_secret_as_a_file_or_folder_name_is_refused(tool: MemtreeMemoryTool, sample_root: Path, path: str) -> None:
    before = snapshot(sample_root)
    out = refused(tool, command="create", path=path, file_text="- 배포 메모\n")
    assert "holds a secret (github-token)" in out and GITHUB not in out
    ok(tool, command="create", path="/memories/bank/ops/plain.md", file_text="- 배포 메모\n")
    out = refused(tool, command="rename", old_path="/memories/bank/ops/plain.md", new_path=path)
    assert "holds a secret" in out and GITHUB not in out
    assert snapshot(sample_root) != before  # plain.md was written, and only that
    for where in sample_root.rglob("*"):
        if where.is_file():
            assert GITHUB.encode() not in where.read_bytes(), where
            assert GITHUB not in where.as_posix(), where


def test_str_replace_and_insert_match_the_reference(tool: MemtreeMemoryTool, sample_root: Path, tmp_path: Path) -> None:
    reference = BetaLocalFilesystemMemoryTool(str(tmp_path / "reference"))
    text = "# 회의\n\n- 월요일 회의\n- 수요일 회의\n- 금요일 배포 금지\n"
    (reference.memory_root / "meetings.md").write_text(text, encoding="utf-8")
    ok(tool, command="create", path="/memories/bank/meetings.md", file_text=text)
    for old, new in (("금요일 배포 금지", "금요일 배포 없음"), ("배포 없음", "배포 안 함")):
        ours = ok(tool, command="str_replace", path="/memories/bank/meetings.md", old_str=old, new_str=new)
        cmd = BetaMemoryTool20250818StrReplaceCommand(
            command="str_replace", path="/memories/meetings.md", old_str=old, new_str=new
        )
        assert ours == reference.str_replace(cmd)
    ours = ok(tool, command="insert", path="/memories/bank/meetings.md", insert_line=0, insert_text="---\n")
    cmd_i = BetaMemoryTool20250818InsertCommand(
        command="insert", path="/memories/meetings.md", insert_line=0, insert_text="---\n"
    )
    assert ours.replace("/bank/", "/") == reference.insert(cmd_i)
    assert (sample_root / "bank/meetings.md").read_bytes() == (reference.memory_root / "meetings.md").read_bytes()


@pytest.mark.parametrize(
    ("old", "expected"),
    [
        ("화요일", "No replacement was performed, old_str `화요일` did not appear verbatim in {path}."),
        (
            "회의",
            "No replacement was performed. Multiple occurrences of old_str `회의` in lines: 1, 3, 4. "
            "Please ensure it is unique",
        ),
    ],
)
def test_str_replace_needs_exactly_one_match(
    tool: MemtreeMemoryTool, sample_root: Path, tmp_path: Path, old: str, expected: str
) -> None:
    text = "# 회의\n\n- 월요일 회의\n- 수요일 회의\n"
    ok(tool, command="create", path="/memories/bank/meetings.md", file_text=text)
    reference = BetaLocalFilesystemMemoryTool(str(tmp_path / "reference"))
    (reference.memory_root / "meetings.md").write_text(text, encoding="utf-8")
    before = snapshot(sample_root)
    out = refused(tool, command="str_replace", path="/memories/bank/meetings.md", old_str=old, new_str="x")
    assert out == expected.format(path="/memories/bank/meetings.md")
    with pytest.raises(ToolError) as theirs:
        reference.str_replace(
            BetaMemoryTool20250818StrReplaceCommand(
                command="str_replace", path="/memories/meetings.md", old_str=old, new_str="x"
            )
        )
    assert out.replace("/bank/", "/") == str(theirs.value)
    assert snapshot(sample_root) == before


def test_an_insert_line_out_of_range_writes_nothing(tool: MemtreeMemoryTool, sample_root: Path) -> None:
    before = snapshot(sample_root)
    lines = len((sample_root / "bank/project/rules.md").read_text(encoding="utf-8").rstrip("\n").split("\n"))
    out = refused(
        tool, command="insert", path="/memories/bank/project/rules.md", insert_line=lines + 1, insert_text="x"
    )
    assert out == f"Invalid `insert_line` parameter: {lines + 1}. It should be within the range [0, {lines}]."
    assert snapshot(sample_root) == before


def test_a_big_create_is_split_into_parts_with_nodes(tool: MemtreeMemoryTool, sample_root: Path) -> None:
    sections = [
        f"## 회고 {n}\n\n" + f"{n}번째 회고: 크론 작업이 겹친 원인과 lock 대기 시간을 정리했다.\n" * 40
        for n in range(1, 7)
    ]
    text = "# 회고 모음\n\n머리말.\n\n" + "\n".join(sections)
    limit = tool.memtree.settings.split.max_bytes
    assert len(text.encode()) > limit
    out = ok(tool, command="create", path="/memories/bank/retro/all.md", file_text=text)
    assert "was split" in out and "/memories/bank/retro/all/" in out
    parts = sorted((sample_root / "bank/retro/all").glob("*.md"))
    assert len(parts) >= 2 and all(p.stat().st_size <= limit for p in parts)
    assert (sample_root / "bank/retro/all.md").stat().st_size <= limit
    tree = nodes(sample_root)
    kids = [n for n in tree.values() if n.parent == "retro/all"]
    assert {n.path for n in kids} == {p.relative_to(sample_root).as_posix() for p in parts}
    assert hits(tool.memtree, "6번째 회고")[0].startswith("bank/retro/all/")


# --- rename ---------------------------------------------------------------------------------


def test_rename_moves_the_node_with_its_note(tool: MemtreeMemoryTool, sample_root: Path) -> None:
    before = nodes(sample_root)["identity/values"]
    old = conflicts.OpenConflict(
        "c-20261201-abcdef",
        "2026-12-01T09:00:00+09:00",
        0.6,
        conflicts.Side("bank/identity/values.md", "e-1", "새 것"),
        conflicts.Side("bank/project/rules.md", "e-2", "옛 것"),
    )
    conflicts.save(sample_root, [old])
    out = ok(
        tool,
        command="rename",
        old_path="/memories/bank/identity/values.md",
        new_path="/memories/bank/principles/values.md",
    )
    assert out.startswith(
        "Successfully renamed /memories/bank/identity/values.md to /memories/bank/principles/values.md"
    )
    assert "node identity/values is now principles/values" in out
    tree = nodes(sample_root)
    moved = tree["principles/values"]
    assert "identity/values" not in tree and "identity/values" not in tree["identity"].children
    assert (moved.path, moved.parent, moved.keywords, moved.weight) == (
        "bank/principles/values.md",
        "principles",
        before.keywords,
        before.weight,
    )
    assert tree["principles"].children == ("principles/values",)
    assert conflicts.load(sample_root)[0].new.path == "bank/principles/values.md"
    assert hits(tool.memtree, "가치관")[0] == "bank/principles/values.md"


def test_rename_rewrites_the_links_to_the_note(tool: MemtreeMemoryTool, sample_root: Path) -> None:
    linking = sample_root / "bank/project/links.md"
    text = "- relates_to [[identity/values|가치관]], [[bank/identity/values.md#1. Markdown이 진실이다]]\n"
    linking.write_text(text + "- 코드는 그대로: `[[identity/values]]`\n", encoding="utf-8")
    ok(
        tool,
        command="rename",
        old_path="/memories/bank/identity/values.md",
        new_path="/memories/bank/principles/values.md",
    )
    assert linking.read_text(encoding="utf-8") == (
        "- relates_to [[principles/values|가치관]], [[bank/principles/values.md#1. Markdown이 진실이다]]\n"
        "- 코드는 그대로: `[[identity/values]]`\n"
    )
    found = tool.memtree.links("principles/values").incoming
    assert [(r.link.source, r.line) for r in found] == [("bank/project/links.md", None), ("bank/project/links.md", 10)]


def test_a_node_id_chosen_by_hand_is_kept_on_rename(tool: MemtreeMemoryTool, sample_root: Path) -> None:
    raw = json.loads((sample_root / "tree-index.json").read_text(encoding="utf-8"))
    for n in raw["nodes"]:
        n["id"] = "house-rules" if n["id"] == "project/rules" else n["id"]
        n["children"] = ["house-rules" if c == "project/rules" else c for c in n["children"]]
    (sample_root / "tree-index.json").write_text(json.dumps(raw, ensure_ascii=False), encoding="utf-8")
    ok(tool, command="rename", old_path="/memories/bank/project/rules.md", new_path="/memories/bank/team/rules.md")
    rules = nodes(sample_root)["house-rules"]
    assert (rules.path, rules.parent) == ("bank/team/rules.md", "project")


def test_renaming_a_folder_moves_its_nodes_and_category(tool: MemtreeMemoryTool, sample_root: Path) -> None:
    keywords = nodes(sample_root)["technical"].keywords
    ok(tool, command="rename", old_path="/memories/bank/technical", new_path="/memories/bank/engineering")
    tree = nodes(sample_root)  # validated with every node's file
    assert not [i for i in tree if i.startswith("technical")]
    assert tree["engineering/cron-design"].path == "bank/engineering/cron-design.md"
    assert tree["engineering/cron-design"].parent == "engineering"
    assert set(tree["engineering"].children) == {"engineering/cron-design", "engineering/heartbeat-reflect"}
    assert "engineering" in tree["engineering"].keywords and set(keywords) - {"technical"} <= set(
        tree["engineering"].keywords
    )
    assert hits(tool.memtree, "크론 스케줄")[0] == "bank/engineering/cron-design.md"


def test_rename_refuses_what_it_cannot_do_and_writes_nothing(tool: MemtreeMemoryTool, sample_root: Path) -> None:
    before = snapshot(sample_root)
    values, rules = "/memories/bank/identity/values.md", "/memories/bank/project/rules.md"
    cases = {
        (values, rules): "The destination /memories/bank/project/rules.md already exists",
        ("/memories/bank/gone.md", "/memories/bank/x.md"): "The path /memories/bank/gone.md does not exist",
        (values, "/memories/bank/values.txt"): "name it *.md",
        ("/memories/bank/identity", "/memories/bank/identity/inner"): "cannot move into itself",
        ("/memories/bank", "/memories/bank/knowledge"): "a tier of the memory",
        ("/memories/bank/identity", "/memories/knowledge"): "outside memtree's tiers",
        ("/memories", "/memories/bank/all"): "Cannot rename the /memories directory itself",
        ("/memories/memory/2026-11-27.md", "/memories/bank/log.md"): "daily logs",
        (values, "/memories/memory/values.md"): "daily logs",
    }
    for (old, new), needle in cases.items():
        assert needle in refused(tool, command="rename", old_path=old, new_path=new), (old, new)
    assert snapshot(sample_root) == before


def test_the_parts_of_a_split_note_move_together(tool: MemtreeMemoryTool, sample_root: Path) -> None:
    text = "# 회고\n\n" + "\n".join(f"## 회고 {n}\n\n" + f"{n}번째 회고 내용이다.\n" * 120 for n in range(1, 5))
    ok(tool, command="create", path="/memories/bank/retro.md", file_text=text)
    part = next((sample_root / "bank/retro").glob("*.md")).relative_to(sample_root).as_posix()
    before = snapshot(sample_root)
    out = refused(tool, command="rename", old_path="/memories/bank/retro.md", new_path="/memories/bank/review.md")
    assert "parts of one split note" in out
    refused(tool, command="rename", old_path=f"/memories/{part}", new_path="/memories/bank/part.md")
    assert snapshot(sample_root) == before
    ok(tool, command="create", path="/memories/bank/notes/keep.md", file_text="- 유지\n")
    ok(tool, command="rename", old_path="/memories/bank/notes", new_path="/memories/bank/kept")
    assert nodes(sample_root)["kept/keep"].path == "bank/kept/keep.md"


# --- delete ---------------------------------------------------------------------------------


def test_delete_archives_a_note_and_drops_its_node(tool: MemtreeMemoryTool, sample_root: Path) -> None:
    original = (sample_root / "bank/project/decisions.md").read_text(encoding="utf-8")
    out = ok(tool, command="delete", path="/memories/bank/project/decisions.md")
    assert out.startswith("Successfully deleted /memories/bank/project/decisions.md")
    assert "/memories/bank/_archive/project/decisions.md" in out and "dropped node project/decisions" in out
    assert not (sample_root / "bank/project/decisions.md").exists()
    archived = (sample_root / "bank/_archive/project/decisions.md").read_text(encoding="utf-8")
    n_lines = original.rstrip("\n").count("\n") + 1
    mark = f"<!-- memtree: archived=2026-12-03; from=bank/project/decisions.md:1-{n_lines}; why=deleted through"
    assert mark in archived and original.rstrip("\n") in archived
    tree = nodes(sample_root)
    assert "project/decisions" not in tree and tree["project"].children == ("project/rules",)
    assert "bank/project/decisions.md" not in hits(tool.memtree, "BM25 형태소 결정")
    assert "archived=2026-12-03" in ok(tool, command="view", path="/memories/bank/_archive/project/decisions.md")
    assert "_archive" not in ok(tool, command="view", path="/memories/bank").split("\n\n")[0]


def test_delete_of_a_folder_archives_every_note_in_it(tool: MemtreeMemoryTool, sample_root: Path) -> None:
    (sample_root / "bank/technical/diagram.png").write_bytes(b"\x89PNG\r\n")
    out = ok(tool, command="delete", path="/memories/bank/technical")
    assert "left in place, not being notes: /memories/bank/technical/diagram.png" in out
    for name in ("cron-design.md", "heartbeat-reflect.md"):
        assert not (sample_root / "bank/technical" / name).exists()
        assert (sample_root / "bank/_archive/technical" / name).is_file()
    assert not [i for i in nodes(sample_root) if i.startswith("technical/")]
    assert (sample_root / "bank/technical/diagram.png").is_file()


def test_a_delete_or_rename_drops_the_categories_it_leaves_empty(tool: MemtreeMemoryTool, sample_root: Path) -> None:
    ok(tool, command="create", path="/memories/bank/trip/2026/plan.md", file_text="- 제주 여행 계획\n")
    ok(tool, command="create", path="/memories/bank/books/list.md", file_text="- 읽을 책 목록\n")
    assert {"trip", "trip/2026", "books"} <= set(nodes(sample_root))
    out = ok(tool, command="delete", path="/memories/bank/trip/2026/plan.md")
    assert "dropped category trip, trip/2026, left with no note" in out
    out = ok(tool, command="rename", old_path="/memories/bank/books/list.md", new_path="/memories/bank/reading/list.md")
    assert "dropped category books, left with no note" in out
    tree = nodes(sample_root)
    assert not {"trip", "trip/2026", "books"} & set(tree) and tree["reading/list"].parent == "reading"
    # a category with keywords of its own is a person's: it stays when its last note goes
    ok(tool, command="delete", path="/memories/bank/technical")
    assert nodes(sample_root)["technical"].children == ()
    assert "empty-category" not in {p.kind for p in tool.memtree.check()}


def test_delete_refuses_what_it_must_not_remove(tool: MemtreeMemoryTool, sample_root: Path) -> None:
    ok(tool, command="delete", path="/memories/bank/project/decisions.md")
    before = snapshot(sample_root)
    cases = {
        "/memories": "Cannot delete the /memories directory itself",
        "/memories/bank": "a tier of the memory",
        "/memories/bank/_archive/project/decisions.md": "keeps deleted notes",
        "/memories/memory/2026-11-27.md": "daily logs",
        "/memories/recall": "hot buffer",
        "/memories/bank/nothing.md": "The path /memories/bank/nothing.md does not exist",
    }
    for path, needle in cases.items():
        assert needle in refused(tool, command="delete", path=path), path
    assert snapshot(sample_root) == before
    with pytest.raises(ToolError, match="never clears a memory"):
        tool.clear_all_memory()


def test_each_write_is_one_journaled_change_that_undo_reverts(tool: MemtreeMemoryTool, sample_root: Path) -> None:
    before = snapshot(sample_root)
    big = "# 회고\n\n" + "\n".join(f"## 회고 {n}\n\n" + f"{n}번째 회고 내용이다.\n" * 120 for n in range(1, 5))
    ok(tool, command="create", path="/memories/bank/retro.md", file_text=big)  # the note, its parts, their nodes
    ok(tool, command="insert", path="/memories/bank/project/rules.md", insert_line=0, insert_text="- 새 규칙")
    ok(tool, command="rename", old_path="/memories/bank/identity", new_path="/memories/bank/self")
    ok(tool, command="delete", path="/memories/bank/technical/cron-design.md")
    journal = tool.memtree.history().changes
    assert [c.command for c in journal[:4]] == ["memory delete", "memory rename", "memory insert", "memory create"]
    assert "bank/_archive/technical/cron-design.md" in journal[0].paths and "tree-index.json" in journal[0].paths
    assert any(p.startswith("bank/retro/") for p in journal[3].paths)
    tool.memtree.undo(4)
    assert snapshot(sample_root) == before


# --- confinement ----------------------------------------------------------------------------


@pytest.fixture
def links(sample_root: Path, tmp_path: Path) -> Iterator[Path]:
    """Symlinks in bank/ leading out of the root, and to memtree's own files inside it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("외부 비밀\n", encoding="utf-8")
    (sample_root / "bank/ext").symlink_to(outside, target_is_directory=True)
    (sample_root / "bank/passwd.md").symlink_to(outside / "secret.md")
    (sample_root / "bank/tree.md").symlink_to(sample_root / "tree-index.json")
    (sample_root / "bank/state").symlink_to(sample_root / ".git", target_is_directory=True)
    (sample_root / ".git").mkdir()
    yield outside


ESCAPES: list[dict[str, Any]] = [
    {"command": "view", "path": "/memories/../outside/secret.md"},
    {"command": "view", "path": "/memories/bank/../../outside/secret.md"},
    {"command": "create", "path": "/memories/bank/../../outside/new.md", "file_text": "x"},
    {"command": "view", "path": "/memories/%2e%2e/outside/secret.md"},
    {"command": "create", "path": "/memories/bank%2f..%2f..%2foutside%2fnew.md", "file_text": "x"},
    {"command": "create", "path": "/memories/bank/%252e%252e/new.md", "file_text": "x"},
    {"command": "view", "path": "/etc/passwd"},
    {"command": "create", "path": "/tmp/new.md", "file_text": "x"},
    {"command": "rename", "old_path": "/memories/bank/identity/values.md", "new_path": "/var/tmp/values.md"},
    {"command": "view", "path": "/memoriesevil/x.md"},
    {"command": "create", "path": "/memories/bank/new\x00.md", "file_text": "x"},
    {"command": "view", "path": "/memories/bank/identity/values.md\x00.png"},
    {"command": "create", "path": "/memories/bank\\..\\..\\new.md", "file_text": "x"},
    {"command": "view", "path": "/memories/bank/ext/secret.md"},
    {"command": "view", "path": "/memories/bank/passwd.md"},
    {"command": "view", "path": "/memories/bank/tree.md"},
    {"command": "view", "path": "/memories/bank/state"},
    {"command": "create", "path": "/memories/bank/ext/new.md", "file_text": "x"},
    {"command": "str_replace", "path": "/memories/bank/passwd.md", "old_str": "외부", "new_str": "x"},
    {"command": "insert", "path": "/memories/bank/passwd.md", "insert_line": 0, "insert_text": "x"},
    {"command": "delete", "path": "/memories/bank/passwd.md"},
    {"command": "delete", "path": "/memories/bank/ext"},
    {"command": "rename", "old_path": "/memories/bank/identity/values.md", "new_path": "/memories/bank/ext/values.md"},
    {"command": "rename", "old_path": "/memories/bank/passwd.md", "new_path": "/memories/bank/mine.md"},
]


@pytest.mark.parametrize("attack", ESCAPES, ids=lambda a: repr(a.get("path", a.get("new_path"))))
def test_every_escape_is_refused_and_writes_nothing(
    tool: MemtreeMemoryTool, sample_root: Path, links: Path, attack: dict[str, Any]
) -> None:
    before, outside = snapshot(sample_root), snapshot(links)
    out = refused(tool, **attack)
    assert "\n" not in out and "외부 비밀" not in out and '"nodes"' not in out
    assert snapshot(sample_root) == before and snapshot(links) == outside


def test_links_out_are_not_listed(tool: MemtreeMemoryTool, links: Path) -> None:
    listing = ok(tool, command="view", path="/memories/bank")
    for name in ("ext", "passwd.md", "tree.md", "state"):
        assert f"/memories/bank/{name}" not in listing


# --- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        ({"command": "create", "path": "/memories/bank/a.md"}, "needs file_text"),
        ({"command": "insert", "path": "/memories/bank/a.md", "insert_line": "2", "insert_text": "x"}, "an integer"),
        ({"command": "insert", "path": "/memories/bank/a.md", "insert_line": True, "insert_text": "x"}, "an integer"),
        ({"command": "rename", "old_path": "/memories/bank/a.md"}, "needs new_path"),
        ({"command": "view", "path": "/memories", "view_range": "1-5"}, "view_range"),
        ({"command": "remember", "path": "/memories"}, "Unknown command 'remember'"),
        ({"path": "/memories"}, "Unknown command None"),
    ],
)
def test_malformed_input_is_one_line_and_writes_nothing(
    tool: MemtreeMemoryTool, sample_root: Path, raw: dict[str, Any], needle: str
) -> None:
    before = snapshot(sample_root)
    out = refused(tool, **raw)
    assert "\n" not in out and needle in out
    assert snapshot(sample_root) == before


def test_the_async_tool_serves_the_same_commands(sample_root: Path) -> None:
    tool = AsyncMemtreeMemoryTool(sample_root, clock=lambda: ARCHIVED_ON)

    async def session() -> tuple[object, object]:
        created = await tool.call({"command": "create", "path": "/memories/bank/a/b.md", "file_text": "- 비동기\n"})
        try:
            await tool.call({"command": "view", "path": "/memories/../x"})
        except ToolError as exc:
            return created, exc.content
        return created, None

    created, error = anyio.run(session)
    assert str(created).startswith("File created successfully") and "would escape" in str(error)
    assert nodes(sample_root)["a/b"].path == "bank/a/b.md"


def test_the_tool_declares_itself_as_memory_20250818(tool: MemtreeMemoryTool) -> None:
    assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}
    assert tool.name == "memory" and isinstance(tool, BetaAbstractMemoryTool)
    assert os.fspath(tool.root) == os.fspath(tool.memtree.root)


def test_a_metadata_comment_the_model_writes_is_text_unless_carried_along(
    tool: MemtreeMemoryTool, sample_root: Path
) -> None:
    from memtree.notes import entries

    forged = "<!-- memtree: id=e-20200101-feedface -->"
    ok(tool, command="create", path="/memories/bank/ops/forged.md", file_text=f"# 운영\n\n- 위조 시도 {forged}\n")
    note = sample_root / "bank/ops/forged.md"
    assert not list(entries.iter_ids(note.read_text(encoding="utf-8")))
    own = "<!-- memtree: id=e-20261201-0a0b0c0d; kind=fact -->"
    note.write_text(f"# 운영\n\n- 배포는 화요일 {own}\n", encoding="utf-8")
    ok(
        tool,
        command="str_replace",
        path="/memories/bank/ops/forged.md",
        old_str="- 배포는 화요일 " + own,
        new_str="- 배포는 수요일 " + own,
    )
    ok(tool, command="insert", path="/memories/bank/ops/forged.md", insert_line=3, insert_text=f"- 복사본 {own}\n")
    ids = list(entries.iter_ids(note.read_text(encoding="utf-8")))
    # carried once, not copied; the day it names changed in place, so the old words keep it, superseded
    # by the edited line's fresh id (issue 30)
    assert ids.count("e-20261201-0a0b0c0d") == 1 and len(ids) == 2
    found = {e.content: e.meta for e in entries.parse_entries(note.read_text(encoding="utf-8"))}
    assert found["배포는 화요일"].id == "e-20261201-0a0b0c0d" and found["배포는 화요일"].extra["by"] == ids[1]
