"""The daemon's Unix socket: where it goes, bound the user's alone, one thread per connection.

``.memtree/serve.sock`` when its path fits AF_UNIX (client.MAX_SOCKET_PATH), else a runtime folder
of the user's (``$XDG_RUNTIME_DIR/memtree/`` or ``/tmp/memtree-<uid>/``, 0700) with a name hashed
from the root. The socket is 0600 from the moment it exists (bound under umask 077), and on Linux
a peer running as another user is refused (SO_PEERCRED) whatever the modes. A connection carries
one JSON line each way per request, any number of requests; a line over client.MAX_REQUEST_BYTES
gets one error and the connection is closed (the rest of that line cannot be told from the next).
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import stat
import threading
from collections.abc import Callable
from pathlib import Path

from memtree import schema
from memtree.errors import MemtreeError
from memtree.notes import store
from memtree.serve import client, verbs

ACCEPT_POLL_S = 0.1
"""How often the accepting thread looks whether the listener is closing."""


def socket_path(root: Path) -> Path:
    """Where the root's socket goes (client.socket_path), its runtime folder created private when it is one."""
    path = Path(client.socket_path(str(root)))
    if path.parent != root / store.STATE_DIR:
        private_folder(path.parent)
    return path


def private_folder(folder: Path) -> None:
    """Create ``folder`` (0700) or check that it is this user's alone; MemtreeError when it is not."""
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700, parents=True)
    st = folder.lstat()
    if not folder.is_dir() or folder.is_symlink() or st.st_uid != os.getuid():
        raise MemtreeError(f"{folder} is not a folder of this user's: cannot put the daemon's socket there")
    if st.st_mode & 0o077:
        os.chmod(folder, 0o700)


def clear_socket(path: Path) -> None:
    """Remove a dead daemon's socket at ``path`` (the caller holds the root's serve lock); anything but a
    socket there is refused, never deleted: the path is computed, yet a file may have been put there."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise MemtreeError(f"{path} is not a socket: memtree serve will not replace it (remove it if it is not yours)")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


class UnixListener:
    """A bound, listening socket at ``path`` answering each request line with ``answer``."""

    def __init__(self, path: Path, answer: Callable[[bytes], bytes]) -> None:
        self.path, self.answer = path, answer
        clear_socket(path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            sock.bind(str(path))
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        sock.listen(128)
        sock.settimeout(ACCEPT_POLL_S)
        st = path.stat()
        self.identity = (st.st_dev, st.st_ino)
        self._sock = sock
        self._closing = threading.Event()
        self._connections: set[socket.socket] = set()
        self.thread = threading.Thread(target=self._accept, name="memtree-accept", daemon=True)

    def start(self) -> None:
        """Accept connections in a thread until ``close()``."""
        self.thread.start()

    def close(self) -> None:
        """Stop accepting and remove the socket file (never one a newer daemon bound in its place)."""
        self._closing.set()
        with contextlib.suppress(OSError):
            st = self.path.stat()
            if (st.st_dev, st.st_ino) == self.identity:
                os.unlink(self.path)
        self._sock.close()
        self.thread.join(timeout=1 + ACCEPT_POLL_S)

    def disconnect(self) -> None:
        """Close every open connection (after the requests under way have been answered)."""
        for conn in list(self._connections):
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def _accept(self) -> None:
        while not self._closing.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed
            if not _same_user(conn):
                conn.close()
                continue
            conn.settimeout(None)
            self._connections.add(conn)
            threading.Thread(target=self._serve, args=(conn,), name="memtree-conn", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        """Answer request lines on one connection until the client closes it or the listener closes."""
        try:
            reader = conn.makefile("rb")
            while not self._closing.is_set():
                line = reader.readline(client.MAX_REQUEST_BYTES + 1)
                if not line:
                    return
                if len(line) > client.MAX_REQUEST_BYTES:
                    mib = client.MAX_REQUEST_BYTES // (1024 * 1024)
                    over = verbs.BadRequest(f"request over {mib} MiB: refused (the connection is closed)")
                    conn.sendall(schema.dumps(verbs.error(over), indent=False))
                    return
                conn.sendall(self.answer(line))
        except OSError:
            return
        finally:
            self._connections.discard(conn)
            conn.close()


def _same_user(conn: socket.socket) -> bool:
    """Whether the peer runs as this user (Linux: SO_PEERCRED; elsewhere the socket's mode decides)."""
    if not hasattr(socket, "SO_PEERCRED"):
        return True
    import struct

    try:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError as exc:
        return exc.errno == errno.ENOPROTOOPT
    _, uid, _ = struct.unpack("3i", creds)
    return uid == os.getuid()
