"""What the CLI tells a user to run exists: every `memtree …` a message or help text names is a real
command with real options, a usage error points at its own command's help, and ``--root`` may come
before the command (issue 28.10)."""

from __future__ import annotations

import functools
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main

from memtree.cli import app as cli_app

PACKAGE = Path(cli_app.__file__).resolve().parent.parent
REFERENCE = re.compile(r"`memtree ([^`]+)`|\(memtree ([a-z][^()`]* --[^()`]*)\)")
"""A command named to a user: in backticks (help texts, hints, docs), or a hint with an option in parentheses."""
GLOBAL = {"--help", "--version", "--no-daemon", "--root", "--install-completion", "--show-completion"}


@functools.cache
def _root() -> Any:
    return typer.main.get_command(cli_app.app)


def _options(command: Any) -> set[str]:
    return {name for p in command.params for name in [*p.opts, *p.secondary_opts]} | {"--help"}


def _commands(group: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    found = []
    for name, command in getattr(group, "commands", {}).items():
        found.append(((*path, name), command))
        found += _commands(command, (*path, name))
    return found


def resolve(words: list[str]) -> str | None:
    """Why ``memtree WORDS`` is not a command line memtree knows, or None when it is."""
    command, known, path = _root(), set(GLOBAL), []
    words = list(words)
    while words:
        word = words.pop(0)
        if word.startswith("<"):  # a placeholder: `memtree <verb> --json`
            break
        if word.startswith("-"):
            option = word.partition("=")[0]
            if option not in known:
                return f"`memtree {' '.join(path)}` has no option {option}"
            if option == "--root" and "=" not in word and words:
                words.pop(0)  # its value
            continue
        sub = getattr(command, "commands", {}).get(word)
        if sub is not None:
            command, path = sub, [*path, word]
            known |= _options(sub)
        elif not path:
            return f"no command {word!r}"
        else:
            break  # an argument (QUERY, a path, …): the rest are its words and options
    return None


def _references() -> list[tuple[str, str]]:
    found = []
    for source in sorted(PACKAGE.rglob("*.py")):
        text = source.read_text(encoding="utf-8")
        for m in REFERENCE.finditer(text):
            found.append((f"{source.relative_to(PACKAGE.parent)}", m.group(1) or m.group(2)))
    return found


def test_the_references_are_found() -> None:
    named = {words for _, words in _references()}
    assert {"check --fix", "decay --archive", "index --embed"} <= named


@pytest.mark.parametrize(("source", "words"), _references())
def test_every_command_a_message_or_help_names_exists(source: str, words: str) -> None:
    # a word like SECONDS or 127.0.0.1:PORT after a command is its argument: only commands and options are checked
    assert resolve(words.split()) is None, f"{source}: `memtree {words}`"


@pytest.mark.parametrize("path", [path for path, _ in _commands(_root())], ids=" ".join)
def test_a_usage_error_points_at_its_own_commands_help(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", ["memtree", *path, "--no-such-option"])
    with pytest.raises(SystemExit) as stop:
        cli_app.main()
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--no-such-option" in err, err
    named = re.search(r"see `memtree ([^`]*)--help`", err)
    assert named is not None and named.group(1).split() == list(path), err
    assert resolve(named.group(1).split()) is None


@pytest.mark.parametrize(
    ("argv", "where"),
    [
        (["export", "--bank"], "memtree export --help"),  # click raises this one without a context
        (["conflicts", "resolve"], "memtree conflicts resolve --help"),
        (["banks", "disable"], "memtree banks disable --help"),
        (["no-such-command"], "memtree --help"),
    ],
)
def test_a_missing_value_or_argument_points_at_the_commands_help(
    argv: list[str], where: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", ["memtree", *argv])
    with pytest.raises(SystemExit):
        cli_app.main()
    assert f"(see `{where}`)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "hoisted"),
    [
        (["--root", "D", "search", "q"], ["search", "--root", "D", "q"]),
        (["--root=D", "search", "q"], ["search", "--root=D", "q"]),
        (
            ["--no-daemon", "--root", "D", "conflicts", "resolve", "x"],
            ["--no-daemon", "conflicts", "--root", "D", "resolve", "x"],
        ),
        (["search", "--root", "D", "q"], ["search", "--root", "D", "q"]),  # already after it
        (["search", "--root"], ["search", "--root"]),
        (["--root"], ["--root"]),  # no value, no command: typer says so
        (["--root", "D"], ["--root", "D"]),
        (["--root", "D", "--", "search"], ["--root", "D", "--", "search"]),
    ],
)
def test_the_root_may_come_before_the_command(argv: list[str], hoisted: list[str]) -> None:
    from memtree.cli.entry import hoist

    assert hoist(argv) == hoisted


def test_memtree_root_dir_search_searches_that_root(sample_root: Path, tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "memtree", "--root", str(sample_root), "--no-daemon", "search", "가치관", "--json"],
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert b'"hits"' in run.stdout
