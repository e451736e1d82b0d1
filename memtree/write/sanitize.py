"""Privacy sanitizer: secrets and personal data become ``[REDACTED:kind]`` before anything is written.

Pure (text in, text out, no I/O) and safe on any text: it never raises, a broken user regex is
skipped and named in ``Sanitizer.warnings``, and every built-in pattern runs in linear time.
Rules are tried in priority order (``BUILTIN_RULES``, then the custom patterns); a match that
overlaps a span already taken, or a ``[REDACTED:...]`` marker, is dropped, so a JWT inside
``token=`` is redacted once, by the more specific rule. A rule with a named group ``v`` (``v2``…)
redacts only that group: ``password=`` keeps its key, a URL its scheme, user and host.

Disguises are undone before matching, never in the output: each rule also runs on a *view* of the
text with %XX and HTML entities decoded, NFKC applied (full-width ``ｐａｓｓｗｏｒｄ＝``, NFD Hangul)
and zero-width characters dropped, and the token rules on a view with line breaks inside a token
removed; a match there redacts the original characters it came from. ``비밀번호는 hunter2`` (a
Korean label, no separator) and ``password:`` with its value alone on the next line need a
password-like value (ASCII, a digit or symbol, lower case unless a PIN); a bare 40-character AWS
secret needs its AKIA… id within 200 characters.

Encoded secrets and entropy (measured by ``bench/secret_scan.py`` on KorQuAD, LoCoMo, tests/data and
bank/, 3,636 documents): a base64 run of 16–4,096 characters is decoded and redacted as
``encoded-secret`` when the bytes are printable UTF-8 text in which the other rules find a secret
— 200 of 200 generated encodings caught, 0 ordinary documents flagged. No entropy rule: a bare
threshold (≥ 4.0 bits/char over 20+ characters) catches the same encodings (198/200) but flags
ordinary text (env settings like ``NODE_OPTIONS=--max-old-space-size=4096``) and would redact
every hash and id; with a label nearby it caught 0 encodings and 2 of 14 plain samples, all
already caught by the ``password`` rule.

Why not the ``detect-secrets`` library (measured, same sets): it caught 9 of 14 plain samples, 1
of 12 disguised variants and 0 of 200 encodings — it has no Korean labels, emails, phones, card
or resident numbers, and scans line by line, so it cannot see a wrapped token — flagged 0
ordinary documents like these rules, and ran at ~8 ms/KB against 0.3–0.85 ms/KB here. It would
add a dependency (with ``requests``) for less coverage.

Fields are not entry text: ``field`` redacts a free-text metadata value, ``require_clean``
refuses (QueryError) a tag, scope, id or path holding a secret, since a redacted name is useless.
"""

from __future__ import annotations

import base64
import binascii
import html
import ipaddress
import re
import unicodedata
from bisect import bisect_right
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import unquote_to_bytes

MARKER = "[REDACTED:{kind}]"
MARKER_RE = re.compile(r"\[REDACTED:[a-z0-9-]+\]")
CUSTOM_KIND = "custom"
VALUE_GROUPS = ("v", "v2", "v3", "v4", "v5")
MIN_TOKEN_VALUE = 8
"""Why: ``token: str`` or ``secret: 3`` in notes and code are not secrets; real tokens are longer."""
PHONE_DIGITS = range(9, 16)
"""Why: 02-123-4567 has 9 digits and E.164 allows 15; fewer is a score or a version, not a phone."""
CARD_DIGITS = range(13, 20)
MAX_PASSES = 3
"""Scans of the redacted text; the second rarely finds anything, the third is a safety margin."""
PATTERN_PREVIEW = 60
_CACHE_MAX = 16
PASSWORD_LIKE_MIN = 4
"""Why: a PIN has 4 digits; shorter words after a bare 비밀번호 (`v2`, `8자`) are not passwords."""
AWS_PAIR_WINDOW = 200
"""Characters searched on either side of a bare 40-character AWS secret for its AKIA… id (a pasted pair)."""
BASE64_MIN_CHARS = 16
"""Why: base64 of the shortest labelled secret (`pwd=hunter2`, 11 bytes) has 16 characters."""
BASE64_MAX_CHARS = 4_096
"""Why: longer runs are images or key bodies (the private-key rule's); decoding them costs time, not safety."""
ENCODED_KIND = "encoded-secret"

