"""memtree serve: real daemons (``python -m memtree serve``) on copies of the sample memory, real clients.

The CLI through a daemon prints what it prints in-process; 8 client processes and a direct writer
at once lose no entry; kill -9 loses no acknowledged write and the next daemon starts; idle
timeout, a second daemon, SIGTERM and SIGINT; HTTP's guards; bad requests; maintenance ticks on
an injected clock. No timing is asserted and nothing sleeps a fixed time: every wait polls for an
outcome with a deadline generous enough for a loaded 2-core machine.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import pty
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from helpers import DEADLINE_S, steady, wait_for

import memtree
from memtree import MemTree
from memtree.lifecycle import consolidate
from memtree.notes import store
from memtree.notes.entries import parse_entries
from memtree.serve import client, forward
from memtree.serve.client import Client, DaemonError, DaemonUnavailable
from memtree.serve.maintenance import FLUSH_EVERY_S, HOUR_S, IngestFlush, Maintenance

MEMTREE = [sys.executable, "-m", "memtree"]
START_S = 60.0
"""A cold interpreter importing typer and watchdog and indexing the sample on a loaded box."""
STEADY_YAML = "search:\n  reinforce: false\n"
"""Searches that count no recalls: two runs of one query score alike whatever the notes' age."""
HANGUL = [chr(c) for c in range(0xAC00, 0xD7A4)]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (client.ENV_NO_DAEMON, client.ENV_ROOT)}
    return env | extra


@dataclass
class Served:
    """A running `memtree serve` started by a test."""

    root: Path
    proc: subprocess.Popen[bytes]
    log: Path
    pings: int = 0

    def ping(self) -> dict[str, Any]:
        self.pings += 1
        with Client(self.root) as c:
            return c.call("ping")

    def requests(self) -> int:
        """Requests the daemon has had, not counting the pings of this object (nor those of the start)."""
        return int(self.ping()["request_count"]) - self.pings

    def stop(self, signum: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signum)
        return self.proc.wait(timeout=DEADLINE_S)

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


def _pingable(root: Path) -> bool:
    try:
        with Client(root) as c:
            c.call("ping")
    except (DaemonUnavailable, DaemonError):
        return False
    return True


