"""memtree's MCP server for one memory root, over stdio (`memtree mcp`) or Streamable HTTP (``http_app``).

Built with the official SDK's high-level server (``mcp.server.mcpserver.MCPServer``, mcp ≥ 2.3). The
tools (memtree.serve.mcp_tools) answer with memtree.schema's objects as structured content, and every
note can be read as a resource, ``memtree://note/<node id or path>``. The root is the server's — chosen
by ``--root``, $MEMTREE_ROOT or the nearest tree-index.json, as every command chooses it — never a
parameter a model has to guess.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from memtree import __version__
from memtree.api import MemTree
from memtree.errors import MemtreeError
from memtree.serve import verbs
from memtree.serve.mcp_tools import one_line, tools

__all__ = ["build_server", "http_app", "serve_stdio"]

INSTRUCTIONS = """memtree is the user's long-term memory: Markdown notes in one folder, searched with a
Korean-aware engine (Korean, English and mixed text all work). Before answering about the user, their
projects, decisions or preferences, call `context` (a ready block) or `search` (ranked passages), and
`get` a note for more. When you learn something worth keeping, call `add` (one fact, preference, entity
or decision a call); for events and progress, `log`. `status`, `banks` and `conflicts` describe the
memory; settle a conflict with `resolve_conflict` only after the user says which entry holds."""

_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
LOOPBACK_ONLY = TransportSecuritySettings(
    enable_dns_rebinding_protection=True,
    allowed_hosts=[*_LOOPBACK, *(f"{host}:*" for host in _LOOPBACK)],
    allowed_origins=[f"http://{host}{port}" for host in _LOOPBACK for port in ("", ":*")],
)
"""The SDK's own Host/Origin check on HTTP: loopback names only (the daemon checks Host and token first)."""


def build_server(mt: MemTree) -> MCPServer[Any]:
    """An MCP server over ``mt``: memtree's tools and its notes as ``memtree://note/…`` resources."""
    # Why WARNING: the SDK configures logging (on stderr) at construction; INFO logs every request
    server: MCPServer[Any] = MCPServer(
        "memtree", version=__version__, instructions=INSTRUCTIONS, tools=tools(mt), log_level="WARNING"
    )

    @server.resource(
        "memtree://note/{+ref}",
        name="note",
        title="A memory note",
        description="One note of the memory, whole: memtree://note/ then a node id (identity/values) "
        "or a path inside the memory (bank/identity/values.md).",
        mime_type="text/markdown",
    )
    def note(ref: str) -> str:
        problem = verbs.argument_problem("note", "ref", ref)
        if problem:
            raise ResourceNotFoundError(problem)
        try:
            return mt.get(ref).text
        except (MemtreeError, ValueError) as exc:
            raise ResourceNotFoundError(one_line(exc)) from None

    return server


def serve_stdio(mt: MemTree) -> None:
    """Serve ``mt`` over MCP's stdio transport until the client closes stdin.

    The SDK points fd 1 at stderr while it serves, so nothing but the protocol reaches stdout.
    """
    build_server(mt).run("stdio")


def http_app(mt: MemTree) -> tuple[ASGIApp, Callable[[], contextlib.AbstractAsyncContextManager[None]]]:
    """The Streamable HTTP transport over ``mt``: an ASGI app and the lifespan its host must enter.

    Path contract: the app routes nothing itself — it answers MCP on whatever path reaches it. Give
    it an exact route, ``Route("/mcp", endpoint=app)``, and the endpoint is exactly ``/mcp``. (A
    ``Mount("/mcp", app)`` would serve ``/mcp/`` and answer ``/mcp`` with a redirect.)

    Lifespan: enter ``lifespan()`` around serving (``async with lifespan(): …``, e.g. inside the
    host Starlette app's own lifespan — Starlette runs no routed app's lifespan). It starts the SDK's
    session manager; it can be entered once per ``http_app`` call.

    Stateless, answering plain JSON. Why, for a daemon several agents share: every tool is one
    request and one answer (no sampling, elicitation or progress streams), so a session would only
    add per-client state and tasks in the daemon, a 404 for every client after a restart (its session
    id is gone), and open GET streams that keep an idle daemon from ever timing out. Each POST is
    served on its own; MemTree's lock orders the calls.
    """
    server = build_server(mt)
    # Why build the SDK's Starlette app and keep only its manager: that is the public way to get
    # one (MCPServer.session_manager); the app itself routes only its own /mcp, which a host's
    # /mcp would turn into /mcp/mcp.
    server.streamable_http_app(stateless_http=True, json_response=True, transport_security=LOOPBACK_ONLY)
    manager = server.session_manager
    return _Endpoint(manager), manager.run


class _Endpoint:
    """ASGI: every HTTP request, at any path, to the SDK's Streamable HTTP session manager."""

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self.manager = manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            raise RuntimeError("memtree's MCP endpoint serves HTTP only; enter the lifespan http_app returned")
        await self.manager.handle_request(scope, receive, send)