_PASSWORD_KEYS = frozenset({"password", "passwd", "passphrase", "pwd", "pw", "비밀번호", "비번", "패스워드", "암호"})
_NOT_PASSWORDS = frozenset({"str", "string", "int", "bytes", "bool", "none", "null", "optional", "secretstr", "any"})
_FILE_TLDS = frozenset({"png", "jpg", "jpeg", "gif", "svg", "webp", "js", "ts", "py", "md", "json"})
_SPECIAL_IPS = ("0.0.0.0", "127.", "255.")  # why: loopback, any-address and netmasks name no one
_TOKEN_KEYS = frozenset({"토큰", "시크릿"})
_AWS_ID = re.compile(r"(?:AKIA|ASIA)[A-Z0-9]{16}")

# Why ASCII classes, not \b: Python counts Hangul as \w, so `010-2345-6789로` or `ghp_…입니다` (a
# particle glued to the value) would never match. Number rules open with a digit and check what
# precedes it after (_B): a pattern that opens with a lookbehind makes `re` try every position.
_B = r"(?<![0-9A-Za-z_.+-][\s\S])"
_END = r"(?![0-9A-Za-z_]|[.-][0-9])"
_PATH = r"(?<![^\s\"'`(=:\[<,/][\s\S]{%d})"  # the path starts the text or follows a space, quote, `=`…


@dataclass(frozen=True)
class Rule:
    """One kind of secret: the marker kind, its pattern and what it catches."""

    kind: str
    pattern: re.Pattern[str]
    description: str
    check: Callable[[re.Match[str]], bool] | None = field(default=None, compare=False, repr=False)
    needles: tuple[str, ...] = ()
    """Lower-case strings one of which the text must hold for the rule to run (a cheap gate)."""
    joins: bool = False
    """Also tried with line breaks inside a token removed: a terminal wraps a long key over two lines."""

    def spans(self, text: str) -> Iterator[tuple[int, int]]:
        """Yield the (start, end) of every part of ``text`` this rule redacts."""
        for match in self.pattern.finditer(text):
            start, end = _value_span(match)
            if end > start and (self.check is None or self.check(match)):
                yield start, end


