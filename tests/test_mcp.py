"""memtree's MCP server, driven by the SDK's own clients: over stdio (a spawned ``memtree mcp``) and over
Streamable HTTP (``http_app`` under uvicorn, routed at /mcp the way the daemon routes it).

Every tool is called for real; its structured content must be memtree.schema's object (the keys of
``schema.KEYS``), its text content the same JSON, and a memtree error a tool error of one line. The
tools read the clock, so nothing here asserts a score (decay moves them); the sample memory's
answers are asserted by path instead.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import threading
import time
import typing
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp.server.mcpserver", reason="the MCP SDK is not installed (pip install 'memtree[mcp]')")

# after the skip: these come with the SDK
import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult

from memtree import schema
from memtree.api import TIER_CHOICES, MemTree, Note
from memtree.errors import QueryError
from memtree.serve import mcp_tools
from memtree.serve.mcp import build_server, http_app
from memtree.write.conflicts import KEEP
from memtree.write.retain import KINDS, SOURCES

REDIS_OLD = "Redis 연결 풀 크기는 10이면 충분하다"
REDIS_NEW = "Redis 연결 풀은 필요 없다"  # its negation in other words: a conflict
READ_ONLY = {"search", "context", "get", "status", "conflicts", "banks", "history"}
DESTRUCTIVE = {"resolve_conflict", "forget", "undo"}
TOOLS = READ_ONLY | DESTRUCTIVE | {"add", "log", "update", "ingest"}
SHAPE = {name: name for name in TOOLS} | {"resolve_conflict": "conflicts resolve"}
"""Tool → its memtree.schema shape (the `--json` command it answers like)."""
TIMEOUT = 60.0
"""Seconds a client waits for one answer: generous, for a loaded 2-core machine."""

Session = Callable[[Client], Awaitable[None]]


# --- helpers -------------------------------------------------------------------------------------


def stdio_params(root: Path, cwd: Path) -> StdioServerParameters:
    """`memtree mcp --root ROOT`, as an agent's config runs it."""
    return StdioServerParameters(command=sys.executable, args=["-m", "memtree", "mcp", "--root", str(root)], cwd=cwd)


def over_stdio(root: Path, tmp_path: Path, session: Session, mode: str = "auto") -> str:
    """Run ``session`` against a spawned `memtree mcp`; returns what the server wrote on stderr."""
    errlog = tmp_path / "mcp-stderr.log"

    async def main() -> None:
        with errlog.open("w", encoding="utf-8") as err:
            transport = stdio_client(stdio_params(root, tmp_path), errlog=err)
            async with Client(transport, mode=mode, read_timeout_seconds=TIMEOUT) as client:
                await session(client)

    anyio.run(main)
    return errlog.read_text(encoding="utf-8")


def answer(result: CallToolResult) -> dict[str, Any]:
    """A successful call's structured content, checked against its text content (the same JSON)."""
    assert not result.is_error, result.content
    data = result.structured_content
    assert isinstance(data, dict)
    (block,) = result.content
    assert json.loads(getattr(block, "text", "")) == data
    return data


