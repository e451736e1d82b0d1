"""The console script's side of the daemon: send a command line to the daemon serving its root, print its answer.

memtree.cli.entry calls :func:`forward` before it imports anything else, so this module (like
memtree.serve.client, whose protocol it speaks) imports only light standard modules: a command
the daemon answers costs a process little more than a bare ``python -c pass``. Anything unexpected
— no record, a stale socket, a daemon that goes away mid-call, a command line typer refuses, a
setting the daemon must re-read — answers ``None``, and the command runs in-process as it always
did. Only commands whose arguments mean the same wherever they run are sent (``FORWARDED``).
"""

from __future__ import annotations

import os
import sys

from memtree.serve.client import (
    CONFIG_FILE,
    ENV_NO_DAEMON,
    LOG_FILE,
    STATE_DIR,
    connect,
    exchange,
    home_env,
    locate_root,
    lock_path,
    own_state,
)

TYPE_CHECKING = False  # not `from typing import ...`: typing costs a forwarded call ~5 ms
if TYPE_CHECKING:
    from typing import Any

MAX_FORWARD_BYTES = 1024 * 1024
"""A command line (with its stdin) longer than this runs in-process: a 10 MB query would hold the
daemon for seconds, and costs the caller the same either way."""
FORWARDED = frozenset(
    {"search", "context", "get", "add", "log", "status", "conflicts", "banks", "recall", "decay", "consolidate"}
    | {"index", "export"}
)
"""Commands whose arguments mean the same wherever they run. Not here: those naming files relative to
the caller's folder (check, split, import, eval, distill), init, watch, serve, mcp."""
IN_PROCESS_OPTIONS = frozenset({"--help", "--batch", "--file", "--install-completion", "--show-completion"})
"""Options that read the caller's files or streams, or print for the caller's terminal: never forwarded."""
STDIN_COMMANDS = frozenset({"add", "log"})
"""Commands whose TEXT may be ``-`` (stdin): their stdin is read here and sent along."""
FORWARDED_ENV = (
    "NO_COLOR",
    "FORCE_COLOR",
    "TERM",
    "COLORTERM",
    "COLUMNS",
    "LINES",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
    "MEMTREE_ACTOR",  # who wrote: `undo` takes the caller's own changes
)
"""The caller's variables that shape human output (rich reads them); the daemon sets them per command."""


def forwardable(argv: list[str]) -> bool:
    """Whether this command line may run in the daemon (see FORWARDED and IN_PROCESS_OPTIONS)."""
    if not argv or argv[0] not in FORWARDED or os.environ.get(ENV_NO_DAEMON, "") not in ("", "0"):
        return False
    if any(arg in IN_PROCESS_OPTIONS or arg.startswith("--file=") for arg in argv):
        return False
    return "-" not in argv or argv[0] in STDIN_COMMANDS


def forward(argv: list[str]) -> int | None:
    """Run a command line in the daemon serving its root and print its answer; its exit code, or None.

    None: no daemon (or one that cannot take it) — run the command in-process. A daemon that goes
    away mid-call also answers None, once and silently. With ``serve.autostart`` set, finding no
    daemon starts one for the calls after this one.
    """
    if not forwardable(argv):
        return None
    encoding = (getattr(sys.stdout, "encoding", "") or "").lower().replace("-", "")
    if encoding != "utf8":  # the daemon writes UTF-8; another encoding is the in-process writer's to handle
        return None
    root = locate_root(argv)
    if root is None:
        return None
    sock = connect(root)
    if sock is None:
        autostart(root)
        return None
    stdin = None
    try:
        if "-" in argv and argv[0] in STDIN_COMMANDS:
            stdin = sys.stdin.buffer.read()
        request = _cli_request(argv, root, stdin)
        answer = exchange(sock, request) if request is not None else {"fallback": True}
    except (OSError, ValueError, AttributeError):  # AttributeError: no stdin at all
        answer = {"fallback": True}
    finally:
        sock.close()
    if answer.get("fallback") or not isinstance(answer.get("output"), list):
        if stdin is not None:  # read for the daemon: the in-process run reads it again from here
            import io

            sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding=sys.stdin.encoding, errors=sys.stdin.errors)
        return None
    return _replay(answer)


