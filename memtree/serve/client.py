"""The way to a running `memtree serve`: find a root's daemon cheaply, connect, call a verb (:class:`Client`).

The console script's path to the daemon (memtree.serve.forward) starts here, so this module imports
only os, the C socket and JSON modules and memtree.errors (tests/test_serve.py holds the list).

The protocol: one JSON object a line, each way, over the Unix socket :func:`socket_path` computes for the root
(never a path read from ``.memtree/serve.json``); a connection may carry any number of requests.

- A program: ``{"verb": "search", "args": {"query": "…"}}`` → the verb's ``memtree.schema`` object,
  or ``{"error": "<one line>", "kind": "<exception class>"}``. :class:`Client` does this.
- The CLI (memtree.serve.forward): ``{"argv": [...], "tty": bool, "env": {...}, "stdin": str | null,
  "tz": str | null, "home": {HOME_ENV name: str | null}}`` → ``{"output": [[fd, text], ...], "code": int}``
  (fd 1 or 2, in the order written; bytes carried as latin-1 text, so any byte survives the JSON), or
  ``{"fallback": true}``: run it in-process (so too when ``home`` places the caller's user root elsewhere
  than the daemon's: the daemon searches its own beside the root).
"""

from __future__ import annotations

import _socket
import os
import stat

from memtree.errors import MemtreeError

TYPE_CHECKING = False  # not `from typing import ...`: typing costs a forwarded call ~5 ms
if TYPE_CHECKING:
    from typing import Any

STATE_DIR = ".memtree"  # memtree.notes.store.STATE_DIR, spelled here so the client imports nothing heavy
TREE_FILE = "tree-index.json"  # memtree.notes.tree.TREE_FILE
CONFIG_FILE = "memtree.yaml"  # memtree.config.CONFIG_FILE
ENV_ROOT = "MEMTREE_ROOT"  # memtree.notes.root.ENV_ROOT
ENV_NO_DAEMON = "MEMTREE_NO_DAEMON"
"""Set (to anything but 0), every command runs in-process, as with ``--no-daemon``."""
HOME_ENV = ("MEMTREE_HOME", "XDG_DATA_HOME", "APPDATA", "HOME")  # memtree.notes.root.HOME_ENV
SOCKET_FILE = "serve.sock"
RECORD_FILE = "serve.json"
LOCK_SUFFIX = ".lock"
TOKEN_FILE = "serve.token"
LOG_FILE = "serve.log"
MAX_SOCKET_PATH = 100
"""Bytes of a socket path that fit AF_UNIX everywhere (sun_path holds 108 on Linux, 104 on macOS, with
its NUL); a root deeper than that gets its socket in a runtime folder instead (memtree.serve.unix)."""
MAX_REQUEST_BYTES = 16 * 1024 * 1024
"""The daemon refuses a longer request line (with one error) and closes that connection."""
CONNECT_TIMEOUT_S = 2.0


class DaemonError(MemtreeError):
    """The daemon answered a :class:`Client` call with an error (``kind``: the exception it raised)."""

    def __init__(self, message: str, kind: str = "MemtreeError") -> None:
        super().__init__(message)
        self.kind = kind


class DaemonUnavailable(MemtreeError):
    """No daemon serves this root (none started, or it stopped)."""


# --- where ----------------------------------------------------------------------------------------


def locate_root(argv: list[str], cwd: str | None = None) -> str | None:
    """The root a command line names (``--root``, ``$MEMTREE_ROOT``, the nearest tree-index.json), real path.

    ``None`` when there is none or it looks odd: the command then runs in-process and says why.
    """
    explicit = option_value(argv, "--root")
    if isinstance(explicit, bool):
        return None
    here = cwd or os.getcwd()
    given = explicit if explicit is not None else os.environ.get(ENV_ROOT) or None
    if given is not None:
        root = os.path.realpath(os.path.join(here, os.path.expanduser(given)))
        return root if os.path.isdir(os.path.join(root, STATE_DIR)) else None
    folder = os.path.realpath(here)
    while True:
        if os.path.isfile(os.path.join(folder, TREE_FILE)):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def home_env() -> dict[str, str | None]:
    """The caller's variables that place its user root (HOME_ENV), sent with a command for the daemon to compare."""
    return {name: os.environ.get(name) for name in HOME_ENV}