@dataclass(frozen=True)
class Redaction:
    """One redacted span, as positions in the original text."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class Sanitized:
    """The sanitized text, what was redacted, and the custom-pattern warnings (the same on every call)."""

    text: str
    redactions: tuple[Redaction, ...]
    warnings: tuple[str, ...]

    @property
    def changed(self) -> bool:
        """Whether anything was redacted."""
        return bool(self.redactions)


def _value_span(match: re.Match[str]) -> tuple[int, int]:
    """The span of the first value group that took part in ``match``, else the whole match."""
    for name in VALUE_GROUPS:
        if name in match.re.groupindex and match.start(name) >= 0:
            return match.span(name)
    return match.span()


def _has_digit(match: re.Match[str]) -> bool:
    """Random keys hold digits; slugs like ``sk-button-primary-large`` do not."""
    return any(ch.isdigit() for ch in match.group(0))


def _luhn(match: re.Match[str]) -> bool:
    """13–19 digits passing the Luhn check, so order numbers are left alone."""
    digits = [ord(ch) - 48 for ch in match.group(0) if ch.isdigit()]
    if len(digits) not in CARD_DIGITS or len(set(digits)) == 1:
        return False
    total = sum(d if i % 2 == 0 else (d * 2 - 9 if d > 4 else d * 2) for i, d in enumerate(reversed(digits)))
    return total % 10 == 0


def _phone(match: re.Match[str]) -> bool:
    """A phone number has 9–15 digits."""
    return sum(ch.isdigit() for ch in match.group(0)) in PHONE_DIGITS


def _email(match: re.Match[str]) -> bool:
    """Not ``git@github.com`` (an SSH remote) nor ``icon@2x.png`` (a file name)."""
    local, _, domain = match.group(0).partition("@")
    return local != "git" and domain.rsplit(".", 1)[-1].lower() not in _FILE_TLDS


def _ip(match: re.Match[str]) -> bool:
    """A valid IPv4 but loopback/any/netmask, or an IPv6 with three groups or more (not ``::1``, ``a[::2]``)."""
    text = match.group(0)
    try:
        ipaddress.ip_address(text)  # why here: octet ranges in the pattern would cost speed, not safety
    except ValueError:
        return False
    return not text.startswith(_SPECIAL_IPS) if "." in text else sum(1 for part in text.split(":") if part) >= 3


def _password(match: re.Match[str]) -> bool:
    """A password is anything but a type name or a placeholder; a token-like key needs a token-like value."""
    start, end = _value_span(match)
    value = match.string[start:end]
    if match.group("k").lower() not in _PASSWORD_KEYS:
        return _token_like(value)
    if match.start("v5") >= 0 and not _password_like(value):  # why: `Password:` then a word is a heading
        return False
    placeholder = value.startswith(("$", "{", "%(")) or not value.strip("*xX.•-_")
    return not placeholder and value.split("[")[0].lower() not in _NOT_PASSWORDS


def _token_like(value: str) -> bool:
    """A token is long and holds a digit; ``token: str`` or ``토큰 2000`` do not."""
    return len(value) >= MIN_TOKEN_VALUE and any(ch.isdigit() for ch in value)


def _password_like(value: str) -> bool:
    """A value with no `=`/`:` before it reads as a password: ASCII, a digit or symbol, lower case unless a PIN."""
    return (
        len(value) >= PASSWORD_LIKE_MIN
        and value.isascii()
        and not value.isalpha()
        and (value.isdigit() or any(ch.islower() for ch in value))  # why: SHA256, AES128 are names, not passwords
        and value.lower() not in _NOT_PASSWORDS
    )


def _bare_password(match: re.Match[str]) -> bool:
    """``비밀번호는 hunter2``: a password-like value (a token-like one after 토큰)."""
    value = match.group("v")
    return _token_like(value) if match.group("k") in _TOKEN_KEYS else _password_like(value)


def _aws_pair(match: re.Match[str]) -> bool:
    """A bare 40-character AWS secret: mixed case and digits, an AKIA…/ASIA… id within AWS_PAIR_WINDOW."""
    value, (start, end) = match.group(0), match.span()
    if len(value) != 40 or not all(any(test(ch) for ch in value) for test in (str.isdigit, str.islower, str.isupper)):
        return False  # why: a git SHA-1 is 40 characters too, but lower-case hex
    return _AWS_ID.search(match.string, max(0, start - AWS_PAIR_WINDOW), end + AWS_PAIR_WINDOW) is not None


def _encoded(match: re.Match[str]) -> bool:
    """Base64 (standard or URL-safe) whose decoded bytes are text holding a secret the other rules find."""
    run = match.group(0)
    body = run.rstrip("=")
    if len(run) > BASE64_MAX_CHARS or len(body) % 4 == 1:
        return False
    urlsafe = "-" in body or "_" in body
    try:
        raw = base64.b64decode(body + "=" * (-len(body) % 4), altchars=b"-_" if urlsafe else None, validate=True)
        decoded = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    if not all(ch.isprintable() or ch in "\t\r\n" for ch in decoded):
        return False  # why: random bytes are never all printable text; base64 of images, hashes, keys stops here
    return bool(_plain_sanitizer().find(decoded))


def _rule(kind: str, description: str, pattern: str, check: Callable[[re.Match[str]], bool] | None = None,
          needles: tuple[str, ...] = (), joins: bool = False) -> Rule:  # fmt: skip
    """A built-in rule."""
    return Rule(kind, re.compile(pattern), description, check, needles, joins)


BUILTIN_RULES: tuple[Rule, ...] = (
    _rule("private-key", "PEM/OpenSSH/PGP private key blocks, BEGIN to END, whole",
          r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:(?:[^-]|-(?!----))*-----END[A-Z0-9 ]*PRIVATE KEY"
          # Why the second branch: a key pasted without its END line is still a secret; stop at a blank line.
          r"(?: BLOCK)?-----|(?:[A-Za-z0-9+/=:,. \t\r-]|\n(?![ \t\r]*\n))*)", needles=("-----begin",)),
    _rule("aws-access-key", "AWS access key ids (AKIA…, ASIA…)",
          r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])", needles=("akia", "asia"), joins=True),
    _rule("aws-secret-key", "the 40-character secret after aws_secret_access_key= or SecretAccessKey:",
          r"(?i:(?:aws_?)?secret_?access_?key|aws_?secret_?key)[\"']?[ \t]*[:=][ \t]*[\"']?"
          r"(?P<v>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])", needles=("secret",)),
    _rule("aws-secret-key", "a bare 40-character AWS secret (mixed case, digits) within 200 characters of an AKIA… id",
          r"[A-Za-z0-9/+](?<![A-Za-z0-9/+=][\s\S])[A-Za-z0-9/+]{39,}(?![A-Za-z0-9/+=])", _aws_pair, ("akia", "asia")),
    _rule("github-token", "GitHub tokens: ghp_, gho_, ghu_, ghs_, ghr_, github_pat_",
          r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})",
          needles=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"), joins=True),
    _rule("anthropic-key", "Anthropic API keys (sk-ant-…)",
          r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,}", needles=("sk-ant-",), joins=True),
    _rule("openai-key", "OpenAI API keys (sk-…, sk-proj-…)",
          r"(?<![A-Za-z0-9_-])sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}", _has_digit, ("sk-",), True),
    _rule("slack-token", "Slack tokens (xoxb-, xoxp-, xapp-…) and webhook URLs",
          r"(?<![A-Za-z0-9])(?:xox[abposr]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,}"
          r"|https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,})", needles=("xox", "xapp-", "hooks.slack"),
          joins=True),
    _rule("google-api-key", "Google API keys (AIza…)",
          r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])", needles=("aiza",), joins=True),
    _rule("stripe-key", "Stripe keys (sk_live_, rk_live_, pk_live_, *_test_, whsec_)",
          r"(?<![A-Za-z0-9])(?:[spr]k_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})",
          needles=("k_live_", "k_test_", "whsec_"), joins=True),
    _rule("api-token", "GitLab (glpat-), Hugging Face (hf_), npm (npm_) and PyPI (pypi-) tokens",
          r"(?<![A-Za-z0-9_-])(?:glpat-[A-Za-z0-9_-]{20,}|hf_[A-Za-z0-9]{30,}|npm_[A-Za-z0-9]{36,}"
          r"|pypi-[A-Za-z0-9_-]{50,})", needles=("glpat-", "hf_", "npm_", "pypi-"), joins=True),
    _rule("jwt", "JSON Web Tokens: three base64url segments, the first starting eyJ",
          r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*", needles=("eyj",), joins=True),
    _rule("bearer-token", "the token after `Authorization: Bearer`",
          r"(?<![A-Za-z0-9])(?i:bearer)[ \t]+(?P<v>[A-Za-z0-9._~+/-]{16,}=*)", _has_digit, ("bearer",)),
    _rule("url-password", "the password in scheme://user:PASSWORD@host (scheme, user and host are kept)",
          r"://(?<=[A-Za-z0-9]://)[^\s:/?#@\[\]]*:(?!\[REDACTED:)(?P<v>[^\s/?#]+)@", needles=("://",)),
    _rule("password", "the value of password=, passwd:, pwd=, 비밀번호:, token=, secret=, api_key= (the key is kept)",
          # Why `pass…` may follow a letter: PGPASSWORD=; a short key like `pw` or `token` may not (subtoken=).
          r"(?P<k>(?i:pass(?:word|wd|phrase))|(?<![A-Za-z0-9])(?i:pwd?|secret(?:[_-]?key)?|token|api[_-]?key"
          r"|private[_-]?key)|비밀번호|비번|패스워드|암호|토큰|시크릿)[*\"']{0,2}[ \t]*(?:=|:=?)[ \t]*(?!\[REDACTED:)"
          r"(?:\"(?P<v>[^\"\n]+)\"|'(?P<v2>[^'\n]+)'|`(?P<v3>[^`\n]+)`|(?P<v4>[^\s\"'`,;&<>]*[^\s\"'`,;&<>).\]])"
          # Why v5: a label ending its line (`password:`) with the value alone on the next line.
          r"|\r?\n[ \t]*(?P<v5>[^\s\"'`]+)[ \t]*(?=\r?\n|$))",
          _password, ("pass", "pw", "secret", "token", "key", "비밀", "비번", "패스워드", "암호", "토큰", "시크릿")),
    _rule("password", "a password-like value after a Korean label with no separator: 비밀번호는 hunter2, 비번 1234",
          # Why the particle list: `hunter2로 바꿨다` ends the value, `2000개` (a counter) is no value at all.
          r"(?P<k>비밀번호|비번|패스워드|암호|토큰|시크릿)(?:는|은|이|가|를|을|도)?[ \t]+(?!\[REDACTED:)"
          r"(?P<v>[!-~]*[0-9A-Za-z#$%&*+/<=>@^_|~!-])(?=[.,;:)\]'\"?]*(?:\s|$|(?:이다|입니다|이에요|예요|이야|야|임"
          r"|이고|고|라고|이라고|으로|로|요)(?![가-힣])))", _bare_password,
          ("비밀", "비번", "패스워드", "암호", "토큰", "시크릿")),
    _rule("email", "email addresses",
          r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![A-Za-z0-9-])",
          _email, ("@",)),
    _rule("korean-rrn", "Korean resident registration numbers (주민등록번호 YYMMDD-NNNNNNN)",
          r"[0-9](?<![0-9][0-9])[0-9](?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01])-[1-8][0-9]{6}(?![0-9])"),
    _rule("card-number", "payment card numbers (13–19 digits, optional spaces or dashes) that pass the Luhn check",
          rf"[2-6]{_B}(?:[0-9]{{12,18}}|[0-9]{{3}}([ -])[0-9]{{4}}\1[0-9]{{4}}\1[0-9]{{4}}(?:\1[0-9]{{3}})?"
          rf"|(?<=3)[0-9]{{3}}([ -])[0-9]{{6}}\2[0-9]{{4,5}}){_END}", _luhn),
    _rule("phone", "phone numbers: Korean mobile and landline, +82/+1 international, (415) 555-0100",
          rf"(?:0{_B}(?:1[016789](?:-[0-9]{{3,4}}-|\.[0-9]{{3,4}}\.| [0-9]{{3,4}} |[0-9]{{3,4}})[0-9]{{4}}"
          rf"|(?:2|[3-6][1-5]|70|50[0-9])-[0-9]{{3,4}}-[0-9]{{4}})"
          rf"|\+{_B}(?:[0-9]{{8,15}}|[0-9]{{1,4}}(?:[ .-]?\([0-9]{{1,4}}\)|[ .-][0-9]{{1,10}}){{1,5}})"
          rf"|\({_B}[0-9]{{3}}\) ?[0-9]{{3}}[-.][0-9]{{4}}|[0-9]{_B}[0-9]{{2}}[-.][0-9]{{3}}[-.][0-9]{{4}}){_END}",
          _phone),
    _rule("ip-address", "IPv4 (four valid octets; not 127.*, 0.0.0.0, 255.*) and IPv6 with three groups or more",
          r"[0-9](?<![0-9A-Za-z_.][0-9])[0-9]{0,2}(?:\.[0-9]{1,3}){3}(?![0-9A-Za-z_]|\.[0-9])"
          r"|(?:[0-9A-Fa-f](?<![0-9A-Za-z_:.][0-9A-Fa-f])[0-9A-Fa-f]{0,3}(?::[0-9A-Fa-f]{0,4}){2,7}"
          r"|:(?<![0-9A-Za-z_:.]:)[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){1,6})(?![0-9A-Za-z_:]|\.[0-9])",
          _ip, (".", ":")),
    _rule("home-path", "the user name in /home/<user>, /Users/<user>, C:\\Users\\<user>, ~<user>/ (the path is kept)",
          rf"(?:/home/{_PATH % 6}|/Users/{_PATH % 7}|:(?<=[A-Za-z]:){_PATH % 2}[\\/]{{1,2}}[Uu]sers[\\/]{{1,2}})"
          r"(?!(?:Shared|Public|Default)\b)(?P<v>\w(?:[\w-]|\.(?=[\w-]))*)"
          rf"|~{_PATH % 1}(?P<v2>[A-Za-z_][\w-]*)(?=/)", needles=("/home/", "users", "~")),
    # Last: a token, a JWT or a key body is a base64 run too, and its own rule names it better.
    _rule(ENCODED_KIND, "base64 runs (16–4096 characters) whose decoded text holds a secret any rule above finds",
          r"[A-Za-z0-9+/_-](?<![A-Za-z0-9+/=_-][\s\S])[A-Za-z0-9+/_-]{15,}={0,2}(?![A-Za-z0-9+/=_-])", _encoded),
)  # fmt: skip


# Why views: `password%3D…`, `password&#61;…`, `ｐａｓｓｗｏｒｄ＝…` and `ghp_ab\u200bcd…` hide from the rules
# as typed. A view is a decoded copy that remembers where each piece came from, so a match found in
# it redacts the original characters (the encoded or full-width ones), never a re-encoded copy.
_ZERO_WIDTH = "\u00ad\u180e\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff"
_ZERO_WIDTH_RE = re.compile(f"[{_ZERO_WIDTH}]")
_FOLD_RE = re.compile(
    r"(?:%[0-9A-Fa-f]{2})+|&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});?|[^\x00-\x7f가-힣]+"
)
_JOIN_RE = re.compile(r"\r?\n[ \t]*(?=[A-Za-z0-9_-])")
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


@dataclass(frozen=True)
class _View:
    """A decoded copy of a text, cut in pieces that each know the span of the text they came from."""

    text: str
    starts: tuple[int, ...]  # where each piece starts in ``text``; the pieces cover it
    origins: tuple[tuple[int, int], ...]
    exact: tuple[bool, ...]  # a verbatim piece maps position to position, a decoded one as a whole
    base: _View | None = None  # the view ``origins`` point into, if not the original text

    def original(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original text that ``text[start:end]`` came from."""
        first, last = bisect_right(self.starts, start) - 1, bisect_right(self.starts, end - 1) - 1
        begin = self.origins[first][0] + (start - self.starts[first] if self.exact[first] else 0)
        stop = self.origins[last][0] + end - self.starts[last] if self.exact[last] else self.origins[last][1]
        return self.base.original(begin, stop) if self.base else (begin, stop)


