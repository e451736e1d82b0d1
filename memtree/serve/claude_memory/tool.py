"""Claude's memory tool (``memory_20250818``) served from a memtree root, for the official ``anthropic`` SDK.

``MemtreeMemoryTool`` subclasses the SDK's ``BetaAbstractMemoryTool``, so it plugs into
``client.beta.messages.tool_runner(tools=[...])`` like the SDK's own local-filesystem tool; the six
commands keep that tool's result and error strings, and memtree does the rest:

- ``/memories`` is the root's tiers (bank/, memory/, recall/); tree-index.json, memtree.yaml,
  ``.memtree/`` and ``.git/`` do not exist for the model (memtree.serve.claude_memory.paths).
- ``view`` of a folder adds each note's node id and keywords (memtree.serve.claude_memory.view).
- ``create``, ``str_replace`` and ``insert`` write bank/ notes sanitized, split past
  ``split.max_bytes``, indexed at once, with a node for a new note; ``delete`` archives to
  ``bank/_archive/``; ``rename`` moves nodes with their notes (memtree.serve.claude_memory.files).
- A refused request — an escape, bad input — is a ``ToolError`` of one line (the runner sends it as
  an ``is_error`` tool result) and writes nothing.

Install with ``pip install 'memtree[anthropic]'``. Layer: the edge (reads the clock through
memtree.api.clock when no ``clock`` is given).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

try:
    from anthropic.lib.tools import (
        BetaAbstractMemoryTool,
        BetaAsyncAbstractMemoryTool,
        BetaFunctionToolResultType,
        ToolError,
    )
    from anthropic.types.beta import (
        BetaCacheControlEphemeralParam,
        BetaMemoryTool20250818CreateCommand,
        BetaMemoryTool20250818DeleteCommand,
        BetaMemoryTool20250818InsertCommand,
        BetaMemoryTool20250818RenameCommand,
        BetaMemoryTool20250818StrReplaceCommand,
        BetaMemoryTool20250818ViewCommand,
    )
    from anyio import to_thread
except ImportError as exc:  # one line that says what to install, not a bare "No module named anthropic"
    raise ImportError(
        f"memtree.serve.claude_memory needs the anthropic SDK 2.x ({exc}): pip install 'memtree[anthropic]'"
    ) from exc

from memtree.api import MemTree, clock
from memtree.errors import MemtreeError, TreeError
from memtree.lifecycle.aging import archive_path
from memtree.notes import store
from memtree.serve.claude_memory import commands, files, moves, paths, view
from memtree.serve.claude_memory.paths import Refused, shown
from memtree.write.retain import sanitizer_for

__all__ = ["AsyncMemtreeMemoryTool", "MemtreeMemoryTool"]

R = TypeVar("R")


def _as_tool_errors(method: Callable[..., R]) -> Callable[..., R]:
    """Run under the root's lock; a memtree refusal becomes the ToolError the tool runner reports."""

    @functools.wraps(method)
    def run(self: MemtreeMemoryTool, *args: Any) -> R:
        try:
            with self.memtree.state.lock:
                return method(self, *args)
        except MemtreeError as exc:
            raise ToolError(str(exc)) from None
        except OSError as exc:
            raise ToolError(f"The memory tool could not finish: {exc.strerror or exc}") from None

    return run