def option_value(argv: list[str], name: str) -> str | bool | None:
    """The value of ``name`` (``--root X`` or ``--root=X``; the last one given), None if absent, False if malformed."""
    found: str | bool | None = None
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == name:
            found = argv[i + 1] if i + 1 < len(argv) else False
        elif arg.startswith(name + "="):
            found = arg[len(name) + 1 :]
    return found


def own_state(root: str) -> bool:
    """Whether ``root``'s ``.memtree`` is a real folder (not a symlink): the daemon's files in it are memtree's."""
    try:
        return stat.S_ISDIR(os.lstat(os.path.join(root, STATE_DIR)).st_mode)
    except OSError:
        return False


def _key(root: str) -> str:
    """The root's name in the runtime folder (a hash of its real path)."""
    import hashlib

    return hashlib.sha256(os.fsencode(root)).hexdigest()[:16]


def _xdg_folder() -> str | None:
    base = os.environ.get("XDG_RUNTIME_DIR", "")
    return os.path.join(base, "memtree") if base and os.path.isdir(base) else None


def _tmp_folder() -> str:
    # Why not tempfile.gettempdir(): importing tempfile (shutil, random and the compressors) costs a
    # forwarded call more than its answer; its choice is the same: $TMPDIR, $TEMP, $TMP, else /tmp
    base = next((d for d in map(os.environ.get, ("TMPDIR", "TEMP", "TMP")) if d and os.path.isdir(d)), "/tmp")
    return os.path.join(os.path.abspath(base), f"memtree-{os.getuid()}")


def runtime_folder() -> str:
    """The user's private folder for daemon locks (and sockets too deep for the root):
    ``$XDG_RUNTIME_DIR/memtree/``, else ``<tmp>/memtree-<uid>/`` (memtree.serve.unix creates it 0700)."""
    return _xdg_folder() or _tmp_folder()


def socket_path(root: str) -> str:
    """Where the daemon of ``root`` (a real path) listens: ``.memtree/serve.sock``, or a runtime folder's
    socket named by a hash of the root when that path is too long for AF_UNIX. Computed, never read
    from a file: a record naming another path is not the daemon's (a planted one)."""
    preferred = os.path.join(root, STATE_DIR, SOCKET_FILE)
    if len(os.fsencode(preferred)) <= MAX_SOCKET_PATH:
        return preferred
    name = _key(root) + ".sock"
    xdg = _xdg_folder()
    if xdg is not None and len(os.fsencode(os.path.join(xdg, name))) <= MAX_SOCKET_PATH:
        return os.path.join(xdg, name)
    return os.path.join(_tmp_folder(), name)


def lock_path(root: str) -> str:
    """The lock a daemon of ``root`` holds while it lives: in the runtime folder, not under ``.memtree``, so
    deleting ``.memtree`` cannot let a second daemon start for the root."""
    return os.path.join(runtime_folder(), _key(root) + LOCK_SUFFIX)


def record(root: str) -> dict[str, Any] | None:
    """The running daemon's record for ``root`` (pid, socket, http, started_at), or None.

    Only its ``socket`` field is checked (a string); it is trusted for nothing but equality with
    :func:`socket_path`: a cloned repository may carry any ``serve.json``."""
    try:
        with open(os.path.join(root, STATE_DIR, RECORD_FILE), "rb") as f:
            data = loads(f.read())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("socket"), str) else None


def connect(root: str, timeout: float = CONNECT_TIMEOUT_S) -> _socket.socket | None:
    """A connection to the daemon serving ``root``, or None (no record, a stale one, a socket not ours)."""
    found = record(root) if own_state(root) else None
    path = socket_path(root)
    if found is None or found["socket"] != path:  # none, or one that names another path: not our daemon's
        return None
    try:
        # Why the owner check: a record points at a socket; only one of this user's may get the command
        if os.stat(path).st_uid != os.getuid():
            return None
        # Why _socket, the C module under socket.py: socket.py imports selectors and builds its enums,
        # ~2 ms of a forwarded command's ~25; a connect, send and receive need nothing of it
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    except (OSError, AttributeError):  # AttributeError: no AF_UNIX (Windows)
        return None
    try:
        sock.settimeout(timeout)
        sock.connect(path)
        sock.settimeout(None)
    except OSError:
        sock.close()
        return None
    return sock