class _Pieces:
    """Builds a view piece by piece: verbatim copies and decoded replacements of ``source``."""

    def __init__(self, source: str) -> None:
        self.source, self.size, self.changed = source, 0, False
        self.parts: list[str] = []
        self.starts: list[int] = []
        self.origins: list[tuple[int, int]] = []
        self.exact: list[bool] = []

    def copy(self, start: int, end: int) -> None:
        """Copy ``source[start:end]`` as it is."""
        if start >= end:
            return
        self.parts.append(self.source[start:end])
        if self.exact and self.exact[-1] and self.origins[-1][1] == start:
            self.origins[-1] = (self.origins[-1][0], end)  # one piece for a whole verbatim stretch
        else:
            self.starts.append(self.size)
            self.origins.append((start, end))
            self.exact.append(True)
        self.size += end - start

    def put(self, start: int, end: int, new: str) -> None:
        """Replace ``source[start:end]`` by ``new`` (nothing, for an invisible character)."""
        if new == self.source[start:end]:
            return self.copy(start, end)
        self.changed = True
        if new:
            self.parts.append(new)
            self.starts.append(self.size)
            self.origins.append((start, end))
            self.exact.append(False)
            self.size += len(new)

    def view(self, base: _View | None = None) -> _View | None:
        """The view, or None when nothing was decoded."""
        if not self.changed or not self.parts:
            return None
        return _View("".join(self.parts), tuple(self.starts), tuple(self.origins), tuple(self.exact), base)


