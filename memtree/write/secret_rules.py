"""The built-in secret rules of the sanitizer (memtree.write.sanitize): one table, each rule a pattern and a check.

Pure. The rule for base64-encoded secrets lives with the sanitizer, since it runs the sanitizer on what it decodes.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

MARKER = "[REDACTED:{kind}]"
MARKER_RE = re.compile(r"\[REDACTED:[a-z0-9-]+\]")
CUSTOM_KIND = "custom"
VALUE_GROUPS = ("v", "v2", "v3", "v4", "v5", "v6", "q", "q2", "q3", "q4")
MIN_TOKEN_VALUE = 8
"""Why: ``token: str`` or ``secret: 3`` in notes and code are not secrets; real tokens are longer."""
PHONE_DIGITS = range(9, 16)
"""Why: 02-123-4567 has 9 digits and E.164 allows 15; fewer is a score or a version, not a phone."""
CARD_DIGITS = range(13, 20)
MAX_PASSES = 3
"""Scans of the redacted text; the second rarely finds anything, the third is a safety margin."""
PATTERN_PREVIEW = 60
PASSWORD_LIKE_MIN = 4
"""Why: a PIN has 4 digits; shorter words after a bare 비밀번호 (`v2`, `8자`) are not passwords."""
PIN_DIGITS = range(4, 13)
"""Why: a PIN has 4–12 digits (`PIN 13` is a pin of a chip, `PIN: required` a field)."""
HIGH_ENTROPY_MIN_CHARS = 12
HIGH_ENTROPY_BITS = 3.5
"""Bits per character a value after a generic label (`*_KEY`, `auth`, `the API key is`) needs: 20 random hex or
base62 characters score 3.8–4.3; `users:list:v2`, `created_at_2`, `release-2024-q3` score 2.9–3.3."""
GLUE_MAX = 128
"""Base64 characters (a path too) a glued key prefix may follow (`bank/notesAKIA…`); more is a blob (an image)."""
AWS_PAIR_WINDOW = 200
"""Characters searched on either side of a bare 40-character AWS secret for its AKIA… id (a pasted pair)."""
BASE64_MIN_CHARS = 16
"""Why: base64 of the shortest labelled secret (`pwd=hunter2`, 11 bytes) has 16 characters."""
BASE64_MAX_CHARS = 4_096
"""Why: longer runs are images or key bodies (the private-key rule's); decoding them costs time, not safety."""
ENCODED_KIND = "encoded-secret"
LINES = "lines"
"""``Rule.joins``: a line break between two token characters is removed (a terminal wrapped a key)."""
BASE64 = "base64"
"""``Rule.joins``: a base64 blob wrapped over whole lines is made one run (memtree.write.disguises._unwrapped)."""

_NOT_PASSWORDS = frozenset({"str", "string", "int", "bytes", "bool", "none", "null", "optional", "secretstr", "any"})
_FILE_TLDS = frozenset({"png", "jpg", "jpeg", "gif", "svg", "webp", "js", "ts", "py", "md", "json"})
_SPECIAL_IPS = ("0.0.0.0", "127.", "255.")  # why: loopback, any-address and netmasks name no one
_AWS_ID = re.compile(r"(?:AKIA|ASIA)[A-Z0-9]{16}")
_CALL_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\(")
"""A value that is a name and an opening parenthesis: a call in code, whose arguments the value stops before."""
_HYPHENATED_RE = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)+")
"""`case-sensitive`, `auto-generated`: English, not a password (a passphrase of words is one, see _PHRASE_RE)."""
_PHRASE_RE = re.compile(r"[A-Za-z0-9]+(?:[-_.][A-Za-z0-9]+){2,}")
_ENTROPY_CHARS_RE = re.compile(r"[A-Za-z0-9+/=_.~-]+")
_PLACEHOLDER_RE = re.compile(r"^\$|\$\{|%\(|\{\{|^<[^>]*>$|\*{3}")

# The secret-label vocabulary: one home for the words that name a secret, in every form a value follows them
# (`=`, `:`, ` is `, quoted, a bare value, a command-line option). Each family is a named group, and the
# family decides what value it needs (_label_value). Why `(?<![A-Za-z0-9])`, not \b: `_` joins a compound
# (`DB_PASS`, `ADMIN_PIN`, `STRIPE_WEBHOOK_KEY`), and Python counts Hangul as \w (`비번` after a word).
_PASSWORD_LABEL = (
    # `pass…word` may follow a letter: PGPASSWORD, MAIL_PASSWD; camelCase `dbPassword` too.
    r"(?P<kpw>(?i:pass(?:word|wd|code))|(?<![A-Za-z0-9])(?i:pwd?)(?![A-Za-z])|비밀번호|비번|패스워드|패스코드|암호)"
    r"|(?P<kphrase>(?i:pass[ _-]?phrase))"
    # Why apart: `pass` alone is also pass/fail, so its value must read as a password (_password_like).
    r"|(?P<kpass>(?<![A-Za-z0-9])(?i:pass)(?![A-Za-z])|(?<=[a-z])Pass(?![a-z]))"
    r"|(?P<kpin>(?<![A-Za-z0-9])(?i:pin(?:[ _-]?(?:code|number))?)(?![A-Za-z])|핀[ \t]?(?:번호|코드))"
)
_TOKEN_LABEL = r"(?P<ktoken>(?<![A-Za-z0-9])(?i:secret(?:[_-]?key)?|token|api[_-]?key|private[_-]?key)|토큰|시크릿)"
_KEY_LABEL = (
    # Generic names of a key: their value must look random (_high_entropy). camelCase: `AccountKey`, `clientSecret`.
    r"(?P<kkey>(?<![A-Za-z0-9])(?i:(?:api|secret|access|private)[ ]key|key|auth)(?![A-Za-z])"
    r"|(?<=[a-z])(?:Key|Secret|Token)(?![a-z]))"
)
_LABEL_STARTS = "(?=[PpSsTtAaKk비패암토시핀])"
"""The first characters of every label above. Why: `re` tries each alternative at every position; one class test
first makes the label rules 4–5 times faster (the alternatives open with lookbehinds, so `re` has no prefix to seek)."""
_QUOTED = (
    # Why to the closing quote: a quoted value may hold spaces (`'hunter two 2'`, “blue whale 19”). Why at most
    # 256 characters: an opening “ never closes a “ before it, so unbounded, `“a “a “a…` would take quadratic time.
    "(?:\"(?P<q>[^\"\n]{1,256})\"|'(?P<q2>[^'\n]{1,256})'"
    "|\u201c(?P<q3>[^\u201d\n]{1,256})\u201d|\u2018(?P<q4>[^\u2019\n]{1,256})\u2019)"
)

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
    joins: str = ""
    """Also tried with line breaks inside a token removed (LINES: a terminal wraps a long key over
    two lines) or inside a base64 blob (BASE64); a match across a break is preferred to one within a line."""

    def spans(self, text: str) -> Iterator[tuple[int, int]]:
        """Yield the (start, end) of every part of ``text`` this rule redacts."""
        for match in self.pattern.finditer(text):
            start, end = _value_span(match)
            if end > start and (self.check is None or self.check(match)):
                yield start, end


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


def _has(match: re.Match[str], group: str) -> bool:
    """Whether ``group`` is in the rule's pattern and took part in ``match``."""
    return group in match.re.groupindex and match.start(group) >= 0


def _value(match: re.Match[str]) -> str:
    """The text of the value group that took part (see _value_span)."""
    start, end = _value_span(match)
    return match.string[start:end]


def _label_value(match: re.Match[str], value: str) -> bool | None:
    """What a label's family needs of its value; None for a password word (the caller decides)."""
    if _has(match, "kpin"):
        return _pin(value)
    if _has(match, "kkey"):
        return _high_entropy(value)
    if _has(match, "kpass"):
        return _password_like(value)
    if _has(match, "ktoken"):
        return _token_like(value)
    return None


def _password(match: re.Match[str]) -> bool:
    """A password is anything but a type name or a placeholder; other labels need the value of their family."""
    value = _value(match)
    family = _label_value(match, value)
    if family is not None:
        return family
    if match.start("v5") >= 0 and not _password_like(value):  # why: `Password:` then a word is a heading
        return False
    placeholder = value.startswith(("$", "{", "%(")) or not value.strip("*xX.•-_")
    call = match.start("v4") >= 0 and _CALL_RE.fullmatch(value) is not None  # `password = getpass()` is code
    return not placeholder and not call and value.split("[")[0].lower() not in _NOT_PASSWORDS


def _pin(value: str) -> bool:
    """4–12 digits, dashes or spaces between them allowed (`8841-2290`)."""
    digits = value.replace("-", "").replace(" ", "")
    return digits.isdigit() and len(digits) in PIN_DIGITS


def _high_entropy(value: str) -> bool:
    """A random-looking value: token characters, letters and digits mixed, HIGH_ENTROPY_BITS per character or more."""
    if len(value) < HIGH_ENTROPY_MIN_CHARS or not _ENTROPY_CHARS_RE.fullmatch(value) or not _random_like(value):
        return False
    counts = [value.count(ch) for ch in set(value)]
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts) >= HIGH_ENTROPY_BITS


