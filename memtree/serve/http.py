"""`memtree serve --http 127.0.0.1:PORT`: the JSON API (``POST /v1/<verb>``) and MCP (``/mcp``) over loopback HTTP.

Three guards stand before every request, MCP's included: the listener binds a loopback address
only; a request whose Host header is not that address (or ``localhost``) at that port is refused
(403: a web page's DNS-rebinding trick cannot reach it); and it must carry ``Authorization:
Bearer <token>`` (401 otherwise; 403 on ``/mcp``, so that MCP clients show memtree's line rather
than start an OAuth flow), the token being made with ``secrets`` and kept, 0600, in
``.memtree/serve.token`` — printed nowhere else. Bodies over the request cap get 413.

starlette and uvicorn come with the ``mcp`` extra (``pip install 'memtree[mcp]'``); ``/mcp`` is
memtree.serve.mcp's Streamable HTTP app, its lifespan entered in this app's own, or a 501 when
that module cannot be imported. uvicorn runs in a thread of the daemon, on a socket bound here.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import secrets
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from memtree import schema
from memtree.errors import MemtreeError
from memtree.serve import client

TOKEN_BYTES = 32
"""Random bytes in a token (``secrets.token_urlsafe``: 43 characters)."""
START_TIMEOUT_S = 10.0
MCP_PATH = "/mcp"
Answer = Callable[[str, bytes], tuple[int, bytes]]
"""The daemon's side: (verb, request body) → (HTTP status, JSON answer line)."""


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) → (host, port); MemtreeError unless HOST is loopback."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise MemtreeError(f"--http {text!r}: give a loopback address and port, e.g. --http 127.0.0.1:8765")
    if host == "localhost":
        host = "127.0.0.1"
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise MemtreeError(
            f"--http {text!r}: memtree serves HTTP on a loopback address only (127.0.0.1 or ::1), never {host or 'all'}"
        )
    return host, int(port)


def missing_extra() -> str | None:
    """Why --http cannot run here (the mcp extra is not installed), or None."""
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        return "--http needs the mcp extra: pip install 'memtree[mcp]'"
    return None


def token(state_dir: Path) -> str:
    """The bearer token in ``serve.token``: kept when the file is this user's alone, else made anew (0600)."""
    path = state_dir / client.TOKEN_FILE
    with contextlib.suppress(OSError, UnicodeDecodeError):
        st = path.lstat()
        found = path.read_text(encoding="ascii").strip()
        if st.st_uid == os.getuid() and not st.st_mode & 0o077 and len(found) >= 32 and path.is_file():
            return found
    made = secrets.token_urlsafe(TOKEN_BYTES)
    tmp = state_dir / f".{client.TOKEN_FILE}.{os.getpid()}.tmp"
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(made + "\n")
    os.replace(tmp, path)
    return made


class Guard:
    """ASGI middleware: loopback Host header and bearer token on every HTTP request, before anything else."""

    def __init__(self, app: Any, hosts: frozenset[str], token: str) -> None:
        self.app, self.hosts, self.token = app, hosts, token.encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1").lower()
        if host not in self.hosts:
            why = f"Host {host[:60]!r} refused: this server answers only {sorted(self.hosts)[0]}"
            await _refuse(send, 403, why, "Forbidden")
            return
        scheme, _, given = headers.get(b"authorization", b"").partition(b" ")
        if scheme.lower() != b"bearer" or not secrets.compare_digest(given.strip(), self.token):
            problem = "missing" if not given.strip() else "wrong"
            why = (
                f"memtree: {problem} bearer token: send Authorization: Bearer <the token in "
                f"{client.STATE_DIR}/serve.token> (memtree uses no OAuth)"
            )
            # Why 403 without a challenge on /mcp: on a 401 the MCP Inspector and Claude Code start
            # OAuth discovery and show its failure ("Interactive OAuth requires a TTY"), never this line;
            # a 403's body they show as it is. /v1 keeps HTTP's own 401 and its Bearer challenge.
            if scope.get("path", "").rstrip("/") == MCP_PATH:
                await _refuse(send, 403, why, "Unauthorized")
            else:
                await _refuse(send, 401, why, "Unauthorized", ((b"www-authenticate", b"Bearer"),))
            return
        await self.app(scope, receive, send)


async def _refuse(send: Any, status: int, message: str, kind: str, extra: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    body = schema.dumps({"error": message, "kind": kind}, indent=False)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *extra]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def build_app(answer: Answer, mt: Any, hosts: frozenset[str], secret: str, log: Callable[[str], None]) -> Any:
    """The Starlette app: /v1/<verb>, /mcp (or its 501), behind the Guard."""
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    async def v1(request: Request) -> Response:
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > client.MAX_REQUEST_BYTES:
                mib = client.MAX_REQUEST_BYTES // (1024 * 1024)
                doc = {"error": f"request body over {mib} MiB: refused", "kind": "BadRequest"}
                return Response(schema.dumps(doc, indent=False), 413, media_type="application/json")
        status, data = await run_in_threadpool(answer, request.path_params["verb"], bytes(body))
        return Response(data, status, media_type="application/json")

    mcp_app: Any = None
    mcp_lifespan: Any = None
    try:
        from memtree.serve.mcp import http_app
    except ImportError as exc:
        log(f"warning: /mcp is off: memtree.serve.mcp cannot be imported ({exc})")
    else:
        mcp_app, mcp_lifespan = http_app(mt)

    async def no_mcp(request: Request) -> Response:
        doc = {"error": "MCP is not available in this install (memtree.serve.mcp)", "kind": "NotImplemented"}
        return Response(schema.dumps(doc, indent=False), 501, media_type="application/json")

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        if mcp_lifespan is None:
            yield
            return
        async with mcp_lifespan():
            yield

    routes = [
        Route("/v1/{verb}", v1, methods=["POST"]),
        Route(MCP_PATH, mcp_app) if mcp_app is not None else Route(MCP_PATH, no_mcp, methods=["GET", "POST", "DELETE"]),
    ]
    guarded = Guard(Starlette(routes=routes, lifespan=lifespan), hosts, secret)
    # --- viewer hook (issue 15): /view/… in front, with its own guards (memtree.serve.viewer) ---
    from memtree.serve.viewer import routes as viewer

    return viewer.mount(guarded, answer, hosts, secret)


class HttpServer:
    """uvicorn in a thread on a loopback socket bound here (port 0: any free one, named in ``address``)."""

    def __init__(self, host: str, port: int) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            sock.close()
            raise MemtreeError(f"--http {host}:{port}: cannot listen there ({exc.strerror or exc})") from None
        sock.listen(128)
        self.sock = sock
        self.port = sock.getsockname()[1]
        self.address = f"[{host}]:{self.port}" if family == socket.AF_INET6 else f"{host}:{self.port}"
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def hosts(self) -> frozenset[str]:
        """The Host header values a request may carry."""
        name = self.address.rpartition(":")[0]
        return frozenset({self.address, name, f"localhost:{self.port}", "localhost"})

    def start(self, app: Any) -> None:
        """Serve ``app`` in a thread; returns once uvicorn (and the app's lifespan) has started."""
        import uvicorn

        config = uvicorn.Config(
            app, lifespan="on", log_config=None, access_log=False, timeout_graceful_shutdown=1, log_level="warning"
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self.sock]}, name="memtree-http", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise MemtreeError(f"the HTTP server on {self.address} did not start (see the log above)")
            time.sleep(0.01)

    def stop(self) -> None:
        """Stop accepting and let uvicorn finish (at most its one-second graceful shutdown)."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=3)
        with contextlib.suppress(OSError):
            self.sock.close()
