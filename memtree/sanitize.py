"""Privacy sanitizer: secrets and personal data become ``[REDACTED:kind]`` before anything is written.

Pure (text in, text out, no I/O) and safe on any text: it never raises, a broken user regex is
skipped and named in ``Sanitizer.warnings``, and every built-in pattern runs in linear time.
Rules are tried in priority order (``BUILTIN_RULES``, then the custom patterns); a match that
overlaps a span already taken, or a ``[REDACTED:...]`` marker, is dropped, so a JWT inside
``token=`` is redacted once, by the more specific rule. A rule with a named group ``v`` (``v2``…)
redacts only that group: ``password=`` keeps its key, a URL its scheme, user and host.
"""

from __future__ import annotations

import ipaddress
import re
from bisect import bisect_right
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

MARKER = "[REDACTED:{kind}]"
MARKER_RE = re.compile(r"\[REDACTED:[a-z0-9-]+\]")
CUSTOM_KIND = "custom"
VALUE_GROUPS = ("v", "v2", "v3", "v4")
MIN_TOKEN_VALUE = 8
"""Why: ``token: str`` or ``secret: 3`` in notes and code are not secrets; real tokens are longer."""
PHONE_DIGITS = range(9, 16)
"""Why: 02-123-4567 has 9 digits and E.164 allows 15; fewer is a score or a version, not a phone."""
CARD_DIGITS = range(13, 20)
MAX_PASSES = 3
"""Scans of the redacted text; the second rarely finds anything, the third is a safety margin."""
PATTERN_PREVIEW = 60
_CACHE_MAX = 16

_PASSWORD_KEYS = frozenset({"password", "passwd", "passphrase", "pwd", "pw", "비밀번호", "비번", "패스워드", "암호"})
_NOT_PASSWORDS = frozenset({"str", "string", "int", "bytes", "bool", "none", "null", "optional", "secretstr", "any"})
_FILE_TLDS = frozenset({"png", "jpg", "jpeg", "gif", "svg", "webp", "js", "ts", "py", "md", "json"})
_SPECIAL_IPS = ("0.0.0.0", "127.", "255.")  # why: loopback, any-address and netmasks name no one

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
        return len(value) >= MIN_TOKEN_VALUE and any(ch.isdigit() for ch in value)
    placeholder = value.startswith(("$", "{", "%(")) or not value.strip("*xX.•-_")
    return not placeholder and value.split("[")[0].lower() not in _NOT_PASSWORDS


def _rule(kind: str, description: str, pattern: str, check: Callable[[re.Match[str]], bool] | None = None,
          needles: tuple[str, ...] = ()) -> Rule:  # fmt: skip
    """A built-in rule."""
    return Rule(kind, re.compile(pattern), description, check, needles)


BUILTIN_RULES: tuple[Rule, ...] = (
    _rule("private-key", "PEM/OpenSSH/PGP private key blocks, BEGIN to END, whole",
          r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:(?:[^-]|-(?!----))*-----END[A-Z0-9 ]*PRIVATE KEY"
          # Why the second branch: a key pasted without its END line is still a secret; stop at a blank line.
          r"(?: BLOCK)?-----|(?:[A-Za-z0-9+/=:,. \t\r-]|\n(?![ \t\r]*\n))*)", needles=("-----begin",)),
    _rule("aws-access-key", "AWS access key ids (AKIA…, ASIA…)",
          r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])", needles=("akia", "asia")),
    _rule("aws-secret-key", "the 40-character secret after aws_secret_access_key= or SecretAccessKey:",
          r"(?i:(?:aws_?)?secret_?access_?key|aws_?secret_?key)[\"']?[ \t]*[:=][ \t]*[\"']?"
          r"(?P<v>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])", needles=("secret",)),
    _rule("github-token", "GitHub tokens: ghp_, gho_, ghu_, ghs_, ghr_, github_pat_",
          r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})",
          needles=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    _rule("anthropic-key", "Anthropic API keys (sk-ant-…)",
          r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,}", needles=("sk-ant-",)),
    _rule("openai-key", "OpenAI API keys (sk-…, sk-proj-…)",
          r"(?<![A-Za-z0-9_-])sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}", _has_digit, ("sk-",)),
    _rule("slack-token", "Slack tokens (xoxb-, xoxp-, xapp-…) and webhook URLs",
          r"(?<![A-Za-z0-9])(?:xox[abposr]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,}"
          r"|https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,})", needles=("xox", "xapp-", "hooks.slack")),
    _rule("google-api-key", "Google API keys (AIza…)",
          r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])", needles=("aiza",)),
    _rule("stripe-key", "Stripe keys (sk_live_, rk_live_, pk_live_, *_test_, whsec_)",
          r"(?<![A-Za-z0-9])(?:[spr]k_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})",
          needles=("k_live_", "k_test_", "whsec_")),
    _rule("api-token", "GitLab (glpat-), Hugging Face (hf_), npm (npm_) and PyPI (pypi-) tokens",
          r"(?<![A-Za-z0-9_-])(?:glpat-[A-Za-z0-9_-]{20,}|hf_[A-Za-z0-9]{30,}|npm_[A-Za-z0-9]{36,}"
          r"|pypi-[A-Za-z0-9_-]{50,})", needles=("glpat-", "hf_", "npm_", "pypi-")),
    _rule("jwt", "JSON Web Tokens: three base64url segments, the first starting eyJ",
          r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*", needles=("eyj",)),
    _rule("bearer-token", "the token after `Authorization: Bearer`",
          r"(?<![A-Za-z0-9])(?i:bearer)[ \t]+(?P<v>[A-Za-z0-9._~+/-]{16,}=*)", _has_digit, ("bearer",)),
    _rule("url-password", "the password in scheme://user:PASSWORD@host (scheme, user and host are kept)",
          r"://(?<=[A-Za-z0-9]://)[^\s:/?#@\[\]]*:(?!\[REDACTED:)(?P<v>[^\s/?#]+)@", needles=("://",)),
    _rule("password", "the value of password=, passwd:, pwd=, 비밀번호:, token=, secret=, api_key= (the key is kept)",
          # Why `pass…` may follow a letter: PGPASSWORD=; a short key like `pw` or `token` may not (subtoken=).
          r"(?P<k>(?i:pass(?:word|wd|phrase))|(?<![A-Za-z0-9])(?i:pwd?|secret(?:[_-]?key)?|token|api[_-]?key"
          r"|private[_-]?key)|비밀번호|비번|패스워드|암호|토큰|시크릿)[*\"']{0,2}[ \t]*(?:=|:=?)[ \t]*(?!\[REDACTED:)"
          r"(?:\"(?P<v>[^\"\n]+)\"|'(?P<v2>[^'\n]+)'|`(?P<v3>[^`\n]+)`|(?P<v4>[^\s\"'`,;&<>]*[^\s\"'`,;&<>).\]]))",
          _password, ("pass", "pw", "secret", "token", "key", "비밀", "비번", "패스워드", "암호", "토큰", "시크릿")),
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
)  # fmt: skip


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
        lowered = text.lower()
        for rule in self.rules:
            if rule.needles and not any(needle in lowered for needle in rule.needles):
                continue
            try:
                for start, end in rule.spans(text):
                    at = bisect_right(starts, start)
                    if (at and ends[at - 1] > start) or (at < len(starts) and starts[at] < end):
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