class MemtreeMemoryTool(BetaAbstractMemoryTool):
    """The memory tool over one memtree root: ``/memories`` ↔ the root's tiers; writes only in bank/."""

    def __init__(
        self,
        root: str | os.PathLike[str] | MemTree | None = None,
        *,
        clock: Callable[[], datetime] | None = None,
        cache_control: BetaCacheControlEphemeralParam | None = None,
    ) -> None:
        """``root``: a folder, a ``MemTree``, or None to find it like the CLI; ``clock``: the moment of each write."""
        super().__init__(cache_control=cache_control)
        self.memtree = root if isinstance(root, MemTree) else MemTree(root)
        self._clock = clock

    @property
    def root(self) -> Any:
        return self.memtree.root

    def call(self, input: object) -> BetaFunctionToolResultType:
        """What the tool runner calls with a tool_use block's input; a malformed input is a ToolError."""
        problem = commands.input_problem(input)
        if problem:
            raise ToolError(problem)
        return super().call(input)

    @_as_tool_errors
    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        """A folder's files (with the tree's nodes and keywords) or a note's numbered lines."""
        target = paths.resolve(self.root, command.path)
        if target.full.is_dir():
            try:
                tree: Any = self.memtree.state.parsed_tree()
            except TreeError as exc:
                tree = str(exc)
            return view.directory(self.root, target, tree)
        if target.full.is_file() and store.served(self.root, target.rel) is not None:
            return view.file(self.root, target, command.path, command.view_range)
        if target.full.is_file():  # not a note (store.served): it does not exist for the model
            raise Refused(f"The path {command.path} does not exist. Please provide a valid path.")
        if os.path.lexists(target.full):
            raise Refused(f"Unsupported file type for {command.path}")
        raise Refused(f"The path {command.path} does not exist. Please provide a valid path.")

    @_as_tool_errors
    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        """A new bank note: sanitized, indexed, given a node, split when it is too big."""
        target = self._new_name(paths.writable(self.root, command.path, note=True))
        written = files.create(self.memtree, target, command.file_text, self._now())
        return "\n".join([f"File created successfully at: {command.path}", *self._report(written)])

    @_as_tool_errors
    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        """Replace the one occurrence of ``old_str``; none or several is refused with the reference's text."""
        target = self._existing_file(command.path)
        seen: list[tuple[str, int]] = []

        def change(text: str) -> tuple[str, int, int]:
            new, at, end = commands.replace_once(text, command.old_str, command.new_str, command.path)
            seen[:] = [(text, at)]
            return new, at, end

        written = files.edit(self.memtree, target, change, self._now(), "str_replace")
        head = "The memory file has been edited. Here is the snippet showing the change (with line numbers):"
        before, at = seen[0]
        return "\n".join([head, *commands.snippet(written.text, at, before), *self._report(written)])

    @_as_tool_errors
    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        """Insert ``insert_text`` after line ``insert_line`` (0: at the top)."""
        target = self._existing_file(command.path)
        written = files.edit(
            self.memtree,
            target,
            lambda text: commands.insert_line(text, command.insert_line, command.insert_text),
            self._now(),
            "insert",
        )
        return "\n".join([f"The file {command.path} has been edited.", *self._report(written)])

    @_as_tool_errors
    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        """Archive a note, or every note of a folder, to bank/_archive/ (memtree never deletes memory)."""
        target = paths.writable(self.root, command.path)
        done = moves.delete(self.memtree, target, command.path, self._now())
        where = ", ".join(shown(archive_path(rel)) for rel in done.notes) or "no note to archive"
        lines = [f"Successfully deleted {command.path} (archived, never erased: {where})"]
        if done.left:
            kept = ", ".join(shown(rel) for rel in done.left)
            lines = [f"Archived the notes of {command.path} ({where}); left in place, not being notes: {kept}"]
        if done.tree.dropped:
            lines.append(f"tree-index.json: dropped node {', '.join(done.tree.dropped)}, whose note is gone.")
        if done.tree.emptied:
            lines.append(f"tree-index.json: dropped category {', '.join(done.tree.emptied)}, left with no note.")
        return "\n".join(lines)

    @_as_tool_errors
    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        """Move a note or a folder inside bank/; tree-index.json's nodes follow."""
        old = paths.writable(self.root, command.old_path)
        new = self._new_name(paths.writable(self.root, command.new_path))
        moved = moves.rename(self.memtree, old, new, (command.old_path, command.new_path), self._now())
        lines = [f"Successfully renamed {command.old_path} to {command.new_path}"]
        lines += [
            f"tree-index.json: node {a} is now {b}, at {shown(p)}."
            if a != b
            else f"tree-index.json: node {a} now points at {shown(p)}."
            for a, b, p in moved.nodes
        ]
        lines += [f"tree-index.json: added node {n.id} for {shown(n.path or '')}." for n in moved.tree.added]
        if moved.tree.emptied:
            lines.append(f"tree-index.json: dropped category {', '.join(moved.tree.emptied)}, left with no note.")
        return "\n".join(lines)

    def clear_all_memory(self) -> BetaFunctionToolResultType:
        """Refused: memtree never wipes a memory (delete archives, one note or folder at a time)."""
        raise ToolError("memtree never clears a memory: delete notes or folders one at a time (each is archived)")

    def _now(self) -> datetime:
        """The moment of a write (its journal entry, an archive's date): the given clock's, else memtree's."""
        return (self._clock or clock)()

    def _new_name(self, target: paths.Target) -> paths.Target:
        """``target``, or Refused when its path holds a secret: a name lands raw in tree-index.json, the
        journal and the index, so it is refused like ``--to`` (memtree.write.sanitize.require_clean)."""
        try:
            sanitizer_for(self.memtree.settings).require_clean(target.rel, "the path")
        except MemtreeError as exc:
            raise Refused(str(exc)) from None
        return target

    def _existing_file(self, path: str) -> paths.Target:
        target = paths.writable(self.root, path)
        if not os.path.lexists(target.full):
            raise Refused(f"The path {path} does not exist. Please provide a valid path.")
        if not target.full.is_file():
            raise Refused(f"The path {path} is not a file.")
        if store.served(self.root, target.rel) is None:
            raise Refused(f"The path {path} does not exist. Please provide a valid path.")
        return target

    def _report(self, written: files.Written) -> list[str]:
        """What memtree did beyond the write, one line each."""
        lines: list[str] = []
        if written.redacted:
            lines.append(
                f"memtree's sanitizer redacted before writing: {', '.join(written.redacted)} "
                "(the note holds [REDACTED:kind] in their place)."
            )
        for node in written.tree.added:
            lines.append(f"tree-index.json: added node {node.id} (keywords: {', '.join(node.keywords) or 'none'}).")
        if written.tree.dropped:
            lines.append(f"tree-index.json: dropped node {', '.join(written.tree.dropped)}, whose note is gone.")
        if written.tree.emptied:
            lines.append(f"tree-index.json: dropped category {', '.join(written.tree.emptied)}, left with no note.")
        if written.parts:
            limit = self.memtree.settings.split.max_bytes
            lines.append(
                f"The note passed split.max_bytes ({limit:,} bytes) and was split: {shown(written.rel)} keeps the text "
                f"before the first cut and links to its parts {', '.join(shown(p) for p in written.parts)}."
            )
        lines += [f"Warning: {w}" for w in written.warnings]
        return lines


class AsyncMemtreeMemoryTool(BetaAsyncAbstractMemoryTool):
    """The same tool for ``AsyncAnthropic``'s tool runner: each command runs in a worker thread."""

    def __init__(
        self,
        root: str | os.PathLike[str] | MemTree | None = None,
        *,
        clock: Callable[[], datetime] | None = None,
        cache_control: BetaCacheControlEphemeralParam | None = None,
    ) -> None:
        super().__init__(cache_control=cache_control)
        self.sync = MemtreeMemoryTool(root, clock=clock, cache_control=cache_control)

    async def call(self, input: object) -> BetaFunctionToolResultType:
        return await to_thread.run_sync(self.sync.call, input)

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return await to_thread.run_sync(self.sync.view, command)

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return await to_thread.run_sync(self.sync.create, command)

    async def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return await to_thread.run_sync(self.sync.str_replace, command)

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return await to_thread.run_sync(self.sync.insert, command)

    async def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return await to_thread.run_sync(self.sync.delete, command)

    async def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return await to_thread.run_sync(self.sync.rename, command)

    async def clear_all_memory(self) -> BetaFunctionToolResultType:
        return self.sync.clear_all_memory()
