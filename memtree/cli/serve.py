"""`memtree serve`, and how the daemon runs a forwarded command line: the very same typer command, captured.

The console script sends the daemon its command line (memtree.serve.forward); the daemon hands it
to :func:`run_forwarded`, which runs the typer app in the daemon's process with the caller's
arguments, stdin, terminal (is it one, its size) and the variables that shape output, the
daemon's warm MemTree opened by every command (memtree.cli.warm), and stdout and stderr captured
in the order written. So a command answers byte for byte as it would in-process; a command line
typer refuses (a usage error) is sent back to run in-process, where it is worded.
One command runs at a time: the standard streams, ``sys.argv`` and those variables are the
process's own while it runs (a command takes about a millisecond).
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer
import typer.main

from memtree import schema
from memtree.cli import fast
from memtree.cli.common import RootOption, _errors, _fail, app
from memtree.cli.render import printable
from memtree.cli.warm import serving
from memtree.serve import client, forward

if TYPE_CHECKING:
    from memtree.api import MemTree


@app.command()
@_errors
def serve(
    root: RootOption = None,
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            metavar="127.0.0.1:PORT",
            help="Also serve the JSON API (POST /v1/<verb>) and MCP (/mcp) over HTTP on this loopback address; "
            "every request needs the bearer token in .memtree/serve.token (pip install 'memtree\\[mcp]').",
            show_default=False,
        ),
    ] = None,
    idle_timeout: Annotated[
        float | None,
        typer.Option(
            "--idle-timeout",
            metavar="SECONDS",
            help="Exit after this long without a request; 0 = never (default: serve.idle_timeout_s, 300).",
            show_default=False,
        ),
    ] = None,
    json: Annotated[
        bool,
        typer.Option("--json", help='Log one JSON object a line on stderr: {"time" (ISO 8601), "level", "message"}.'),
    ] = False,
) -> None:
    """Keep this root's memory warm in one process that CLI calls and programs share, until idle or stopped.

    Listens on .memtree/serve.sock (yours alone) and records itself in .memtree/serve.json; `search`,
    `context`, `get`, `add`, `status` and the other commands that name no local file run in it.
    It watches the root, consolidates every maintenance.consolidate_every_h, and stops cleanly on
    Ctrl-C or SIGTERM. A second `serve` for the same root says so and exits 0.
    """
    from memtree.api import MemTree
    from memtree.serve.daemon import SAFETY_REFRESH_S, AlreadyServing, Daemon

    log = _logger(json)
    address = None
    if http is not None:
        from memtree.serve.http import missing_extra, parse_address

        address = parse_address(http)
        missing = missing_extra()
        if missing:
            raise _fail(f"error: {missing}")
    if idle_timeout is not None and not idle_timeout >= 0:
        raise _fail("error: --idle-timeout must be 0 (never) or a number of seconds")
    mt = MemTree(root, refresh_interval=SAFETY_REFRESH_S)
    idle = mt.settings.serve.idle_timeout_s if idle_timeout is None else idle_timeout
    daemon = Daemon(mt, log, idle, run_cli=run_forwarded)
    warm_cli()
    try:
        with _stopping_on_signals(daemon):
            daemon.serve(address)
    except AlreadyServing as exc:
        log(f"{exc}: nothing to do")


def _logger(json: bool) -> Callable[[str], None]:
    """The daemon's log on stderr, as `memtree watch` logs: ``HH:MM:SS line``, or a JSON object a line."""
    # Why keep this stream: the daemon swaps sys.stderr while it runs a forwarded command
    stream = sys.stderr
    lock = threading.Lock()

    def log(line: str) -> None:
        now = datetime.now().astimezone()
        if json:
            text = schema.dumps(schema.watch_event(line, now), indent=False).decode()
        else:
            text = printable(f"{now:%H:%M:%S} {line}") + "\n"
        with lock, contextlib.suppress(OSError, ValueError):  # a closed stderr must not stop the daemon
            stream.write(text)
            stream.flush()

    return log


@contextlib.contextmanager
def _stopping_on_signals(daemon: Any) -> Iterator[None]:
    """SIGINT and SIGTERM stop the daemon cleanly; a second one interrupts at once (as `memtree watch`)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    asked: list[int] = []

    def handle(signum: int, frame: object) -> None:
        if asked:
            raise KeyboardInterrupt
        asked.append(signum)
        daemon.stop(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)


# --- running a forwarded command ------------------------------------------------------------------


class _Sink(io.RawIOBase):
    """The bytes end of a captured stream: every write kept, in order, with its stream's number."""

    def __init__(self, fd: int, chunks: list[tuple[int, bytes]], tty: bool) -> None:
        super().__init__()
        self.fd, self.chunks, self.tty = fd, chunks, tty

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.chunks.append((self.fd, bytes(data)))
        return len(data)

    def isatty(self) -> bool:
        return self.tty


