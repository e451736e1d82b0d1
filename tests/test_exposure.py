"""What memtree serves to a reader: the Markdown notes of its tiers, and nothing else (issue 28, item 1).

Files are planted everywhere under a root — the daemon's token and log, ``.git/config``,
``memtree.yaml``, hidden files and folders, files that are not Markdown in the tiers, notes outside
the tiers, and symlinks from the tiers to each of them and out of the root — and every one is asked
for through every read path: the CLI, ``/v1``, the viewer's API, MCP's tools and resources over
``/mcp``, and Claude's memory tool. Only the tier note comes back; no planted byte, nor the token.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import write_root

from memtree.api import MemTree

SECRET = "zqxsecret"
"""Every planted file holds this word; no answer of any read path may."""
SERVED = "zqxserved"
QUERY = "bluefox"
"""A word of every planted file, to search for (the query itself is echoed back)."""
PLANTED = {
    ".memtree/planted.md": "# token-like\n\n- zqxsecret bluefox one\n",
    ".git/config": "[core]\n\tbare = false\n# zqxsecret bluefox two\n",
    ".git/planted.md": "- zqxsecret bluefox three\n",
    "memtree.yaml": "# zqxsecret bluefox four\n",
    ".planted.md": "- zqxsecret bluefox five\n",
    "planted.md": "- zqxsecret bluefox six\n",
    "other/planted.md": "- zqxsecret bluefox seven\n",
    "bank/.planted.md": "- zqxsecret bluefox eight\n",
    "bank/.hidden/planted.md": "- zqxsecret bluefox nine\n",
    "bank/planted.txt": "zqxsecret bluefox ten\n",
    "bank/planted.pem": "zqxsecret bluefox eleven\n",
    "memory/planted.json": '{"zqxsecret bluefox": 12}\n',
    "recall/planted.md~": "- zqxsecret bluefox thirteen\n",
    "bank/.planted.md.swp": "zqxsecret bluefox fourteen\n",
}
LINKS = {
    "bank/planted-token.md": "../.memtree/serve.token",
    "bank/planted-log.md": "../.memtree/serve.log",
    "bank/planted-git.md": "../.git/config",
    "bank/planted-yaml.md": "../memtree.yaml",
    "bank/planted-hidden.md": "../.planted.md",
    "bank/planted-dir": "../.git",
}
"""Symlinks from the tiers to what is no note (and one out of the root, added by the fixture). A link to a
Markdown note elsewhere in the root (``bank/shared → ../shared``) is the user's choice and is served."""
REFS = [
    *PLANTED,
    *LINKS,
    "bank/planted-out.md",
    ".memtree/serve.token",
    ".memtree/serve.log",
    "bank/planted-dir/planted.md",
    "bank/../.memtree/serve.token",
    "./memtree.yaml",
    "tree-index.json",
    "bank",
]


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    base = tmp_path_factory.mktemp("exposure")
    root = write_root(base / "root", {"bank/real/fact.md": f"# 사실\n\n- {SERVED} 진짜 노트의 사실\n"})
    for rel, text in PLANTED.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    (base / "outside.md").write_text(f"- {SECRET} {QUERY} outside\n", encoding="utf-8")
    (root / "bank/planted-out.md").symlink_to(base / "outside.md")
    for rel, target in LINKS.items():
        (root / rel).symlink_to(target)
    MemTree(root).index()
    yield root


def assert_clean(where: str, answer: object, token: str = "") -> None:
    """No planted byte (nor the daemon's token) in ``answer``."""
    text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False, default=str)
    assert SECRET not in text, (where, text[:400])
    assert not token or token not in text, (where, "the bearer token was served")


def test_the_library_and_the_cli_serve_only_tier_notes(planted: Path) -> None:
    from typer.testing import CliRunner

    from memtree.cli.app import app

    mt = MemTree(planted)
    assert SERVED in mt.get("bank/real/fact.md").text
    runner = CliRunner()
    env = {"MEMTREE_NO_DAEMON": "1"}
    for ref in REFS:
        result = runner.invoke(app, ["get", "--root", str(planted), ref], env=env)
        assert result.exit_code == 2, (ref, result.output)
        assert_clean(f"get {ref}", result.output)
    for tier in ("all", "default"):
        found = runner.invoke(app, ["search", "--root", str(planted), "--tier", tier, "--json", QUERY], env=env)
        assert_clean(f"search --tier {tier}", found.output)
        ctx = runner.invoke(app, ["context", "--root", str(planted), "--tier", tier, QUERY], env=env)
        assert_clean(f"context --tier {tier}", ctx.output)
    exported = runner.invoke(app, ["export", "--root", str(planted)], env=env)
    assert exported.exit_code == 0 and SERVED in exported.output
    assert_clean("export", exported.output)


