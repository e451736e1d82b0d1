"""Rule-based knowledge detectors for ``memtree distill`` (DESIGN.md §5): raw log lines → candidates.

Pure: log text in, :class:`Candidate` values out. Five rules, each with the design's confidence —
error→fix, retry→success, config change, first use of a tool, a repeated manual chore — read
Korean and English (NFD input is composed first). Each candidate gets a section, a type and an
instructivity score; those below the caller's ``min_score`` (memtree.yaml ``distill.min_score``,
30) are dropped. Writing survivors through ``add`` is the caller's job.

Why one module over 300 lines: the five rules share one pass over the log and one scoring table;
each rule is short, and apart they would repeat the log parsing.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from memtree.notes.entries import strip_meta
from memtree.text.terms import normalize, terms

SECTIONS = ("COMMANDS", "DEBUGGING", "ARCHITECTURE", "WORKFLOW", "TOOLS", "PATTERNS", "PREFERENCES", "GENERAL")
TYPES = ("METHOD", "TRICK", "PITFALL", "PREFERENCE", "KNOWLEDGE")

# Rule confidences, from the design (and the Reflector it follows).
ERROR_FIX = 0.8
RETRY_SUCCESS = 0.7
CONFIG_CHANGE = 0.6
NEW_TOOL = 0.65
REPETITIVE = 0.5
REPEAT_MIN = 3  # a chore counts as repeated from its third occurrence
REPEAT_STEP = 0.05  # each occurrence past the third adds this much confidence ...
REPEAT_CAP = 0.7  # ... up to here: repetition alone never outranks a retry→success

# Rule names; the order is the priority when two candidates claim the same log line
# (a retry story is the fuller telling of an error→fix; a fix explains a config change in it).
RULES = ("retry_success", "error_fix", "config_change", "new_tool", "repetitive")
FIX_WINDOW = 2  # a fix may follow its error within this many later entries
RETRY_WINDOW = 3  # failed attempts and the success may spread over this many later entries

_I = re.IGNORECASE
_ERROR = re.compile(
    r"\b[A-Z]\w*(?:Error|Exception|Fault)\b|\b(?:error|traceback|exception|segfault|panic|crash(?:ed|es)?|"
    r"fail(?:ed|s|ing|ure)?|oom)\b|에러|오류|실패|예외|크래시|뻗|터졌|터짐"
)
# A strong cue says the problem is gone; a weak cue (an arrow, a cause) needs no "still open" marker.
_FIX_STRONG = re.compile(
    r"(?<![-\w])fix(?:ed|es)?\b|\b(?:solved|resolved|works now|now works|worked)\b|해결|고침|고쳤|고쳐서|"
    r"수정(?:해서|함|했|하니)|바꿔서|바꾸니|하니(?:까)? 됨|사라짐|없어짐|\b(?:disappeared|went away)\b",
    _I,
)
_FIX_WEAK = re.compile(
    r"→|->|알고 ?보니|원인(?:은|이|:)|때문|"
    r"\b(?:turned out|caused by|because|the (?:root )?cause|the (?:fix|problem|issue) (?:was|is))\b",
    _I,
)
_OPEN = re.compile(
    r"아직|모르|조사 ?중|확인 ?중|찾는 ?중|내일|나중에|\b(?:investigating|no idea|not yet|unclear|unknown|tbd|todo|"
    r"tomorrow|still (?:failing|broken|no))\b",
    _I,
)
_CAUSAL = re.compile(r"알고 ?보니|원인|때문|\b(?:because|turned out|caused by|root cause|since|so that)\b", _I)
# Words that make a line something to act on, not just a report.
_ACTION = re.compile(r"해야|하자|할 것|\b(?:should|must|have to|need to|instead|always|never)\b", _I)

_TRY_FAIL = re.compile(
    r"안 ?(?:됨|됐|되|돼|먹)|소용 ?없|효과 ?없|여전히|\b(?:didn'?t (?:work|help)|did not work|doesn'?t work|no luck|"
    r"no effect|did nothing|same error|still (?:fail\w*|broken))\b",
    _I,
)
_TRY_MANY = re.compile(
    r"\S+도,? \S+도|다 안 ?(?:됐|됨|되)|(?:두|세|네|다섯|\d+) ?번(?:째)? ?(?:시도|만)에|"
    r"\b(?:on the (?:second|third|fourth|fifth|\d+(?:nd|rd|th)) (?:try|attempt)|"
    r"after (?:\d+|two|three|four|several|many) (?:tries|attempts)|"
    r"tried .+?(?:,| and | then ).+?\b(?:finally|eventually|in the end|at last))",
    _I,
)
_TRY_OK = re.compile(
    r"해결|성공|(?<!안)(?<!안 )(?:됐다|잘 ?됨|됨)|통과|"
    r"\b(?:worked|works|succeeded|success|solved|fixed|passed|passes)\b",
    _I,
)

_CONF_KO = re.compile(
    r"(?P<key>\S+?)(?:을|를|은|는|이|가)?\s+(?:값을\s+)?(?P<old>\S+?)에서\s+(?P<new>\S+?)(?:으로|로)\s*"
    r"(?:변경|바꿈|바꿨|바꿔|바꾸|올림|올렸|올려|내림|내렸|내려|늘림|늘렸|늘려|줄임|줄였|줄여|수정|설정|조정)"
)
_CONF_KO_SET = re.compile(r"(?P<key>\S+?)(?:을|를)\s+(?P<new>\S+?)(?:으로|로)\s*(?:변경|설정|바꿈|바꿨|올림|내림)")
_CONF_EN = re.compile(
    r"\b(?:set|change[ds]?|changing|bump(?:ed)?|rais(?:e|ed)|lower(?:ed)?|increas(?:e|ed)|decreas(?:e|ed)|reduc(?:e|ed)|"
    r"switch(?:ed)?|update[ds]?)\s+(?P<key>.{1,60}?)\s+from\s+(?P<old>\S+)\s+to\s+(?P<new>\S+)",
    _I,
)
_CONF_ARROW = re.compile(r"(?P<key>[\w.`-]+)\s*[=:]\s*(?P<old>[^\s→]+)\s*(?:→|->)\s*(?P<new>\S+)")
_CONF_ENV = re.compile(r"\b(?:export|set|setx)\s+[A-Z][A-Z0-9_]{2,}=\S+|\b(?:set|changed?) (?P<key>\S+) to \S+", _I)
# Why: "10에서 50으로" alone also reads "서울에서 부산으로"; a key that looks like a setting or a
# number among the values is what makes it a configuration change.
_CONFIG_KEY = re.compile(
    r"[A-Z][A-Z0-9]*_[A-Z0-9_]+|`|\w+[._]\w+|설정|옵션|timeout|size|pool|limit|port|포트|worker|thread|level|버전|version",
    _I,
)
_DIGIT = re.compile(r"\d")
_CODE = re.compile(r"`([^`]+)`")

_NEW_TOOL = re.compile(
    r"처음\s*(?:으로\s*)?(?:써\s?(?:봤|봄|보|본)|사용(?:해|했|하|함)|도입|설치|깔아|돌려\s?봤)|첫 사용|"
    r"\bfirst time (?:using|trying|with|i (?:used|tried))\b|"
    r"\b(?:used|tried|using|trying|installed|set up)\s+\S+(?:\s+\S+){0,2}\s+for the first time\b",
    _I,
)

_CHORE_EXPLICIT = re.compile(
    r"매번.*(?:해야|수동|직접|손으로)|때마다.*(?:해야|수동|직접|손으로|이러고)|또\s.*(?:수동|직접|손으로|다시|재설치|재시작|재실행|재접속|지우|삭제|번째)|"
    r"\bevery (?:\w+ )?(?:deploy|time|release|build|morning|run|pr|merge|pull|restart|day)\w* (?:i|we) "
    r"(?:have|need|must|got) to\b|\beach time (?:i|we)\b.*\b(?:have|need) to\b|"
    r"\b(?:again|for the (?:third|fourth|fifth|\d+(?:rd|th)) time)\b.*\b(?:manually|by hand)\b|"
    r"\b(?:manually|by hand)\b.*\b(?:again|for the (?:third|fourth|fifth|\d+(?:rd|th)) time)\b",
    _I,
)
# Why not 다시/again alone: "다시 5로 되돌림" undoes an experiment, it is no chore. An entry joins a
# chore group on a manual-work word or a redo verb; the group must hold one manual-work word.
_CHORE_MANUAL = re.compile(
    r"수동|직접|손으로|또\s|매번|때마다|해야|\b(?:manually|by hand|again|had to|have to|every time|each time)\b", _I
)
_CHORE_MARK = re.compile(
    _CHORE_MANUAL.pattern
    + r"|재시작|재실행|재설치|재색인|\b(?:re-?ran|re-?run|restart\w*|reinstall\w*|reindex\w*|wiped?)\b",
    _I,
)
_ORDINALS = {"세": 3, "네": 4, "다섯": 5, "여섯": 6, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6}
_COUNT = re.compile(r"(세|네|다섯|여섯|\d+) ?번째|\b(third|fourth|fifth|sixth|\d+)(?:rd|th)? time\b", _I)
# Terms too generic to name a chore on their own.
_CHORE_STOP = frozenset(
    terms("수동 수동으로 직접 다시 또 삭제 지우고 manually by hand again rerun clear restart 오늘 번째")
)

_PREFERENCE = re.compile(r"선호|좋아(?:함|한다|해|하는)|\bprefer\w*|\bi like\b|\brather than\b", _I)
_COMMAND = re.compile(r"`[^`]*\s[^`]*`|\$ |--\w|\bexport\b|\bsetx?\b|명령", _I)
_IDENT = re.compile(r"`[^`]+`|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\b[A-Z][a-z]+[A-Z]\w*\b|\b[\w-]+\.[a-z]{1,5}\b|\w/\w")
_LINE = re.compile(r"^(?P<indent>\s*)(?:[-*+]|\d+\.)\s+(?:(?P<time>\d{1,2}:\d{2})\s+)?(?P<text>.*)$")


@dataclass(frozen=True)
class LogLine:
    """One log entry: its file, first line number (1-based), time (``""`` if none) and text."""

    path: str
    line: int
    time: str
    text: str


@dataclass(frozen=True)
class Candidate:
    """A piece of knowledge found in a log, with where it came from."""

    rule: str
    confidence: float
    section: str
    type: str
    score: int
    text: str
    source: tuple[tuple[str, int], ...]


def parse_log(path: str, text: str) -> list[LogLine]:
    """Entries of a daily log: ``- HH:MM text`` bullets, plain bullets and paragraphs; indented lines continue one."""
    out: list[LogLine] = []
    open_entry = False  # an unindented paragraph line continues the previous one until a blank line
    for number, line in enumerate(unicodedata.normalize("NFC", text).splitlines(), start=1):
        raw = strip_meta(line)  # Why: `memtree ingest` logs carry each turn's metadata, which is no knowledge
        if line.strip() and not raw.strip():
            continue  # a metadata-only line (ingest's watermark) neither opens nor closes an entry
        if not raw.strip() or raw.lstrip().startswith("```"):
            open_entry = open_entry and bool(raw.strip())
            continue
        if raw.startswith("#"):
            open_entry = False
            continue
        bullet = _LINE.match(raw)
        indented = raw[:1].isspace()
        if out and (indented or (open_entry and not bullet)):
            body = bullet.group("text") if bullet else raw.strip()
            last = out[-1]
            out[-1] = LogLine(last.path, last.line, last.time, f"{last.text} {body.strip()}")
            continue
        if bullet:
            out.append(LogLine(path, number, bullet.group("time") or "", bullet.group("text").strip()))
            open_entry = False
        else:
            out.append(LogLine(path, number, "", raw.strip()))
            open_entry = True
    return out


def read_log(path: str | Path) -> list[LogLine]:
    """Read and parse one log file (the module's only file access)."""
    return parse_log(str(path), Path(path).read_text(encoding="utf-8"))


def detect(lines: Sequence[LogLine], min_score: int) -> list[Candidate]:
    """All candidates in the lines scoring at least ``min_score``, one per log line, ordered by source."""
    entries = [LogLine(x.path, x.line, x.time, unicodedata.normalize("NFC", x.text)) for x in lines]
    found: list[tuple[str, float, list[int]]] = []
    for i in range(len(entries)):
        for hit in (_error_fix(entries, i), _retry_success(entries, i)):
            if hit:
                found.append(hit)
        text = entries[i].text
        if _is_config_change(text):
            found.append(("config_change", CONFIG_CHANGE, [i]))
        if _NEW_TOOL.search(text):
            found.append(("new_tool", NEW_TOOL, [i]))
    groups = _chore_groups(entries)
    grouped = {i for g in groups for i in g}
    for i, e in enumerate(entries):
        if i not in grouped and _CHORE_EXPLICIT.search(e.text):
            found.append(("repetitive", _repeat_confidence(_stated_count(e.text)), [i]))
    kept: list[tuple[str, float, list[int]]] = []
    claimed: set[int] = set()
    for hit in sorted(found, key=lambda h: (RULES.index(h[0]), h[2][0])):
        if not claimed.intersection(hit[2]):
            kept.append(hit)
            claimed.update(hit[2])
    # Why: a repeated chore spans the whole log; the single lines inside it may still teach something else.
    for g in groups:
        kept.append(("repetitive", _repeat_confidence(max(len(g), *(_stated_count(entries[i].text) for i in g))), g))
    out = [c for c in (_candidate(entries, *hit) for hit in kept) if c.score >= min_score]
    return sorted(out, key=lambda c: (c.source[0], RULES.index(c.rule)))


def _same_file_window(entries: Sequence[LogLine], i: int, width: int) -> range:
    end = i + 1
    while end < len(entries) and end <= i + width and entries[end].path == entries[i].path:
        end += 1
    return range(i, end)


def _error_fix(entries: Sequence[LogLine], i: int) -> tuple[str, float, list[int]] | None:
    err = _ERROR.search(entries[i].text) or _ERROR.search(entries[i].text.lower())
    if not err:
        return None
    for j in _same_file_window(entries, i, FIX_WINDOW):
        text = entries[j].text[err.end() :] if j == i else entries[j].text
        if j > i and _ERROR.search(text) and not _FIX_STRONG.search(text):
            return None  # a new problem before any fix: the first one stayed open
        if _FIX_STRONG.search(text) or (_FIX_WEAK.search(text) and not _OPEN.search(entries[j].text)):
            return ("error_fix", ERROR_FIX, list(range(i, j + 1)))
    return None


def _retry_success(entries: Sequence[LogLine], i: int) -> tuple[str, float, list[int]] | None:
    if not (_TRY_FAIL.search(entries[i].text) or _TRY_MANY.search(entries[i].text)):
        return None
    fails, many = 0, False
    for j in _same_file_window(entries, i, RETRY_WINDOW):
        text = entries[j].text
        marks = list(_TRY_FAIL.finditer(text))
        fails += len(marks)
        many = many or bool(_TRY_MANY.search(text))
        after = text[marks[-1].end() :] if marks else text
        if (fails >= 2 or many) and _TRY_OK.search(after):
            return ("retry_success", RETRY_SUCCESS, list(range(i, j + 1)))
    return None


def _is_config_change(text: str) -> bool:
    for pattern in (_CONF_KO, _CONF_EN, _CONF_ARROW, _CONF_KO_SET):
        for m in pattern.finditer(text):
            values = m.group("new") + (m.group("old") if "old" in m.groupdict() else "")
            if _CONFIG_KEY.search(m.group("key")) or (pattern is not _CONF_ARROW and _DIGIT.search(values)):
                return True
    env = _CONF_ENV.search(text)
    return bool(env and (env.group("key") is None or _CONFIG_KEY.search(env.group("key"))))


def _chore_groups(entries: Sequence[LogLine]) -> list[list[int]]:
    """Entries that repeat one manual action ≥ REPEAT_MIN times, grouped by the term they share."""
    by_term: dict[str, list[int]] = {}
    for i, e in enumerate(entries):
        if _CHORE_MARK.search(e.text):
            # Why code spans first: `.memtree/` names the chore exactly; a word like "index" also
            # turns up in unrelated lines that happen to say "by hand".
            spans = {"`" + normalize(s) for s in _CODE.findall(e.text)}
            words = {t for t in terms(e.text) if len(t) > 1 and not t[0].isdigit() and t not in _CHORE_STOP}
            for key in sorted(spans | words):
                by_term.setdefault(key, []).append(i)
    groups: list[list[int]] = []
    used: set[int] = set()
    for _, idx in sorted(by_term.items(), key=lambda kv: (not kv[0].startswith("`"), -len(kv[1]), kv[1][0], kv[0])):
        free = [i for i in idx if i not in used]
        if len(free) >= REPEAT_MIN and any(_CHORE_MANUAL.search(entries[i].text) for i in free):
            groups.append(free)
            used.update(free)
    return groups


def _stated_count(text: str) -> int:
    m = _COUNT.search(text)
    if not m:
        return 0
    word = (m.group(1) or m.group(2)).lower()
    return int(word) if word.isdigit() else _ORDINALS.get(word, 0)


def _repeat_confidence(count: int) -> float:
    return round(min(REPEAT_CAP, REPETITIVE + REPEAT_STEP * max(0, count - REPEAT_MIN)), 2)


def _candidate(entries: Sequence[LogLine], rule: str, confidence: float, idx: list[int]) -> Candidate:
    picked = [entries[i] for i in idx]
    if rule == "repetitive" and len(idx) >= REPEAT_MIN:
        # Why one telling, not every occurrence joined: three lines of "cleared the cache by hand"
        # read as one long, repetitive entry. The clearest telling of a chore is the line that
        # says it repeats; else its first occurrence.
        best = next((e for e in picked if _CHORE_EXPLICIT.search(e.text)), picked[0])
        text = f"Repeated manual step ({len(idx)}×): {best.text}"
    else:
        text = " ".join(e.text for e in picked)
    section, kind = _classify(rule, text)
    return Candidate(rule, confidence, section, kind, instructivity(confidence, text), text,
                     tuple((e.path, e.line) for e in picked))  # fmt: skip


def _classify(rule: str, text: str) -> tuple[str, str]:
    if _PREFERENCE.search(text):
        return "PREFERENCES", "PREFERENCE"
    if rule == "error_fix":
        return "DEBUGGING", "PITFALL" if _CAUSAL.search(text) else "METHOD"
    if rule == "retry_success":
        return "DEBUGGING", "METHOD"
    if rule == "config_change":
        return ("COMMANDS" if _CONF_ENV.search(text) else "ARCHITECTURE"), "KNOWLEDGE"
    if rule == "new_tool":
        return "TOOLS", "KNOWLEDGE"
    return "WORKFLOW", "TRICK"


def instructivity(confidence: float, text: str) -> int:
    """Score 0–100: the rule's confidence × how specific and actionable the text is."""
    # Why these weights: a bare rule hit with no identifier, number or cause lands near min_score (30)
    # for the weaker rules, so vague lines ("또 에러 고침") fall out while concrete ones stay.
    specificity = 0.55
    specificity += 0.15 if _IDENT.search(text) else 0.0
    specificity += 0.10 if _DIGIT.search(text) else 0.0
    specificity += 0.10 if _CAUSAL.search(text) or _COMMAND.search(text) or _ACTION.search(text) else 0.0
    specificity += 0.10 if len(text) >= 50 else -0.25 if len(text) < 20 else 0.0
    return max(0, min(100, round(100 * confidence * specificity)))
