"""The privacy sanitizer: every sample secret is redacted, near misses are left alone, it never raises."""

from __future__ import annotations

import base64
import json
import re
import unicodedata
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memtree import MemTree
from memtree.errors import QueryError
from memtree.notes.root import init
from memtree.write.sanitize import BUILTIN_RULES, MARKER_RE, Redaction, Sanitizer, sanitize

# Fake secrets are assembled from pieces so that secret scanners do not flag this file.
GITHUB = "ghp" + "_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
ANTHROPIC = "sk-ant" + "-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa-1a2b3c"
OPENAI = "sk-proj" + "-Ab3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW"
SLACK = "xox" + "b-2345678901-2345678901234-AbCdEfGhIjKlMnOpQrStUvWx"
GOOGLE = "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
STRIPE = "sk_" + "live_4eC39HqLyjWDarjtT1zdp7dc"
HUGGINGFACE = "hf" + "_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
AWS_ID = "AKIA" + "IOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
KEY_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"
PRIVATE_KEY = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{KEY_BODY}\nQyNTUxOQAAACDx==\n-----END OPENSSH PRIVATE KEY-----"

SAMPLE_SECRETS: list[tuple[str, str, str]] = [
    # (kind, text, the secret that must not survive)
    ("private-key", f"배포 키:\n{PRIVATE_KEY}\n끝", KEY_BODY),
    ("private-key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq9\n(END line lost)", "MIIEowIBAAKCAQEA7bq9"),
    ("aws-access-key", f"AWS 키는 {AWS_ID} 이다", AWS_ID),
    ("aws-secret-key", f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET),
    ("aws-secret-key", f'{{"SecretAccessKey": "{AWS_SECRET}"}}', AWS_SECRET),
    ("github-token", f"토큰은 {GITHUB} 입니다", GITHUB),
    ("github-token", f"push with {GITHUB}입니다", GITHUB),
    ("anthropic-key", f"export ANTHROPIC_API_KEY={ANTHROPIC}", ANTHROPIC),
    ("openai-key", f"OpenAI key {OPENAI} (rotated monthly)", OPENAI),
    ("slack-token", f"slack bot: {SLACK}", SLACK),
    ("google-api-key", f"maps key={GOOGLE}", GOOGLE),
    ("stripe-key", f"결제 키 {STRIPE}", STRIPE),
    ("api-token", f"HF_TOKEN {HUGGINGFACE}", HUGGINGFACE),
    ("jwt", f"세션 토큰 {JWT} 만료됨", JWT),
    ("bearer-token", "Authorization: Bearer d8e8fca2dc0f896fd7cb4cb0031ba249", "d8e8fca2dc0f896fd7cb4cb0031ba249"),
    ("url-password", "postgres://app_user:S3cr3t-Pa55@db.internal.example.com:5432/app", "S3cr3t-Pa55"),
    ("url-password", "redis://:r3d1s-pw@cache:6379/0", "r3d1s-pw"),
    ("password", "DB 비밀번호: hunter2!!", "hunter2!!"),
    ("password", "password=correcthorse9 for staging", "correcthorse9"),
    ("password", '{"password": "tr0ub4dor &3"}', "tr0ub4dor &3"),
    ("password", "DB_PASSWORD='p4ss;word'", "p4ss;word"),
    ("password", "GITHUB_TOKEN=abcd1234efgh5678 ./deploy", "abcd1234efgh5678"),
    ("password", "PGPASSWORD=s3cret psql -h db", "s3cret"),
    ("password", 'SECRET_KEY = "django-insecure-4f9a8b7c"', "django-insecure-4f9a8b7c"),
    ("password", "https://api.example.com/v1?api_key=q9w8e7r6t5y4&format=json", "q9w8e7r6t5y4"),
    ("email", "연락은 minji.kim@example.co.kr 로 주세요", "minji.kim@example.co.kr"),
    ("email", "Mail john.doe+memtree@mail.example.com.", "john.doe+memtree@mail.example.com"),
    ("phone", "연락처 010-2345-6789로 주세요", "010-2345-6789"),
    ("phone", "휴대폰 01023456789", "01023456789"),
    ("phone", "사무실 02-3456-7890", "02-3456-7890"),
    ("phone", "국제 +82 10-2345-6789", "10-2345-6789"),
    ("phone", "call +1 415 555 0100 after 9", "415 555 0100"),
    ("phone", "US office (415) 555-0100", "555-0100"),
    ("card-number", "카드 4111 1111 1111 1111 로 결제", "4111 1111 1111 1111"),
    ("card-number", "card 5555-5555-5555-4444 exp 12/29", "5555-5555-5555-4444"),
    ("card-number", "Amex 3782 822463 10005", "3782 822463 10005"),
    ("ip-address", "서버 192.168.10.24에 접속", "192.168.10.24"),
    ("ip-address", "ssh deploy@203.0.113.7 -p 22", "203.0.113.7"),
    ("ip-address", "v6: 2001:db8:85a3::8a2e:370:7334", "2001:db8:85a3::8a2e:370:7334"),
    ("home-path", "로그는 /home/minji/projects/app.log 에 있다", "minji"),
    ("home-path", "open /Users/jsmith/Library/Logs", "jsmith"),
    ("home-path", r"C:\Users\hkim\AppData\Roaming", "hkim"),
    ("home-path", "key at ~jsmith/.ssh/id_ed25519", "jsmith"),
    ("korean-rrn", "주민등록번호 900101-1234567 확인", "900101-1234567"),
    ("encoded-secret", "config " + base64.b64encode(b"password=hunter2").decode(), "cGFzc3dvcmQ9aHVudGVyMg"),
    ("basic-auth", "Authorization: Basic " + base64.b64encode(b"admin:hunter2").decode(), "YWRtaW46aHVudGVyMg"),
]

