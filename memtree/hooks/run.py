"""`memtree hook EVENT [--root DIR]`, the process: stdin in, the answer out, and never a broken session.

The console script comes here first (memtree.cli.entry), before any CLI module, since an agent
pays this start on every prompt: only the daemon client (its C JSON reader) is imported until the
event has to be run in this process — not even memtree.hooks.protocol, whose dataclass would cost a
forwarded hook ~10 ms of imports. The order:

1. the event's JSON is read from stdin (its ``cwd`` only; memtree.hooks.protocol reads it whole where it runs);
2. the root: ``--root``, else ``$MEMTREE_ROOT``, else the nearest folder holding tree-index.json from
   the event's ``cwd`` (the agent's project folder) — none: nothing to do, one line on stderr;
3. a `memtree serve` daemon serving that root runs the event with its warm index (the hook sends it the
   command line and the event, as the CLI's forwarding does; memtree.serve.client has the protocol);
   with none, it runs here (memtree.hooks.respond), and ``serve.autostart`` may start one for the next;
4. whatever goes wrong, the hook writes one line on stderr and exits 0: the session goes on without memory.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not `from typing import ...`: a hook starts on every prompt
if TYPE_CHECKING:
    from pathlib import Path

    from memtree.hooks.protocol import Event

PREFIX = "memtree: hook"


def main(argv: list[str]) -> int | None:
    """Run ``memtree hook`` arguments; exit 0 always, or None for typer to answer (``--help``, no event)."""
    if not argv or any(a in ("--help", "-h") for a in argv):
        return None
    try:
        as_json = "--json" in argv
        name, root = _arguments([a for a in argv if a != "--json"])
        data = _stdin()
        cwd = _cwd(data)
        found = _root(root, cwd)
        if found is None:
            _warn(f"{name}: no memory root for {cwd or os.getcwd()} (run `memtree init`, or set MEMTREE_ROOT)")
            return 0
        out = _forwarded(name, found, data)
        if out is None:
            from memtree.hooks.protocol import event_name, parse

            out = run_here(parse(event_name(name), data), found)
        sys.stdout.write(as_document(name, out) if as_json else out)
        sys.stdout.flush()
    except Exception as exc:  # a hook never breaks the session: one line, exit 0
        _warn(f"{argv[0]}: {exc}")
    return 0


def as_document(name: str, out: str) -> str:
    """``--json``: the answer as one object, ``{"event", "output"}`` (``output`` null when the hook adds nothing)."""
    import json

    return json.dumps({"event": name, "output": json.loads(out) if out.strip() else None}, ensure_ascii=False) + "\n"


def run_here(event: Event, root: str | Path | None) -> str:
    """The event run in this process (or in the daemon, on its warm MemTree); the answer to print."""
    from datetime import datetime

    from memtree.cli.warm import open_memtree
    from memtree.hooks.respond import respond

    return respond(open_memtree(root), event, datetime.now().astimezone())


def _arguments(argv: list[str]) -> tuple[str, str | None]:
    """EVENT and ``--root``'s value from the hook's arguments (the event's name is checked where it runs)."""
    name: str | None = None
    root: str | None = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--root" and i + 1 < len(argv):
            root, i = argv[i + 1], i + 2
            continue
        if arg.startswith("--root="):
            root = arg.partition("=")[2]
        elif arg.startswith("-") or name is not None:
            raise ValueError(f"unexpected argument {arg!r} (usage: memtree hook EVENT [--root DIR] [--json])")
        else:
            name = arg
        i += 1
    if name is None:
        raise ValueError("no event named (usage: memtree hook EVENT [--root DIR] [--json])")
    return name, root


def _cwd(data: bytes) -> str:
    """The event's ``cwd``, read with the client's light JSON ("" when there is none; the full read says why)."""
    from memtree.serve.client import loads

    try:
        doc = loads(data) if data.strip() else {}
    except Exception:  # not JSON (ValueError), or nested past the C scanner (RecursionError): the full read says why
        return ""
    cwd = doc.get("cwd") if isinstance(doc, dict) else None
    return cwd if isinstance(cwd, str) else ""


def _stdin() -> bytes:
    stream = getattr(sys.stdin, "buffer", None)
    return stream.read() if stream is not None else b""


def _root(given: str | None, cwd: str) -> str | None:
    """The root the hook serves (see the module docstring), as a real path; None when there is none."""
    from memtree.serve.client import locate_root

    argv = ["--root", given] if given else []
    here = cwd if cwd and os.path.isdir(cwd) else None
    return locate_root(argv, here)


def _forwarded(name: str, root: str, data: bytes) -> str | None:
    """The daemon's answer to this event, or None when no daemon can run it (then it runs here)."""
    from memtree.serve.client import ENV_NO_DAEMON, connect, exchange, home_env

    if os.environ.get(ENV_NO_DAEMON, "") not in ("", "0"):
        return None
    sock = connect(root)
    if sock is None:
        from memtree.serve.forward import autostart

        autostart(root)
        return None
    request = {
        "argv": ["hook", name, "--root", root],
        "tty": False,
        "env": {},
        "stdin": data.decode("latin-1"),
        "tz": os.environ.get("TZ"),
        "home": home_env(),
    }
    try:
        answer = exchange(sock, request)
    except (OSError, ValueError):
        return None
    finally:
        sock.close()
    output = answer.get("output")
    if answer.get("fallback") or not isinstance(output, list):
        return None
    out: list[str] = []
    for fd, text in output:
        if not isinstance(text, str):
            continue
        if fd == 1:
            out.append(text.encode("latin-1").decode("utf-8", errors="replace"))
        elif fd == 2:
            sys.stderr.buffer.write(text.encode("latin-1"))
            sys.stderr.flush()
    return "".join(out)


def _warn(message: str) -> None:
    try:
        sys.stderr.write(f"{PREFIX} {' '.join(message.split())}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