@contextlib.contextmanager
def serving(root: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[Served]:
    """`memtree serve --root ROOT --idle-timeout 0 ARGS`, ready (it answers ping); stopped on exit."""
    log = root.parent / f"serve-{root.name}-{len(list(root.parent.glob('serve-*.log')))}.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [*MEMTREE, "serve", "--root", str(root), "--idle-timeout", "0", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env or _env(),
        )
    served = Served(root, proc, log)
    try:
        wait_for(lambda: proc.poll() is not None or _pingable(root), "the daemon answering ping", START_S)
        assert proc.poll() is None, served.log_text()
        yield served
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=DEADLINE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def cli(root: Path, *args: str, daemon: bool = True, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """`memtree ARGS` run in ``root`` (found from the folder, as a user would), through the daemon or not."""
    command = [*MEMTREE, *([] if daemon else ["--no-daemon"]), *args]
    return subprocess.run(command, cwd=root, input=stdin, capture_output=True, env=_env(), timeout=START_S)


def _copy(sample_root: Path, name: str, yaml_text: str = "") -> Path:
    root = sample_root.parent / name
    shutil.copytree(sample_root, root)
    if yaml_text:
        (root / "memtree.yaml").write_text(yaml_text, encoding="utf-8")
    return root


def _masked(data: bytes) -> bytes:
    """Output with what differs between two runs of one command masked: heartbeat ages, entry ids."""
    data = re.sub(rb"\d+(\.\d+)? s ago", b"N s ago", data)
    data = re.sub(rb'"(age_s|time)": [^,\n}]+', rb'"\1": N', data)
    return re.sub(rb"e-\d{8}-[0-9a-f]{16}", b"e-ID", data)


def _steady_json(data: bytes) -> Any:
    """A --json answer with the hits' time- and use-dependent signals dropped."""
    doc = json.loads(data)
    for hit in doc.get("hits", []):
        hit["signals"] = steady(hit["signals"])
    return doc


def _bank_entries(root: Path) -> set[str]:
    """The content of every entry in every bank note."""
    found: set[str] = set()
    for note in (root / "bank").rglob("*.md"):
        found.update(e.content.strip() for e in parse_entries(note.read_text(encoding="utf-8")))
    return found


def _random_text(rng: Any) -> str:
    # Why random syllables: two such texts share no bigram, so dedup never merges one into another
    return "".join(rng.choice(HANGUL) for _ in range(12))


# --- the CLI --------------------------------------------------------------------------------------

PARITY = [
    ["search", "가치관"],
    ["search", "가치관이 뭐야?", "--json"],
    ["search", "크론 스케줄", "--explain"],
    ["search", "배포 체크리스트", "--budget", "300"],
    ["search", "양자역학 블랙홀 증명"],  # rejected: exit 1, the reason on stderr
    ["search", "양자역학 블랙홀 증명", "--json"],  # the same, on the fast path the daemon runs too
    ["search", "?!", "--json"],  # no searchable term: one line, exit 2
    ["search", "--bogus"],  # a usage error: one line, exit 2
    ["context", "크론 스케줄 설계", "--budget", "300"],
    ["context", "가치관", "--json"],
    ["get", "identity/values"],
    ["get", "bank/technical/cron-design.md", "--json"],
    ["get", "nothing/here"],  # an error: one line, exit 2
    ["status"],
    ["status", "--json"],
    ["banks", "--json"],
    ["conflicts"],
    ["recall", "--json"],
]


def test_the_cli_through_the_daemon_prints_what_it_prints_in_process(sample_root: Path) -> None:
    root = _copy(sample_root, "steady", STEADY_YAML)
    with serving(root) as served:
        before = served.requests()
        for args in PARITY:
            through, local = cli(root, *args), cli(root, *args, daemon=False)
            assert through.returncode == local.returncode, (args, through.stderr, local.stderr)
            assert through.stderr == local.stderr, args
            if "--json" in args and args[0] == "search" and local.stdout:
                assert _steady_json(through.stdout) == _steady_json(local.stdout), args
            else:
                assert _masked(through.stdout) == _masked(local.stdout), args
        assert served.requests() - before == len(PARITY)  # every call went to the daemon


def test_add_and_log_through_the_daemon_answer_and_write_as_in_process(sample_root: Path) -> None:
    served_root = _copy(sample_root, "a")
    local_root = _copy(sample_root, "b")
    texts = ["배포 전날에는 스테이징에서 롤백 리허설을 한 번 더 한다", "Deploys on Friday need a second reviewer"]
    with serving(served_root) as served:
        before = served.requests()
        for text, extra in zip(texts, (["--tag", "W"], ["--json"])):
            through = cli(served_root, "add", text, *extra)
            local = cli(local_root, "add", text, *extra, daemon=False)
            assert (through.returncode, through.stderr) == (local.returncode, local.stderr) == (0, b"")
            assert _masked(through.stdout) == _masked(local.stdout)
        piped = "표준입력으로 받은 메모: 야간 배치는 새벽 세 시에 돈다".encode()
        through = cli(served_root, "log", "-", stdin=piped)
        local = cli(local_root, "log", "-", stdin=piped, daemon=False)
        assert (through.returncode, through.stdout, through.stderr) == (local.returncode, local.stdout, local.stderr)
        assert served.requests() - before == 3  # the two adds and the log; --no-daemon ran in-process
    for root in (served_root, local_root):
        assert set(texts) <= _bank_entries(root)
        assert any(piped.decode() in p.read_text(encoding="utf-8") for p in (root / "memory").glob("*.md"))


def test_a_terminal_gets_the_same_styled_output_through_the_daemon(sample_root: Path) -> None:
    root = _copy(sample_root, "tty", STEADY_YAML)

    def on_a_terminal(*args: str) -> bytes:
        leader, follower = pty.openpty()
        env = {k: v for k, v in _env(TERM="xterm-256color", COLUMNS="100").items() if k != "NO_COLOR"}
        proc = subprocess.Popen([*MEMTREE, *args], cwd=root, stdin=subprocess.DEVNULL, stdout=follower, env=env)
        os.close(follower)
        out = b""
        with contextlib.suppress(OSError):  # EIO once the process closed its end
            while chunk := os.read(leader, 65536):
                out += chunk
        os.close(leader)
        assert proc.wait(timeout=START_S) == 0
        return out

    with serving(root) as served:
        before = served.requests()
        through = on_a_terminal("search", "가치관", "--explain")
        assert served.requests() - before == 1
        local = on_a_terminal("--no-daemon", "search", "가치관", "--explain")
    assert b"\x1b[" in local  # styled: the terminal case, not the piped one
    assert through == local


@pytest.mark.parametrize(
    ("argv", "forwarded"),
    [
        (["search", "q"], True),
        (["add", "-"], True),
        (["banks", "--json", "disable", "old"], True),
        (["search", "--batch"], False),
        (["add", "--file", "x.md"], False),
        (["add", "--file=x.md"], False),
        (["search", "-"], False),
        (["search", "q", "--help"], False),
        (["check", "bank/a.md"], False),
        (["split", "bank/a.md"], False),
        (["import", "backup.json"], False),
        (["serve"], False),
        (["--no-daemon", "search", "q"], False),
        ([], False),
    ],
)
def test_only_commands_that_name_no_local_file_are_forwarded(argv: list[str], forwarded: bool) -> None:
    assert forward.forwardable(argv) is forwarded


def test_memtree_no_daemon_keeps_every_command_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(client.ENV_NO_DAEMON, "1")
    assert not forward.forwardable(["search", "q"])


FORWARDING_IMPORTS = {
    "memtree",
    "memtree.__main__",
    "memtree.cli",
    "memtree.cli.entry",
    "memtree.errors",
    "memtree.serve",
    "memtree.serve.client",
    "memtree.serve.forward",
    "__future__",
    "_socket",
    "_json",
    # a root whose socket path is too long for AF_UNIX has its socket in the runtime folder, named by a hash
    "hashlib",
    "_hashlib",
    "_blake2",
}
"""Every module the forwarding path may import beyond what the interpreter had at start (issue 28.13):
no pathlib, typing, re, enum, json or socket; their import costs more than the daemon's answer."""
FORWARD_PROBE = """
import os, sys
before = set(sys.modules)
sys.argv = ["memtree", *sys.argv[1:]]
end = os._exit
def report(code):
    new = sorted(set(sys.modules) - before)
    sys.stderr.write("\\nIMPORTED " + " ".join(new) + "\\n")
    sys.stderr.flush()
    end(code)
os._exit = report  # a forwarded command ends the process there (memtree.cli.entry.end_forwarded)
try:
    from memtree.cli.entry import main
    main()
except SystemExit as exit:
    code = exit.code
new = sorted(set(sys.modules) - before)
sys.stderr.write("\\nIMPORTED " + " ".join(new) + "\\n")
sys.exit(code)
"""


def test_the_forwarding_path_imports_only_what_it_lists(sample_root: Path) -> None:
    root = _copy(sample_root, "light", STEADY_YAML)
    with serving(root) as served:
        before = served.requests()
        run = subprocess.run(  # -S: see test_the_installed_command_imports_nothing_but_the_forwarding_path
            [sys.executable, "-S", "-c", FORWARD_PROBE, "--root", str(root), "search", "가치관", "--json"],
            cwd=root,
            capture_output=True,
            env=_env(PYTHONPATH=str(Path(memtree.__file__).parent.parent)),
            timeout=START_S,
        )
        assert served.requests() - before == 1  # it was forwarded
    assert run.returncode == 0 and json.loads(run.stdout)["hits"]
    imported = set(run.stderr.decode().rpartition("IMPORTED ")[2].split())
    assert imported and imported <= FORWARDING_IMPORTS, sorted(imported - FORWARDING_IMPORTS)


def _imported(importtime: str) -> set[str]:
    """The modules ``-X importtime`` (PYTHONPROFILEIMPORTTIME) lines on stderr name."""
    return {m.group(1) for m in re.finditer(r"^import time:\s+\d+ \|\s+\d+ \|\s+(\S+)$", importtime, re.M)}


@pytest.mark.skipif(os.name == "nt", reason="on Windows the command is pip's console script (setup.py)")
def test_the_installed_command_imports_nothing_but_the_forwarding_path(sample_root: Path) -> None:
    # Why: pip's console-script wrapper imports re (~10 ms of a ~25 ms forwarded call); bin/memtree does not
    command = Path(sys.executable).parent / "memtree"
    if not command.exists():
        pytest.skip(f"memtree is not installed beside {sys.executable} (pip install -e .)")
    root = _copy(sample_root, "installed", STEADY_YAML)
    assert re.match(r"#!\S*python", command.read_text(encoding="utf-8"))  # pip rewrote its #!python line
    # -S: without site, so an editable install's finder (which imports re and pathlib at start) is not
    # loaded and the modules the command itself imports show; the package is found through PYTHONPATH
    env = _env(PYTHONPROFILEIMPORTTIME="1", PYTHONPATH=str(Path(memtree.__file__).parent.parent))
    python = [sys.executable, "-S"]
    # the floor: a start with site loads os (and what it imports) before any script, -S leaves it out
    bare = subprocess.run([*python, "-c", "import os"], capture_output=True, text=True, env=env, timeout=START_S)
    with serving(root) as served:
        before = served.requests()
        run = subprocess.run(
            [*python, str(command), "--root", str(root), "search", "가치관", "--json"],
            cwd=root,
            capture_output=True,
            text=True,
            env=env,
            timeout=START_S,
        )
        assert served.requests() - before == 1  # it was forwarded
    assert run.returncode == 0 and json.loads(run.stdout)["hits"]
    imported = _imported(run.stderr) - _imported(bare.stderr)
    assert imported and imported <= FORWARDING_IMPORTS - {"memtree.__main__"}, sorted(imported - FORWARDING_IMPORTS)


TEARDOWN_PROBE = """
import atexit, sys
atexit.register(lambda: sys.stderr.write("TEARDOWN\\n"))
sys.argv = ["memtree", *sys.argv[1:]]
from memtree.cli.entry import main
main()
"""


def test_a_forwarded_command_ends_its_process_at_once_with_its_output_and_exit_code(sample_root: Path) -> None:
    # Why at once: after the daemon's answer the interpreter's teardown was ~3 ms of a forwarded call
    root = _copy(sample_root, "brief", STEADY_YAML)
    probe = [sys.executable, "-c", TEARDOWN_PROBE]
    with serving(root) as served:
        for args, code in ((["search", "가치관", "--json"], 0), (["get", "nothing/here"], 2)):
            before = served.requests()
            run = subprocess.run([*probe, *args], cwd=root, capture_output=True, env=_env(), timeout=START_S)
            assert served.requests() - before == 1, args  # forwarded
            local = cli(root, *args, daemon=False)
            assert run.returncode == local.returncode == code, (args, run.stderr)
            assert b"TEARDOWN" not in run.stderr and run.stderr == local.stderr, args
            assert (_steady_json(run.stdout) if code == 0 else run.stdout) == (
                _steady_json(local.stdout) if code == 0 else local.stdout
            )
        in_process = subprocess.run([*probe, "--no-daemon", "get", "nothing/here"], cwd=root, capture_output=True)
        assert in_process.returncode == 2 and b"TEARDOWN" in in_process.stderr  # a command run here exits as ever


def test_the_daemon_answers_search_json_and_context_on_the_fast_paths(
    sample_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memtree.cli.app  # noqa: F401  (every command registered, as in the daemon)
    from memtree.cli import fast
    from memtree.cli import serve as cli_serve

    root = _copy(sample_root, "fast", STEADY_YAML)
    mt = MemTree(root)
    lines = [["search", "가치관", "--json"], ["search", "?!", "--json"], ["context", "크론 스케줄", "--budget", "300"]]

    def answers() -> list[dict[str, Any]]:
        request = {"tty": False, "env": {}, "stdin": None, "tz": os.environ.get("TZ")}
        found = [cli_serve.run_forwarded(mt, request | {"argv": a}) for a in lines]
        for answer in found:  # the search's scores, without the signals that move with time
            for fd_text in answer["output"]:
                if fd_text[1].startswith("{"):
                    fd_text[1] = _steady_json(fd_text[1].encode("latin-1"))
        return found

    def no_click() -> None:
        raise AssertionError("click parsed a command line a fast path answers")

    with monkeypatch.context() as m:
        m.setattr(cli_serve, "_command", no_click)
        quick = answers()
    monkeypatch.setattr(fast, "run", lambda argv, one_shot=True: None)  # the typer commands themselves
    assert quick == answers()
    assert [a["code"] for a in quick] == [0, 2, 0]


@pytest.mark.parametrize(
    "value",
    [
        {"argv": ["search", '배포 \u0000"\\\n', "--json"], "tty": False, "env": {}, "stdin": None, "tz": "Asia/Seoul"},
        {"output": [[1, "\x80\x1b[1m한\n"], [2, ""]], "code": -3},
        [],
        {},
        {"verb": "search", "args": {"query": "배포", "k": 3, "min_score": 0.25, "decay": 1e-05}},
    ],
)
def test_the_clients_json_is_the_json_packages(value: Any) -> None:
    line = client.dumps(value)
    assert line == json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    assert client.loads(line.encode("utf-8", "surrogateescape")) == value
    assert client.loads(b" [1.5, NaN, -Infinity] \n")[0] == 1.5
    for broken in (b"", b"{", b'{"a": 1} x', b"\xff", b"{not json", b"[1,]"):
        with pytest.raises(ValueError):
            client.loads(broken)
    with pytest.raises(TypeError):  # JSON has no infinity: refused here, as the daemon could not read it
        client.dumps({"min_score": float("inf")})


def test_the_client_constants_are_the_libraries(sample_root: Path) -> None:
    from memtree.config import CONFIG_FILE
    from memtree.notes.root import ENV_ROOT, HOME_ENV
    from memtree.notes.tree import TREE_FILE

    assert (client.STATE_DIR, client.TREE_FILE, client.CONFIG_FILE, client.ENV_ROOT, client.HOME_ENV) == (
        store.STATE_DIR,
        TREE_FILE,
        CONFIG_FILE,
        ENV_ROOT,
        HOME_ENV,
    )


# --- many clients, and crashes --------------------------------------------------------------------

CLIENT_SCRIPT = """
import json, random, sys
from memtree.serve.client import Client
HANGUL = [chr(c) for c in range(0xAC00, 0xD7A4)]
root, k, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(k)
queries = ["가치관", "크론 스케줄 설계", "배포 체크리스트", "Reflect 파이프라인", "heartbeat", "프로젝트 규칙"]
errors, added = [], []
with Client(root) as c:
    for i in range(n):
        try:
            if i % 4 == 0:
                text = "".join(rng.choice(HANGUL) for _ in range(12))
                d = c.call("add", text=text, to=f"load/c{k}")
                if d["decision"] != "created":
                    errors.append(d["decision"])
                added.append(text)
            else:
                c.call("search", query=rng.choice(queries), k=3)
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
print(json.dumps({"errors": errors, "added": added}, ensure_ascii=False))
"""

DIRECT_SCRIPT = """
import json, random, sys
from memtree import MemTree
HANGUL = [chr(c) for c in range(0xAC00, 0xD7A4)]
rng = random.Random(99)
mt = MemTree(sys.argv[1])
added = []
for i in range(int(sys.argv[2])):
    text = "".join(rng.choice(HANGUL) for _ in range(12))
    assert type(mt.add(text, to="load/direct")).__name__ == "Created"
    added.append(text)
print(json.dumps({"errors": [], "added": added}, ensure_ascii=False))
"""


def test_eight_clients_and_a_direct_writer_at_once_lose_nothing(sample_root: Path) -> None:
    with serving(sample_root) as served:
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", CLIENT_SCRIPT, str(sample_root), str(k), "200"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=_env(),
            )
            for k in range(8)
        ]
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", DIRECT_SCRIPT, str(sample_root), "25"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=_env(),
            )
        )
        results = []
        for proc in procs:
            out, err = proc.communicate(timeout=180)
            assert proc.returncode == 0, err.decode()
            results.append(json.loads(out))
        assert served.proc.poll() is None
    assert [r["errors"] for r in results] == [[]] * len(procs)
    added = [text for r in results for text in r["added"]]
    assert len(added) == 8 * 50 + 25
    missing = set(added) - _bank_entries(sample_root)
    assert not missing, f"{len(missing)} acknowledged entries are not in any bank note"


