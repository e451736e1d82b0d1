"""The MemTree a command runs against: a new one for the root, or the daemon's own while it runs the command.

`memtree serve` answers a forwarded command line by running the very same typer command in its
process (memtree.cli.serve); ``serving(mt)`` marks that run, so every command opens the daemon's
warm MemTree — index, tree, caches, model — instead of loading its own. Free of typer and rich:
`memtree context`'s fast path may ask it too.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memtree.api import MemTree

_SERVING: ContextVar[MemTree | None] = ContextVar("memtree_serving", default=None)


def open_memtree(root: str | os.PathLike[str] | None) -> MemTree:
    """The daemon's MemTree while it runs this command (its root is the command's), else ``MemTree(root)``."""
    warm = _SERVING.get()
    if warm is not None:
        return warm
    from memtree.api import MemTree

    return MemTree(root)


@contextlib.contextmanager
def serving(mt: MemTree) -> Iterator[None]:
    """While inside (in this thread or task), commands open ``mt``."""
    token = _SERVING.set(mt)
    try:
        yield
    finally:
        _SERVING.reset(token)