NEAR_MISSES = [
    "Python 3.11.7로 올렸다",
    "2026-11-29 회의록",
    "14:05에 시작, 12:30:45에 끝",
    "bank/identity/values.md:10-25",
    "KorQuAD 기사는 1989년에 쓰였다",
    "주문번호 4111 1111 1111 1112",
    "주문번호 1234567890123456",
    "password rules are in the wiki",
    "비밀번호 규칙은 8자 이상",
    "a task-based approach to risk-management-framework-reviews",
    "the /home directory and /Users too",
    "thresholds 0.8/0.5 and 0.30",
    "commit 8c2b3f5 fixed it",
    "MAX_POOL_SIZE를 10에서 50으로",
    "search.token_budget: 2000",
    "def login(token: str, password: str) -> None:",
    "api_key: Optional[str] = None",
    "password=${DB_PASSWORD}",
    "password: ********",
    "서버는 127.0.0.1:8080, 바인드 0.0.0.0, netmask 255.255.255.0",
    "versions 1.2.3 and v1.2.3.4",
    "git@github.com:org/memtree.git",
    "icon@2x.png",
    "slice a[::2] and std::vector",
    "ISO 8601 2026-11-29T14:05:00+09:00",
    "+5 points, 1,234,567원, 2026.11.29, 20261129, 10.5%",
    "~/notes and 약 ~3일",
    "UUID 123e4567-e89b-12d3-a456-426614174000",
    "Bearer tokens are checked by the gateway",
    "@pytest.fixture and pnpm@8.15.1",
    "https://example.com/home/index.html",
    "[REDACTED:email] 그리고 [REDACTED:phone]",
    "password_min_length: 12, DEBUG=true TOKEN_TTL=3600, subtoken=abcdefgh12345",
    "비율 1:2:3, MAC 00:1A:2B:3C:4D:5E, 09:00-18:00",
    r"C:\Program Files\memtree, C:\Users\Public\Desktop, /Users/Shared/x",
    "대표번호 1588-1234, 우편번호 06236, ISBN 978-89-123-4567-8",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
]


@pytest.mark.parametrize(("kind", "text", "secret"), SAMPLE_SECRETS)
def test_sample_secret_is_redacted_with_its_kind(kind: str, text: str, secret: str) -> None:
    result = sanitize(text)
    assert secret not in result.text
    assert f"[REDACTED:{kind}]" in result.text
    assert kind in {r.kind for r in result.redactions}
    assert result.changed


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_miss_is_left_alone(text: str) -> None:
    result = sanitize(text)
    assert result.text == text
    assert result.redactions == ()
    assert not result.changed


def test_all_samples_in_one_note_leave_no_secret() -> None:
    note = "\n".join(text for _, text, _ in SAMPLE_SECRETS)
    result = sanitize(note)
    assert [secret for _, _, secret in SAMPLE_SECRETS if secret in result.text] == []


def test_every_builtin_rule_has_a_sample_and_a_clean_kind() -> None:
    kinds = {rule.kind for rule in BUILTIN_RULES}
    assert len(BUILTIN_RULES) >= 14
    assert kinds == {kind for kind, _, _ in SAMPLE_SECRETS}
    for rule in BUILTIN_RULES:
        assert re.fullmatch(r"[a-z0-9-]+", rule.kind)
        assert rule.description and "\n" not in rule.description


def test_keys_user_and_host_are_kept() -> None:
    assert sanitize("DB 비밀번호: hunter2!!").text == "DB 비밀번호: [REDACTED:password]"
    assert sanitize("postgres://bob:pw1@db.example.com/app").text == (
        "postgres://bob:[REDACTED:url-password]@db.example.com/app"
    )
    assert sanitize("/home/minji/notes/a.md").text == "/home/[REDACTED:home-path]/notes/a.md"
    assert sanitize(f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}").text == "AWS_SECRET_ACCESS_KEY=[REDACTED:aws-secret-key]"


def test_private_key_block_is_redacted_whole() -> None:
    result = sanitize(f"before\n{PRIVATE_KEY}\nafter")
    assert result.text == "before\n[REDACTED:private-key]\nafter"


def test_overlapping_matches_are_redacted_once_by_the_more_specific_rule() -> None:
    assert sanitize(f"token={JWT}").text == "token=[REDACTED:jwt]"
    assert sanitize(f"password={GITHUB}").text == "password=[REDACTED:github-token]"
    # An email inside a URL password: the password is redacted, the host survives, no nested marker.
    assert sanitize("https://admin:bob@example.com@db.host/x").text == "https://admin:[REDACTED:url-password]@db.host/x"
    assert sanitize("https://bob:s3cret@example.com").text == "https://bob:[REDACTED:url-password]@example.com"


def test_redaction_positions_point_into_the_original_text() -> None:
    text = f"메일 bob@example.com, 전화 010-2345-6789, 키 {GITHUB}."
    result = sanitize(text)
    spans = [(r.kind, text[r.start : r.end]) for r in result.redactions]
    assert spans == [("email", "bob@example.com"), ("phone", "010-2345-6789"), ("github-token", GITHUB)]
    assert result.redactions == Sanitizer().find(text)
    assert [r.start for r in result.redactions] == sorted(r.start for r in result.redactions)


