"""Banks: top-level folders of bank/; a disabled one is left out of search and context."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from memtree import MemTree
from memtree.cli.app import app
from memtree.errors import QueryError
from memtree.lifecycle.banks import list_banks, set_enabled
from memtree.notes.layout import skipped


def test_banks_are_listed_with_their_counts(sample_root: Path) -> None:
    banks = {b.name: b for b in list_banks(sample_root)}
    assert set(banks) == {"identity", "project", "technical"}
    assert all(b.enabled and b.notes == 2 and b.entries > 0 and b.bytes > 0 for b in banks.values())


def test_a_disabled_bank_is_left_out_of_search_and_context_and_comments_survive(sample_root: Path) -> None:
    config = sample_root / "memtree.yaml"
    config.write_text("# team settings\nsearch:\n  max_results: 4  # short answers\n", encoding="utf-8")
    assert MemTree(sample_root).search("크론 스케줄").hits
    assert set_enabled(sample_root, "technical", False) == ("technical",)
    text = config.read_text(encoding="utf-8")
    assert "# team settings" in text and "# short answers" in text
    assert yaml.safe_load(text) == {"search": {"max_results": 4}, "banks": {"disabled": ["technical"]}}
    mt = MemTree(sample_root)
    result = mt.search("크론 스케줄")
    assert result.hits == () and "disabled banks" in (result.rejected or "")
    assert all(not s.startswith("bank/technical/") for s in mt.context("크론 스케줄 설계 파이프라인").sources)
    assert (sample_root / "bank/technical/cron-design.md").is_file()  # notes untouched
    set_enabled(sample_root, "technical", True)
    assert MemTree(sample_root).search("크론 스케줄").hits[0].path.startswith("bank/technical/")


def test_a_block_style_list_is_rewritten_cleanly(sample_root: Path) -> None:
    config = sample_root / "memtree.yaml"
    config.write_text(
        "banks:\n  disabled:\n    - identity\n    - project\nsplit:\n  max_bytes: 9000\n", encoding="utf-8"
    )
    set_enabled(sample_root, "project", True)
    assert yaml.safe_load(config.read_text(encoding="utf-8")) == {
        "banks": {"disabled": ["identity"]},
        "split": {"max_bytes": 9000},
    }


def test_an_unknown_bank_is_an_error(sample_root: Path) -> None:
    with pytest.raises(QueryError) as err:
        set_enabled(sample_root, "nosuch", False)
    assert "identity, project, technical" in str(err.value)
    assert not (sample_root / "memtree.yaml").exists()


def test_cli_banks(sample_root: Path) -> None:
    runner = CliRunner()
    listed = json.loads(runner.invoke(app, ["banks", "--json", "--root", str(sample_root)]).stdout)["banks"]
    assert {b["name"] for b in listed} == {"identity", "project", "technical"}
    off = runner.invoke(app, ["banks", "disable", "identity", "--root", str(sample_root)])
    assert off.exit_code == 0 and "disabled" in off.stdout
    shown = runner.invoke(app, ["banks", "--root", str(sample_root)])
    assert "identity" in shown.stdout and "disabled" in shown.stdout
    bad = runner.invoke(app, ["banks", "disable", "a/b", "--root", str(sample_root)])
    assert bad.exit_code == 2 and bad.stderr.startswith("memtree: error:")


@pytest.mark.parametrize(
    "order",
    [
        ["banks", "disable", "technical", "--json", "--root"],
        ["banks", "--json", "disable", "technical", "--root"],
        ["banks", "--json", "--root", "ROOT", "disable", "technical"],
    ],
)
def test_banks_disable_and_enable_speak_json_wherever_the_flags_go(sample_root: Path, order: list[str]) -> None:
    args = [str(sample_root) if a == "ROOT" else a for a in order] + ([] if "ROOT" in order else [str(sample_root)])
    off = CliRunner().invoke(app, args)
    assert off.exit_code == 0, off.stderr
    assert json.loads(off.stdout) == {"bank": "technical", "enabled": False, "disabled_banks": ["technical"]}
    on = CliRunner().invoke(app, ["banks", "--json", "--root", str(sample_root), "enable", "technical"])
    assert json.loads(on.stdout) == {"bank": "technical", "enabled": True, "disabled_banks": []}
    assert all(b.enabled for b in list_banks(sample_root))


def test_the_inbox_is_a_bank_that_can_be_disabled(sample_root: Path) -> None:
    mt = MemTree(sample_root, refresh_interval=0)
    mt.add("점심 메뉴는 김치찌개가 제일 무난하다")
    mt.add("Lunch on Thursdays is usually team ramen")
    banks = {b.name: b for b in list_banks(sample_root)}
    assert banks["inbox"].notes == 1 and banks["inbox"].entries == 2
    assert set_enabled(sample_root, "inbox", False) == ("inbox",)
    assert MemTree(sample_root).search("김치찌개 점심").hits == ()


def test_an_old_roots_inbox_in_bank_is_listed_as_the_inbox_bank_and_stays_put(sample_root: Path) -> None:
    old = sample_root / "bank/inbox.md"
    old.write_text("# inbox\n\n- 예전 메모 하나\n- an old note\n", encoding="utf-8")
    banks = {b.name: b for b in list_banks(sample_root)}
    assert banks["inbox"].notes == 1 and banks["inbox"].entries == 2
    assert set_enabled(sample_root, "inbox", False) == ("inbox",)
    assert old.is_file() and {b.name for b in list_banks(sample_root) if not b.enabled} == {"inbox"}
    assert skipped(("inbox",)) == ("bank/inbox/", "bank/inbox.md")