ACKING_SCRIPT = """
import random, sys
from memtree.serve.client import Client
HANGUL = [chr(c) for c in range(0xAC00, 0xD7A4)]
rng = random.Random(7)
with Client(sys.argv[1]) as c:
    while True:
        text = "".join(rng.choice(HANGUL) for _ in range(12))
        try:
            c.call("add", text=text, to="load/acked")
        except Exception as exc:
            print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
            break
        print(text, flush=True)  # acknowledged: the daemon answered
"""


def test_kill_9_loses_no_acknowledged_write_and_the_next_daemon_starts(sample_root: Path) -> None:
    acked: list[str] = []
    with serving(sample_root) as served:
        writer = subprocess.Popen(
            [sys.executable, "-c", ACKING_SCRIPT, str(sample_root)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            env=_env(),
        )
        assert writer.stdout is not None
        reader = threading.Thread(target=lambda: acked.extend(line.strip() for line in writer.stdout), daemon=True)
        reader.start()
        wait_for(lambda: len(acked) >= 15 or writer.poll() is not None, "15 acknowledged adds", START_S)
        assert len(acked) >= 15, (writer.stderr.read() if writer.stderr else "", served.log_text())
        served.proc.kill()  # SIGKILL, mid-stream
        served.proc.wait(timeout=DEADLINE_S)
        writer.wait(timeout=DEADLINE_S)
        reader.join(timeout=DEADLINE_S)
    assert acked and not set(acked) - _bank_entries(sample_root)
    record = json.loads((sample_root / store.STATE_DIR / client.RECORD_FILE).read_text(encoding="utf-8"))
    assert Path(record["socket"]).exists()  # left behind: stale
    found = cli(sample_root, "search", "가치관", "--json")  # no daemon answers: in-process, silently
    assert found.returncode == 0 and found.stderr == b"" and json.loads(found.stdout)["hits"]
    with serving(sample_root) as again:
        assert again.ping()["pid"] == again.proc.pid != record["pid"]
        assert "stale" in again.log_text()
        assert set(acked) <= {e for e in _bank_entries(sample_root)}


# --- lifetime -------------------------------------------------------------------------------------


def test_an_idle_daemon_exits_and_cleans_up(sample_root: Path) -> None:
    # Why not serving(): on a loaded machine the daemon may already be idle for 1 s when its first ping
    # has been answered; what is tested is that it ends by itself, says why and leaves nothing behind.
    log = sample_root.parent / "serve-idle.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [*MEMTREE, "serve", "--root", str(sample_root), "--idle-timeout", "1"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=_env(),
        )
    try:
        assert proc.wait(timeout=START_S) == 0, log.read_text("utf-8")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "idle for 1 s" in log.read_text("utf-8")
    assert not (sample_root / store.STATE_DIR / client.RECORD_FILE).exists()
    assert not (sample_root / store.STATE_DIR / client.SOCKET_FILE).exists()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_second_daemon_says_one_runs_and_a_signal_stops_it_cleanly(sample_root: Path, signum: int) -> None:
    with serving(sample_root) as served:
        second = subprocess.run(
            [*MEMTREE, "serve", "--root", str(sample_root)], capture_output=True, env=_env(), timeout=START_S
        )
        assert second.returncode == 0
        assert f"already serves {sample_root} (pid {served.proc.pid})".encode() in second.stderr
        assert served.stop(signum) == 0
        assert f"stopping ({signal.Signals(signum).name})" in served.log_text()
    state = sample_root / store.STATE_DIR
    assert not (state / client.SOCKET_FILE).exists() and not (state / client.RECORD_FILE).exists()
    assert cli(sample_root, "search", "가치관").returncode == 0  # in-process again