def _fold(text: str) -> _View | None:
    """``text`` with %XX and HTML entities decoded, NFKC applied and invisible characters dropped; None if the same."""
    plain = text.isascii() or (not _ZERO_WIDTH_RE.search(text) and unicodedata.is_normalized("NFKC", text))
    if plain and "%" not in text and "&" not in text:
        return None  # why: the common case (plain English or NFC Korean) costs a few C-speed scans
    out, position = _Pieces(text), 0
    for match in _FOLD_RE.finditer(text):
        start, end = match.span()
        out.copy(position, start)
        position, chunk = end, match.group()
        if chunk[0] == "%":
            raw = unquote_to_bytes(chunk)
            if raw.isascii():
                for i, byte in enumerate(raw):
                    out.put(start + 3 * i, start + 3 * i + 3, chr(byte))
            else:
                try:
                    out.put(start, end, raw.decode("utf-8"))
                except UnicodeDecodeError:
                    out.copy(start, end)
        elif chunk[0] == "&":
            out.put(start, end, html.unescape(chunk))
        elif not _ZERO_WIDTH_RE.search(chunk) and unicodedata.is_normalized("NFKC", chunk):
            out.copy(start, end)
        else:
            _fold_run(out, start, chunk)
    out.copy(position, len(text))
    return out.view()