def exchange(sock: _socket.socket, request: dict[str, Any]) -> dict[str, Any]:
    """Send one request line, read one answer line (OSError or ValueError when the daemon went away)."""
    sock.sendall(dumps(request).encode("utf-8", "surrogateescape") + b"\n")
    chunks: list[bytes] = []
    while True:
        chunk = sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("the daemon closed the connection")
        if chunk.endswith(b"\n"):
            chunks.append(chunk)
            break
        chunks.append(chunk)
    answer = loads(b"".join(chunks))
    if not isinstance(answer, dict):
        raise ValueError("the daemon's answer is not an object")
    return answer


# --- JSON, without the json package ---------------------------------------------------------------
# Why: json/__init__, decoder, scanner and encoder cost a forwarded command ~2.5 ms (a tenth of it);
# the C accelerator they wrap (_json) reads and writes the same JSON. Where there is none (not
# CPython), the json package does it.

_c: Any
try:
    import _json as _c
except ImportError:  # pragma: no cover - CPython always has _json
    _c = None


class _Reading:
    """What _json's scanner asks of its json.JSONDecoder: plain JSON, no hooks."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float  # NaN, Infinity, -Infinity: float() reads them as json does


_quote: Any = getattr(_c, "encode_basestring", None)
_scan: Any = _c.make_scanner(_Reading()) if _c is not None else None


def dumps(value: Any) -> str:
    """``value`` (dicts, lists, strings, numbers, bools, None) as one line of JSON, non-ASCII kept as is."""
    if _quote is None:  # pragma: no cover
        import json

        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, str):
        return _quote(value)
    if value is None or isinstance(value, bool):
        return "null" if value is None else "true" if value else "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float) and value - value == 0.0:  # finite: JSON has no inf or nan
        return float.__repr__(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_quote(str(k))}:{dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(dumps(v) for v in value) + "]"
    raise TypeError(f"cannot send {type(value).__name__} to the daemon")


def loads(data: bytes) -> Any:
    """One JSON document (UTF-8) → its value; ValueError when it is not JSON."""
    text = data.decode("utf-8")
    if _scan is None:  # pragma: no cover
        import json

        return json.loads(text)
    start = len(text) - len(text.lstrip())
    try:
        value, end = _scan(text, start)
    except (StopIteration, SystemError):  # why SystemError: _json's scanner, used bare, raises it on some bad input
        raise ValueError("not JSON") from None
    if text[end:].strip():
        raise ValueError("more than one JSON document")
    return value


# --- programs -------------------------------------------------------------------------------------


class Client:
    """A connection to the daemon serving a root: ``Client(root).call("search", query="…")`` → a schema object.

    ``root`` is found as every command finds it (``--root`` here being the argument). Raises
    :class:`DaemonUnavailable` when no daemon serves it; a call the daemon refuses raises
    :class:`DaemonError` with its one line. Calls on one Client are sequential; use one per thread.
    """

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        found = locate_root(["--root", os.fspath(root)] if root is not None else [])
        sock = connect(found) if found is not None else None
        if found is None or sock is None:
            raise DaemonUnavailable(f"no `memtree serve` daemon serves {found or root or 'this folder'}")
        self.root = found
        self._sock = sock

    def call(self, verb: str, **args: Any) -> dict[str, Any]:
        """Call one verb of the daemon's JSON API; the schema object it answers."""
        try:
            answer = exchange(self._sock, {"verb": verb, "args": args})
        except (OSError, ValueError) as exc:
            raise DaemonUnavailable(f"the daemon serving {self.root} went away ({exc})") from None
        if "error" in answer and "kind" in answer:
            raise DaemonError(str(answer["error"]), str(answer["kind"]))
        return answer

    def close(self) -> None:
        """Close the connection."""
        self._sock.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
