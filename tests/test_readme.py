"""The README's first screen: the two commands for a fresh machine, and the first one's output as memtree
prints it on the sample memory. (Every other example of the README and docs/ runs in tests/test_docs.py.)

The sample's scores depend on the day (a note under a week old gets the recency boost), so the
search runs at a fixed ``now`` — the day the README's output was produced — and the test passes
on any date.
"""

from __future__ import annotations

import contextlib
import io
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from conftest import AGE_DAYS

from memtree import MemTree
from memtree.cli.render import print_hits

README = Path(__file__).resolve().parent.parent / "README.md"
README_NOW = datetime(2026, 11, 28, 12, 0, tzinfo=timezone(timedelta(hours=9)))
"""The moment the README's sample output was made at."""


def _first_command_and_output() -> tuple[str, str]:
    text = README.read_text(encoding="utf-8")
    command = re.search(r'memtree search "([^"]+)"', text)
    assert command is not None, "the README's first command is a search"
    output = re.search(r"```\n(#  score  path:lines.*?)```", text, re.S)
    assert output is not None, "the README shows that search's output"
    return command.group(1), output.group(1)


@pytest.mark.skipif(AGE_DAYS != 0, reason="the README shows the sample memory as shipped, not aged")
def test_the_readme_shows_what_the_first_command_prints(sample_root: Path) -> None:
    query, shown = _first_command_and_output()
    result = MemTree(sample_root).search(query, now=README_NOW)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):  # piped output: what a reader copying the command sees in a pipe
        print_hits(result, explain=False, show_text=False)
    assert out.getvalue() == shown


FIRST_SCREEN_LINES = 40
"""What a terminal or a forge shows before scrolling, about."""
COMMANDS = (
    'python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/memtree search "가치관이 뭐야?"',
    "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/python -m pytest -q",
)


@pytest.mark.parametrize("readme", ["README.md", "README.ko.md"])
def test_the_first_screen_shows_the_two_commands_and_the_readme_is_short(readme: str) -> None:
    lines = (README.parent / readme).read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"{readme} is {len(lines)} lines: the rest belongs in docs/"
    first = lines[:FIRST_SCREEN_LINES]
    for command in COMMANDS:
        assert command in first, f"{readme}'s first screen lacks: {command}"
