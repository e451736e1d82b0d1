"""The console script's fast path for `memtree context` answers exactly like the typer command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memtree.cli.app import app
from memtree.cli.entry import ContextArgs, parse_context


def test_the_fast_parser_reads_every_option_form() -> None:
    assert parse_context(["크론 스케줄"]) == ContextArgs("크론 스케줄")
    got = parse_context(["--root", "/m", "q", "--budget=300", "-k", "3", "--json", "--scope", "project:api"])
    assert got == ContextArgs("q", Path("/m"), 300, 3, True, "project:api")
    assert parse_context(["--k=4", "q"]) == ContextArgs("q", k=4)


@pytest.mark.parametrize(
    "args", [[], ["--help"], ["a", "b"], ["q", "--budget", "many"], ["q", "--budget"], ["q", "--verbose"]]
)
def test_anything_else_falls_through_to_typer(args: list[str]) -> None:
    assert parse_context(args) is None


@pytest.mark.parametrize(
    "args",
    [
        ["크론 스케줄 설계", "--budget", "300"],
        ["가치관", "--json", "--budget", "200"],
        ["양자역학 블랙홀 증명"],
        ["가치관", "--scope", "team:x"],
    ],
)
def test_the_console_script_and_the_typer_command_print_the_same(sample_root: Path, args: list[str]) -> None:
    full = [*args, "--root", str(sample_root)]
    fast = subprocess.run(
        [sys.executable, "-m", "memtree", "context", *full], capture_output=True, text=True, timeout=60
    )
    typer_run = CliRunner().invoke(app, ["context", *full])
    assert fast.returncode == typer_run.exit_code == 0
    assert fast.stdout == typer_run.stdout
    assert fast.stderr == typer_run.stderr
