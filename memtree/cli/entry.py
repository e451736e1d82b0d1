"""The `memtree` console script: first the daemon, then the fast paths (memtree.cli.fast), then typer.

When a `memtree serve` daemon serves the root, a command that names no local file is sent to it and
its answer printed (memtree.serve.forward): the process then costs little more than starting Python.
So this module imports nothing but ``sys`` and ``os`` (loaded at start) before forwarding — no
pathlib, typing or re of its own (tests/test_serve.py lists what the forwarding path may import);
every hook of an agent's loop pays this start on every prompt.
"""

from __future__ import annotations

import os
import sys

GLOBAL_VALUE_OPTIONS = ("--root",)
"""Options of every command that may also come before it (``memtree --root DIR search q``)."""


def main() -> None:
    """Console entry point."""
    argv = sys.argv[1:]
    if argv[:1] == ["merge-driver"] and len(argv) in (4, 5) and not any(a.startswith("-") for a in argv[1:]):
        from memtree.write.driver import main as merge_driver  # git runs one per merged file: no CLI imports

        sys.exit(merge_driver(argv[1:]))
    argv = hoist(argv)
    sys.argv[1:] = argv  # typer reads sys.argv: it sees the command line with the root after the command
    if argv[:1] == ["hook"]:  # an agent's hook, on every prompt: its own light path (memtree.hooks.run)
        from memtree.hooks.run import main as hook

        code = hook(argv[1:])
        if code is not None:
            sys.exit(code)
    from memtree.serve.forward import forward

    code = forward(argv)
    if code is not None:
        end_forwarded(code)
    from memtree.cli.fast import run

    code = run(argv)
    if code is not None:
        sys.exit(code)
    from memtree.cli.app import main as full

    full()


def end_forwarded(code: int) -> None:
    """End the process of a command the daemon answered, at once: its output flushed, ``os._exit(code)``.

    Why: the daemon did the work and its answer is written; what is left is the interpreter tearing
    down its modules (pip's console-script wrapper's ``re`` and ``enum`` among them), ~2-4 ms of a
    ~25 ms call. Nothing on this path registers an exit handler: it imports only the modules
    tests/test_serve.py lists. A flush that fails leaves the ordinary exit to report it.
    """
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed or broken stream: Python's own exit says what it says
        sys.exit(code)
    os._exit(code)


def hoist(argv: list[str]) -> list[str]:
    """``--root DIR`` given before the command, moved right after it (where every command reads it).

    Only the options before the first word that is not an option are looked at: ``memtree --no-daemon
    --root D search q`` → ``--no-daemon search --root D q``. A ``--root`` with no value is left alone
    for typer to name.
    """
    moved: list[str] = []
    head: list[str] = []
    i = 0
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "--":
        arg = argv[i]
        if arg in GLOBAL_VALUE_OPTIONS and i + 1 < len(argv):
            moved += argv[i : i + 2]
            i += 2
            continue
        if arg.partition("=")[0] in GLOBAL_VALUE_OPTIONS and "=" in arg:
            moved.append(arg)
        else:
            head.append(arg)
        i += 1
    if not moved or i >= len(argv) or argv[i] == "--":
        return argv
    return [*head, argv[i], *moved, *argv[i + 1 :]]