def test_existing_markers_are_left_alone() -> None:
    text = "[REDACTED:email] was bob@example.com"
    result = sanitize(text)
    assert result.text == "[REDACTED:email] was [REDACTED:email]"
    assert result.redactions == (Redaction("email", 21, 36),)


@pytest.mark.parametrize(("kind", "text", "secret"), SAMPLE_SECRETS)
def test_sanitize_is_idempotent_on_samples(kind: str, text: str, secret: str) -> None:
    once = sanitize(text).text
    assert sanitize(once).text == once
    assert not sanitize(once).changed


def test_custom_patterns_string_and_mapping() -> None:
    sanitizer = Sanitizer(["ACME-[0-9]{4}", {"pattern": r"코드명: (?P<v>\S+)", "kind": "Code Name"}])
    result = sanitizer.sanitize("티켓 ACME-1234, 코드명: 블루버드")
    assert result.text == "티켓 [REDACTED:custom], 코드명: [REDACTED:code-name]"
    assert sanitizer.warnings == result.warnings == ()


def test_broken_custom_patterns_are_reported_once_and_skipped() -> None:
    custom: list[object] = ["(unclosed", 42, {"kind": "x"}, "a*", "ACME-[0-9]+"]
    sanitizer = Sanitizer(custom)  # type: ignore[arg-type]
    assert len(sanitizer.warnings) == 4
    assert "privacy.custom_patterns[0]" in sanitizer.warnings[0] and "(unclosed" in sanitizer.warnings[0]
    assert "[3]" in sanitizer.warnings[3] and "empty string" in sanitizer.warnings[3]
    assert all("\n" not in warning for warning in sanitizer.warnings)
    for _ in range(3):  # the same warnings every call, never more
        result = sanitizer.sanitize("ACME-77 and aaaa")
        assert result.text == "[REDACTED:custom] and aaaa"
        assert result.warnings == sanitizer.warnings


def test_module_sanitize_accepts_custom_and_never_raises_on_bad_ones() -> None:
    result = sanitize("ACME-12 [", custom=["[", "ACME-[0-9]+"])
    assert result.text == "[REDACTED:custom] ["
    assert len(result.warnings) == 1
    assert sanitize("ACME-12", custom="ACME-[0-9]+").text == "[REDACTED:custom]"


def test_zero_width_custom_match_inserts_nothing() -> None:
    assert Sanitizer([r"(?=x)"]).sanitize("xyz").text == "xyz"


def test_builtin_rules_win_over_custom_patterns() -> None:
    result = Sanitizer([r"\S+@\S+"]).sanitize("bob@example.com")
    assert result.text == "[REDACTED:email]"


ADVERSARIAL = [
    "a" * 20_000,
    "1" * 20_000,
    "1 " * 10_000,
    "A1b2/+" * 8_000,
    "eyJ" + "a" * 20_000,
    ("eyJ" + "a" * 10 + ".") * 2_000,
    ":" * 20_000,
    "a:" * 10_000,
    "a@" * 10_000,
    "a@" + "a." * 10_000,
    "-----BEGIN RSA PRIVATE KEY-----\n" * 1_000,
    "-----BEGIN RSA PRIVATE KEY-----\n" + "A" * 20_000,
    "+1 " * 10_000,
    "http://a:" * 3_000 + "b" * 10_000,
    "password=" * 3_000,
    "/home/" + "a." * 10_000,
    "~a" * 10_000,
    "1." * 10_000,
    "4111 " * 5_000,
    "010-" * 5_000,
    "비밀번호:" * 5_000,
    "\\" * 20_000,
    "a." * 10_000 + "@",
]


@pytest.mark.parametrize("text", ADVERSARIAL, ids=lambda text: repr(text[:12]))
def test_adversarial_inputs_return(text: str) -> None:
    result = sanitize(text)
    assert sanitize(result.text).text == result.text


@settings(max_examples=300, deadline=None)  # why: a loaded 2-core machine, not a slow rule
@given(st.text())
def test_never_raises_and_is_idempotent(text: str) -> None:
    result = sanitize(text)
    assert sanitize(result.text).text == result.text
    assert len(MARKER_RE.findall(result.text)) == len(MARKER_RE.findall(text)) + len(result.redactions)


PIECES = [text for _, text, _ in SAMPLE_SECRETS] + NEAR_MISSES + ["", " ", "\n", ":", "=", "@", "-", ".", "/", "0", "a"]


@settings(max_examples=300, deadline=None)  # why: a loaded 2-core machine, not a slow rule
@given(st.lists(st.sampled_from(PIECES), max_size=6).map("".join))
def test_glued_samples_stay_idempotent(text: str) -> None:
    result = sanitize(text)
    assert sanitize(result.text).text == result.text
    rebuilt, position = [], 0
    for redaction in result.redactions:
        assert 0 <= position <= redaction.start < redaction.end <= len(text)
        rebuilt += [text[position : redaction.start], f"[REDACTED:{redaction.kind}]"]
        position = redaction.end
    assert "".join([*rebuilt, text[position:]]) == result.text