def _fold_run(out: _Pieces, start: int, run: str) -> None:
    """NFKC each character with its combining marks (an NFD syllable's vowel and final too); drop invisible ones."""
    i = 0
    while i < len(run):
        j = i + 1
        while j < len(run) and (unicodedata.combining(run[j]) or "\u1160" <= run[j] <= "\u11ff"):
            j += 1
        cluster = "".join(ch for ch in run[i:j] if ch not in _ZERO_WIDTH)
        out.put(start + i, start + j, unicodedata.normalize("NFKC", cluster))
        i = j


def _joined(text: str, base: _View | None) -> _View | None:
    """``text`` with every line break between two token characters removed (a wrapped key made whole)."""
    out, position = _Pieces(text), 0
    for match in _JOIN_RE.finditer(text):
        start, end = match.span()
        if start and text[start - 1] in _TOKEN_CHARS:
            out.copy(position, start)
            out.put(start, end, "")
            position = end
    out.copy(position, len(text))
    return out.view(base)


class Sanitizer:
    """The built-in rules plus memtree.yaml's ``privacy.custom_patterns``, compiled once."""

    def __init__(self, custom: Sequence[str | Mapping[str, object]] = ()) -> None:
        """Compile the custom patterns; a broken one is skipped and named once in ``warnings``."""
        rules, warnings = list(BUILTIN_RULES), []
        for index, item in enumerate([custom] if isinstance(custom, str) else custom or ()):
            rule = _custom_rule(item)
            if isinstance(rule, Rule):
                rules.append(rule)
            else:
                warnings.append(f"privacy.custom_patterns[{index}]: {rule}; skipped")
        self.rules: tuple[Rule, ...] = tuple(rules)
        self.warnings: tuple[str, ...] = tuple(warnings)

    def find(self, text: str) -> tuple[Redaction, ...]:
        """What ``sanitize`` would redact, in text order (for ``memtree check``)."""
        return self._scan(text)[0]

    def sanitize(self, text: str) -> Sanitized:
        """``text`` with every secret replaced by ``[REDACTED:kind]``; never raises."""
        redactions, failures = self._scan(text)
        return Sanitized(_apply(text, redactions), redactions, self.warnings + failures)

    def field(self, value: str) -> str:
        """A free-text metadata value (an imported meta value) with its secrets redacted, like entry text."""
        return self.sanitize(value).text

    def require_clean(self, value: str, what: str) -> str:
        """``value`` unchanged, or QueryError when it holds a secret: a tag, scope, id or path is refused.

        Why refuse rather than redact: `[REDACTED:email]` as a tag or a file name is useless and
        collides with every other one. The message names ``what`` and the kind, never the value.
        """
        kinds = sorted({r.kind for text in {value, value.removesuffix(".md")} for r in self.find(text)})
        if kinds:  # why the stem too: `bob@example.com.md` reads as a file name, `bob@example.com` is a secret
            from memtree.errors import QueryError

            raise QueryError(f"{what} holds a secret ({', '.join(kinds)}); memtree will not write it: remove it")
        return value

    def _scan(self, text: str) -> tuple[tuple[Redaction, ...], tuple[str, ...]]:
        """All redactions in text order, scanning the redacted text again until it holds no more."""
        found, failures = self._pass(text)
        fresh = found
        for _ in range(MAX_PASSES - 1):
            if not fresh:
                break
            # Why again: a match dropped for overlapping a taken span may hold a secret beyond it
            # (`sk-ant-…-----BEGIN …`); the redacted text shows it, and sanitize stays idempotent.
            found.sort(key=lambda r: r.start)
            more, more_failures = self._pass(_apply(text, found))
            fresh = _to_original(more, found)
            found += fresh
            failures += [failure for failure in more_failures if failure not in failures]
        return tuple(sorted(found, key=lambda r: r.start)), tuple(failures)

    def _pass(self, text: str) -> tuple[list[Redaction], list[str]]:
        """Disjoint redactions, earlier rules first, and the rules that failed at run time."""
        starts, ends = [], []  # taken spans, sorted and disjoint; markers already in the text count
        for marker in MARKER_RE.finditer(text):
            starts.append(marker.start())
            ends.append(marker.end())
        found: list[Redaction] = []
        failures: list[str] = []
        folded = _fold(text)
        views: list[tuple[str, _View | None, str, bool]] = [(text, None, text.lower(), False)]
        if folded is not None:
            views.append((folded.text, folded, folded.text.lower(), False))
        joined: list[tuple[str, _View | None, str, bool]] | None = None  # built when a joining rule first runs
        for rule in self.rules:
            if rule.joins and joined is None:
                joined = []
                if "\n" in text:
                    for view_text, view, _, _ in views:
                        whole = _joined(view_text, view)
                        if whole is not None:
                            joined.append((whole.text, whole, whole.text.lower(), True))
            try:
                for view_text, view, lowered, crossing in views + (joined if rule.joins and joined else []):
                    if rule.needles and not any(needle in lowered for needle in rule.needles):
                        continue
                    for start, end in rule.spans(view_text):
                        if view is not None:
                            start, end = view.original(start, end)
                            if crossing and "\n" not in text[start:end]:
                                continue  # why: a match within one line was tried on the text itself
                        at = bisect_right(starts, start)
                        if end <= start or (at and ends[at - 1] > start) or (at < len(starts) and starts[at] < end):
                            continue
                        starts.insert(at, start)
                        ends.insert(at, end)
                        found.append(Redaction(rule.kind, start, end))
            except Exception as error:  # why: a user regex must never stop a write (RecursionError, …)
                failures.append(f"privacy rule {rule.kind} {_preview(rule.pattern.pattern)} failed: {error}; skipped")
        return found, failures


