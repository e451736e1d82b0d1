"""memtree.index.helper: a build that parses notes in a second process writes what a one-process build does."""

from __future__ import annotations

import shutil
import sys
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path

import pytest

from memtree import MemTree, config
from memtree.index import helper

NOTES = {
    "bank/fruit.md": "---\ndate: 2024-03-01\nkeywords: 과일, 가을\n---\n# 과일\n\n"
    "- 사과와 배는 가을 과일이다. 사과를 3월 7일에 샀다.\n- 배는 어제 먹었다.\n",
    "bank/tools.md": "# 도구\n\n- 망치와 드라이버로 선반을 고친다.\n- Notion에 정리했다 last Monday.\n",
    "bank/nfd.md": unicodedata.normalize("NFD", "# 가치관\n\n- 가치관이 지명수배되었다 2024년 1월 7일\n"),
    "bank/broken.md": "---\nbroken: [yaml\n---\n# 깨진 머리말\n\n- 그래도 색인된다 yesterday\n",
    "bank/deep/a/b.md": "# 깊은\n\n- 깊은 곳의 노트 <!-- memtree: created=2024-02-03; id=x1 -->\n",
    "memory/2024-01-07.md": "# 2024-01-07\n\n"
    + "".join(f"- 09:{i:02d} 로그 {i}번 paintings baked\n" for i in range(30)),
    "recall/hot.md": "- 뜨거운 기억 3 days ago\n",
}
BINARY = {"bank/latin1.md": "caf\xe9\n".encode("latin-1"), "bank/nul.md": b"- a NUL \x00 here\n"}


def built(root: Path, min_bytes: int) -> tuple[dict[str, bytes], list[str]]:
    """Index ``root`` afresh: the files the build wrote, and its warnings."""
    shutil.rmtree(root / ".memtree", ignore_errors=True)
    (root / "tree-index.json").unlink(missing_ok=True)
    config.INDEX_PARALLEL_MIN_BYTES = min_bytes
    result = MemTree(root).index()
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in (root / ".memtree" / "index").rglob("*.*")}
    files["tree-index.json"] = (root / "tree-index.json").read_bytes()
    return files, result.report.warnings


@pytest.fixture
def root(make_root: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(config, "INDEX_PARALLEL_MIN_BYTES", config.INDEX_PARALLEL_MIN_BYTES)
    made = make_root(NOTES)
    for rel, data in BINARY.items():
        (made / rel).write_bytes(data)
    return made


def helper_parses_all(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Make the build wait until the helper has parsed every note; the list gets how many it parsed."""
    reached, results = helper.Helper.reached, helper.Helper.results
    counts: list[int] = []

    def wait(self: helper.Helper) -> int:
        deadline = time.monotonic() + 30
        while reached(self) > 0 and self.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        return reached(self)

    def counted(self: helper.Helper, start: int, vocab: object) -> object:
        counts.append(self.n - start)
        return results(self, start, vocab)  # type: ignore[arg-type]

    monkeypatch.setattr(helper.Helper, "reached", wait)
    monkeypatch.setattr(helper.Helper, "results", counted)
    return counts


@pytest.mark.skipif(sys.platform == "win32", reason="a helper runs on POSIX only")
def test_notes_parsed_by_the_helper_give_the_same_files_and_warnings(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alone, said_alone = built(root, min_bytes=10**12)
    counts = helper_parses_all(monkeypatch)
    monkeypatch.setattr(helper, "_idle", lambda: 1.0)
    shared, said_shared = built(root, min_bytes=0)
    assert counts == [len(NOTES) + len(BINARY)]  # every note went through the helper
    assert shared == alone
    assert said_shared == said_alone
    assert any("latin1.md: skipped, not UTF-8" in w for w in said_shared)


def test_a_helper_that_cannot_start_leaves_the_build_to_this_process(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alone, _ = built(root, min_bytes=10**12)
    monkeypatch.setattr(helper, "_idle", lambda: 1.0)
    monkeypatch.setattr(sys, "executable", str(root / "no-such-python"))
    files, warnings = built(root, min_bytes=0)
    assert files == alone
    assert not any("helper" in w for w in warnings)


def test_a_helper_that_dies_at_once_leaves_the_build_to_this_process(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alone, _ = built(root, min_bytes=10**12)
    monkeypatch.setattr(helper, "_idle", lambda: 1.0)
    monkeypatch.setattr(helper, "_BOOT", "import sys; sys.stdout.buffer.write(b'\\x05\\x00'); sys.exit(3)")
    counts = helper_parses_all(monkeypatch)
    files, _ = built(root, min_bytes=0)
    assert counts == [0]
    assert files == alone


def test_no_helper_for_a_small_build_a_busy_machine_or_when_off(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[int] = []
    monkeypatch.setattr(helper, "Helper", lambda *a: started.append(1))
    built(root, min_bytes=10**12)  # under the threshold
    monkeypatch.setattr(helper, "_idle", lambda: 0.0)
    built(root, min_bytes=0)  # no core idle
    (root / "memtree.yaml").write_text("index:\n  parallel: false\n", encoding="utf-8")
    monkeypatch.setattr(helper, "_idle", lambda: 1.0)
    built(root, min_bytes=0)  # turned off
    assert started == []


def test_idle_cores_are_watched_now_and_the_load_average_only_without_proc_stat(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(helper.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(helper.os, "getloadavg", lambda: (3.9, 3.9, 3.9))  # a busy minute, gone quiet now
    monkeypatch.setattr(helper, "_idle_now", lambda cores: 3.5)
    assert helper._idle() == 2.5  # what is idle now, beside the build's own core
    monkeypatch.setattr(helper, "_idle_now", lambda cores: None)  # no /proc/stat: the load average says
    assert helper._idle() == pytest.approx(4 - 1 - 3.9)
    monkeypatch.setattr(helper.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert helper._idle() == 0.0  # one core: never a helper


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="the kernel's CPU counters are a Linux file")
def test_a_moment_of_proc_stat_is_read_as_idle_cores() -> None:
    idle = helper._idle_now(2)
    assert idle is None or 0.0 <= idle <= 2.0  # None only when the clock ticked too coarsely to tell
