"""memtree.config: memtree.yaml → frozen settings; wrong types are ConfigError."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import write_root

from memtree import MemTree
from memtree.config import Settings, TagRoute, load_settings, parse_settings
from memtree.errors import ConfigError


def test_no_file_means_the_design_defaults(tmp_path: Path) -> None:
    s = load_settings(tmp_path)
    assert s == Settings()
    assert (s.search.tree_weight, s.search.bm25_weight, s.search.partial_match) == (0.4, 0.6, 0.7)
    assert (s.search.max_results, s.search.token_budget, s.search.cache_ttl_s) == (5, 2000, 1800)
    assert s.split.max_bytes == 10_240


def test_values_are_read_and_unknown_keys_ignored(tmp_path: Path) -> None:
    (tmp_path / "memtree.yaml").write_text(
        "search:\n  max_results: 8\n  cache_ttl_s: 0.5\n  future_knob: 3\n"
        "split:\n  max_bytes: 4096\n"
        "distill:\n  min_score: 30\n",
        encoding="utf-8",
    )
    s = load_settings(tmp_path)
    assert s.search.max_results == 8 and isinstance(s.search.max_results, int)
    assert s.search.cache_ttl_s == 0.5  # a float setting keeps its fraction
    assert s.split.max_bytes == 4096


@pytest.mark.parametrize(
    "yaml_text",
    [
        "search:\n  tree_weight: heavy\n",
        "search:\n  max_results: true\n",
        "search:\n  max_results: 2.5\n",
        "search:\n  token_budget: -1\n",
        "search:\n  max_results: .inf\n",
        "search:\n  tree_weight: .nan\n",
        "search: 5\n",
        "- just\n- a list\n",
        "search: [unclosed\n",
    ],
)
def test_wrong_values_are_config_errors_naming_the_file(tmp_path: Path, yaml_text: str) -> None:
    (tmp_path / "memtree.yaml").write_text(yaml_text, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"memtree\.yaml"):
        load_settings(tmp_path)


def test_tree_weight_zero_leaves_bm25_alone_in_the_blend(sample_root: Path) -> None:
    default = MemTree(sample_root).search("가치관이 뭐야?")
    assert default.hits[0].signals["tree"] > 0
    (sample_root / "memtree.yaml").write_text("search:\n  tree_weight: 0.0\n", encoding="utf-8")
    result = MemTree(sample_root).search("가치관이 뭐야?")
    assert result.weights["tree"] == 0.0
    assert result.hits
    for hit in result.hits:
        assert hit.signals["keyword"] == pytest.approx(0.6 * hit.signals["bm25_norm"], abs=1e-3)
    # the blend, not the final score: the sample's notes decay with the calendar, to 0.0001 in a year
    assert result.hits[0].signals["keyword"] < default.hits[0].signals["keyword"]


# Every key of DESIGN §8, set to a value that is not its default: each must reach Settings.
DESIGN_KEYS: dict[str, Any] = {
    "search.tree_weight": 0.3,
    "search.bm25_weight": 0.7,
    "search.partial_match": 0.6,
    "search.max_results": 7,
    "search.token_budget": 1500,
    "search.cache_ttl_s": 60.0,
    "search.keyword_weight": 0.5,
    "search.semantic_weight": 0.5,
    "search.reject_threshold": 0.25,
    "search.recency_boost": 1.1,
    "search.scope_boost": 1.4,
    "distill.min_score": 40,
    "privacy.custom_patterns": ["ACME-[0-9]{6}"],
    "banks.disabled": ["scratch"],
    "split.max_bytes": 4096,
    "retain.merge_threshold": 0.9,
    "retain.conflict_threshold": 0.4,
    "retain.merge_strategy": "merge_content",
    "consolidate.jaccard": 0.9,
    "consolidate.prune_days": 60.0,
    "decay.half_life_days": 10.0,
    "decay.boost_factor": 0.2,
    "decay.permanent_threshold": 20,
    "decay.protect_days": 3.0,
    "decay.archive_below": 0.05,
}


def _read(settings: Settings, dotted: str) -> Any:
    """The value of a memtree.yaml key in Settings (privacy and banks are flattened onto it)."""
    flat = {"privacy.custom_patterns": "custom_patterns", "banks.disabled": "disabled_banks"}
    if dotted in flat:
        return list(getattr(settings, flat[dotted]))
    section, key = dotted.split(".")
    return getattr(getattr(settings, section), key)


def test_every_design_key_is_read_from_memtree_yaml(tmp_path: Path) -> None:
    doc: dict[str, dict[str, Any]] = {}
    for dotted, value in DESIGN_KEYS.items():
        assert _read(Settings(), dotted) != value, f"{dotted}: pick a value that is not the default"
        section, key = dotted.split(".")
        doc.setdefault(section, {})[key] = value
    doc["routing"] = {"Z": {"node": "project/zeta", "keywords": ["제타"]}}  # routing (TAG_ROUTING)
    (tmp_path / "memtree.yaml").write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    s = load_settings(tmp_path)
    assert {k: _read(s, k) for k in DESIGN_KEYS} == DESIGN_KEYS
    assert s.routing["Z"] == TagRoute("project/zeta", ("제타",)) and "W" in s.routing


def test_decay_and_consolidate_defaults_are_the_designs() -> None:
    d, c = Settings().decay, Settings().consolidate
    curve = (d.half_life_days, d.boost_factor, d.permanent_threshold, d.protect_days, d.archive_below)
    assert curve == (30, 0.1, 15, 7, 0.02)
    assert (c.jaccard, c.prune_days, c.prune_min_recalls) == (0.85, 90, Settings().recall.promote_after)


@pytest.mark.parametrize(
    ("yaml_text", "says"),
    [
        ("decay:\n  half_life_days: monthly\n", "decay.half_life_days must be a number"),
        ("decay:\n  half_life_days: 0\n", "decay.half_life_days must be greater than 0"),
        ("decay:\n  boost_factor: -0.1\n", "decay.boost_factor must not be negative"),
        ("decay:\n  permanent_threshold: 2.5\n", "decay.permanent_threshold must be a whole number"),
        ("decay:\n  protect_days: .inf\n", "decay.protect_days must be a finite number"),
        ("decay:\n  archive_below: 1.5\n", "decay.archive_below must be at most 1"),
        ("decay: 30\n", "'decay' must be a mapping"),
        ("consolidate:\n  jaccard: 0\n", "consolidate.jaccard must be greater than 0"),
        ("consolidate:\n  jaccard: 85\n", "consolidate.jaccard must be at most 1"),
        ("consolidate:\n  prune_days: true\n", "consolidate.prune_days must be a number"),
        ("consolidate:\n  prune_min_recalls: -3\n", "consolidate.prune_min_recalls must not be negative"),
        ("search:\n  adjacency_weight: 2\n", "search.adjacency_weight must be at most 1"),
        ("search:\n  evidence_weight: 1.5\n", "search.evidence_weight must be at most 1"),
    ],
)
def test_wrong_decay_and_consolidate_values_are_one_clear_line(tmp_path: Path, yaml_text: str, says: str) -> None:
    (tmp_path / "memtree.yaml").write_text(yaml_text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(tmp_path / "memtree.yaml")) and says in message


NOW = datetime(2026, 12, 1, 12, tzinfo=timezone.utc)


def _aged_root(root: Path, yaml_text: str = "") -> Path:
    """A bank note of a hand entry 20 days old and an auto entry 40 days old, with memtree.yaml."""
    made = (NOW - timedelta(days=20)).isoformat()
    auto = (NOW - timedelta(days=40)).isoformat()
    note = (
        f"# 배포\n\n- 배포 전에 스테이징에서 스모크 테스트를 돌린다 <!-- memtree: id=e-1; created={made} -->\n"
        f"- 롤백 스크립트는 ops 폴더에 있다 <!-- memtree: id=e-2; created={auto}; source=auto -->\n"
    )
    write_root(root, {"bank/work/deploy.md": note})
    if yaml_text:
        (root / "memtree.yaml").write_text(yaml_text, encoding="utf-8")
    return root


def test_decay_settings_change_the_weights_and_candidates_decay_shows(tmp_path: Path) -> None:
    default = {a.id: a for a in MemTree(_aged_root(tmp_path / "a")).decay(now=NOW)}
    assert default["e-1"].weight == pytest.approx(2 ** (-20 / 30), abs=1e-6)
    assert not default["e-2"].candidate  # 40 days: neither light enough nor past prune_days
    faster = _aged_root(tmp_path / "b", "decay:\n  half_life_days: 10\n  archive_below: 0.1\n")
    fast = {a.id: a for a in MemTree(faster).decay(now=NOW)}
    assert fast["e-1"].weight == pytest.approx(0.25, abs=1e-6)  # 2^(−20/10)
    assert fast["e-2"].candidate and "weight" in fast["e-2"].why  # 2^(−4) = 0.0625 < 0.1
    pruned = _aged_root(tmp_path / "c", "consolidate:\n  prune_days: 30\n")
    stale = {a.id: a for a in MemTree(pruned).decay(now=NOW)}
    assert stale["e-2"].candidate and "auto entry" in stale["e-2"].why and not stale["e-1"].candidate
    kept = _aged_root(tmp_path / "d", "consolidate:\n  prune_days: 30\n  prune_min_recalls: 0\n")
    assert not any(a.candidate for a in MemTree(kept).decay(now=NOW))


def test_decay_half_life_changes_search_scores(tmp_path: Path) -> None:
    yaml_text = "search:\n  reinforce: false\n"
    default = MemTree(_aged_root(tmp_path / "a", yaml_text)).search("스모크 테스트", cache=False, now=NOW)
    faster = _aged_root(tmp_path / "b", yaml_text + "decay:\n  half_life_days: 10\n")
    fast = MemTree(faster).search("스모크 테스트", cache=False, now=NOW)
    assert default.hits[0].signals["decay"] == pytest.approx(2 ** (-20 / 30), abs=1e-3)
    assert fast.hits[0].signals["decay"] == pytest.approx(0.25, abs=1e-3)
    assert fast.hits[0].score < default.hits[0].score


def test_consolidate_jaccard_changes_what_a_dry_run_would_merge(tmp_path: Path) -> None:
    # character-bigram Jaccard of these two is 0.77: under the default 0.85, over 0.75
    short, longer = (
        "Redis 연결 풀은 넉넉하게 잡아야 안정적이다",
        "Redis 연결 풀은 넉넉하게 잡아야 안정적이다 특히 배포 직후",
    )
    note = f"# 인프라\n\n- {short}\n- {longer}\n"
    strict = write_root(tmp_path / "a", {"bank/infra/redis.md": note})
    assert MemTree(strict).consolidate(dry_run=True, now=NOW).merges == ()
    loose = write_root(tmp_path / "b", {"bank/infra/redis.md": note})
    (loose / "memtree.yaml").write_text("consolidate:\n  jaccard: 0.75\n", encoding="utf-8")
    (merge,) = MemTree(loose).consolidate(dry_run=True, now=NOW).merges
    assert merge.keep.entry.content == longer and [d.entry.content for d in merge.drop] == [short]
    assert 0.75 <= merge.similarity < 0.85
    assert (loose / "bank/infra/redis.md").read_text(encoding="utf-8") == note  # a dry run writes nothing


def test_serve_and_maintenance_defaults_are_the_designs() -> None:
    s = Settings()
    assert (s.serve.idle_timeout_s, s.serve.autostart, s.maintenance.consolidate_every_h) == (300, False, 24)


def test_serve_and_maintenance_keys_are_read(tmp_path: Path) -> None:
    (tmp_path / "memtree.yaml").write_text(
        "serve:\n  idle_timeout_s: 0\n  autostart: true\nmaintenance:\n  consolidate_every_h: 0.5\n", encoding="utf-8"
    )
    s = load_settings(tmp_path)
    assert (s.serve.idle_timeout_s, s.serve.autostart, s.maintenance.consolidate_every_h) == (0, True, 0.5)


@pytest.mark.parametrize(
    ("yaml_text", "says"),
    [
        ("serve:\n  idle_timeout_s: -5\n", "serve.idle_timeout_s must not be negative"),
        ("serve:\n  idle_timeout_s: forever\n", "serve.idle_timeout_s must be a number"),
        ("serve:\n  autostart: yes please\n", "serve.autostart must be one of True, False"),
        ("serve: on\n", "'serve' must be a mapping"),
        ("maintenance:\n  consolidate_every_h: .inf\n", "maintenance.consolidate_every_h must be a finite number"),
        ("maintenance:\n  consolidate_every_h: daily\n", "maintenance.consolidate_every_h must be a number"),
    ],
)
def test_wrong_serve_and_maintenance_values_are_one_clear_line(tmp_path: Path, yaml_text: str, says: str) -> None:
    (tmp_path / "memtree.yaml").write_text(yaml_text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(tmp_path / "memtree.yaml")) and says in message


def test_unknown_keys_of_a_known_section_are_named_on_one_line_with_the_closest_key() -> None:
    s = parse_settings(
        {"search": {"max_result": 3, "kk": 1}, "serve": {"autostrat": True}, "future_section": {"x": 1}}, "m.yaml"
    )
    assert s.warnings == (
        "m.yaml: unknown setting search.max_result (did you mean search.max_results?), search.kk, "
        "serve.autostrat (did you mean serve.autostart?): ignored",
    )
    assert s.search.max_results == Settings().search.max_results  # ignored, as before
    assert parse_settings({"search": {"max_results": 3}, "future_section": {"x": 1}}).warnings == ()


def test_search_status_and_check_say_the_unknown_keys(sample_root: Path) -> None:
    from typer.testing import CliRunner

    from memtree.cli.app import app

    (sample_root / "memtree.yaml").write_text("search:\n  max_result: 3\n", encoding="utf-8")
    for args in (["search", "가치관", "--json"], ["status", "--json"], ["check"]):
        run = CliRunner().invoke(app, [*args, "--root", str(sample_root)])
        assert run.stderr.count("unknown setting search.max_result (did you mean search.max_results?)") == 1, args