# Variants that used to slip past the rules: (kind, text, the secret bytes that must not survive).
# The secret is written as it appears in the text (encoded, full-width, split), so `not in` checks the original.
ZW_GITHUB = GITHUB[:12] + "\u200b" + GITHUB[12:]
VARIANTS: list[tuple[str, str, str]] = [
    ("password", "login?user=bob&password%3Dhunter2secret&next=1", "hunter2secret"),
    ("password", "로그인 URL ?id=kim&%EB%B9%84%EB%B0%80%EB%B2%88%ED%98%B8%3Dhunter2secret", "hunter2secret"),
    ("password", "<input value='password&#61;hunter2secret'>", "hunter2secret"),
    ("password", "password&equals;hunter2secret in the page", "hunter2secret"),
    ("password", "비밀번호&#x3a; hunter2secret 이다", "hunter2secret"),
    ("password", "ｐａｓｓｗｏｒｄ＝ｈｕｎｔｅｒ２ｓｅｃｒｅｔ", "ｈｕｎｔｅｒ２ｓｅｃｒｅｔ"),
    ("password", "비밀번호：ｈｕｎｔｅｒ２ 입니다", "ｈｕｎｔｅｒ２"),
    ("github-token", f"push with {ZW_GITHUB} today", ZW_GITHUB),
    ("github-token", f"토큰 {GITHUB[:8]}\u2060{GITHUB[8:20]}\ufeff{GITHUB[20:]} 사용", GITHUB[20:]),
    ("openai-key", f"키는 {OPENAI[:10]}\u200c{OPENAI[10:]} 이다", OPENAI[10:]),
    ("password", "password=\nhunter2secret\nnext line", "hunter2secret"),
    ("password", "DB 비밀번호:\n  hunter2!!\n다음 줄", "hunter2!!"),
    ("openai-key", f"export OPENAI_API_KEY={OPENAI[:16]}\n{OPENAI[16:]}\nthen run", OPENAI[16:]),
    ("github-token", f"토큰 {GITHUB[:20]}\n    {GITHUB[20:]} 을 썼다", GITHUB[20:]),
    ("aws-access-key", f"id {AWS_ID[:10]}\n{AWS_ID[10:]} used", AWS_ID[10:]),
    ("aws-secret-key", f"{AWS_ID}\n{AWS_SECRET}", AWS_SECRET),
    ("aws-secret-key", f"AWS 키 {AWS_ID}, 그리고 {AWS_SECRET} 도 같이", AWS_SECRET),
    ("password", "비밀번호는 hunter2", "hunter2"),
    ("password", "비번 hunter2 잊지 마", "hunter2"),
    ("password", "현관 비번 1234 입니다", "1234"),
    ("password", "비밀번호를 s3cret!로 바꿨다", "s3cret!"),
    ("password", "암호: 열려라참깨2", "열려라참깨2"),
    ("password", "토큰은 abcd1234efgh5678 이다", "abcd1234efgh5678"),
    ("password", unicodedata.normalize("NFD", "비밀번호는 hunter2"), "hunter2"),
    ("encoded-secret", "b64: " + base64.b64encode(b"password=hunter2").decode(), "cGFzc3dvcmQ9aHVudGVyMg"),
    ("encoded-secret", "설정값 " + base64.urlsafe_b64encode(f"token={GITHUB}".encode()).decode(), "dG9rZW49Z2hw"),
    ("encoded-secret", "blob " + base64.b64encode("비밀번호: hunter2".encode()).decode() + " 끝", "6rmE67CA67KI7Zi4"),
]

VARIANT_NEAR_MISSES = [
    "비밀번호는 8자 이상이어야 한다",
    "토큰 2000개까지, 토큰은 4096 이하",
    "비밀번호는 SHA256으로 해싱하고 bcrypt로 저장",
    "비밀번호 변경 방법과 비번 reset 절차",
    "Password:\nrequired for every login",
    "## Password:\nSee the vault",
    "Caroline & Melanie; 50% off; a &amp; b; 100%25",
    "ＡＢＣ 전각 문자와 ① 기호",
    "commit 8c2b3f5a9e0d1c2b3a4f5e6d7c8b9a0f1e2d3c4b",
    "the longest word is Pneumonoultramicroscopicsilicovolcanoconiosis",
    "see https://example.com/docs/getting-started/installation-guide",
    "image: iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    "sk-learn\nversion 1.4 and scikit",
]


# Issue 27's disguises that got through: (kind, text, what must not survive).
_B64_BLOB = base64.b64encode(f"password=hunter2secret; token={GITHUB} and a long tail of words".encode()).decode()
ISSUE27_VARIANTS: list[tuple[str, str, str]] = [
    ("encoded-secret", "creds:\n" + "\n".join(_B64_BLOB[i : i + 20] for i in range(0, len(_B64_BLOB), 20)) + "\n",
     _B64_BLOB[-12:]),
    ("encoded-secret", "pem-ish\n" + "\n".join(_B64_BLOB[i : i + 64] for i in range(0, len(_B64_BLOB), 64))
     + "\nNext steps: rotate it", _B64_BLOB[64:]),
    ("password", "the admin password is Tr0ub4dor&3, do not share", "Tr0ub4dor&3"),
    ("password", "door passcode 8841-2290", "8841-2290"),
    ("password", "the passphrase is correct-horse-battery-staple", "correct-horse-battery-staple"),
    ("password", "the password for the staging db was changed to N3wPass!23 today", "N3wPass!23"),
    ("basic-auth", "curl -H 'Authorization: Basic " + base64.b64encode(b"deploy:s3cr3t").decode() + "' x",
     base64.b64encode(b"deploy:s3cr3t").decode()),
    ("encoded-secret", "cfg 70617373776f72643d68756e74657232736563726574 end", "70617373776f7264"),
    ("password", "q=password%253Dhunter2secret&x=1", "hunter2secret"),
    ("password", "\u0440\u0430ssword=hunter2secret", "hunter2secret"),
    ("password", "\u0440\u0430ssw\u043erd is Tr0ub4dor&3", "Tr0ub4dor&3"),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "text", "secret"), ISSUE27_VARIANTS)