def test_claudes_memory_tool_shows_only_tier_notes(planted: Path) -> None:
    pytest.importorskip("anthropic", reason="the memory tool needs the anthropic extra")
    from anthropic.lib.tools import ToolError
    from anthropic.types.beta import BetaMemoryTool20250818ViewCommand

    from memtree.serve.claude_memory.tool import MemtreeMemoryTool

    tool = MemtreeMemoryTool(planted)

    def view(path: str) -> str:
        return tool.view(BetaMemoryTool20250818ViewCommand(command="view", path=path))

    assert SERVED in view("/memories/bank/real/fact.md")
    for folder in ("/memories", "/memories/bank", "/memories/recall", "/memories/memory"):
        listing = view(folder)
        assert "planted" not in listing, listing  # not even a name
    for ref in REFS:
        try:
            shown = view(f"/memories/{ref}")
        except ToolError as exc:
            shown = str(exc)
        if ref == "bank":
            continue  # the folder's listing, checked above
        assert_clean(f"view {ref}", shown)
        assert "Here's the content" not in shown, (ref, shown)


# --- the daemon: /v1, the viewer's API, /mcp --------------------------------------------------------


@pytest.fixture(scope="module")
def daemon(planted: Path) -> Iterator[Any]:
    pytest.importorskip("starlette", reason="HTTP needs the mcp extra")
    from test_viewer import Served, stop

    served = Served(planted)
    yield served
    stop(served.pid)


def test_the_daemons_http_api_and_the_viewer_serve_only_tier_notes(daemon: Any) -> None:
    auth = {"Authorization": f"Bearer {daemon.token}", "Content-Type": "application/json"}
    cookie = daemon.session()
    status, _, raw = daemon.request("/v1/get", {"ref": "bank/real/fact.md"}, auth)
    assert status == 200 and SERVED in raw.decode()
    for ref in REFS:
        status, _, raw = daemon.request("/v1/get", {"ref": ref}, auth)
        assert status in (400, 422), (ref, status)
        assert_clean(f"/v1/get {ref}", raw.decode(), daemon.token)
        status, shown = daemon.call("get", {"ref": ref}, cookie)
        assert status in (400, 422), (ref, status)
        assert_clean(f"viewer get {ref}", shown, daemon.token)
    for verb, args in (
        ("search", {"query": QUERY, "tier": "all"}),
        ("context", {"query": QUERY}),
        ("export", {}),
        ("entries", {}),
        ("explain", {"query": QUERY, "tier": "all"}),
    ):
        _, _, raw = daemon.request(f"/v1/{verb}", args, auth)
        assert_clean(f"/v1/{verb}", raw.decode(), daemon.token)
        assert_clean(f"viewer {verb}", daemon.call(verb, args, cookie)[1], daemon.token)


def test_mcp_tools_and_resources_serve_only_tier_notes(daemon: Any) -> None:
    pytest.importorskip("mcp.server.mcpserver", reason="MCP needs the mcp extra")
    import anyio
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp.shared.exceptions import MCPError

    async def main() -> None:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {daemon.token}"})
        async with http, Client(streamable_http_client(f"{daemon.base}/mcp", http_client=http)) as client:
            good = await client.call_tool("get", {"ref": "bank/real/fact.md"})
            assert not good.is_error and SERVED in json.dumps(good.structured_content, ensure_ascii=False)
            for ref in REFS:
                got = await client.call_tool("get", {"ref": ref})
                assert got.is_error, ref
                assert_clean(f"mcp get {ref}", [c.model_dump() for c in got.content], daemon.token)
                try:
                    read = await client.read_resource(f"memtree://note/{ref}")
                    shown: object = [c.model_dump() for c in read.contents]
                except MCPError as exc:
                    shown = str(exc)
                assert_clean(f"resource {ref}", shown, daemon.token)
            for tool, args in (("search", {"query": QUERY, "tier": "all"}), ("context", {"query": QUERY})):
                got = await client.call_tool(tool, args)
                assert_clean(f"mcp {tool}", [c.model_dump() for c in got.content], daemon.token)

    anyio.run(main)


def test_no_secret_name_is_ever_a_served_path(planted: Path) -> None:
    from memtree.notes import store

    assert store.served(planted, "bank/real/fact.md") == Path(os.path.realpath(planted / "bank/real/fact.md"))
    assert all(store.served(planted, ref) is None for ref in REFS)
    assert store.served(planted, "bank/real/\x00.md") is None