def _apply(text: str, redactions: Sequence[Redaction]) -> str:
    """``text`` with each of the sorted, disjoint ``redactions`` replaced by its marker."""
    parts, position = [], 0
    for redaction in redactions:
        parts += [text[position : redaction.start], MARKER.format(kind=redaction.kind)]
        position = redaction.end
    return "".join([*parts, text[position:]])


def _to_original(spans: list[Redaction], done: list[Redaction]) -> list[Redaction]:
    """Map ``spans`` found in ``_apply(text, done)`` back to ``text``; none overlaps a marker."""
    marker_ends, shifts, shift = [], [], 0
    for redaction in done:
        shift += len(MARKER.format(kind=redaction.kind)) - (redaction.end - redaction.start)
        marker_ends.append(redaction.end + shift)
        shifts.append(shift)
    mapped = []
    for span in spans:
        at = bisect_right(marker_ends, span.start)
        offset = shifts[at - 1] if at else 0
        mapped.append(Redaction(span.kind, span.start - offset, span.end - offset))
    return mapped


def _preview(pattern: object) -> str:
    """A pattern quoted on one line, cut to PATTERN_PREVIEW characters."""
    shown = repr(pattern)
    return shown if len(shown) <= PATTERN_PREVIEW else shown[: PATTERN_PREVIEW - 1] + "…"