def test_a_root_too_deep_for_a_socket_path_gets_one_in_a_private_runtime_folder(
    sample_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep = sample_root.parent / ("d" * 60) / ("e" * 60) / "root"
    shutil.copytree(sample_root, deep)
    runtime = sample_root.parent / "run"
    runtime.mkdir(mode=0o700)
    # the client computes the socket's path as the daemon does: from the same runtime folder
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    with serving(deep, env=_env(XDG_RUNTIME_DIR=str(runtime))) as served:
        record = json.loads((deep / store.STATE_DIR / client.RECORD_FILE).read_text(encoding="utf-8"))
        sock = Path(record["socket"])
        assert len(os.fsencode(sock)) <= client.MAX_SOCKET_PATH and not sock.is_relative_to(deep)
        assert sock.stat().st_mode & 0o777 == 0o600 and sock.parent.stat().st_mode & 0o777 == 0o700
        before = served.requests()
        assert cli(deep, "get", "identity/values", "--json").returncode == 0
        assert served.requests() - before == 1
    assert not sock.exists()


def _planted(folder: Path) -> Path:
    """A working folder a daemon must not import from: a cachetools.py that leaves a mark when
    imported, and a ``memtree/`` folder without __init__.py (a checkout's parent: a namespace package)."""
    folder.mkdir()
    mark = folder / "IMPORTED"
    (folder / "cachetools.py").write_text(f"open({str(mark)!r}, 'w').close()\n", encoding="utf-8")
    (folder / "memtree").mkdir()
    return mark


def test_autostart_starts_a_daemon_for_the_calls_after(sample_root: Path, tmp_path: Path) -> None:
    (sample_root / "memtree.yaml").write_text("serve:\n  autostart: true\n  idle_timeout_s: 60\n", encoding="utf-8")
    mark = _planted(tmp_path / "here")
    (sample_root / store.STATE_DIR).mkdir()  # a --root without .memtree/ looks odd to the client: it starts nothing
    # in-process, from the planted folder (as the console script runs: that folder is not on its path); starts one
    first = subprocess.run(
        [sys.executable, "-c", forward.SAFE_START, "search", "--root", str(sample_root), "가치관", "--json"],
        cwd=mark.parent,
        capture_output=True,
        env=_env(),
        timeout=START_S,
    )
    assert first.returncode == 0 and json.loads(first.stdout)["hits"]
    record = sample_root / store.STATE_DIR / client.RECORD_FILE
    try:
        wait_for(lambda: mark.exists() or _pingable(sample_root), "the autostarted daemon", START_S)
        assert not mark.exists()  # the daemon imported the installed packages, not the caller's folder
        with Client(sample_root) as c:
            before = c.call("ping")["request_count"]
            assert cli(sample_root, "search", "가치관", "--json").returncode == 0
            assert c.call("ping")["request_count"] == before + 2  # the forwarded search, and this ping
    finally:
        with contextlib.suppress(OSError, ValueError):
            os.kill(json.loads(record.read_text(encoding="utf-8"))["pid"], signal.SIGTERM)
        wait_for(lambda: not record.exists(), "the autostarted daemon to stop")


@pytest.mark.parametrize("safe_path", [True, False], ids=["python -P", "python 3.10 (no -P)"])
def test_a_daemon_started_from_any_folder_imports_only_the_installed_memtree(
    sample_root: Path, tmp_path: Path, safe_path: bool
) -> None:
    if safe_path and sys.version_info < (3, 11):
        pytest.skip("-P is Python 3.11's")
    mark = _planted(tmp_path / "here")
    command = forward.daemon_command(str(sample_root), "--idle-timeout", "0", "--json", safe_path=safe_path)
    log = tmp_path / "serve.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(command, cwd=mark.parent, stdin=subprocess.DEVNULL, stdout=err, stderr=err, env=_env())
    try:
        wait_for(lambda: proc.poll() is not None or _pingable(sample_root), "the daemon answering ping", START_S)
        assert proc.poll() is None, log.read_text(encoding="utf-8", errors="replace")
        assert not mark.exists()
        with Client(sample_root) as c:  # the real package, not the folder's namespace one: commands run in it
            before = c.call("ping")["request_count"]
            shown = cli(sample_root, "status", "--json")
            assert shown.returncode == 0 and json.loads(shown.stdout)["node_count"]
            assert c.call("ping")["request_count"] == before + 2
    finally:
        proc.terminate()
        proc.wait(timeout=DEADLINE_S)


def test_memtree_view_starts_its_daemon_the_same_safe_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memtree.serve.viewer import link

    started: list[list[str]] = []

    class Recorded:
        def __init__(self, args: list[str], **kwargs: Any) -> None:
            started.append(args)

    monkeypatch.setattr(link.subprocess, "Popen", Recorded)
    link._start(tmp_path)
    assert started == [forward.daemon_command(str(tmp_path), "--http", link.LOOPBACK_ANY_PORT)]
    assert started[0][1:3] in (["-P", "-m"], ["-c", forward.SAFE_START])


# --- the JSON API and HTTP ------------------------------------------------------------------------


def _raw(root: Path, payload: bytes) -> list[dict[str, Any]]:
    """Send raw bytes on a fresh connection; every answer line until the daemon closes or goes quiet."""
    record = json.loads((root / store.STATE_DIR / client.RECORD_FILE).read_text(encoding="utf-8"))
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(START_S)
        sock.connect(record["socket"])
        sock.sendall(payload)
        sock.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := sock.recv(1 << 16):
            data += chunk
    return [json.loads(line) for line in data.splitlines()]


def test_bad_requests_get_one_error_each_and_the_daemon_keeps_serving(sample_root: Path) -> None:
    with serving(sample_root) as served:
        answers = _raw(
            sample_root,
            b"{not json\n"
            + b'["a list"]\n'
            + b'{"verb": "forget_everything"}\n'
            + b'{"verb": "search", "args": {"query": "x", "colour": "red"}}\n'
            + b'{"verb": "search", "args": {"query": 5}}\n'
            + json.dumps({"verb": "search", "args": {"query": "x" * 10_000_000}}).encode()
            + b"\n",
        )
        kinds = [a.get("kind") for a in answers]
        assert kinds == ["BadRequest", "BadRequest", "UnknownVerb", "BadRequest", "BadRequest", "BadRequest"]
        assert all(set(a) == {"error", "kind"} and "\n" not in a["error"] for a in answers)
        assert "10,000,000 characters" in answers[-1]["error"]
        huge = _raw(sample_root, b'{"verb": "ping", "pad": "' + b"x" * (client.MAX_REQUEST_BYTES + 10) + b'"}\n')
        assert len(huge) == 1 and "over 16 MiB" in huge[0]["error"]
        with Client(sample_root) as c:
            with pytest.raises(DaemonError) as caught:
                c.call("get", ref="no/such/note")
            assert caught.value.kind == "QueryError"
            assert c.call("ping")["pid"] == served.proc.pid


def _post(address: str, path: str, token: str | None, host: str | None = None, body: bytes = b"{}") -> Any:
    hostname, _, port = address.rpartition(":")
    conn = http.client.HTTPConnection(hostname, int(port), timeout=START_S)
    headers = {"Host": host or address, "Content-Type": "application/json", "Accept": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    conn.request("POST", path, body=body, headers=headers)
    reply = conn.getresponse()
    status, data = reply.status, reply.read()
    conn.close()
    return status, json.loads(data) if data else None


def test_http_serves_only_loopback_with_the_token_and_the_right_host(sample_root: Path) -> None:
    pytest.importorskip("uvicorn")
    with serving(sample_root, "--http", "127.0.0.1:0"):
        state = sample_root / store.STATE_DIR
        address = json.loads((state / client.RECORD_FILE).read_text(encoding="utf-8"))["http"]
        token_file = state / client.TOKEN_FILE
        assert token_file.stat().st_mode & 0o777 == 0o600
        token = token_file.read_text(encoding="ascii").strip()
        assert _post(address, "/v1/ping", None)[0] == 401
        assert _post(address, "/v1/ping", "not-the-token")[0] == 401
        assert _post(address, "/v1/ping", token, host="evil.example:80")[0] == 403
        status, doc = _post(address, "/v1/ping", token)
        assert status == 200 and doc["root"] == str(sample_root)
        status, doc = _post(address, "/v1/search", token, body=json.dumps({"query": "가치관", "k": 2}).encode())
        assert status == 200 and len(doc["hits"]) == 2
        assert _post(address, "/v1/nope", token)[0] == 404
        assert _post(address, "/mcp", None)[0] == 403  # the guards stand before MCP too
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}
        status, doc = _post(address, "/mcp", token, body=json.dumps(initialize).encode())
        try:
            import memtree.serve.mcp  # noqa: F401
        except ImportError:
            assert status == 501
        else:
            assert status == 200 and doc["result"]["serverInfo"]["name"] == "memtree"


def test_http_user_errors_are_400_and_a_missing_token_on_mcp_starts_no_oauth(sample_root: Path) -> None:
    pytest.importorskip("uvicorn")
    with serving(sample_root, "--http", "127.0.0.1:0"):
        state = sample_root / store.STATE_DIR
        address = json.loads((state / client.RECORD_FILE).read_text(encoding="utf-8"))["http"]
        token = (state / client.TOKEN_FILE).read_text(encoding="ascii").strip()

        def post(verb: str, args: dict[str, Any]) -> tuple[int, Any]:
            status, doc = _post(address, f"/v1/{verb}", token, body=json.dumps(args).encode())
            assert set(doc) == {"error", "kind"} or status == 200, doc
            return status, doc

        for verb, args in (
            ("get", {"ref": "bank/a\u0000.md"}),
            ("add", {"text": "사실", "to": "bank/a\u0000b.md"}),
            ("add", {"text": "사실", "to": "bank/" + "x" * 300 + ".md"}),
            ("search", {"query": "가" * 1_000_001}),
            ("export", {"bank": "../.."}),
            ("export", {"bank": "nope"}),
            ("get", {"ref": ".memtree/serve.token"}),
        ):
            status, doc = post(verb, args)
            assert status == 400 and "\n" not in doc["error"], (verb, status, doc)
        assert post("export", {"bank": "identity"})[0] == 200
        # /mcp without the token, or with a wrong one: 403 and a body naming the problem, no OAuth challenge
        hostname, _, port = address.rpartition(":")
        for given in (None, "wrong"):
            conn = http.client.HTTPConnection(hostname, int(port), timeout=START_S)
            headers = {"Host": address, "Content-Type": "application/json"}
            headers |= {"Authorization": f"Bearer {given}"} if given else {}
            conn.request("POST", "/mcp", body=b"{}", headers=headers)
            reply = conn.getresponse()
            body = json.loads(reply.read())
            assert reply.status == 403 and reply.getheader("www-authenticate") is None
            assert ("missing" if given is None else "wrong") in body["error"] and "serve.token" in body["error"]
            conn.close()
        assert _post(address, "/v1/ping", None)[0] == 401  # /v1 keeps HTTP's own challenge


@pytest.mark.parametrize("address", ["0.0.0.0:8765", "192.168.1.10:80", "example.com:80", "127.0.0.1"])
def test_http_refuses_anything_but_a_loopback_address(sample_root: Path, address: str) -> None:
    run = subprocess.run(
        [*MEMTREE, "serve", "--root", str(sample_root), "--http", address],
        capture_output=True,
        env=_env(),
        timeout=START_S,
    )
    lines = run.stderr.decode().splitlines()
    assert run.returncode == 2 and len(lines) == 1 and lines[0].startswith("memtree: error: --http")
    assert not (sample_root / store.STATE_DIR / client.RECORD_FILE).exists()


# --- maintenance ----------------------------------------------------------------------------------


class Clock:
    """A monotonic clock a test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_maintenance_tick_consolidates_once_when_due_and_status_shows_it(sample_root: Path) -> None:
    mt, clock, lines = MemTree(sample_root), Clock(), []
    ticks = Maintenance(mt, lines.append, every_h=24, clock=clock)
    assert mt.status().consolidation is None
    assert ticks.tick() is None  # never consolidated: a whole interval of the daemon's life first
    clock.now += 24 * HOUR_S - 1
    assert ticks.tick() is None
    clock.now += 1
    run = ticks.tick()
    assert run is not None
    run.join(timeout=START_S)
    assert ticks.tick() is None  # once: the next is an interval away
    done = mt.status().consolidation
    assert done is not None and done["error"] is None and done["finished"] >= done["started"]
    assert lines and lines[-1].startswith("maintenance: consolidated")


def test_a_tick_while_another_consolidate_runs_says_so_and_the_first_is_due_after_the_last_run(
    sample_root: Path,
) -> None:
    consolidate.record(sample_root, started=50_000.0, finished=50_001.0, error=None)
    mt, clock, lines = MemTree(sample_root), Clock(), []
    ticks = Maintenance(mt, lines.append, every_h=24, clock=clock, wall=lambda: 50_000.0 + 23 * HOUR_S)
    assert ticks.tick() is None
    clock.now += HOUR_S  # 24 h after the recorded run
    with consolidate.single_flight(sample_root):  # a manual `memtree consolidate` under way
        run = ticks.tick()
        assert run is not None
        run.join(timeout=START_S)
    assert "another `memtree consolidate` is running" in lines[-1] and lines[-1].startswith("warning:")
    assert Maintenance(mt, lines.append, every_h=0, clock=clock).tick() is None  # 0: never


def test_a_forwarded_consolidate_runs_in_the_callers_process_while_a_tick_runs(sample_root: Path) -> None:
    from memtree.serve.dispatch import Dispatcher, EditWatcher

    mt, ran = MemTree(sample_root), []
    ticks = Maintenance(mt, print, every_h=0)
    requests = Dispatcher(mt, print, EditWatcher(mt, print), ticks, lambda m, r: ran.append(r) or {"code": 0}, Clock())
    here = {"tz": os.environ.get("TZ"), "home": client.home_env()}
    assert requests.command({"argv": ["consolidate"], **here}) == {"code": 0}
    ticks._running = True  # a tick under way: consolidation's own lock answers, in the caller's process
    assert requests.command({"argv": ["consolidate"], **here}) == {"fallback": True}
    assert requests.command({"argv": ["search", "가치관"], **here}) == {"code": 0}
    assert requests.command({"argv": ["search", "가치관"], **here, "tz": "Antarctica/Troll"}) == {"fallback": True}
    assert len(ran) == 2


def test_the_daemon_flushes_quiet_conversations_every_minute(sample_root: Path) -> None:
    """`memtree ingest`'s idle flush runs on the daemon's clock: a conversation quiet past
    extract.idle_flush_min is examined without another ingest call."""
    mt, clock, lines = MemTree(sample_root), Clock(), []
    said = [("user", "pytest fails with `TypeError: unhashable type`"), ("assistant", "Fixed it: a tuple, not a list.")]
    turns = [  # the turns of 2024: quiet for long at any real clock, so the flush examines them
        {"conversation": "c1", "role": role, "text": text, "ts": f"2024-05-08T13:5{i}:00Z"}
        for i, (role, text) in enumerate(said)
    ]
    mt.ingest(turns, now=datetime(2024, 5, 8, 13, 52, tzinfo=timezone.utc))  # logged, not yet due
    log = sample_root / "memory/2024-05-08.md"
    assert "c1" in log.read_text(encoding="utf-8") and "extracted=" not in log.read_text(encoding="utf-8")
    flushes = IngestFlush(mt, lines.append, clock)
    assert flushes.tick() is None  # a minute of the daemon's life first
    clock.now += FLUSH_EVERY_S
    run = flushes.tick()
    assert run is not None
    run.join(timeout=START_S)
    assert not run.is_alive() and not [ln for ln in lines if ln.startswith(("warning", "error"))]
    assert "conversation=c1; extracted=2" in log.read_text(encoding="utf-8")  # examined by the tick
    assert mt.ingest_flush().cycles == ()  # flushed already: nothing left to examine
    assert flushes.tick() is None  # the next one is a minute away
