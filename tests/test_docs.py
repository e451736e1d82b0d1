"""The documentation is tested: every example in README.md, README.ko.md and docs/ runs, and the generated
reference pages are what the code gives.

Examples are found and run by Sybil (``sybil.parse``: one document, its examples in order, one namespace):

- a ``bash`` block runs whole in bash (``set -e``) and must exit 0;
- a ``console`` block is ``$ command`` lines, each followed by the output it prints (stdout and stderr),
  compared as a doctest compares (``...`` stands for any text: an id, a date, a score);
- a ``python`` block runs in the document's namespace;
- ``<!-- skip: next (why) -->`` before a block leaves it out (it needs the network, an agent, a server, or
  minutes: the README's two commands are .ci/run's own first step).

Each document runs in a fresh copy of the sample memory (the working directory), with ``memtree`` from this
interpreter's folder first on PATH, its own HOME, and no daemon; a shell's working directory carries from one
block to the next, so a page may build its own memory first (the README's tour does).
"""

from __future__ import annotations

import doctest
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import AGE_DAYS

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
GENERATED = {"reference/commands.md", "reference/settings.md", "reference/json.md", "reference/errors.md"}
GENERATED |= {"reference/api.md"}
PAGES = sorted(
    [REPO / "README.md", REPO / "README.ko.md"]
    + [p for p in DOCS.rglob("*.md") if p.relative_to(DOCS).as_posix() not in GENERATED]
)
TIMEOUT_S = 120.0
"""One block's limit: the slowest here builds a memory and searches it (a few cold CLI calls)."""

sybil = pytest.importorskip("sybil", reason="the documentation tests need the test extra (sybil)")
from sybil.parsers.markdown import CodeBlockParser, PythonCodeBlockParser, SkipParser  # noqa: E402

PLACE_VARS = ("XDG_DATA_HOME", "APPDATA")


def _env(home: Path) -> dict[str, str]:
    # Why not XDG_DATA_HOME nor APPDATA: with HOME they place the user root; a page's user root is in ``home``
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTREE_") and k not in PLACE_VARS}
    env |= {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}", "HOME": str(home)}
    env |= {"MEMTREE_NO_DAEMON": "1", "NO_COLOR": "1", "COLUMNS": "200", "GIT_AUTHOR_NAME": "docs"}
    env |= {"GIT_AUTHOR_EMAIL": "docs@example.com", "GIT_COMMITTER_NAME": "docs"}
    env |= {"GIT_COMMITTER_EMAIL": "docs@example.com"}
    return env


def _shell(ns: dict[str, Any], script: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` in bash from the document's working directory; keep the directory it ends in."""
    state = ns["home"] / ".cwd"
    wrapped = f"set -e\ncd {ns['cwd']!s}\n{script}\npwd > {state!s}\n"
    done = subprocess.run(
        ["bash", "-c", wrapped], env=ns["env"], capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )
    if done.returncode == 0:
        ns["cwd"] = Path(state.read_text().strip())
    return done


def run_bash(example: Any) -> str | None:
    done = _shell(example.namespace, example.parsed)
    if done.returncode != 0:
        return f"exit {done.returncode}:\n{example.parsed}\n{done.stdout}{done.stderr}"
    return None


def _commands(block: str) -> list[tuple[str, str]]:
    """A console block's (command, shown output) pairs; a command line ending in ``\\`` continues."""
    pairs: list[tuple[str, list[str]]] = []
    lines = block.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            cmd = line[2:]
            while cmd.endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd = cmd[:-1] + "\n" + lines[i]
            pairs.append((cmd, []))
        elif pairs:
            pairs[-1][1].append(line)
        i += 1
    return [(cmd, "".join(f"{ln}\n" for ln in out)) for cmd, out in pairs]


def run_console(example: Any) -> str | None:
    checker = doctest.OutputChecker()
    for cmd, shown in _commands(example.parsed):
        done = _shell(example.namespace, f"{cmd} 2>&1")
        got = "".join(f"{ln.rstrip()}\n" for ln in done.stdout.splitlines())
        if done.returncode != 0 or not checker.check_output(shown, got, doctest.ELLIPSIS):
            return f"$ {cmd}\n(exit {done.returncode}) shown:\n{shown}printed:\n{got}"
    return None


PARSERS = [
    SkipParser(),
    CodeBlockParser(language="bash", evaluator=run_bash),
    CodeBlockParser(language="console", evaluator=run_console),
    PythonCodeBlockParser(),
]


@pytest.mark.skipif(AGE_DAYS != 0, reason="the pages show the sample memory as shipped, not aged")
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_example_on_the_page_runs(page: Path, sample_root: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    document = sybil.Sybil(PARSERS).parse(page)
    document.namespace.update(home=home, cwd=sample_root, env=_env(home))
    old = Path.cwd()
    os.chdir(sample_root)  # a python block reads the sample memory as MemTree() finds it
    try:
        for example in document.examples():
            example.evaluate()  # raises SybilFailure naming the page and line
    finally:
        os.chdir(old)


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_reference", DOCS / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", sorted(p.removeprefix("reference/") for p in GENERATED))
def test_the_generated_reference_page_is_what_the_code_gives(name: str) -> None:
    gen = _generator()
    page = DOCS / "reference" / name
    assert page.read_text(encoding="utf-8") == gen.PAGES[name](), (
        f"docs/reference/{name} is stale: run `python docs/gen_reference.py`"
    )


def test_a_stale_page_is_named_with_the_command_to_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gen = _generator()
    shutil.copytree(DOCS / "reference", tmp_path / "reference")
    gen.REFERENCE = tmp_path / "reference"
    assert gen.main(["--check"]) == 0
    page = tmp_path / "reference" / "settings.md"
    page.write_text(page.read_text(encoding="utf-8").replace("`0.4`", "`0.5`", 1), encoding="utf-8")
    assert gen.main(["--check"]) == 1
    assert "stale: settings.md; run: python docs/gen_reference.py" in capsys.readouterr().err


def test_the_commands_page_names_every_command() -> None:
    from typer.main import get_command

    from memtree.cli.app import app

    text = (DOCS / "reference" / "commands.md").read_text(encoding="utf-8")
    group = get_command(app)
    ctx = group.context_class(group, info_name="memtree")
    for name in group.list_commands(ctx):  # type: ignore[attr-defined]
        assert f"## `memtree {name}`" in text