def _custom_rule(item: object) -> Rule | str:
    """A rule from a regex string or a ``{pattern, kind}`` mapping, or why it cannot be one."""
    pattern, kind = item, CUSTOM_KIND
    if isinstance(item, Mapping):
        pattern, raw_kind = item.get("pattern"), item.get("kind")
        if isinstance(raw_kind, str):  # why: markers must stay `[a-z0-9-]` so re-sanitizing leaves them alone
            kind = re.sub(r"[^a-z0-9]+", "-", raw_kind.lower()).strip("-") or CUSTOM_KIND
    if not isinstance(pattern, str):
        return f"{_preview(item)} is not a regex string"
    try:
        compiled = re.compile(pattern)
    except (re.error, OverflowError, RecursionError) as error:
        return f"{_preview(pattern)} is not a valid regex ({error})"
    if compiled.fullmatch(""):
        return f"{_preview(pattern)} matches the empty string"
    return Rule(kind, compiled, f"custom pattern {pattern}")


_cache: dict[tuple[str, ...], Sanitizer] = {}
_plain: list[Sanitizer] = []


def _plain_sanitizer() -> Sanitizer:
    """The built-in rules but the base64 one: what decoded base64 is scanned with (no decoding twice)."""
    if not _plain:
        plain = Sanitizer()
        plain.rules = tuple(rule for rule in BUILTIN_RULES if rule.kind != ENCODED_KIND)
        _plain.append(plain)
    return _plain[0]


def sanitize(text: str, custom: Sequence[str | Mapping[str, object]] = ()) -> Sanitized:
    """Sanitize ``text`` with the built-in rules plus ``custom``, reusing one Sanitizer per ``custom``."""
    items = [custom] if isinstance(custom, str) else list(custom or ())
    key = tuple(item if isinstance(item, str) else repr(item) for item in items)
    sanitizer = _cache.get(key)
    if sanitizer is None:
        if len(_cache) >= _CACHE_MAX:
            _cache.clear()
        sanitizer = _cache[key] = Sanitizer(items)
    return sanitizer.sanitize(text)