def error_line(result: CallToolResult) -> str:
    """A failed call's message: a tool error of exactly one line, no traceback."""
    assert result.is_error, result.structured_content
    (block,) = result.content
    text: str = getattr(block, "text", "")
    assert text and "\n" not in text and "Traceback" not in text, text
    return text


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call ``tool``; its answer must be memtree.schema's object for the tool's shape."""
    data = answer(await client.call_tool(tool, arguments))
    assert set(data) == schema.KEYS[SHAPE[tool]], (tool, set(data) ^ schema.KEYS[SHAPE[tool]])
    return data


# --- the tools' parameters match memtree's own choices ---------------------------------------------


def test_the_choices_offered_are_memtrees_own() -> None:
    assert typing.get_args(mcp_tools.Tier) == tuple(TIER_CHOICES)
    assert typing.get_args(mcp_tools.Kind) == KINDS
    assert typing.get_args(mcp_tools.Source) == SOURCES
    assert typing.get_args(mcp_tools.Keep) == KEEP


NOTE = Note("bank/a.md", "a", "첫째 줄\n둘째 줄\n셋째 줄\n")


@pytest.mark.parametrize(
    ("start", "end", "text"),
    [
        (None, None, "첫째 줄\n둘째 줄\n셋째 줄\n"),
        (2, 2, "둘째 줄\n"),
        (2, None, "둘째 줄\n셋째 줄\n"),
        (None, 1, "첫째 줄\n"),
        (3, 99, "셋째 줄\n"),  # an end past the last line means the last
    ],
)
def test_a_line_range_keeps_those_lines_as_the_file_has_them(start: int | None, end: int | None, text: str) -> None:
    assert mcp_tools.line_range(NOTE, start, end).text == text
    unterminated = Note("bank/b.md", None, "하나\n둘")
    assert mcp_tools.line_range(unterminated, 2, 2).text == "둘"


@pytest.mark.parametrize(("start", "end", "needle"), [(4, None, "has 3 lines"), (3, 2, "end comes before start")])
def test_a_line_range_outside_the_note_is_refused(start: int, end: int | None, needle: str) -> None:
    with pytest.raises(QueryError, match=needle):
        mcp_tools.line_range(NOTE, start, end)


# --- stdio: a spawned `memtree mcp` ----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])  # legacy: the initialize handshake today's clients use
def test_stdio_lists_every_tool_with_hints_and_schemas(sample_root: Path, tmp_path: Path, mode: str) -> None:
    async def session(client: Client) -> None:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(listed) == TOOLS
        for name, tool in listed.items():
            hints = tool.annotations
            assert hints is not None and hints.title and hints.open_world_hint is False, name
            assert hints.read_only_hint is (name in READ_ONLY), name
            assert hints.destructive_hint is (name in DESTRUCTIVE), name
            assert tool.description and len(tool.description) > 80, name
            assert tool.input_schema["type"] == "object", name
            assert tool.output_schema is not None and set(tool.output_schema["required"]) == schema.KEYS[SHAPE[name]]
        assert "Korean" in str(listed["search"].description)
        not_idempotent = {
            name for name, tool in listed.items() if tool.annotations and not tool.annotations.idempotent_hint
        }
        assert not_idempotent == {"log", "resolve_conflict", "forget", "undo"}
        params = {name: set(tool.input_schema.get("properties", {})) for name, tool in listed.items()}
        assert params["search"] == {"query", "k", "tier", "scope", "budget", "as_of"}
        assert params["context"] == {"query", "budget", "scope", "as_of"}
        assert params["get"] == {"ref", "start", "end"}
        assert {"text", "tag", "to", "tags", "kind", "scope", "source", "until"} <= params["add"]
        assert params["log"] == {"text", "source"} and params["resolve_conflict"] == {"id", "keep"}
        assert params["status"] == params["conflicts"] == params["banks"] == set()
        assert params["update"] == {"ref", "text"} and params["forget"] == {"ref", "reason"}
        assert params["history"] == {"target", "limit"} and params["undo"] == {"count", "dry_run"}
        assert params["ingest"] == {"turns", "dry_run"}
        search = listed["search"].input_schema["properties"]
        assert search["tier"]["enum"] == list(TIER_CHOICES)
        assert {"minimum": 1, "type": "integer"} in search["k"]["anyOf"]
        assert listed["resolve_conflict"].input_schema["required"] == ["id", "keep"]

    assert "Traceback" not in over_stdio(sample_root, tmp_path, session, mode)


def test_stdio_every_tool_answers_with_the_schema_objects(sample_root: Path, tmp_path: Path) -> None:
    fact = "memtree MCP 서버는 stdio와 HTTP를 모두 지원한다"

    async def session(client: Client) -> None:
        found = await call(client, "search", query="가치관이 뭐야?", k=3)
        assert found["terms"] == ["가치관"] and found["rejected"] is None
        assert 1 <= len(found["hits"]) <= 3 and "bank/identity/values.md" in {h["path"] for h in found["hits"]}
        assert all(set(h) == schema.OBJECTS["hit"] for h in found["hits"])  # with their text, as search --json

        ctx = await call(client, "context", query="크론 스케줄 설계", budget=400)
        assert ctx["budget"] == 400 and 0 < ctx["tokens"] <= 400 and ctx["sources"]

        whole = await call(client, "get", ref="identity/values")
        text = (sample_root / "bank/identity/values.md").read_text(encoding="utf-8")
        assert whole == {"path": "bank/identity/values.md", "node": "identity/values"} | {
            "keywords": whole["keywords"],
            "text": text,
            "target_line": None,
        }
        part = await call(client, "get", ref="bank/identity/values.md", start=2, end=3)
        assert part["text"] == "".join(text.splitlines(keepends=True)[1:3])

        added = await call(client, "add", text=fact, to="project/decisions", tags=["mcp"], kind="decision")
        assert added["decision"] == "created" and added["path"] == "bank/project/decisions.md"
        again = await call(client, "add", text=fact, to="project/decisions")  # why add is idempotent
        assert again["decision"] == "duplicate"
        hits = (await call(client, "search", query="MCP 서버 stdio HTTP"))["hits"]
        assert hits and added["entry_id"] in hits[0]["ids"], hits

        logged = await call(client, "log", text="MCP 테스트를 돌렸다")
        assert logged["path"].startswith("memory/") and logged["text"].endswith("MCP 테스트를 돌렸다")

        assert (await call(client, "conflicts")) == {"conflicts": []}
        await call(client, "add", text=REDIS_OLD, to="project/decisions")
        conflict = await call(client, "add", text=REDIS_NEW, to="project/decisions")
        assert conflict["decision"] == "conflict" and conflict["other"] == REDIS_OLD
        (open_,) = (await call(client, "conflicts"))["conflicts"]
        assert set(open_) == schema.OBJECTS["conflict"] and open_["id"] == conflict["conflict_id"]
        settled = await call(client, "resolve_conflict", id=open_["id"], keep="new")
        assert settled["keep"] == "new" and settled["outcome"].startswith("marked")
        assert (await call(client, "conflicts")) == {"conflicts": []}

        status = await call(client, "status")
        assert status["root"] == str(sample_root) and status["open_conflict_count"] == 0
        banks = (await call(client, "banks"))["banks"]
        assert {b["name"] for b in banks} == {"identity", "project", "technical"}
        assert all(set(b) == schema.OBJECTS["bank"] for b in banks)

        changed = await call(client, "update", ref=added["entry_id"], text=fact + " (2026-12 기준)")
        assert changed["entry_id"] == added["entry_id"] and changed["decision"] in ("updated", "created", "merged")
        forgotten = await call(client, "forget", ref=added["entry_id"], reason="MCP 테스트 정리")
        assert forgotten["entry_id"] == added["entry_id"] and forgotten["archive"].startswith("bank/_archive/")
        recent = await call(client, "history", limit=3)
        assert [c["command"] for c in recent["changes"]][:2] == ["forget", "update"]
        undone = await call(client, "undo")
        assert undone["undone"] and not undone["dry_run"]  # the forget is reverted
        turns = [
            {
                "conversation": "mcp-1",
                "role": "user",
                "text": "pytest가 ImportError로 실패해",
                "ts": "2024-05-08T13:50:00Z",
            },
            {
                "conversation": "mcp-1",
                "role": "assistant",
                "text": "pip install -e . 로 고쳤어",
                "ts": "2024-05-08T13:51:00Z",
            },
        ]
        ingested = await call(client, "ingest", turns=turns)
        assert ingested["turn_count"] == 2 and ingested["logged_count"] == 2
        assert (await call(client, "ingest", turns=turns))["known_count"] == 2  # sent again: nothing twice

    assert "Traceback" not in over_stdio(sample_root, tmp_path, session)
    note = (sample_root / "bank/project/decisions.md").read_text(encoding="utf-8")
    assert fact in note and REDIS_NEW in note  # the forget was undone
    from memtree.notes import entries

    old = next(e for e in entries.parse_entries(note) if e.content == REDIS_OLD)
    assert entries.is_retired(old.meta)  # resolve --keep new marked it superseded, its words kept


def test_stdio_memtree_errors_are_one_line_tool_errors(sample_root: Path, tmp_path: Path) -> None:
    async def session(client: Client) -> None:
        missing = error_line(await client.call_tool("get", {"ref": "identity/nope"}))
        assert "no node or note named 'identity/nope'" in missing
        assert "the query is empty" in error_line(await client.call_tool("search", {"query": "   "}))
        assert "c-unknown" in error_line(await client.call_tool("resolve_conflict", {"id": "c-unknown", "keep": "new"}))
        assert "past its end" in error_line(await client.call_tool("get", {"ref": "identity/values", "start": 9999}))
        assert "nothing to add" in error_line(await client.call_tool("add", {"text": " "}))
        refused = error_line(await client.call_tool("search", {"query": "가치관", "tier": "everything"}))
        assert refused.startswith("search: tier: Input should be 'default'"), refused  # the input schema's, one line
        # a NUL byte anywhere: one line, no traceback on stderr (checked below)
        assert "NUL byte" in error_line(await client.call_tool("get", {"ref": "bank/a\x00.md"}))
        assert "NUL byte" in error_line(await client.call_tool("add", {"text": "사실", "to": "bank/a\x00b.md"}))
        assert "NUL byte" in error_line(await client.call_tool("ingest", {"turns": [{"text": "a\x00"}]}))
        # the server keeps serving after every refusal
        assert (await call(client, "search", query="가치관"))["hits"]

    assert "Traceback" not in over_stdio(sample_root, tmp_path, session)


def test_stdio_notes_are_resources(sample_root: Path, tmp_path: Path) -> None:
    async def session(client: Client) -> None:
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["memtree://note/{+ref}"]
        read = await client.read_resource("memtree://note/identity/values")
        (content,) = read.contents
        assert getattr(content, "text", None) == (sample_root / "bank/identity/values.md").read_text(encoding="utf-8")
        with pytest.raises(MCPError, match="no node or note named"):
            await client.read_resource("memtree://note/identity/nope")

    over_stdio(sample_root, tmp_path, session)


def test_stdio_writes_nothing_but_the_protocol_and_ends_with_stdin(sample_root: Path, tmp_path: Path) -> None:
    params = stdio_params(sample_root, tmp_path)
    pipes: dict[str, Any] = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    proc = subprocess.Popen([params.command, *params.args], cwd=tmp_path, **pipes)
    stdin, stdout = proc.stdin, proc.stdout
    assert stdin is not None and stdout is not None
    guard = threading.Timer(TIMEOUT, proc.kill)  # a hung server ends the reads below instead of the test run
    guard.start()
    try:

        def send(message: dict[str, Any]) -> None:
            stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
            stdin.flush()

        def receive() -> dict[str, Any]:
            reply: dict[str, Any] = json.loads(stdout.readline())
            return reply

        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
        send({"id": 1, "method": "initialize", "params": hello})
        assert receive()["result"]["serverInfo"]["name"] == "memtree"
        send({"method": "notifications/initialized"})
        send({"id": 2, "method": "tools/call", "params": {"name": "search", "arguments": {"query": "크론"}}})
        reply = receive()
        assert reply["id"] == 2 and reply["result"]["structuredContent"]["hits"], reply
        stdin.close()
        assert proc.wait(timeout=TIMEOUT) == 0
        assert stdout.read() == b""  # nothing after the last answer
        assert proc.stderr is not None and b"Traceback" not in proc.stderr.read()
    finally:
        guard.cancel()
        proc.kill()
        proc.wait()
        stdout.close()
        if proc.stderr is not None:
            proc.stderr.close()


# --- the command ----------------------------------------------------------------------------------


def test_mcp_without_the_sdk_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch, sample_root: Path) -> None:
    from helpers import assert_one_line_error
    from typer.testing import CliRunner

    from memtree.cli.app import app

    for name in [n for n in sys.modules if n == "mcp" or n.startswith(("mcp.", "memtree.serve.mcp"))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "mcp", None)  # now `import mcp…` raises ModuleNotFoundError
    result = CliRunner().invoke(app, ["mcp", "--root", str(sample_root)])
    assert_one_line_error(result, "pip install 'memtree[mcp]'")
    assert result.stdout == ""


def test_mcp_without_a_root_is_one_line() -> None:
    from helpers import assert_one_line_error
    from typer.testing import CliRunner

    from memtree.cli.app import app

    assert_one_line_error(CliRunner().invoke(app, ["mcp"]), "tree-index.json")


# --- Streamable HTTP: http_app under uvicorn, at /mcp -----------------------------------------------


@pytest.fixture
def http_url(sample_root: Path) -> Iterator[str]:
    """``http_app`` routed at exactly /mcp in a Starlette host (as the daemon does), served by uvicorn."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.routing import Route

    endpoint, lifespan = http_app(MemTree(sample_root))

    @contextlib.asynccontextmanager
    async def host_lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with lifespan():
            yield

    host = Starlette(routes=[Route("/mcp", endpoint=endpoint)], lifespan=host_lifespan)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(host, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + TIMEOUT
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    finally:
        server.should_exit = True
        thread.join(TIMEOUT)
        sock.close()


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_http_serves_the_tools_at_exactly_mcp(http_url: str, sample_root: Path, mode: str) -> None:
    async def main() -> None:
        async with Client(http_url, mode=mode, read_timeout_seconds=TIMEOUT) as client:
            assert {tool.name for tool in (await client.list_tools()).tools} == TOOLS
            found = await call(client, "search", query="크론 스케줄", k=2)
            assert found["hits"] and "bank/technical/cron-design.md" in {h["path"] for h in found["hits"]}
            added = await call(client, "add", text=f"HTTP로 기억한 사실 ({mode})", to="project/rules")
            assert added["decision"] == "created"
            note = await call(client, "get", ref=added["path"])
            assert f"HTTP로 기억한 사실 ({mode})" in note["text"]
            assert (await call(client, "banks"))["banks"]
            assert "no node or note named" in error_line(await client.call_tool("get", {"ref": "nope"}))

    anyio.run(main)


FACTS = (
    "사용자는 아침 회의를 싫어한다",
    "the staging database lives in Frankfurt",
    "릴리스 노트는 영어로 쓴다",
    "Grafana dashboards are owned by the infra team",
)


def test_http_answers_concurrent_calls(http_url: str, sample_root: Path) -> None:
    async def main() -> None:
        async with Client(http_url, read_timeout_seconds=TIMEOUT) as client:
            decisions: list[str] = []

            async def remember(fact: str) -> None:
                decisions.append((await call(client, "add", text=fact, to="project/rules"))["decision"])

            async def search() -> None:
                assert (await call(client, "search", query="가치관 원칙"))["hits"]

            async with anyio.create_task_group() as tg:
                for fact in FACTS:
                    tg.start_soon(remember, fact)
                    for _ in range(3):
                        tg.start_soon(search)
            assert decisions == ["created"] * len(FACTS)

    anyio.run(main)
    note = (sample_root / "bank/project/rules.md").read_text(encoding="utf-8")
    assert all(fact in note for fact in FACTS)


@pytest.mark.parametrize("version", ["2025-06-18", "2026-07-28"])
def test_http_refuses_a_foreign_host(http_url: str, version: str) -> None:
    import http.client
    from urllib.parse import urlsplit

    url = urlsplit(http_url)
    conn = http.client.HTTPConnection(url.hostname or "", url.port, timeout=TIMEOUT)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
    headers = {"Host": "evil.example", "Content-Type": "application/json"}
    headers |= {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": version}
    conn.request("POST", url.path, body=body, headers=headers)
    response = conn.getresponse()
    assert response.status == 421, response.read()
    conn.close()


def test_arguments_are_checked_as_every_transport_checks_them_each_refusal_one_line(sample_root: Path) -> None:
    from memtree.serve.verbs import MAX_ARGUMENT_CHARS

    async def main() -> None:
        async with Client(build_server(MemTree(sample_root))) as client:
            unknown = error_line(await client.call_tool("search", {"query": "가치관", "limit": 3, "qurey": "x"}))
            assert unknown.startswith("search: unknown argument 'limit', 'qurey' (known: query, k, tier"), unknown
            long = "가" * (MAX_ARGUMENT_CHARS + 600_000)
            too_long = error_line(await client.call_tool("search", {"query": long}))
            assert too_long == "search: query has 1,600,000 characters; memtree takes at most 1,000,000", too_long
            assert "1,000,000" in error_line(await client.call_tool("add", {"text": "x", "tags": ["y" * 1_000_001]}))
            assert error_line(await client.call_tool("search", {"query": "x", "k": 0})) == (
                "search: k: Input should be greater than or equal to 1"
            )
            assert error_line(await client.call_tool("get", {})) == "get: missing argument 'ref'"
            with pytest.raises(MCPError, match="no node or note named"):
                await client.read_resource("memtree://note/.memtree/serve.token")

    anyio.run(main)


def test_every_output_property_has_a_json_type(sample_root: Path) -> None:
    for tool in mcp_tools.tools(MemTree(sample_root)):
        output = tool.output_schema
        assert output is not None
        untyped = [key for key, prop in output["properties"].items() if "type" not in prop]
        assert not untyped, (tool.name, untyped)


def test_the_server_answers_in_process_too(sample_root: Path) -> None:
    async def main() -> None:
        async with Client(build_server(MemTree(sample_root))) as client:  # the SDK's in-process transport
            assert (await call(client, "status"))["root"] == str(sample_root)

    anyio.run(main)