def test_issue27_disguise_is_redacted(kind: str, text: str, secret: str) -> None:
    result = sanitize(text)
    assert secret not in result.text
    assert kind in {r.kind for r in result.redactions}
    assert sanitize(result.text).text == result.text


@pytest.mark.parametrize("key", [ANTHROPIC, OPENAI, GITHUB])
def test_a_key_split_over_a_line_break_at_any_point_loses_head_and_tail(key: str) -> None:
    leaks = []
    for cut in range(1, len(key)):
        text = sanitize(f"the key {key[:cut]}\n{key[cut:]} then more").text
        if (cut >= 6 and key[:cut] in text) or (len(key) - cut >= 4 and key[cut:] in text):
            leaks.append(cut)
    assert leaks == []


def test_the_line_after_a_key_keeps_its_first_word_and_its_break() -> None:
    for after in ("The next line is prose", "- second bullet", "export B=1", "next"):
        assert sanitize(f"key {ANTHROPIC}\n{after}").text == f"key [REDACTED:anthropic-key]\n{after}"


@pytest.mark.parametrize(
    "text",
    [
        "the password is required and case-sensitive",
        "reset your password to continue",
        "password reset-flow is documented",
        "passcode lock is on; the PIN code screen shows",
        "Basic authentication is disabled; basic usage",
        "the passphrase is stored in the vault",
        "Привет, это обычный русский текст о сервере и пароле",
        "Η τιμή είναι σωστή και ο κωδικός αλλάζει",
        "merge 8c2b3f5a9e0d1c2b3a4f5e6d7c8b9a0f1e2d3c4b and 123e4567-e89b-12d3-a456-426614174000",
        "encoded URL %2520 and 100%2525 off",
        "if password is None:\n    password = getpass()",
    ],
)
def test_issue27_near_miss_is_left_alone(text: str) -> None:
    assert sanitize(text).text == text


@pytest.mark.parametrize(("kind", "text", "secret"), VARIANTS)
def test_variant_is_redacted_and_the_original_span_goes(kind: str, text: str, secret: str) -> None:
    result = sanitize(text)
    assert secret not in result.text
    assert kind in {r.kind for r in result.redactions}
    assert sanitize(result.text).text == result.text


@pytest.mark.parametrize("text", VARIANT_NEAR_MISSES)
def test_variant_near_miss_is_left_alone(text: str) -> None:
    assert sanitize(text).text == text


def test_folded_matches_redact_the_original_characters_and_keep_the_rest() -> None:
    assert sanitize("password%3Dhunter2secret&user=bob").text == "password%3D[REDACTED:password]&user=bob"
    assert sanitize("ｐａｓｓｗｏｒｄ＝ｈｕｎｔｅｒ２").text == "ｐａｓｓｗｏｒｄ＝[REDACTED:password]"
    assert sanitize(f"a {ZW_GITHUB} b").text == "a [REDACTED:github-token] b"
    assert sanitize("password=\nhunter2secret\nnext").text == "password=\n[REDACTED:password]\nnext"
    sha = "8c2b3f5a9e0d1c2b3a4f5e6d7c8b9a0f1e2d3c4b"  # 40 characters like an AWS secret, but a git SHA-1
    assert sanitize(f"{AWS_ID} at commit {sha}").text == f"[REDACTED:aws-access-key] at commit {sha}"


@pytest.mark.parametrize(
    "text", ["%3D" * 100_000, "&#61;" * 60_000, "ｐ" * 300_000, "\u200b" * 300_000, "a\n" * 300_000, "A1+/" * 250_000]
)
def test_adversarial_variant_inputs_return(text: str) -> None:
    result = sanitize(text)
    assert sanitize(result.text).text == result.text


def test_require_clean_refuses_without_echoing_the_secret() -> None:
    sanitizer = Sanitizer()
    assert sanitizer.require_clean("project:memtree", "--scope") == "project:memtree"
    for value in ("bank/kim@example.com.md", GITHUB, "ops:010-2345-6789"):
        with pytest.raises(QueryError) as err:
            sanitizer.require_clean(value, "--to")
        assert value not in str(err.value) and str(err.value).startswith("--to holds a secret")
    assert sanitizer.field(f"from {GITHUB}") == "from [REDACTED:github-token]"


# Every written field: a secret given through the API leaves no byte of itself under the root.
SECRET = GITHUB
MAIL = "minji.kim" + "@example.co.kr"


def _everywhere(root: Path, *needles: str) -> list[str]:
    """Files under ``root`` (including .memtree/) holding any of ``needles``."""
    hits = []
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            hits += [str(path.relative_to(root)) for n in needles if n.encode() in data]
    return hits