def _random_like(value: str) -> bool:
    """Digits and capitals make a quarter of its letters and digits or more, as in a key (random base62 ~58%).

    Why a quarter: a slug of words stays under it (`task-2024-quarterly-review` 18%); a made-up key such as
    `ghp_abcdefghijklmnopqrstuvwxyz0123456789` (26%) is still a key.
    """
    alnum = [ch for ch in value if ch.isascii() and ch.isalnum()]
    digits = sum(ch.isdigit() for ch in alnum)
    return 0 < digits < len(alnum) and 4 * (digits + sum(ch.isupper() for ch in alnum)) >= len(alnum)


def _quoted_password(value: str) -> bool:
    """A quoted value after a password word: not a placeholder, and a digit or symbol in it (`'reset'` is a word)."""
    return (
        not _PLACEHOLDER_RE.search(value)
        and any(not (ch.isalpha() or ch in " -'") for ch in value)
        and value.lower() not in _NOT_PASSWORDS
    )


def _token_like(value: str) -> bool:
    """A token is long and holds a digit; ``token: str`` or ``토큰 2000`` do not."""
    return len(value) >= MIN_TOKEN_VALUE and any(ch.isdigit() for ch in value)


def _password_like(value: str) -> bool:
    """A value with no `=`/`:` before it reads as a password: ASCII, a digit or symbol, lower case unless a PIN."""
    return (
        len(value) >= PASSWORD_LIKE_MIN
        and value.isascii()
        and not value.isalpha()
        # why: SHA256, AES128 are names, not passwords; 8841-2290 is a PIN
        and (value.replace("-", "").isdigit() or any(ch.islower() for ch in value))
        and value.lower() not in _NOT_PASSWORDS
    )


