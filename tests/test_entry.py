"""The console script's fast paths for `memtree context` and `memtree search --json` answer exactly like
the typer commands."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memtree.cli.app import app
from memtree.cli.fast import ContextArgs, SearchArgs, parse_context, parse_search


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


def test_the_search_parser_reads_every_option_form() -> None:
    got = parse_search(["--root", "/m", "크론 스케줄", "--json", "-k", "3", "--tier=all", "--budget", "50"])
    assert got == SearchArgs("크론 스케줄", Path("/m"), 3, "all", 50)
    got = parse_search(["q", "--json", "--scope", "project:api", "--no-semantic", "--k=2"])
    assert got == SearchArgs("q", k=2, scope="project:api", semantic=False)
    assert parse_search(["--semantic", "q", "--json"]) == SearchArgs("q", semantic=True)


@pytest.mark.parametrize(
    "args",
    [
        ["q"],  # human output: rich, through typer
        ["q", "--json", "--explain"],
        ["--json", "--batch"],
        ["--json"],
        ["", "--json"],
        ["q", "--json", "-k", "many"],
        ["q", "--json", "-k3"],
        ["q", "r", "--json"],
        ["q", "--json", "--help"],
        ["q", "--json", "--tier"],
    ],
)
def test_anything_else_a_search_asks_falls_through_to_typer(args: list[str]) -> None:
    assert parse_search(args) is None


@pytest.mark.parametrize(
    "args",
    [
        ["크론 스케줄 설계", "--json"],
        ["가치관", "--json", "--budget", "200", "-k", "2"],
        ["양자역학 블랙홀 증명", "--json"],  # rejected: exit 1
        ["가치관", "--json", "--tier", "nowhere"],  # a data error: exit 2, one line
        ["가치관", "--json", "--scope", "team:x"],
        ["가치관", "--json", "-k", "0"],
    ],
)
def test_the_console_script_and_the_typer_command_search_alike(
    sample_root: Path, tmp_path: Path, args: list[str]
) -> None:
    # Why two copies: a search counts its hits as recalled, and the count weighs the next search's scores
    twin = tmp_path / "twin"
    shutil.copytree(sample_root, twin)
    fast = subprocess.run(
        [sys.executable, "-m", "memtree", "search", *args, "--root", str(sample_root)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    typer_run = CliRunner().invoke(app, ["search", *args, "--root", str(twin)])
    assert fast.returncode == typer_run.exit_code
    assert fast.stdout == typer_run.stdout.replace(str(twin), str(sample_root))
    assert fast.stderr == typer_run.stderr.replace(str(twin), str(sample_root))