@pytest.fixture
def root(tmp_path: Path) -> Path:
    made = init(tmp_path / "r")[0]
    MemTree(made).add("배포는 금요일에 하지 않는다", to="bank/ops/deploy.md")
    return made


@pytest.mark.parametrize(
    "field",
    [
        {"tags": ("ops", SECRET)},
        {"tags": (MAIL,)},
        {"scope": f"project:{SECRET}"},
        {"to": f"bank/{SECRET}.md"},
        {"to": f"bank/people/{MAIL}.md"},
        {"origin": f"memory/2026-11-29.md:{SECRET}"},
        # A token glued to a word (issue 27): in a name there is no prose boundary to wait for.
        {"tags": (f"deploy{SECRET}",)},
        {"scope": f"project:team{SECRET}"},
        {"to": f"bank/notes{ANTHROPIC}.md"},
        {"to": f"bank/ops/x{OPENAI}"},
    ],
    ids=lambda field: next(iter(field)),
)
def test_add_refuses_a_secret_in_a_field_and_writes_nothing(root: Path, field: dict[str, object]) -> None:
    memory = MemTree(root)
    with pytest.raises(QueryError, match="holds a secret"):
        memory.add("크론은 04:30 KST에 돈다", **field)  # type: ignore[arg-type]
    memory.search("배포")  # writes usage.json and the index, as a real session would
    assert _everywhere(root, SECRET, MAIL) == []


def test_add_redacts_the_text_and_leaves_no_secret_anywhere(root: Path) -> None:
    memory = MemTree(root)
    memory.add(f"배포 토큰은 {SECRET} 이고 담당은 {MAIL}", to="bank/ops/deploy.md", tags=("ops",))
    memory.add("비밀번호는 hunter2secret 이다", to="bank/ops/new-note.md")
    assert memory.search("배포 토큰").hits
    assert _everywhere(root, SECRET, MAIL, "hunter2secret") == []


def _hand_note(root: Path) -> Path:
    """A note a person wrote by hand, their secret on one line, big enough for a split."""
    note = root / "bank/ops/deploy.md"
    lines = [f"## 단계 {i}\n\n- 배포 단계 {i}: 서비스 {i}번을 재시작하고 상태를 확인한다\n" for i in range(12)]
    lines.insert(6, f"\n- 임시로 적어 둔 키 {SECRET}\n")
    note.write_text("# 런북\n\n" + "".join(lines), encoding="utf-8")
    return note


def test_split_keeps_no_copy_of_a_hand_written_secret_in_the_journal(root: Path) -> None:
    _hand_note(root)
    memory = MemTree(root)
    assert "secret" in [p.kind for p in memory.check() if p.path == "bank/ops/deploy.md"]
    assert memory.split("bank/ops/deploy.md", max_bytes=400)[0].children
    journal = root / ".memtree/changes.jsonl"
    assert SECRET not in journal.read_text(encoding="utf-8")
    # The person removes the secret as `check` advises: nothing under .memtree/ still holds it.
    for part in root.rglob("*.md"):
        part.write_text(part.read_text(encoding="utf-8").replace(SECRET, "(rotated)"), encoding="utf-8")
    assert _everywhere(root, SECRET) == []
    assert not [p for p in memory.check() if p.kind == "secret"]


def test_check_finds_and_fix_redacts_a_secret_an_older_journal_kept(root: Path, monkeypatch) -> None:
    from memtree.notes import recorder

    _hand_note(root)
    memory = MemTree(root)
    with monkeypatch.context() as patch:
        patch.setattr(recorder, "_redactors", [])  # a journal written before memtree redacted what it keeps
        memory.split("bank/ops/deploy.md", max_bytes=400)
    for part in root.rglob("*.md"):
        part.write_text(part.read_text(encoding="utf-8").replace(SECRET, "(rotated)"), encoding="utf-8")
    assert _everywhere(root, SECRET) == [".memtree/changes.jsonl"]
    found = [p for p in memory.check() if p.kind == "secret"]
    assert [(p.path, p.fixable) for p in found] == [(".memtree/changes.jsonl", True)]
    assert "github-token" in found[0].detail and SECRET not in found[0].detail
    assert memory.redact_journal() == 1
    assert _everywhere(root, SECRET) == []
    assert not [p for p in memory.check() if p.kind == "secret"]
    assert memory.redact_journal() == 0


def test_undo_of_a_split_restores_the_note_redacted(root: Path) -> None:
    note = _hand_note(root)
    memory = MemTree(root)
    memory.split("bank/ops/deploy.md", max_bytes=400)
    memory.undo()
    text = note.read_text(encoding="utf-8")
    assert SECRET not in text and "[REDACTED:github-token]" in text and "배포 단계 11" in text


def _doc(entry_meta: dict[str, object] | None = None, path: str = "bank/a.md", nodes: list | None = None) -> bytes:
    entry = {"path": path, "item": True, "text": "크론은 04:30 KST에 돈다", "meta": entry_meta or {}}
    return json.dumps({"memtree": "export", "version": 1, "nodes": nodes or [], "entries": [entry]}).encode()