def _bare_password(match: re.Match[str]) -> bool:
    """``비밀번호는 hunter2``: a password-like value (a token-like one after 토큰, digits after 핀번호)."""
    value = _value(match)
    family = _label_value(match, value)
    if family is not None:
        return family
    return _quoted_password(value) if match.start("v") < 0 else _password_like(value)


def _spoken_password(match: re.Match[str]) -> bool:
    """``the admin password is X``, ``passcode X``: a password-like value; with no `is`/`to` before it, a digit too.

    Why the digit: `password reset-flow` or `passcode one-time` name a feature; a bare value typed right after
    the word is a password when it holds a digit (`passcode 8841-2290`, `password hunter2`).
    """
    value = _value(match)
    family = _label_value(match, value)
    if family is not None:
        return family and (match.group("c") is not None or not _has(match, "kkey"))
    if match.start("v") < 0:
        return _quoted_password(value) or (_has(match, "kphrase") and len(value.split()) >= 2)
    if match.group("c") is None:
        return _password_like(value) and any(ch.isdigit() for ch in value)
    if _has(match, "kphrase") and _PHRASE_RE.fullmatch(value):
        return True  # why: a passphrase is words (`correct-horse-battery-staple`)
    return _password_like(value) and not _HYPHENATED_RE.fullmatch(value)


