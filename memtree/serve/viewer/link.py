"""What ``memtree view`` does before a browser opens: find the root's HTTP daemon (or start one), get a link.

The daemon serving the root is found by its record (``.memtree/serve.json``, memtree.serve.client);
when none runs, ``memtree serve --http 127.0.0.1:0`` is started detached (an ephemeral loopback port,
its log in ``.memtree/serve.log``) and awaited until its record names its HTTP address. A daemon
already serving the root without HTTP is left alone: the user is told how to restart it.

The link carries a one-time code in its fragment (memtree.serve.viewer: fragments are never sent to
a server nor logged; the code is worth one session, for two minutes), asked of the daemon with the
bearer token in ``.memtree/serve.token`` — the token never leaves this process.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from memtree.errors import MemtreeError
from memtree.notes.heartbeat import pid_alive
from memtree.serve import client
from memtree.serve.forward import daemon_command, starting

START_TIMEOUT_S = 60.0
"""How long `memtree view` waits for a daemon it started to serve HTTP; why this long: warming up
loads the index (and with the semantic layer, the model), seconds on a large memory."""
POLL_S = 0.05
LOOPBACK_ANY_PORT = "127.0.0.1:0"


@dataclass(frozen=True)
class Opened:
    """The viewer's link (with its one-time code), the daemon's pid, and whether this call started it."""

    url: str
    pid: int
    started: bool


def _serving(root: Path) -> dict[str, object] | None:
    """The record of a live daemon serving ``root``, or None (a record with no daemon holding the lock is a
    dead one's, or planted: a cloned repository may carry any serve.json)."""
    from memtree.serve.forward import starting

    found = client.record(str(root))
    return found if found is not None and pid_alive(found.get("pid")) and starting(root) else None


def _start(root: Path) -> subprocess.Popen[bytes]:
    state = root / client.STATE_DIR
    state.mkdir(parents=True, exist_ok=True)
    log = os.open(state / client.LOG_FILE, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        return subprocess.Popen(
            daemon_command(str(root), "--http", LOOPBACK_ANY_PORT),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,  # detached: the caller's Ctrl-C or exit does not reach it
            close_fds=True,
        )
    finally:
        os.close(log)


def daemon(root: Path, timeout: float = START_TIMEOUT_S) -> tuple[dict[str, object], bool]:
    """The record of the daemon serving ``root`` over HTTP, starting one when none runs; and whether it was started."""
    found = _serving(root)
    if found is not None and not found.get("http"):
        pid = found.get("pid")
        raise MemtreeError(
            f"the daemon serving {root} (pid {pid}) has no HTTP: stop it (kill {pid}) and run `memtree view` "
            "again, or start it with `memtree serve --http 127.0.0.1:PORT`"
        )
    if found is not None:
        return found, False
    from memtree.serve.http import missing_extra

    missing = missing_extra()
    if missing:
        raise MemtreeError(missing.replace("--http", "memtree view"))
    process = None if starting(root) else _start(root)  # one warming up already: wait for it instead
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = _serving(root)
        if found is not None:
            if not found.get("http"):
                raise MemtreeError(f"the daemon that started for {root} serves no HTTP (pid {found.get('pid')})")
            return found, process is not None
        if process is not None and process.poll() is not None:
            log = root / client.STATE_DIR / client.LOG_FILE
            raise MemtreeError(f"`memtree serve --http` stopped at start (exit {process.returncode}): see {log}")
        time.sleep(POLL_S)
    raise MemtreeError(f"no daemon served {root} over HTTP within {timeout:g} s: see {root}/.memtree/serve.log")


def one_time_code(address: str, token: str) -> str:
    """A one-time code for the viewer, asked of the daemon at ``address`` with the bearer token."""
    request = urllib.request.Request(
        f"http://{address}/view/api/code", data=b"", method="POST", headers={"Authorization": f"Bearer {token}"}
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never through a proxy
    try:
        with opener.open(request, timeout=10) as answer:
            doc = json.loads(answer.read())
    except (OSError, ValueError) as exc:
        raise MemtreeError(f"the daemon at {address} gave no viewer code ({exc})") from None
    code = doc.get("code") if isinstance(doc, dict) else None
    if not isinstance(code, str):
        raise MemtreeError(f"the daemon at {address} gave no viewer code")
    return code


def open_link(root: Path, timeout: float = START_TIMEOUT_S) -> Opened:
    """The viewer's one-time link for ``root``: its HTTP daemon found or started, a code asked of it."""
    found, started = daemon(root, timeout)
    address = str(found["http"])
    token = ""
    with contextlib.suppress(OSError, UnicodeDecodeError):
        token = (root / client.STATE_DIR / client.TOKEN_FILE).read_text(encoding="ascii").strip()
    if not token:
        raise MemtreeError(f"cannot read the daemon's token in {root}/{client.STATE_DIR}/{client.TOKEN_FILE}")
    code = one_time_code(address, token)
    pid = found.get("pid")
    return Opened(f"http://{address}/view/#code={code}", pid if isinstance(pid, int) else 0, started)
