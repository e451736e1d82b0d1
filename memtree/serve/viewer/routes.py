"""The memory viewer's routes on the daemon's HTTP server: one static page under ``/view/`` and its API.

``memtree view`` (memtree.cli.view) asks ``POST /view/api/code`` — with the daemon's bearer token, as
every other HTTP client — for a one-time code, and opens ``http://127.0.0.1:PORT/view/#code=…``.
A URL fragment is never sent to a server nor written to its logs; the page reads it, drops it from
the address bar, and trades it (``POST /view/api/session``, once, within ``CODE_TTL_S``) for a
session cookie: random, ``HttpOnly`` (no script reads it), ``SameSite=Strict`` (no other site's
page sends it), ``Path=/view``, named by the port (two roots' daemons keep apart). The token itself
never reaches the browser.

Every ``/view`` request passes the Host check the rest of the server has (DNS rebinding); every API
request is refused when it comes from another origin: a ``Sec-Fetch-Site`` other than
``same-origin``/``none`` or an ``Origin`` other than the page's own is a 403, and a call must carry
the ``X-Memtree-View`` header, which no cross-origin page can add without a CORS preflight this
server never answers (it sends no CORS header at all). The page's Content-Security-Policy allows
its own script and style only: no inline script, no other origin, no frame. The page renders every
piece of memory through ``textContent`` (memtree/serve/viewer/app.js), never as HTML.

A call is ``POST /view/api/call/<verb>`` with the verb's JSON arguments, answered by the daemon's
dispatcher exactly as ``POST /v1/<verb>`` is (memtree.serve.verbs), for the verbs in ``VIEW_VERBS``.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memtree import schema

Answer = Callable[[str, bytes], tuple[int, bytes]]
STATIC_DIR = Path(__file__).parent  # the page sits beside this module (index.html, app.js, app.css)
STATIC = {"": ("index.html", "text/html; charset=utf-8"), "app.js": ("app.js", "text/javascript; charset=utf-8")}
STATIC |= {"app.css": ("app.css", "text/css; charset=utf-8")}
CODE_TTL_S = 120.0
"""How long a one-time code from ``memtree view`` can be traded for a session."""
MAX_SESSIONS = 64
"""Sessions kept at once (the oldest goes first): each `memtree view` that is opened makes one."""
MAX_BODY_BYTES = 16 * 1024 * 1024  # memtree.serve.client.MAX_REQUEST_BYTES
VIEW_HEADER = "x-memtree-view"
VIEW_VERBS = frozenset(
    "explain search get add update forget undo history status conflicts resolve_conflict banks set_bank "
    "export import decay entries tree version links".split()
)
"""The verbs the page may call (nothing that runs a command line, nor consolidate)."""
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SAFE_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
    "cache-control": "no-store",
}


class Viewer:
    """ASGI: ``/view`` and below go to the viewer's routes; everything else to ``inner`` (the guarded API)."""

    def __init__(self, inner: Any, answer: Answer, hosts: frozenset[str], secret: str) -> None:
        self.inner, self.answer, self.hosts, self.secret = inner, answer, hosts, secret.encode()
        self.codes: dict[str, float] = {}  # one-time code → when it expires (monotonic)
        self.sessions: dict[str, float] = {}  # session id → when made
        self.app = self._routes()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path == "/view" or path.startswith("/view/"):
            await self.app(scope, receive, send)
        else:
            await self.inner(scope, receive, send)

    def _routes(self) -> Any:
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import RedirectResponse, Response
        from starlette.routing import Route

        def refuse(status: int, message: str, kind: str) -> Response:
            body = schema.dumps({"error": message, "kind": kind}, indent=False)
            return Response(body, status, headers=SAFE_HEADERS, media_type="application/json")

        def checked(request: Request, api: bool) -> Response | None:
            host = request.headers.get("host", "").lower()
            if host not in self.hosts:
                return refuse(403, f"Host {host[:60]!r} refused", "Forbidden")
            if not api:
                return None
            site = request.headers.get("sec-fetch-site")
            if site is not None and site not in ("same-origin", "none"):
                return refuse(403, f"cross-origin request refused (Sec-Fetch-Site: {site[:20]})", "Forbidden")
            origin = request.headers.get("origin")
            if origin is not None and origin != f"http://{host}":
                return refuse(403, f"cross-origin request refused (Origin: {origin[:60]})", "Forbidden")
            return None

        async def body_of(request: Request) -> bytes | None:
            body = bytearray()
            async for chunk in request.stream():
                body += chunk
                if len(body) > MAX_BODY_BYTES:
                    return None
            return bytes(body)

        def cookie_name(request: Request) -> str:
            port = request.url.port or (request.scope.get("server") or ("", 0))[1]
            return f"memtree_view_{port}"

        async def static(request: Request) -> Response:
            refused = checked(request, api=False)
            if refused is not None:
                return refused
            name, media = STATIC[request.path_params.get("name", "")]
            return Response((STATIC_DIR / name).read_bytes(), headers=SAFE_HEADERS, media_type=media)

        async def to_page(request: Request) -> Response:
            return checked(request, api=False) or RedirectResponse("/view/", headers=SAFE_HEADERS)

        async def code(request: Request) -> Response:
            refused = checked(request, api=True)
            if refused is not None:
                return refused
            scheme, _, given = request.headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not secrets.compare_digest(given.strip().encode(), self.secret):
                return refuse(401, "missing or wrong bearer token (.memtree/serve.token)", "Unauthorized")
            now = time.monotonic()
            self.codes = {c: until for c, until in self.codes.items() if until > now}
            made = secrets.token_urlsafe(24)
            self.codes[made] = now + CODE_TTL_S
            body = schema.dumps({"code": made, "expires_in_s": CODE_TTL_S}, indent=False)
            return Response(body, headers=SAFE_HEADERS, media_type="application/json")

        async def session(request: Request) -> Response:
            refused = checked(request, api=True)
            if refused is not None:
                return refused
            import orjson

            body = await body_of(request)
            try:
                given = orjson.loads(body or b"{}").get("code")
            except (orjson.JSONDecodeError, AttributeError):
                given = None
            until = self.codes.pop(given, 0.0) if isinstance(given, str) else 0.0
            if until <= time.monotonic():
                return refuse(401, "this link was used or has expired: run `memtree view` again", "Unauthorized")
            sid = secrets.token_urlsafe(32)
            self.sessions[sid] = time.monotonic()
            while len(self.sessions) > MAX_SESSIONS:
                self.sessions.pop(next(iter(self.sessions)))
            response = Response(b'{"ok":true}\n', headers=SAFE_HEADERS, media_type="application/json")
            response.set_cookie(cookie_name(request), sid, path="/view", httponly=True, samesite="strict")
            return response

        async def call(request: Request) -> Response:
            refused = checked(request, api=True)
            if refused is not None:
                return refused
            if request.headers.get(VIEW_HEADER) != "1":
                return refuse(403, f"a viewer call carries the {VIEW_HEADER} header", "Forbidden")
            sid = request.cookies.get(cookie_name(request), "")
            if not any(secrets.compare_digest(sid, known) for known in self.sessions):
                return refuse(401, "no viewer session: open the viewer with `memtree view`", "Unauthorized")
            verb = request.path_params["verb"]
            if verb not in VIEW_VERBS:
                return refuse(404, f"the viewer has no verb {verb[:40]!r}", "UnknownVerb")
            body = await body_of(request)
            if body is None:
                return refuse(413, "request body over 16 MiB: refused", "BadRequest")
            from starlette.concurrency import run_in_threadpool

            status, data = await run_in_threadpool(self.answer, verb, body)
            return Response(data, status, headers=SAFE_HEADERS, media_type="application/json")

        routes = [
            Route("/view", to_page, methods=["GET"]),
            Route("/view/", static, methods=["GET"]),
            Route("/view/{name:str}", static, methods=["GET"]),
            Route("/view/api/code", code, methods=["POST"]),
            Route("/view/api/session", session, methods=["POST"]),
            Route("/view/api/call/{verb:str}", call, methods=["POST"]),
        ]
        app = Starlette(routes=routes)

        async def guarded(scope: Any, receive: Any, send: Any) -> None:
            name = scope.get("path", "")[len("/view/") :]
            if scope.get("method") == "GET" and "/" not in name and name not in STATIC and scope["path"] != "/view":
                await refuse(404, "not found", "NotFound")(scope, receive, send)
                return
            await app(scope, receive, send)

        return guarded


def mount(inner: Any, answer: Answer, hosts: frozenset[str], secret: str) -> Any:
    """The server's app with the viewer in front of it (memtree.serve.http calls this)."""
    return Viewer(inner, answer, hosts, secret)