def _passphrase(match: re.Match[str]) -> bool:
    """Words after ``passphrase:``: not a placeholder, not a type name."""
    value = _value(match)
    return not _PLACEHOLDER_RE.search(value) and value.split()[0].lower() not in _NOT_PASSWORDS


def _cli_credential(match: re.Match[str]) -> bool:
    """``-u user:PASSWORD`` (not a uid:gid) or ``--password X``: a password-like value, not a placeholder."""
    value = _value(match)
    if _has(match, "user") and match.group("user").isdigit():
        return False  # why: `docker run -u 1000:1000` is a user and group id
    if _has(match, "ktoken"):
        return _token_like(value)
    return (
        not _PLACEHOLDER_RE.search(value)
        and value.lower() not in _NOT_PASSWORDS
        and (not _has(match, "user") or _password_like(value) or any(ch.isupper() for ch in value[1:]))
    )


def _glued(check: Callable[[re.Match[str]], bool] | None = None) -> Callable[[re.Match[str]], bool]:
    """A known key prefix may be glued to a word before it (`awskeyAKIA…`, `tokenghp_…`) when what follows looks random.

    Why the conditions: in prose a prefix inside a word is a word (`task-…`, `subtoken`), so a glued match needs
    a random-looking body (_random_like); and the run before it is short (GLUE_MAX), since inside a base64 blob
    (an image) any four letters occur by chance.
    """

    def test(match: re.Match[str]) -> bool:
        if check is not None and not check(match):
            return False
        text, start = match.string, match.start()
        if start == 0 or text[start - 1] not in _GLUE_CHARS:
            return True
        before = text[max(0, start - GLUE_MAX - 1) : start]
        blob = len(before) > GLUE_MAX and not before.strip(_BLOB_CHARS)
        return not blob and _random_like(match.group(0))

    return test


_GLUE_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_BLOB_CHARS = "".join(sorted(_GLUE_CHARS)) + "+/="


def _basic_auth(match: re.Match[str]) -> bool:
    """``Basic dXNlcjpwYXNz``: base64 that decodes to printable ``user:password``."""
    value = match.group("v").rstrip("=")
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    return ":" in decoded and decoded.isprintable()


def _aws_pair(match: re.Match[str]) -> bool:
    """A bare 40-character AWS secret: mixed case and digits, an AKIA…/ASIA… id within AWS_PAIR_WINDOW."""
    value, (start, end) = match.group(0), match.span()
    if len(value) != 40 or not all(any(test(ch) for ch in value) for test in (str.isdigit, str.islower, str.isupper)):
        return False  # why: a git SHA-1 is 40 characters too, but lower-case hex
    return _AWS_ID.search(match.string, max(0, start - AWS_PAIR_WINDOW), end + AWS_PAIR_WINDOW) is not None


def rule(kind: str, description: str, pattern: str, check: Callable[[re.Match[str]], bool] | None = None,
          needles: tuple[str, ...] = (), joins: str = "") -> Rule:  # fmt: skip
    """A built-in rule."""
    return Rule(kind, re.compile(pattern), description, check, needles, joins)


