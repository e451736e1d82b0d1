"""memtree.config: memtree.yaml → frozen settings; wrong types are ConfigError."""

from __future__ import annotations

from pathlib import Path

import pytest

from memtree import MemTree
from memtree.config import Settings, load_settings
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