@pytest.mark.parametrize(
    "data",
    [
        _doc({"tags": ["ops", SECRET]}),
        _doc({"id": f"e-{SECRET}"}),
        _doc({"merged": [MAIL]}),
        _doc({"scope": f"project:{MAIL}"}),
        _doc({SECRET: "x"}),
        _doc(path=f"bank/{SECRET}.md"),
        _doc(nodes=[{"id": f"people/{MAIL}", "path": None, "keywords": []}]),
        _doc(nodes=[{"id": "ops", "path": f"bank/ops/{SECRET}.md", "keywords": []}]),
    ],
    ids=["tag", "id", "merged", "scope", "meta-name", "path", "node-id", "node-path"],
)
def test_import_refuses_a_secret_in_a_name_and_writes_nothing(root: Path, data: bytes) -> None:
    with pytest.raises(QueryError, match="holds a secret") as err:
        MemTree(root).import_(data)
    assert SECRET not in str(err.value) and MAIL not in str(err.value)
    assert _everywhere(root, SECRET, MAIL) == []


def test_import_redacts_meta_values_and_drops_secret_keywords(root: Path) -> None:
    nodes = [{"id": "people", "path": "bank/people.md", "keywords": ["사람", MAIL, f"token={SECRET}"]}]
    data = _doc({"from": f"메일 {MAIL}", "note": f"key {SECRET}"}, path="bank/people.md", nodes=nodes)
    memory = MemTree(root)
    done = memory.import_(data)
    assert done.written == 1 and done.redacted == 4
    memory.search("크론")
    assert _everywhere(root, SECRET, MAIL) == []
    tree = json.loads((root / "tree-index.json").read_text(encoding="utf-8"))
    assert next(n for n in tree["nodes"] if n["id"] == "people")["keywords"] == ["사람"]


def test_catalog_keeps_a_hand_written_heading_secret_out_of_the_tree(root: Path) -> None:
    (root / "bank/ops/keys.md").write_text(f"# {SECRET}\n\n- 배포 키 보관 위치\n", encoding="utf-8")
    MemTree(root).index()  # the catalog adds the new note's node
    tree = (root / "tree-index.json").read_text(encoding="utf-8")
    assert "ops/keys" in tree and SECRET.lower() not in tree.lower()  # keywords are case-folded
    assert [p for p in _everywhere(root, SECRET) if not p.startswith("bank/")] == []


# Issue 27's held-out misses, closed by principle: each case below is a form of its own, not a corpus string.
# (a) the secret-label vocabulary: compounds, PIN, Korean, quoted values with spaces, a passphrase's words.
LABEL_FORMS: list[tuple[str, str, str]] = [
    ("compound", "export SMTP_PASS=Gq4!zr8w", "Gq4!zr8w"),
    ("compound", "cache:\n  redis_pass: Lm3#nb7Q\n", "Lm3#nb7Q"),
    ("compound", "MYSQL_PWD=k9Jd-2mq", "k9Jd-2mq"),
    ("compound", "const dbPass = 'Wq7-er9t';", "Wq7-er9t"),
    ("pin", "PIN: 6390", "6390"),
    ("pin", "BACKUP_PIN=551203", "551203"),
    ("pin", "pin code = 2277-0041", "2277-0041"),
    ("pin", "핀번호: 8024", "8024"),
    ("pin", "핀 번호는 3197 이다", "3197"),
    ("pin", "her pin was 7710", "7710"),
    ("quoted", "password is 'lazy dog 31'", "dog 31"),
    ("quoted", 'the passcode is "7 up 7 down"', "up 7 down"),
    ("quoted", "password = \u201cmy cat 42\u201d", "cat 42"),
    ("quoted", "관리자 비밀번호는 'open door 5' 이다", "door 5"),
    ("quoted", "pwd: \u2018x y z 9\u2019", "y z 9"),
    ("passphrase", "passphrase: little bobby tables", "bobby tables"),
    ("passphrase", "GPG_PASSPHRASE=quiet river stone", "river stone"),
]
# (b) known key formats glued to a word on either side.
GLUED_FORMS: list[tuple[str, str, str]] = [
    ("aws-access-key", f"id{AWS_ID}x", AWS_ID),
    ("aws-access-key", f"prod_{AWS_ID}", AWS_ID),
    ("github-token", f"pushed with mytoken{GITHUB}", GITHUB[4:]),
    ("openai-key", f"key:{OPENAI}", OPENAI[8:]),
    ("openai-key", f"teamkey{OPENAI}", OPENAI[8:]),
    ("anthropic-key", f"cfg{ANTHROPIC}", ANTHROPIC[8:]),
    ("slack-token", f"bot{SLACK}", SLACK[5:]),
    ("google-api-key", f"gmaps{GOOGLE}", GOOGLE[4:]),
    ("jwt", f"auth{JWT}", JWT[3:40]),
]
# (c) a random-looking value after a generic label (`*_KEY`, camelCase, `auth`, `the API key is`).
ENTROPY_FORMS: list[tuple[str, str, str]] = [
    ("password", "PUSHER_APP_KEY=b7e1c9d04f2a6e38a1d5", "b7e1c9d04f2a6e38a1d5"),
    ("password", '{"clientSecret": "Rz4kP9mQ2wX7vB3n"}', "Rz4kP9mQ2wX7vB3n"),
    ("password", "?auth=5e2d9a7c1b8f4e6a3d0c&v=2", "5e2d9a7c1b8f4e6a3d0c"),
    ("password", "the API key is 7c4a1e9b2d8f5a3c6e0b", "7c4a1e9b2d8f5a3c6e0b"),
    ("password", "our secret key is Nk3vT8qW1zR6yH4m", "Nk3vT8qW1zR6yH4m"),
    ("password", "access key: Yb5nQ2xK8mW4rT7c", "Yb5nQ2xK8mW4rT7c"),
]
# The command-line forms: -u user:password (short flags run together too), --password X, --token X.
CLI_FORMS: list[tuple[str, str, str]] = [
    ("password", "curl -u ops:Pa55-word! https://x.example.com", "Pa55-word!"),
    ("password", "curl -fsSLu bot:Zk8-Qw2r https://x", "Zk8-Qw2r"),
    ("password", "curl --user=ops:Pa55-word! https://x", "Pa55-word!"),
    ("password", "vault login --password S3cr3t-42 -method=userpass", "S3cr3t-42"),
    ("password", "mytool --password 'two words 8' run", "two words 8"),
    ("password", "gh auth --token 9fA3kQ7mZ2xW8bN4 status", "9fA3kQ7mZ2xW8bN4"),
]
# What these principles must leave alone.
PRINCIPLE_NEAR_MISSES = [
    "PIN: required at the terminal; GPIO PIN 12 is the LED; pin requests==2.31.0",
    "핀번호 입력 화면, 핀 번호는 네 자리",
    "password is 'required' and 'case-sensitive'",
    'the passcode is "optional" for guests',
    "PASS = 'pass'\nFAIL = 'fail'\nresult: pass",
    "bypass=true passport=none compass: 270",
    "SESSION_KEY_PREFIX=memtree and CACHE_KEY=users:list:v2 and SORT_KEY=created_at_2",
    "the API key is stored in the vault; the secret is in the details",
    "auth: required, auth=basic, key: value, monkey: banana",
    "docker run -u 1000:1000 image; curl -u $USER:$TOKEN https://x; curl -u user:pass https://x",
    "docker login --password-stdin; pg_dump --password-file /run/x",
    "awkwardAKIA is a word, and a task-2024-quarterly-review-notes slug",
    "desk-ant-farm-and-more-words-here-please and whisk-proj-Lemonade-Recipe-Book",
    "image: data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kg",
]