def run_forwarded(mt: MemTree, request: dict[str, Any]) -> dict[str, Any]:
    """Run a forwarded command line against ``mt`` as the console script would; its output and exit code."""
    argv: list[str] = request["argv"]
    env: dict[str, Any] = request["env"] if isinstance(request.get("env"), dict) else {}
    stdin = request.get("stdin")
    chunks: list[tuple[int, bytes]] = []
    tty = bool(request.get("tty"))
    out = io.TextIOWrapper(_Sink(1, chunks, tty), encoding="utf-8", write_through=True)  # type: ignore[type-var]
    err = io.TextIOWrapper(_Sink(2, chunks, False), encoding="utf-8", errors="backslashreplace", write_through=True)  # type: ignore[type-var]
    data = stdin.encode("latin-1") if isinstance(stdin, str) else b""
    given = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
    with _streams(out, err, given, ["memtree", *argv]), _environment(env, str(mt.root)), serving(mt):
        try:
            code = _run_main(argv)
        except _StoppedEarly:
            return {"fallback": True}
        out.flush()
        err.flush()
    merged: list[list[Any]] = []
    for fd, piece in chunks:
        if merged and merged[-1][0] == fd:
            merged[-1][1] += piece
        else:
            merged.append([fd, piece])
    return {"output": [[fd, piece.decode("latin-1")] for fd, piece in merged], "code": code}


@functools.cache
def _command() -> Any:
    """The click command typer builds from the app, built once (building it costs ~12 ms a call).

    The app as memtree.cli.app completed it, every command registered: the daemon runs `serve` from it.
    """
    return typer.main.get_command(app)


def warm_cli() -> None:
    """Build the click command and load rich (a table drawn nowhere), so the first forwarded command is as
    quick as the rest (it took ~50 ms more)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.rule import Rule
    from rich.table import Table

    _command()
    table = Table("#", "path")
    table.add_row("1", escape("bank/a.md"))
    Console(file=io.StringIO(), width=80).print(table, Rule())


class _StoppedEarly(Exception):
    """typer or click stopped the command line before its command ran (a usage error, an abort)."""


def _run_main(argv: list[str]) -> int:
    """The console script's run: its fast paths, else typer on the command built once; a traceback is
    exit 1, as Python's.

    Why the fast paths first, as the console script takes them: `search --json` and `context` answer
    the same bytes without click parsing the line, a third of a forwarded search's time in the daemon.
    """
    try:
        code = fast.run(argv, one_shot=False)
        if code is None:
            code = _command()(standalone_mode=False)
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        sys.stderr.write(f"{exc.code}\n")
        return 1
    except Exception as exc:
        # Why: a usage error is worded by memtree.cli.app.main, its one home; the caller's process
        # runs it there (nothing ran: parsing failed first)
        if type(exc).__module__.startswith(("typer.", "click.")):
            raise _StoppedEarly from exc
        traceback.print_exc()
        return 1
    return code if isinstance(code, int) else 0


@contextlib.contextmanager
def _streams(out: Any, err: Any, stdin: Any, argv: list[str]) -> Iterator[None]:
    saved = sys.stdout, sys.stderr, sys.stdin, sys.argv
    sys.stdout, sys.stderr, sys.stdin, sys.argv = out, err, stdin, argv
    try:
        yield
    finally:
        sys.stdout, sys.stderr, sys.stdin, sys.argv = saved


@contextlib.contextmanager
def _environment(env: dict[str, Any], root: str) -> Iterator[None]:
    """The caller's output variables (and its root, for any command that looks it up) while the command runs."""
    wanted = {name: env[name] for name in forward.FORWARDED_ENV if isinstance(env.get(name), str)}
    names = (*forward.FORWARDED_ENV, client.ENV_ROOT)
    saved = {name: os.environ.get(name) for name in names}
    for name in forward.FORWARDED_ENV:
        if name in wanted:
            os.environ[name] = wanted[name]
        else:
            os.environ.pop(name, None)
    os.environ[client.ENV_ROOT] = root
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
