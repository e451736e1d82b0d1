"""`memtree hook EVENT`: recorded Claude Code payloads and a session file, through the console script
with and without a daemon; the end-to-end replay; <private> spans; a hook never breaks a session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from helpers import REPO
from test_serve import FORWARD_PROBE, FORWARDING_IMPORTS, START_S, serving

from memtree.api import MemTree
from memtree.config import HooksSettings, parse_settings
from memtree.errors import ConfigError
from memtree.hooks import protocol, respond
from memtree.hooks.focus import focus
from memtree.hooks.protocol import Event
from memtree.lifecycle import ingest
from memtree.notes.root import init
from memtree.search.result import Hit
from memtree.serve import client
from memtree.text.terms import estimate_tokens
from memtree.write.private import PRIVATE_MARK, strip_private

DATA = REPO / "tests" / "data" / "hooks"
SESSION = "5f1c2b9e-1a2b-4c3d-8e9f-0a1b2c3d4e5f"
SECRET = "hunter2-Staging-9931"
TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
PRIVATE = "therapist"
MEMTREE = [sys.executable, "-m", "memtree"]
NOW = datetime(2026, 12, 1, 9, 5, tzinfo=timezone.utc)


def payload(event: str, root: Path, transcript: Path) -> bytes:
    doc = json.loads((DATA / f"{event}.json").read_text(encoding="utf-8"))
    doc["cwd"], doc["transcript_path"] = str(root), str(transcript)
    return json.dumps(doc).encode()


def hook(event: str, stdin: bytes, cwd: Path, daemon: bool = False, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in (client.ENV_NO_DAEMON, client.ENV_ROOT)}
    if not daemon:
        env[client.ENV_NO_DAEMON] = "1"
    return subprocess.run(
        [*MEMTREE, "hook", event, *args], input=stdin, cwd=cwd, capture_output=True, env=env, timeout=START_S
    )


def injected(run: subprocess.CompletedProcess[bytes], event: str) -> str:
    """The context a hook's stdout adds ("" for none), checking the answer's shape."""
    assert run.returncode == 0, run.stderr
    if not run.stdout.strip():
        return ""
    doc = json.loads(run.stdout)
    assert doc["hookSpecificOutput"]["hookEventName"] == event
    text: str = doc["hookSpecificOutput"]["additionalContext"]
    assert text
    return text


def everything_under(root: Path) -> str:
    return "\n".join(p.read_bytes().decode("utf-8", "replace") for p in root.rglob("*") if p.is_file())


def logged_turns(root: Path) -> list[str]:
    return [ln for p in sorted((root / "memory").glob("*.md")) for ln in p.read_text().splitlines() if "turn=" in ln]


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "claude" / f"{SESSION}.jsonl"
    path.parent.mkdir()
    path.write_bytes((DATA / "session1.jsonl").read_bytes())
    return path


@pytest.fixture
def fresh_root(tmp_path: Path) -> Path:
    return init(tmp_path / "project")[0]


# --- <private> ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("a <private>b</private> c", f"a {PRIVATE_MARK} c"),
        ("a <PRIVATE>b</Private> c <private>d</private>", f"a {PRIVATE_MARK} c {PRIVATE_MARK}"),
        ("a <private>b <private>c</private> d</private> e", f"a {PRIVATE_MARK} e"),
        ("a <private>never closed\nsecond line", f"a {PRIVATE_MARK}"),
        ("a </private> b", "a </private> b"),
        ("비밀 <private>주민번호 900101</private> 끝", f"비밀 {PRIVATE_MARK} 끝"),
        ("nothing here", "nothing here"),
    ],
)
def test_private_spans_are_cut_nested_unclosed_and_any_case(text: str, kept: str) -> None:
    assert strip_private(text) == kept


# --- the transcript -----------------------------------------------------------------------------


def test_a_claude_code_session_file_is_read_as_what_was_said() -> None:
    turns = ingest.read((DATA / "session1.jsonl").read_bytes(), "session1.jsonl", NOW)
    assert [t.role for t in turns] == ["user", "assistant", "assistant", "user", "assistant"]
    assert {t.conversation for t in turns} == {SESSION}
    said = "\n".join(t.text for t in turns)
    # thinking, tool calls and results, Claude Code's notices and command echoes are not turns
    for left_out in ("The user wants blue-green", "deploy.yml", TOKEN, "Caveat:", "/cost", "Deploy pipeline setup"):
        assert left_out not in said
    assert turns[1].text.startswith("Understood: blue-green releases")
    assert turns[0].ts == datetime(2026, 12, 1, 9, 0, 5, tzinfo=timezone.utc)


def test_memtree_turns_and_a_bad_claude_code_line_are_still_named() -> None:
    line = {"type": "user", "sessionId": "s", "message": {"role": "user", "content": "hi"}}
    with pytest.raises(Exception, match=r"x line 1: ts must be ISO 8601"):
        ingest.read(json.dumps(line).encode(), "x", NOW)
    plain = {"conversation": "c", "role": "user", "text": "hi", "ts": "2026-12-01T09:00:00Z"}
    assert ingest.read(json.dumps(plain).encode(), "x", NOW)[0].conversation == "c"


# --- the events ---------------------------------------------------------------------------------


@pytest.mark.parametrize("daemon", [False, True], ids=["in-process", "daemon"])
def test_recorded_payloads_through_memtree_hook(sample_root: Path, transcript: Path, daemon: bool) -> None:
    (sample_root / "memtree.yaml").write_text("hooks:\n  stop_every_min: 0\n", encoding="utf-8")

    def run_all() -> dict[str, str]:
        out: dict[str, str] = {}
        for event in protocol.EVENTS:
            run = hook(event, payload(event, sample_root, transcript), sample_root, daemon)
            assert run.stderr == b"", run.stderr
            out[event] = injected(run, event)
            if event == "PreCompact":
                out["turns"] = str(len(logged_turns(sample_root)))
        return out

    if daemon:
        with serving(sample_root) as served:
            before = served.requests()
            out = run_all()
            assert served.requests() - before == len(protocol.EVENTS)  # every event ran in the daemon
    else:
        out = run_all()
    assert "Decisions, newest first:" in out["SessionStart"] and "bank/project/decisions.md" in out["SessionStart"]
    assert len(out["SessionStart"]) < 300 * 4  # within hooks.briefing_tokens, even at 4 characters a token
    assert out["UserPromptSubmit"] == ""  # the sample holds nothing about the shop: nothing injected
    assert out["PreCompact"] == out["Stop"] == out["SessionEnd"] == ""
    assert out["turns"] == "5"
    assert len(logged_turns(sample_root)) == 5  # Stop and SessionEnd took nothing twice
    text = everything_under(sample_root)
    for never in (SECRET, TOKEN, PRIVATE):
        assert never not in text


def test_a_session_replayed_end_to_end(fresh_root: Path, transcript: Path, tmp_path: Path) -> None:
    # session 1: the person asks to remember a decision (/remember runs `memtree add`), then the session ends
    mt = MemTree(fresh_root)
    mt.add("Releases go out from the release/friday branch.", kind="decision", now=NOW)
    end = hook("SessionEnd", payload("SessionEnd", fresh_root, transcript), fresh_root)
    assert injected(end, "SessionEnd") == "" and end.stderr == b""
    # session 2: briefed at start, and a prompt about session 1 gets its fact
    second = tmp_path / "claude" / "second.jsonl"
    start = hook("SessionStart", payload("SessionStart", fresh_root, second), fresh_root)
    assert "release/friday" in injected(start, "SessionStart")
    prompt = hook("UserPromptSubmit", payload("UserPromptSubmit", fresh_root, second), fresh_root)
    recalled = injected(prompt, "UserPromptSubmit")
    assert "Fridays" in recalled and "blue-green" in recalled
    assert len(recalled) <= HooksSettings().recall_tokens * 4
    text = everything_under(fresh_root)
    for never in (SECRET, TOKEN, PRIVATE):
        assert never not in text


def test_a_prompt_memory_cannot_answer_injects_nothing(fresh_root: Path, transcript: Path) -> None:
    hook("SessionEnd", payload("SessionEnd", fresh_root, transcript), fresh_root)
    for prompt in ("What is the capital of Mongolia?", "thanks!", "/recall deploy", "ok"):
        doc = {"hook_event_name": "UserPromptSubmit", "session_id": "s2", "cwd": str(fresh_root), "prompt": prompt}
        run = hook("UserPromptSubmit", json.dumps(doc).encode(), fresh_root)
        assert (run.returncode, run.stdout, run.stderr) == (0, b"", b""), prompt


HOOK_IMPORTS = FORWARDING_IMPORTS | {"memtree.hooks", "memtree.hooks.run"}
"""What a hook forwarded to the daemon may import: the forwarding path's own, and the hook's edge."""


def test_a_hook_forwarded_to_the_daemon_imports_only_the_client(sample_root: Path, transcript: Path) -> None:
    with serving(sample_root) as served:
        before = served.requests()
        run = subprocess.run(
            [sys.executable, "-c", FORWARD_PROBE, "hook", "SessionStart"],
            input=payload("SessionStart", sample_root, transcript),
            cwd=sample_root,
            capture_output=True,
            env={k: v for k, v in os.environ.items() if k not in (client.ENV_NO_DAEMON, client.ENV_ROOT)},
            timeout=START_S,
        )
        assert served.requests() - before == 1  # it was forwarded
    assert run.returncode == 0 and "Decisions" in json.loads(run.stdout)["hookSpecificOutput"]["additionalContext"]
    imported = set(run.stderr.decode().rpartition("IMPORTED ")[2].split())
    assert imported and imported <= HOOK_IMPORTS, sorted(imported - HOOK_IMPORTS)


@pytest.mark.parametrize(
    ("args", "stdin", "says"),
    [
        (["SessionStart"], b"{not json", "not JSON"),
        (["Bedtime"], b"{}", "unknown hook event"),
        (["Stop", "--frobnicate"], b"{}", "unexpected argument"),
        (["SessionStart"], b'{"hook_event_name": "Stop"}', "holds a Stop event"),
        (["PreCompact"], b'{"transcript_path": "/nonexistent/x.jsonl"}', "cannot read the transcript"),
        (["SessionEnd"], b'{"transcript_path": "BAD"}', "line 1: not JSON"),
    ],
)
def test_a_hook_never_breaks_the_session(
    sample_root: Path, tmp_path: Path, args: list[str], stdin: bytes, says: str
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{oops\n", encoding="utf-8")
    run = hook(args[0], stdin.replace(b"BAD", str(bad).encode()), sample_root, False, *args[1:])
    assert run.returncode == 0 and run.stdout == b""
    lines = run.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("memtree: hook") and says in lines[0], lines


def test_no_root_is_one_line_and_nothing_else(tmp_path: Path) -> None:
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    run = hook("SessionStart", json.dumps({"cwd": str(lonely)}).encode(), lonely)
    assert run.returncode == 0 and run.stdout == b""
    assert run.stderr.decode().count("\n") == 1 and "no memory root" in run.stderr.decode()


def test_the_root_is_found_from_the_events_cwd(sample_root: Path, tmp_path: Path) -> None:
    inside = sample_root / "bank" / "project"
    run = hook("SessionStart", json.dumps({"cwd": str(inside)}).encode(), tmp_path)
    assert "Decisions" in injected(run, "SessionStart")


# --- Stop's throttle, settings ------------------------------------------------------------------


def test_stop_captures_only_when_the_last_captured_turn_is_old_enough(fresh_root: Path, transcript: Path) -> None:
    mt = MemTree(fresh_root)
    stop = Event("Stop", SESSION, str(transcript))
    last_turn = datetime(2026, 12, 1, 9, 2, 10, tzinfo=timezone.utc)
    with transcript.open("a") as f:
        f.write('{"type":"assistant","sessionId":"' + SESSION + '","message":{"role":"assis')  # being written
    first = respond.capture(mt, stop, last_turn + timedelta(minutes=1))
    assert first is not None and len(first.logged) == 5  # nothing captured yet: Stop takes it all
    transcript.write_text((DATA / "session1.jsonl").read_text())

    def reply(uuid: str, at: str) -> None:
        line = (DATA / "session1.jsonl").read_text().splitlines()[-1]
        with transcript.open("a") as f:
            new = line.replace('"uuid":"a3"', f'"uuid":"{uuid}"').replace("09:02:10", at)
            f.write(new.replace("Noted", uuid) + "\n")

    reply("a4", "09:04:00")
    assert respond.capture(mt, stop, last_turn + timedelta(minutes=9)) is None  # throttled: 9 < 10 minutes
    later = respond.capture(mt, stop, last_turn + timedelta(minutes=10))
    assert later is not None and len(later.logged) == 1 and later.known == 5
    reply("a5", "09:05:00")
    assert respond.capture(mt, stop, last_turn + timedelta(minutes=10, seconds=20)) is None
    compact = respond.capture(mt, Event("PreCompact", SESSION, str(transcript)), last_turn + timedelta(minutes=11))
    assert compact is not None and len(compact.logged) == 1  # PreCompact is never throttled


def test_hooks_settings_are_read_and_checked() -> None:
    got = parse_settings({"hooks": {"briefing_tokens": 120, "recall_tier": "default", "stop_every_min": 0}})
    assert got.hooks == HooksSettings(briefing_tokens=120, recall_tier="default", stop_every_min=0.0)
    with pytest.raises(ConfigError, match=r"hooks\.recall_tier must be one of all, default"):
        parse_settings({"hooks": {"recall_tier": "bank"}})


def test_zero_budgets_turn_briefing_and_recall_off(sample_root: Path) -> None:
    (sample_root / "memtree.yaml").write_text("hooks:\n  briefing_tokens: 0\n  recall_tokens: 0\n", encoding="utf-8")
    mt = MemTree(sample_root)
    assert respond.respond(mt, Event("SessionStart"), NOW) == ""
    assert respond.respond(mt, Event("UserPromptSubmit", prompt="가치관이 뭐야?"), NOW) == ""


# --- the plugin ---------------------------------------------------------------------------------


def test_claude_install_writes_the_plugin_and_print_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from memtree.cli.app import app

    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    printed = CliRunner().invoke(app, ["claude", "install", "--print"])
    assert printed.exit_code == 0 and not home.exists()
    assert "commands/remember.md" in printed.output and '"mcpServers"' in printed.output
    done = CliRunner().invoke(app, ["claude", "install"])
    assert done.exit_code == 0, done.output
    plugin = home / ".claude" / "skills" / "memtree"
    manifest = json.loads((plugin / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "memtree" and manifest["version"][0].isdigit()
    hooks = json.loads((plugin / "hooks" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == set(protocol.EVENTS)
    for event, groups in hooks.items():
        (command,) = [h["command"] for g in groups for h in g["hooks"]]
        assert command.endswith(f" hook {event}") and "{memtree}" not in command
    server = json.loads((plugin / ".mcp.json").read_text())["mcpServers"]["memtree"]
    assert server["args"] == ["mcp"] and server["command"].endswith("memtree")
    for name in ("remember", "recall", "forget"):
        text = (plugin / "commands" / f"{name}.md").read_text()
        assert text.startswith("---\ndescription:") and "$ARGUMENTS" in text
    project = CliRunner().invoke(app, ["claude", "install", "--scope", "project"])
    assert project.exit_code == 0 and (tmp_path / ".claude" / "skills" / "memtree" / ".mcp.json").is_file()
    bad = CliRunner().invoke(app, ["claude", "install", "--scope", "team"])
    assert bad.exit_code == 2 and "--scope must be one of user, project" in bad.output


# --- focus --------------------------------------------------------------------------------------


def _hit(text: str, matched: tuple[str, ...]) -> Hit:
    return Hit("n", "bank/a.md", (3, 3), 1.0, {"coverage": 1.0}, text, "bank", matched)


def test_a_long_hit_is_cut_to_its_sentences_that_match() -> None:
    filler = " ".join(f"Sentence {i} talks about weather and lunch plans." for i in range(30))
    text = f"{filler} The shop deploys on Fridays with a blue-green switch. {filler}\n"
    cut = focus(_hit(text, ("deploys", "fridays")), 60)
    assert "deploys on Fridays" in cut.text and estimate_tokens(cut.text) <= 60
    assert cut.text.startswith("… ") and cut.text.endswith(" …") and cut.lines == (3, 3)
    short = _hit("배포는 금요일에만 한다.", ("배포",))
    assert focus(short, 60) == short  # within the limit: whole
    korean = "날씨 이야기. " * 40 + "배포는 금요일에만 blue-green으로 한다. " + "점심 이야기. " * 40
    assert "배포는 금요일에만" in focus(_hit(korean, ("배포", "금요일")), 40).text
    assert focus(_hit(text, ("deploys",)), 0).text == text  # 0: whole hits