@pytest.mark.parametrize(("form", "text", "secret"), LABEL_FORMS)
def test_a_value_after_any_secret_label_is_redacted(form: str, text: str, secret: str) -> None:
    result = sanitize(text)
    assert secret not in result.text, form
    assert {r.kind for r in result.redactions} == {"password"}
    assert sanitize(result.text).text == result.text


@pytest.mark.parametrize(("kind", "text", "secret"), GLUED_FORMS)
def test_a_known_key_format_glued_to_a_word_is_redacted(kind: str, text: str, secret: str) -> None:
    result = sanitize(text)
    assert secret not in result.text
    assert kind in {r.kind for r in result.redactions}


@pytest.mark.parametrize(("kind", "text", "secret"), ENTROPY_FORMS + CLI_FORMS)
def test_a_random_value_after_a_generic_label_and_a_command_credential_are_redacted(
    kind: str, text: str, secret: str
) -> None:
    result = sanitize(text)
    assert secret not in result.text
    assert kind in {r.kind for r in result.redactions}


@pytest.mark.parametrize("text", PRINCIPLE_NEAR_MISSES)
def test_the_label_principles_leave_ordinary_text_alone(text: str) -> None:
    assert sanitize(text).redactions == ()


def test_only_the_value_is_redacted_the_label_and_the_rest_stay() -> None:
    assert sanitize("export SMTP_PASS=Gq4!zr8w && run").text == "export SMTP_PASS=[REDACTED:password] && run"
    assert sanitize("PIN: 6390").text == "PIN: [REDACTED:password]"
    assert sanitize("password is 'lazy dog 31' ok").text == "password is '[REDACTED:password]' ok"
    assert sanitize("passphrase: little bobby tables").text == "passphrase: [REDACTED:password]"
    assert sanitize("curl -u ops:Pa55-word! https://x").text == "curl -u ops:[REDACTED:password] https://x"
    assert sanitize(f"id{AWS_ID}x").text == "id[REDACTED:aws-access-key]x"
    assert sanitize("the API key is 7c4a1e9b2d8f5a3c6e0b.").text == "the API key is [REDACTED:password]."


def test_a_glued_key_in_a_name_is_refused() -> None:
    with pytest.raises(QueryError):
        Sanitizer().require_clean(f"{AWS_ID}backup", "--to")
    assert Sanitizer().require_clean("task-2024-quarterly-review", "--to") == "task-2024-quarterly-review"


def test_a_private_span_is_never_written_by_add_or_log(make_root: Callable[..., Path]) -> None:
    root = make_root({"bank/ops/notes.md": "# Ops\n"})
    mt = MemTree(root, refresh_interval=0)
    mt.add("Deploys go out on Fridays <private>the pager PIN is our dog's name</private> after review", to="ops/deploy")
    mt.log("standup notes <PRIVATE>salary talk</private> done")
    written = "".join(p.read_text("utf-8") for p in root.rglob("*.md"))
    assert "Fridays [private] after review" in written and "standup notes [private] done" in written
    assert "dog's name" not in written and "salary" not in written


def test_a_control_character_other_than_tab_and_line_ends_never_reaches_a_note() -> None:
    # Why: a NUL makes git read the note as binary; an escape sequence drives the terminal that prints it
    got = Sanitizer().sanitize("pool\x00size\x1b[31m is\t5\r\nnext\x7f line\n").text
    assert got == "pool\ufffdsize\ufffd[31m is\t5\r\nnext\ufffd line\n"
