#!/usr/bin/env python3
"""The sanitizer's trade-off: secrets caught (samples, variants, encoded) against flags on ordinary text.

    python bench/secret_scan.py ../shared/bench [--repo .] [--json-out secrets.json]

Ordinary text is the KorQuAD and LoCoMo documents (``docs.jsonl`` of the shared bench, read as
they are; nothing is materialized), the strings of ``tests/data/*.jsonl`` and the repository's
``bank/`` notes. Secrets are generated here from pieces (so no scanner flags this file): one sample
per built-in kind, the encoded and disguised variants of issue 9, and a seeded set of encoded
secrets (base64 and URL-safe base64 of `password=…`, `token=ghp_…`, JSON credentials, emails).

Also the labelled corpus of bench/secret_corpus.py (issue 27's disguises, names, ordinary look-alikes),
by split: ``tune`` (what the rules were chosen on), ``holdout`` and ``holdout2`` (each written before the
rules it measures were run on it; see that module).

Printed: the detection rate per set, the documents flagged per kind on ordinary text, the speed
per KB (CPU time, best of three passes), the 1 MB adversarial lines, and two candidate rules that
memtree does *not* use — a bare Shannon-entropy threshold and the same threshold with a label
nearby — so the choice stays measured. When ``detect-secrets`` is installed (``pip install
detect-secrets``) it is measured on the same sets with its default plugins and filters
(``SecretsCollection.scan_file``), for the comparison in memtree/sanitize.py's docstring.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import random
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from memtree.write.sanitize import Sanitizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from secret_corpus import ORDINARY_ALL, SECRETS, Case

SEED = 9
ENCODED_SAMPLES = 200
SPEED_PASSES = 3
ENTROPY_MIN_CHARS = 20
ENTROPY_BITS = 4.0
"""Bits per character; random base64 of 20+ characters scores about 4.2, English words under 3.5."""
LABEL_WINDOW = 20
_RUN = re.compile(rf"[A-Za-z0-9+/=_-]{{{ENTROPY_MIN_CHARS},}}")
_LABEL = re.compile(r"(?i:key|secret|token|passw|credential)|비밀번호|비번|토큰|시크릿|암호")

GITHUB = "ghp" + "_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
OPENAI = "sk-proj" + "-Ab3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW"
AWS_ID = "AKIA" + "IOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY"
SLACK = "xox" + "b-2345678901-2345678901234-AbCdEfGhIjKlMnOpQrStUvWx"
STRIPE = "sk_" + "live_4eC39HqLyjWDarjtT1zdp7dc"
JWT = "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
MAIL = "minji.kim" + "@example.co.kr"

# (set, text, the secret that must not survive)
SAMPLES: list[tuple[str, str, str]] = [
    ("plain", f"토큰은 {GITHUB} 입니다", GITHUB),
    ("plain", f"export OPENAI_API_KEY={OPENAI}", OPENAI),
    ("plain", f"AWS 키는 {AWS_ID} 이다", AWS_ID),
    ("plain", f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET),
    ("plain", f"slack bot: {SLACK}", SLACK),
    ("plain", f"결제 키 {STRIPE}", STRIPE),
    ("plain", f"세션 토큰 {JWT} 만료됨", JWT),
    ("plain", "DB 비밀번호: hunter2!!", "hunter2!!"),
    ("plain", "password=correcthorse9 for staging", "correcthorse9"),
    ("plain", "postgres://app:S3cr3t-Pa55@db.example.com/app", "S3cr3t-Pa55"),
    ("plain", f"연락은 {MAIL} 로", MAIL),
    ("plain", "연락처 010-2345-6789로", "010-2345-6789"),
    ("plain", "주민등록번호 900101-1234567 확인", "900101-1234567"),
    ("plain", "카드 4111 1111 1111 1111 로 결제", "4111 1111 1111 1111"),
    ("variant", "login?user=bob&password%3Dhunter2secret", "hunter2secret"),
    ("variant", "<input value='password&#61;hunter2secret'>", "hunter2secret"),
    ("variant", "password&equals;hunter2secret", "hunter2secret"),
    ("variant", "ｐａｓｓｗｏｒｄ＝ｈｕｎｔｅｒ２ｓｅｃｒｅｔ", "ｈｕｎｔｅｒ２ｓｅｃｒｅｔ"),
    ("variant", f"push with {GITHUB[:12]}\u200b{GITHUB[12:]}", GITHUB[12:]),
    ("variant", "password=\nhunter2secret\nnext", "hunter2secret"),
    ("variant", f"export OPENAI_API_KEY={OPENAI[:16]}\n{OPENAI[16:]}", OPENAI[16:]),
    ("variant", f"{AWS_ID}\n{AWS_SECRET}", AWS_SECRET),
    ("variant", "비밀번호는 hunter2", "hunter2"),
    ("variant", "비번 hunter2 잊지 마", "hunter2"),
    ("variant", "암호: 열려라참깨2", "열려라참깨2"),
    ("variant", "토큰은 abcd1234efgh5678 이다", "abcd1234efgh5678"),
]


def encoded_samples(n: int, rng: random.Random) -> list[tuple[str, str, str]]:
    """``n`` base64 / URL-safe base64 encodings of generated secrets, in English and Korean sentences."""
    alphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    out = []
    for i in range(n):
        word = "".join(rng.choice(alphabet) for _ in range(rng.randint(8, 16))) + str(rng.randint(0, 99))
        token = "ghp_" + "".join(rng.choice(alphabet) for _ in range(36))
        plain = rng.choice(
            [
                f"password={word}",
                f"비밀번호: {word}",
                f"token={token}",
                json.dumps({"user": "kim", "password": word}),
                f"user={word[:6]}@example.com",
                f"api_key={word}{word}",
            ]
        ).encode()
        encode = base64.urlsafe_b64encode if i % 2 else base64.b64encode
        blob = encode(plain).decode()
        frame = rng.choice(["config {} end", "설정값 {} 이다", "Authorization: Basic {}", "{}"])
        out.append(("encoded", frame.format(blob), blob.rstrip("=")))
    return out


def corpora(bench: Path, repo: Path) -> dict[str, list[str]]:
    """Ordinary memory text: one string per document or note."""

    def jsonl(path: Path, keys: tuple[str, ...] | None) -> list[str]:
        docs = []
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                docs.append(
                    "\n".join(str(v) for k, v in row.items() if isinstance(v, str) and (keys is None or k in keys))
                )
        return docs

    out = {name: jsonl(bench / name / "docs.jsonl", ("title", "text")) for name in ("korquad", "locomo")}
    out["tests/data"] = [doc for path in sorted((repo / "tests/data").glob("*.jsonl")) for doc in jsonl(path, None)]
    out["bank"] = [p.read_text(encoding="utf-8") for p in sorted((repo / "bank").rglob("*.md"))]
    return out


def entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def entropy_flags(text: str) -> tuple[int, int]:
    """Runs a bare entropy rule would flag, and those with a label within LABEL_WINDOW characters before."""
    bare = labelled = 0
    for match in _RUN.finditer(text):
        if entropy(match.group()) >= ENTROPY_BITS:
            bare += 1
            labelled += bool(_LABEL.search(text, max(0, match.start() - LABEL_WINDOW), match.start()))
    return bare, labelled


def measure_memtree(samples: list[tuple[str, str, str]], docs: dict[str, list[str]]) -> dict:
    sanitizer = Sanitizer()
    caught: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for group, text, secret in samples:
        total[group] += 1
        caught[group] += secret not in sanitizer.sanitize(text).text
    flagged = {}
    for name, texts in docs.items():
        kinds: Counter[str] = Counter()
        hit_docs = 0
        for text in texts:
            found = sanitizer.find(text)
            hit_docs += bool(found)
            kinds.update(r.kind for r in found)
        flagged[name] = {"docs": len(texts), "flagged_docs": hit_docs, "kinds": dict(kinds.most_common())}
    everything = "\n".join(t for texts in docs.values() for t in texts)
    seconds = float("inf")
    for _ in range(SPEED_PASSES):  # why CPU time, best pass: on a shared machine others' load adds wall time
        start = time.process_time()
        sanitizer.sanitize(everything)
        seconds = min(seconds, time.process_time() - start)
    return {
        "detected": {g: f"{caught[g]}/{total[g]}" for g in total},
        "ordinary": flagged,
        "ms_per_kb": round(seconds * 1000 / (len(everything.encode()) / 1024), 4),
        "corpus_kb": round(len(everything.encode()) / 1024),
    }


def measure_entropy(samples: list[tuple[str, str, str]], docs: dict[str, list[str]]) -> dict:
    detected = Counter()
    for group, text, _ in samples:
        bare, labelled = entropy_flags(text)
        detected[(group, "bare")] += bool(bare)
        detected[(group, "labelled")] += bool(labelled)
    ordinary = {}
    for name, texts in docs.items():
        flags = [entropy_flags(t) for t in texts]
        ordinary[name] = {"bare": sum(b > 0 for b, _ in flags), "labelled": sum(lab > 0 for _, lab in flags)}
    groups = Counter(g for g, _, _ in samples)
    return {
        "detected": {
            f"{g}/{how}": f"{detected[(g, how)]}/{n}" for g, n in groups.items() for how in ("bare", "labelled")
        },
        "ordinary_flagged_docs": ordinary,
    }


def measure_detect_secrets(samples: list[tuple[str, str, str]], docs: dict[str, list[str]]) -> dict | None:
    try:
        from detect_secrets import SecretsCollection
        from detect_secrets.settings import default_settings
    except ImportError:
        return None

    def scan(lines: list[str], folder: Path) -> tuple[set[int], Counter[str], float]:
        path = folder / "scan.txt"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        found = SecretsCollection()
        start = time.perf_counter()
        found.scan_file(str(path))
        seconds = time.perf_counter() - start
        rows = {s.line_number - 1 for _, s in found}
        return rows, Counter(s.type for _, s in found), seconds

    out: dict = {}
    with default_settings(), tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        caught: Counter[str] = Counter()
        total: Counter[str] = Counter()
        for group, text, _ in samples:  # a sample counts as caught when any of its lines is flagged
            total[group] += 1
            caught[group] += bool(scan(text.splitlines() or [""], folder)[0])
        out["detected"] = {g: f"{caught[g]}/{total[g]}" for g in total}
        out["ordinary"] = {}
        seconds = size = 0.0
        for name, texts in docs.items():
            lines, owner = [], []
            for i, text in enumerate(texts):
                for line in text.splitlines():
                    lines.append(line)
                    owner.append(i)
            rows, kinds, took = scan(lines, folder)
            seconds += took
            size += sum(len(t.encode()) for t in texts)
            out["ordinary"][name] = {
                "docs": len(texts),
                "flagged_docs": len({owner[r] for r in rows}),
                "kinds": dict(kinds.most_common()),
            }
        out["ms_per_kb"] = round(seconds * 1000 / (size / 1024), 4)
    return out


def measure_corpus(secrets: list[Case], ordinary: list[Case]) -> dict:
    """bench/secret_corpus.py: the catch rate per split and group, and the ordinary cases flagged (listed)."""
    sanitizer = Sanitizer()
    caught: Counter[tuple[str, str]] = Counter()
    total: Counter[tuple[str, str]] = Counter()
    missed: list[str] = []
    for case in secrets:
        total[(case.split, case.group)] += 1
        if case.name:
            hit = bool(sanitizer.find_in_name(case.text))
        else:
            hit = case.secret not in sanitizer.sanitize(case.text).text
        caught[(case.split, case.group)] += hit
        if not hit:
            missed.append(f"{case.split}/{case.group}: {case.text[:70]!r}")
    flagged = []
    checked: Counter[str] = Counter()
    for case in ordinary:
        checked[case.split] += 1
        found = sanitizer.find_in_name(case.text) if case.name else sanitizer.find(case.text)
        if found:
            flagged.append(f"{case.split}/{case.group}: {case.text[:70]!r} -> {sorted({r.kind for r in found})}")
    splits = sorted({split for split, _ in total})

    def share(split: str) -> str:
        return f"{sum(caught[k] for k in total if k[0] == split)}/{sum(total[k] for k in total if k[0] == split)}"

    return {
        "caught": {
            split: {
                "all": share(split),
                **{group: f"{caught[(s, group)]}/{total[(s, group)]}" for s, group in sorted(total) if s == split},
            }
            for split in splits
        },
        "missed": missed,
        "ordinary_flagged": f"{len(flagged)}/{sum(checked.values())}",
        "ordinary_checked": dict(checked),
        "flagged": flagged,
    }


def adversarial() -> dict[str, float]:
    """Seconds to sanitize 1 MB lines built to make a backtracking regex explode."""
    sanitizer = Sanitizer()
    lines = {
        "a*1M": "a" * 1_000_000,
        "A1b2/+": "A1b2/+" * 170_000,
        "%3D": "%3D" * 340_000,
        "&#61;": "&#61;" * 200_000,
        "full-width": "ｐ" * 340_000,
        "zero-width": "a\u200b" * 340_000,
        "password=": "password=" * 110_000,
        "비밀번호는 ": "비밀번호는 " * 160_000,
        "token\\n": "ghp_ab\n" * 140_000,
        "“ unclosed": "password is \u201ca " * 70_000,
        "glued AKIA": ("x" + "AKIA" + "IOSFODNN7EXAMPLE") * 48_000,
        "PIN: ": "PIN: " * 200_000,
        "-u a:": "-u a:" * 200_000,
        "1 ": "1 " * 500_000,
    }
    out = {}
    for name, text in lines.items():
        start = time.perf_counter()
        sanitizer.sanitize(text)
        out[name] = round(time.perf_counter() - start, 3)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bench", nargs="?", default="../shared/bench", type=Path)
    parser.add_argument("--repo", default=Path(__file__).resolve().parent.parent, type=Path)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    if not (args.bench / "korquad" / "docs.jsonl").is_file():
        print(f"no benchmark data in {args.bench} (expected korquad/docs.jsonl, locomo/docs.jsonl)", file=sys.stderr)
        return 2
    samples = SAMPLES + encoded_samples(ENCODED_SAMPLES, random.Random(SEED))
    docs = corpora(args.bench, args.repo)
    report = {
        "corpus": measure_corpus(SECRETS, ORDINARY_ALL),
        "memtree": measure_memtree(samples, docs),
        "entropy_rule_candidates": measure_entropy(samples, docs),
        "detect_secrets": measure_detect_secrets(samples, docs),
        "adversarial_1mb_seconds": adversarial(),
    }
    print(json.dumps(report, ensure_ascii=False, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