def _cli_request(argv: list[str], root: str, stdin: bytes | None) -> dict[str, Any] | None:
    """The CLI request for ``argv`` (its ``--root`` made absolute), or None when it is too big to send."""
    args = list(argv)
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg == "--root" and i + 1 < len(args):
            args[i + 1] = root
        elif arg.startswith("--root="):
            args[i] = "--root=" + root
    if sum(len(a) for a in args) + len(stdin or b"") > MAX_FORWARD_BYTES:
        return None
    tty = sys.stdout.isatty()
    env = {name: os.environ[name] for name in FORWARDED_ENV if name in os.environ}
    if tty:
        size = _terminal_size()
        if size is not None:
            env.setdefault("COLUMNS", str(size[0]))
            env.setdefault("LINES", str(size[1]))
    text = stdin.decode("latin-1") if stdin is not None else None
    return {"argv": args, "tty": tty, "env": env, "stdin": text, "tz": os.environ.get("TZ"), "home": home_env()}


def _terminal_size() -> tuple[int, int] | None:
    """The terminal's size as rich measures it in-process: the first of stdin, stdout, stderr that is one."""
    for fd in (0, 1, 2):
        try:
            size = os.get_terminal_size(fd)
        except (OSError, ValueError):
            continue
        return size.columns, size.lines
    return None


def _replay(answer: dict[str, Any]) -> int:
    """Write the daemon's captured output, in its order, to this process's stdout and stderr."""
    streams = {1: sys.stdout, 2: sys.stderr}
    for fd, text in answer["output"]:
        stream = streams.get(fd)
        if stream is None or not isinstance(text, str):
            continue
        stream.flush()
        stream.buffer.write(text.encode("latin-1"))
        stream.buffer.flush()
    code = answer.get("code", 0)
    return code if isinstance(code, int) else 1


def autostart(root: str) -> None:
    """With ``serve.autostart: true`` in memtree.yaml, start a detached `memtree serve` for ``root``.

    Only memtree.yaml files that mention autostart are parsed (by memtree.config, the one home of
    its rules), so a root without it pays one small read. Nothing here ever fails the command.
    """
    try:
        with open(os.path.join(root, CONFIG_FILE), encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError):
        return
    if "autostart" not in text:
        return
    try:
        from pathlib import Path

        from memtree.config import load_settings

        if not load_settings(Path(root)).serve.autostart or starting(root):
            return
        import subprocess

        os.makedirs(os.path.join(root, STATE_DIR), exist_ok=True)
        if not own_state(root):  # a .memtree linked elsewhere: the daemon would refuse the root anyway
            return
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
        log = os.open(os.path.join(root, STATE_DIR, LOG_FILE), flags, 0o600)
        try:
            subprocess.Popen(
                daemon_command(root),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,  # detached: the caller's Ctrl-C or exit does not reach it
                close_fds=True,
            )
        finally:
            os.close(log)
    except Exception:  # a setting, a folder, a fork that fails: this call runs in-process anyway
        return


SAFE_START = (
    "import sys; sys.path[:1] = [] if sys.path[:1] == [''] else sys.path[:1]; "
    "sys.argv[0] = 'memtree'; from memtree.cli.entry import main; main()"
)
"""What a daemon runs under Python 3.10 (no ``-P``): the working folder off sys.path before memtree is imported."""


def daemon_command(root: str, *args: str, safe_path: bool = sys.version_info >= (3, 11)) -> list[str]:
    """The command that starts `memtree serve` for ``root`` with the installed memtree, from any folder.

    Why: ``python -m`` puts the working folder first on sys.path, so a ``cachetools.py`` there was
    imported by the daemon, and a checkout's parent (a ``memtree/`` folder) made memtree a namespace
    package. ``-P`` (3.11+) leaves the folder out; on 3.10, :data:`SAFE_START` takes it out.
    """
    head = [sys.executable, "-P", "-m", "memtree"] if safe_path else [sys.executable, "-c", SAFE_START]
    return [*head, "serve", "--root", root, *args]


def starting(root: str | os.PathLike[str]) -> bool:
    """Whether a daemon holds the root's serve lock (running, or still warming up before it listens)."""
    try:
        import fcntl
    except ImportError:
        return False
    try:
        fd = os.open(lock_path(os.fspath(root)), os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False