RULES: tuple[Rule, ...] = (
    rule("private-key", "PEM/OpenSSH/PGP private key blocks, BEGIN to END, whole",
          r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:(?:[^-]|-(?!----))*-----END[A-Z0-9 ]*PRIVATE KEY"
          # Why the second branch: a key pasted without its END line is still a secret; stop at a blank line.
          r"(?: BLOCK)?-----|(?:[A-Za-z0-9+/=:,. \t\r-]|\n(?![ \t\r]*\n))*)", needles=("-----begin",)),
    # Why no boundary before the token prefixes: a key glued to a word is still a key (_glued decides).
    rule("aws-access-key", "AWS access key ids (AKIA…, ASIA…), glued to lower-case letters too",
          r"(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])", _glued(), ("akia", "asia"), LINES),
    rule("aws-secret-key", "the 40-character secret after aws_secret_access_key= or SecretAccessKey:",
          r"(?i:(?:aws_?)?secret_?access_?key|aws_?secret_?key)[\"']?[ \t]*[:=][ \t]*[\"']?"
          r"(?P<v>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])", needles=("secret",)),
    rule("aws-secret-key", "a bare 40-character AWS secret (mixed case, digits) within 200 characters of an AKIA… id",
          r"[A-Za-z0-9/+](?<![A-Za-z0-9/+=][\s\S])[A-Za-z0-9/+]{39,}(?![A-Za-z0-9/+=])", _aws_pair, ("akia", "asia")),
    rule("github-token", "GitHub tokens: ghp_, gho_, ghu_, ghs_, ghr_, github_pat_",
          r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})", _glued(),
          ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"), LINES),
    rule("anthropic-key", "Anthropic API keys (sk-ant-…)",
          r"sk-ant-[A-Za-z0-9_-]{20,}", _glued(), ("sk-ant-",), LINES),
    rule("openai-key", "OpenAI API keys (sk-…, sk-proj-…)",
          r"sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}", _glued(_has_digit), ("sk-",), LINES),
    rule("slack-token", "Slack tokens (xoxb-, xoxp-, xapp-…) and webhook URLs",
          r"(?:xox[abposr]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,}"
          r"|https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,})", _glued(), ("xox", "xapp-", "hooks.slack"),
          LINES),
    rule("google-api-key", "Google API keys (AIza…)",
          r"AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])", _glued(), ("aiza",), LINES),
    rule("stripe-key", "Stripe keys (sk_live_, rk_live_, pk_live_, *_test_, whsec_)",
          r"(?:[spr]k_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})", _glued(),
          ("k_live_", "k_test_", "whsec_"), LINES),
    rule("api-token", "GitLab (glpat-), Hugging Face (hf_), npm (npm_) and PyPI (pypi-) tokens",
          r"(?:glpat-[A-Za-z0-9_-]{20,}|hf_[A-Za-z0-9]{30,}|npm_[A-Za-z0-9]{36,}"
          r"|pypi-[A-Za-z0-9_-]{50,})", _glued(), ("glpat-", "hf_", "npm_", "pypi-"), LINES),
    rule("jwt", "JSON Web Tokens: three base64url segments, the first starting eyJ",
          r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*", _glued(), ("eyj",), LINES),
    rule("bearer-token", "the token after `Authorization: Bearer`",
          r"(?<![A-Za-z0-9])(?i:bearer)[ \t]+(?P<v>[A-Za-z0-9._~+/-]{16,}=*)", _has_digit, ("bearer",)),
    rule("url-password", "the password in scheme://user:PASSWORD@host (scheme, user and host are kept)",
          r"://(?<=[A-Za-z0-9]://)[^\s:/?#@\[\]]*:(?!\[REDACTED:)(?P<v>[^\s/?#]+)@", needles=("://",)),
    rule("password", "the value after a secret label and =, :, := (password=, DB_PASS:, PIN: 4821, 비밀번호:, "
          "token=, api_key=, STRIPE_KEY=; the key is kept); quoted values to the closing quote, a passphrase's words",
          rf"{_LABEL_STARTS}(?P<k>{_PASSWORD_LABEL}|{_TOKEN_LABEL}|{_KEY_LABEL})"
          r"[*\"'\u201d\u2019]{0,2}[ \t]*(?:=|:=?)[ \t]*(?!\[REDACTED:)"
          r"(?:\"(?P<v>[^\"\n]+)\"|'(?P<v2>[^'\n]+)'|`(?P<v3>[^`\n]+)`"
          r"|\u201c(?P<q3>[^\u201d\n]{1,256})\u201d|\u2018(?P<q4>[^\u2019\n]{1,256})\u2019"
          # Why v6: a passphrase is words (`passphrase: correct horse battery staple`), to the end of its clause.
          r"|(?(kphrase)(?P<v6>[^\s\"'`,;&<>]*[^\s\"'`,;&<>).\]](?:[ \t]+[^\s\"'`,;&<>()]*[^\s\"'`,;&<>().\]]){0,7})"
          r"|(?P<v4>[^\s\"'`,;&<>]*[^\s\"'`,;&<>).\]]))"
          # Why v5: a label ending its line (`password:`) with the value alone on the next line.
          r"|\r?\n[ \t]*(?P<v5>[^\s\"'`]+)[ \t]*(?=\r?\n|$))",
          _password, ("pass", "pw", "secret", "token", "key", "pin", "auth", "비밀", "비번", "패스", "암호", "토큰",
                      "시크릿", "핀")),
    rule("password", "a password-like value after a Korean label with no separator: 비밀번호는 hunter2, 비번 1234",
          # Why the particle list: `hunter2로 바꿨다` ends the value, `2000개` (a counter) is no value at all.
          r"(?=[비패암토시핀])(?P<k>(?P<kpw>비밀번호|비번|패스워드|패스코드|암호)|(?P<ktoken>토큰|시크릿)"
          r"|(?P<kpin>핀[ \t]?(?:번호|코드)))"
          rf"(?:는|은|이|가|를|을|도)?[ \t]+(?!\[REDACTED:)(?:{_QUOTED}"
          r"|(?P<v>[!-~]*[0-9A-Za-z#$%&*+/<=>@^_|~!-])(?=[.,;:)\]'\"?]*(?:\s|$|(?:이다|입니다|이에요|예요|이야|야|임"
          r"|이고|고|라고|이라고|으로|로|요)(?![가-힣]))))", _bare_password,
          ("비밀", "비번", "패스", "암호", "토큰", "시크릿", "핀")),
    rule("password", "a value after a secret label in a sentence: the admin password is X, passcode X, "
          "my pin is 4821, the API key is X (random-looking), changed the password to X, a quoted one whole",
          # Why `for …`: `the password for the admin account is X`; then an `is` (or `to`) must follow.
          rf"{_LABEL_STARTS}(?P<k>(?P<kpw>(?<![A-Za-z0-9])(?i:pass(?:word|wd|code)|pwd?)(?![A-Za-z]))"
          r"|(?P<kphrase>(?<![A-Za-z0-9])(?i:pass[ _-]?phrase))"
          r"|(?P<kpin>(?<![A-Za-z0-9])(?i:pin(?:[ -]?(?:code|number))?)(?![A-Za-z]))"
          rf"|{_KEY_LABEL}|{_TOKEN_LABEL})"  # why the key names first: `secret key is X` is one label
          r"(?:(?P<f>[ \t]+(?i:for|of|on)(?:[ \t]+[^\s=:]+){1,3}?)?"
          r"[ \t]+(?P<c>(?i:is|was|are|were)(?:[ \t]+(?i:now|still|set[ \t]+to|changed[ \t]+to))?"
          r"|(?i:(?:set|changed|reset)[ \t]+)?(?i:to)))?"
          rf"[ \t]+(?!\[REDACTED:)(?:{_QUOTED}|`?(?P<v>[!-~]*[0-9A-Za-z#$%&*+/<=>@^_|~!-]))",
          _spoken_password, ("pass", "pw", "pin", "secret", "token", "key", "auth")),
    rule("password", "the password in a command's credentials: -u/--user user:PASSWORD (curl), --password X",
          # Why `-` first, then the lookbehind: a pattern opening with a lookbehind is tried at every position.
          r"-(?<![A-Za-z0-9-][-])(?:[A-Za-z]*u|-user)(?:[ \t]+|=)[\"']?(?P<user>[^\s:\"'$]+):(?!\[REDACTED:)"
          r"(?P<v>[^\s\"']+)"
          r"|-(?<![A-Za-z0-9-][-])-(?:(?P<kpw>(?i:pass(?:word|wd)?))|(?P<ktoken>(?i:(?:api-|access-|auth-)?token|secret"
          r"|api-key)))[ \t]+(?!\[REDACTED:)(?:\"(?P<v2>[^\"\n]+)\"|'(?P<v3>[^'\n]+)'|(?P<v4>[^\s\"'-][^\s\"']*))",
          _cli_credential, ("-",)),
    rule("basic-auth", "the credentials after `Basic` (base64 of user:password, as in an Authorization header)",
          r"(?<![A-Za-z0-9])(?i:basic)[ \t]+(?P<v>[A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])", _basic_auth,
          ("basic",)),
    rule("email", "email addresses",
          r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![A-Za-z0-9-])",
          _email, ("@",)),
    rule("korean-rrn", "Korean resident registration numbers (주민등록번호 YYMMDD-NNNNNNN)",
          r"[0-9](?<![0-9][0-9])[0-9](?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01])-[1-8][0-9]{6}(?![0-9])"),
    rule("card-number", "payment card numbers (13–19 digits, optional spaces or dashes) that pass the Luhn check",
          rf"[2-6]{_B}(?:[0-9]{{12,18}}|[0-9]{{3}}([ -])[0-9]{{4}}\1[0-9]{{4}}\1[0-9]{{4}}(?:\1[0-9]{{3}})?"
          rf"|(?<=3)[0-9]{{3}}([ -])[0-9]{{6}}\2[0-9]{{4,5}}){_END}", _luhn),
    rule("phone", "phone numbers: Korean mobile and landline, +82/+1 international, (415) 555-0100",
          rf"(?:0{_B}(?:1[016789](?:-[0-9]{{3,4}}-|\.[0-9]{{3,4}}\.| [0-9]{{3,4}} |[0-9]{{3,4}})[0-9]{{4}}"
          rf"|(?:2|[3-6][1-5]|70|50[0-9])-[0-9]{{3,4}}-[0-9]{{4}})"
          rf"|\+{_B}(?:[0-9]{{8,15}}|[0-9]{{1,4}}(?:[ .-]?\([0-9]{{1,4}}\)|[ .-][0-9]{{1,10}}){{1,5}})"
          rf"|\({_B}[0-9]{{3}}\) ?[0-9]{{3}}[-.][0-9]{{4}}|[0-9]{_B}[0-9]{{2}}[-.][0-9]{{3}}[-.][0-9]{{4}}){_END}",
          _phone),
    rule("ip-address", "IPv4 (four valid octets; not 127.*, 0.0.0.0, 255.*) and IPv6 with three groups or more",
          r"[0-9](?<![0-9A-Za-z_.][0-9])[0-9]{0,2}(?:\.[0-9]{1,3}){3}(?![0-9A-Za-z_]|\.[0-9])"
          r"|(?:[0-9A-Fa-f](?<![0-9A-Za-z_:.][0-9A-Fa-f])[0-9A-Fa-f]{0,3}(?::[0-9A-Fa-f]{0,4}){2,7}"
          r"|:(?<![0-9A-Za-z_:.]:)[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){1,6})(?![0-9A-Za-z_:]|\.[0-9])",
          _ip, (".", ":")),
    rule("home-path", "the user name in /home/<user>, /Users/<user>, C:\\Users\\<user>, ~<user>/ (the path is kept)",
          rf"(?:/home/{_PATH % 6}|/Users/{_PATH % 7}|:(?<=[A-Za-z]:){_PATH % 2}[\\/]{{1,2}}[Uu]sers[\\/]{{1,2}})"
          r"(?!(?:Shared|Public|Default)\b)(?P<v>\w(?:[\w-]|\.(?=[\w-]))*)"
          rf"|~{_PATH % 1}(?P<v2>[A-Za-z_][\w-]*)(?=/)", needles=("/home/", "users", "~")),
)  # fmt: skip
