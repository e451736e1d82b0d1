"""A labelled corpus for the sanitizer: secrets (each with the part that must not survive) and ordinary text.

Used by ``bench/secret_scan.py``. Every case is ``Case(split, group, text, secret)``; ``secret`` is
``""`` for ordinary text (nothing may be redacted) and ``name=True`` marks a name (``--to``, a tag,
a memory-tool path), checked with ``Sanitizer.find_in_name``. ``split`` says what the rules were
chosen on: ``tune`` holds the kinds of disguise issue 27 named (its exact 97 cases were not kept)
and the near misses of the tests; ``holdout`` was written before the rules were run on it and is
reported apart. Its misses are left as found; its one false positive (``password = getpass()``,
flagged before issue 27 too) was fixed after, so that case no longer counts as held out. Its six
misses were then fixed by principle (label vocabulary, quoted values, command-line credentials,
glued key formats), so ``holdout`` is no longer held out either: ``holdout2`` was written before
that fix, in forms the other parts lack, measured before it and once after, never tuned on.

Fake secrets are assembled from pieces so that secret scanners do not flag this file.
"""

from __future__ import annotations

import base64
import binascii
import random
import struct
import zlib
from dataclasses import dataclass
from urllib.parse import quote


@dataclass(frozen=True)
class Case:
    split: str  # "tune", "holdout" or "holdout2"
    group: str
    text: str
    secret: str  # what must not survive; "" for ordinary text
    name: bool = False


ANTHROPIC = (
    "sk-ant" + "-api03-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa" + "q1W2e3R4t5Y6u7I8o9P0aSdFgHjKlZxCvBnM1234567AA"
)
OPENAI = "sk-proj" + "-Ab3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vWx2Yz4"
GITHUB = "ghp" + "_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
SLACK = "xox" + "b-2345678901-2345678901234-AbCdEfGhIjKlMnOpQrStUvWx"
GOOGLE = "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
AWS_ID = "AKIA" + "IOSFODNN7EXAMPLE"
JWT = "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
PASSWORD = "hunter2" + "secret"


def _b64(data: str) -> str:
    return base64.b64encode(data.encode()).decode()


def _hex(data: str) -> str:
    return binascii.hexlify(data.encode()).decode()


def _wrapped(blob: str, width: int, newline: str = "\n") -> str:
    return newline.join(blob[i : i + width] for i in range(0, len(blob), width))


def _splits(split: str, key: str, frame: str, step: int = 1) -> list[Case]:
    """The key broken over a line at every ``step``-th point; its tail must go (its head when the tail is short)."""
    out = []
    for cut in range(1, len(key), step):
        text = frame.format(f"{key[:cut]}\n{key[cut:]}")
        secret = key[cut:] if len(key) - cut >= 4 else key[:cut]
        out.append(Case(split, f"split-{key[:6]}", text, secret))
    return out


def _png(width: int, height: int, seed: int) -> bytes:
    """A small valid PNG of random pixels (a base64 image in a note is ordinary text)."""
    rng = random.Random(seed)
    raw = b"".join(b"\x00" + bytes(rng.randrange(256) for _ in range(width * 3)) for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    head = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", head) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


_BLOB = _b64(f"password={PASSWORD}; token={GITHUB}; user=deploy and a longer tail of words")
_BASIC = _b64("admin:" + "Sup3r-Secret")
_JSON_CREDS = '{"user": "deploy", "password": "' + PASSWORD + '"}'

TUNE: list[Case] = [
    # issue 27: a key split over a line at every point (sk-ant- 94 points, sk-proj- 48)
    *_splits("tune", ANTHROPIC, "ANTHROPIC_API_KEY={} then restart"),
    *_splits("tune", OPENAI, "the key {} (rotated monthly)"),
    Case("tune", "wrapped-base64", "creds:\n" + _wrapped(_BLOB, 20) + "\n", _BLOB[-20:]),
    Case("tune", "wrapped-base64", "blob\n" + _wrapped(_BLOB, 64) + "\nNext steps: rotate it", _BLOB[64:]),
    Case("tune", "wrapped-base64", _wrapped(_BLOB, 76) + "\n", _BLOB[76:]),
    Case("tune", "spoken-password", "the admin password is Tr0ub4dor&3", "Tr0ub4dor&3"),
    Case("tune", "spoken-password", "door passcode 8841-2290", "8841-2290"),
    Case("tune", "spoken-password", "the passphrase is correct-horse-battery-staple", "correct-horse-battery-staple"),
    Case("tune", "spoken-password", "the password for the staging db was changed to N3wPass!23", "N3wPass!23"),
    Case("tune", "basic-auth", f"Authorization: Basic {_BASIC}", _BASIC),
    Case("tune", "basic-auth", f"curl -H 'Authorization: Basic {_BASIC}' https://api", _BASIC),
    Case("tune", "hex", f"cfg {_hex('password=' + PASSWORD)} end", _hex("password=")),
    Case("tune", "percent", "q=" + quote(quote(f"password={PASSWORD}", safe=""), safe=""), PASSWORD),
    Case("tune", "homoglyph", f"\u0440\u0430ssword={PASSWORD}", PASSWORD),
    Case("tune", "homoglyph", "\u0440\u0430ssw\u043erd is Tr0ub4dor&3", "Tr0ub4dor&3"),
    Case("tune", "name", f"team{GITHUB}", GITHUB, name=True),
    Case("tune", "name", f"project:team{GITHUB}", GITHUB, name=True),
    Case("tune", "name", f"bank/notes{ANTHROPIC}.md", ANTHROPIC, name=True),
    Case("tune", "name", f"bank/{GITHUB}/notes.md", GITHUB, name=True),
    Case("tune", "name", f"deploy{OPENAI}", OPENAI, name=True),
    Case("tune", "korean", f"관리자 비밀번호는 {PASSWORD} 입니다", PASSWORD),
]

HOLDOUT: list[Case] = [
    *_splits("holdout", GITHUB, "push with {} today", 3),
    *_splits("holdout", SLACK, "slack bot token {}", 4),
    *_splits("holdout", GOOGLE, "maps key={}", 4),
    *_splits("holdout", JWT, "session {} expired", 7),
    Case("holdout", "wrapped-base64", "cert\r\n" + _wrapped(_BLOB, 76, "\r\n") + "\r\n", _BLOB[76:]),
    Case("holdout", "wrapped-base64", "    " + _wrapped(_BLOB, 40, "\n    ") + "\n", _BLOB[40:80]),
    Case("holdout", "spoken-password", "my PIN is 4821", "4821"),
    Case("holdout", "spoken-password", "PIN: 4821", "4821"),
    Case("holdout", "spoken-password", "the wifi password was changed to Blue-Sky-42", "Blue-Sky-42"),
    Case("holdout", "spoken-password", "passphrase: correct horse battery staple", "horse battery staple"),
    Case("holdout", "spoken-password", "the passcode for the garage is 0419", "0419"),
    Case("holdout", "spoken-password", "password is 'hunter two 2'", "two 2"),
    Case("holdout", "spoken-password", "export DB_PASS=Zx9!kLm2", "Zx9!kLm2"),
    Case("holdout", "spoken-password", "new password: Winter2026!", "Winter2026!"),
    Case("holdout", "basic-auth", f"authorization: basic {_b64('dev:pw12345')}", _b64("dev:pw12345")),
    Case("holdout", "basic-auth", "curl -u admin:Sup3rS3cret https://api.example.com", "Sup3rS3cret"),
    Case("holdout", "hex", f"token hex {_hex('token=' + GITHUB).upper()}", _hex("token=").upper()),
    Case("holdout", "hex", f"dump {_hex(GITHUB)}", _hex(GITHUB)[:20]),
    Case("holdout", "nested", f"cfg {_b64(_hex('password=' + PASSWORD))}", _b64(_hex("password="))[:12]),
    Case("holdout", "percent", "q=" + quote(quote(quote(f"password={PASSWORD}", safe=""), safe=""), safe=""), PASSWORD),
    Case("holdout", "percent", f"<a href='x?password&amp;#61;{PASSWORD}'>", PASSWORD),
    Case("holdout", "homoglyph", f"passw\u03bfrd={PASSWORD}", PASSWORD),
    Case("holdout", "homoglyph", f"\uff50\u0430ssword: {PASSWORD}", PASSWORD),
    Case("holdout", "homoglyph", f"key \u0455k-ant{ANTHROPIC[6:]}", ANTHROPIC[14:]),
    Case("holdout", "homoglyph", f"t\u043ek\u0435n={PASSWORD}99", PASSWORD),
    Case("holdout", "data-uri", "data:application/json;base64," + _b64(_JSON_CREDS), _b64(_JSON_CREDS)[:16]),
    Case("holdout", "korean", "관리자 패스코드는 7731-2049", "7731-2049"),
    Case("holdout", "korean", "와이파이 비번은 qwer1234! 이야", "qwer1234!"),
    Case("holdout", "korean", "비밀번호가 hunter2@@로 변경됨", "hunter2@@"),
    Case("holdout", "korean", "서버 암호를 Tr0ub4dor&3 으로 바꿨다", "Tr0ub4dor&3"),
    Case("holdout", "name", f"keys{AWS_ID}", AWS_ID, name=True),
    Case("holdout", "name", f"{AWS_ID}backup", AWS_ID, name=True),
    Case("holdout", "name", f"ops-{SLACK}", SLACK, name=True),
    Case("holdout", "name", f"proj:abc{GITHUB}", GITHUB, name=True),
    Case("holdout", "name", f"bank/{GOOGLE}.md", GOOGLE, name=True),
]  # fmt: skip

_PNG = base64.b64encode(_png(16, 16, 1)).decode()
_PNG_SMALL = base64.b64encode(_png(4, 4, 2)).decode()

_DIGEST = "0d17b565c37bcbd895e9d92315a05c1c3c9a29f762b011a10c54a66cd53c9b31"
_SRI = "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg=="
_GIF = "R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7"

ORDINARY: list[Case] = [
    Case("tune", "ids", "merge 8c2b3f5a9e0d1c2b3a4f5e6d7c8b9a0f1e2d3c4b into main", ""),
    Case("tune", "ids", "UUID 123e4567-e89b-12d3-a456-426614174000 and 550e8400-e29b-41d4-a716-446655440000", ""),
    Case("tune", "ids", "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", ""),
    Case("tune", "image", f"![icon](data:image/png;base64,{_PNG_SMALL})", ""),
    Case("tune", "prose", "the password is required and case-sensitive", ""),
    Case("tune", "prose", "reset your password to continue", ""),
    Case("tune", "prose", "password reset-flow is documented", ""),
    Case("tune", "prose", "passcode lock is on; the PIN code screen shows", ""),
    Case("tune", "prose", "Basic authentication is disabled; basic usage", ""),
    Case("tune", "prose", "the passphrase is stored in the vault", ""),
    Case("tune", "cyrillic", "Привет, это обычный русский текст о сервере и пароле", ""),
    Case("tune", "greek", "Η τιμή είναι σωστή και ο κωδικός αλλάζει", ""),
    Case("tune", "percent", "encoded URL %2520 and 100%2525 off", ""),
    Case("tune", "korean", "비밀번호는 8자 이상이어야 한다", ""),
    Case("holdout", "ids", "git log: a1b2c3d fix, 0f1e2d3c4b5a6978 merge, v1.2.3-rc.4", ""),
    Case("holdout", "ids", f"docker pull nginx@sha256:{_DIGEST}", ""),
    Case("holdout", "ids", f"integrity {_SRI}", ""),
    Case("holdout", "ids", "go.sum h1:Lh6dtcj3Hg8ZNyXbq9tTqkWm0GUNsDbhWp9OGaHq1Lw=", ""),
    Case("holdout", "ids", "hex dump: de ad be ef 00 11 22 33, colour #ff00ff, 0x7fffffff", ""),
    Case("holdout", "image", f"<img src='data:image/png;base64,{_PNG}'>", ""),
    Case("holdout", "image", f"![dot](data:image/gif;base64,{_GIF})", ""),
    Case("holdout", "encoded", f"greeting {_b64('Hello world, this is only a test message')}", ""),
    Case("holdout", "encoded", f"hex {_hex('Hello world, plain words here')}", ""),
    Case("holdout", "prose", "password must be at least 12 characters", ""),
    Case("holdout", "prose", "Your PIN is never stored on the server", ""),
    Case("holdout", "prose", "Authorization: Basic realm=\"staging\" is what the server answers", ""),
    Case("holdout", "prose", "the password field (max 64 chars) is validated on blur", ""),
    Case("holdout", "prose", "Password managers like 1Password and Bitwarden were compared", ""),
    Case("holdout", "prose", "we changed the password policy to 90 days", ""),
    Case("holdout", "prose", "the passcode is six digits long", ""),
    Case("holdout", "code", "def check_password(pw: str) -> bool:\n    return len(pw) >= MIN_LEN", ""),
    Case("holdout", "code", "if password is None:\n    password = getpass()", ""),
    Case("holdout", "code", "PIN_LENGTH = 4\nMAX_PASSWORD_AGE = 90", ""),
    Case("holdout", "code", "const auth = `Basic ${btoa(user + ':' + pass)}`;", ""),
    Case("holdout", "cyrillic", "Сервер перезапущен, пароль не менялся, токен обновлён в 10:30", ""),
    Case("holdout", "cyrillic", "Україна: сервер працює, все добре", ""),
    Case("holdout", "greek", "Ο κωδικός πρόσβασης αλλάζει κάθε μήνα (Αθήνα)", ""),
    Case("holdout", "korean", "비밀번호 변경 주기는 90일이고, 토큰 만료는 3600초다", ""),
    Case("holdout", "korean", "패스코드 입력 화면에서 취소를 누르면 처음으로 돌아간다", ""),
    Case("holdout", "percent", "https://example.com/search?q=%ED%95%9C%EA%B8%80%20%EA%B2%80%EC%83%89&page=2", ""),
    Case("holdout", "name", "bank/ops/deploy-notes.md", "", name=True),
    Case("holdout", "name", "project:sk-learn-notes", "", name=True),
    Case("holdout", "name", "bank/tasks/risk-management/subtoken-design.md", "", name=True),
    Case("holdout", "name", "hf_datasets-notes", "", name=True),
]  # fmt: skip

# Written before the fix of the six held-out misses, in forms the parts above lack; not tuned on.
SLACK_USER = "xox" + "p-1234567890-0987654321-1122334455-a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6"
AZURE_KEY = "Zm9vYmFy" + "QmF6UXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6MDEyMzQ1Njc4OQ=="
SENDGRID = "SG." + "aB3dE5fG7hI9jK1lM3nO5p" + "." + "qR7sT9uV1wX3yZ5aB7cD9eF1gH3iJ5kL7mN9oP1qR3s"
DIGITALOCEAN = "dop_v1_" + "4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e"
PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7" + "VJTUt9Us8cKj"
DOCKER_PAT = "dckr_pat_" + "Ab12Cd34Ef56Gh78Ij90Kl12"

HOLDOUT2: list[Case] = [
    # Korean
    Case("holdout2", "korean", "핀번호: 5830", "5830"),
    Case("holdout2", "korean", "카드 핀 번호는 2468이야", "2468"),
    Case("holdout2", "korean", "와이파이 암호는 \"sunny day 77\" 이에요", "day 77"),
    Case("holdout2", "korean", "공유기 관리자 패스워드=Adm1n!234", "Adm1n!234"),
    Case("holdout2", "korean", "DB 접속 계정 app / 비번 Qw3rty!! 로 되어 있음", "Qw3rty!!"),
    Case("holdout2", "korean", "인증서 암호 ‘M00nL1ght’ 로 묶었다", "M00nL1ght"),
    Case("holdout2", "korean", f"슬랙 토큰값{SLACK}을 넣어라", SLACK[12:]),
    Case("holdout2", "korean", "금고 비밀번호 “blue whale 19” 입니다", "whale 19"),
    # env files and config
    Case("holdout2", "env", "REDIS_PWD=r3dis-Pw9", "r3dis-Pw9"),
    Case("holdout2", "env", "SMTP_PASS='mail pass 42'", "pass 42"),
    Case("holdout2", "env", "JWT_SECRET=9f8e7d6c5b4a39281706", "9f8e7d6c5b4a39281706"),
    Case("holdout2", "env", "STRIPE_WEBHOOK_KEY=whk8s7d6f5g4h3j2k1l", "whk8s7d6f5g4h3j2k1l"),
    Case("holdout2", "env", "ADMIN_PIN=7731", "7731"),
    Case("holdout2", "env", "export MAIL_PASSWD=\"letter box 5\"", "box 5"),
    Case("holdout2", "env", "VAULT_TOKEN: hvs.CAESIJ3x9kLmN0pQrStUv2wXyZ", "hvs.CAESIJ3x9kLmN0pQrStUv2wXyZ"),
    Case("holdout2", "yaml", "redis:\n  auth_pass: \"r3d1s pass 8\"\n  port: 6379", "pass 8"),
    Case("holdout2", "yaml", "oauth:\n  client_secret: 8c1f2e3d4b5a69788796a5b4\n", "8c1f2e3d4b5a69788796a5b4"),
    Case("holdout2", "yaml", "smtp:\n  pass: Tr4nsp0rt#\n", "Tr4nsp0rt#"),
    Case("holdout2", "json", '{"db": {"user": "app", "pass": "open sesame 9"}}', "sesame 9"),
    Case("holdout2", "json", '{"apiKey": "Zm9vYmFyYmF6cXV4MTIzNDU2"}', "Zm9vYmFyYmF6cXV4MTIzNDU2"),
    Case("holdout2", "json",
         '{"private_key": "-----BEGIN PRIVATE KEY-----\\n' + PEM_BODY + '\\n-----END PRIVATE KEY-----\\n"}', PEM_BODY),
    Case("holdout2", "config",
         f"DefaultEndpointsProtocol=https;AccountName=st1;AccountKey={AZURE_KEY};EndpointSuffix=x", AZURE_KEY[:20]),
    Case("holdout2", "config", "[client]\nuser = root\npassword = \"two words 3\"\n", "words 3"),
    # shell commands
    Case("holdout2", "shell", "mysql -u root -pS3cretPw9 appdb", "S3cretPw9"),
    Case("holdout2", "shell", "sshpass -p 'Rt0or!x' ssh root@bastion", "Rt0or!x"),
    Case("holdout2", "shell", "curl --user deploy:Dpl0y-2026 https://x.example.com", "Dpl0y-2026"),
    Case("holdout2", "shell", "curl -sSu ci-bot:Bu1ld-Key https://ci.example.com", "Bu1ld-Key"),
    Case("holdout2", "shell", "git -c http.extraheader='AUTHORIZATION: bearer Zq8x7c6v5b4n3m2l1k0j' fetch",
         "Zq8x7c6v5b4n3m2l1k0j"),
    Case("holdout2", "shell", "docker login -u ci --password Dck3r-pw registry.example.com", "Dck3r-pw"),
    Case("holdout2", "shell", f"docker login -u ci -p {DOCKER_PAT}", DOCKER_PAT),
    Case("holdout2", "shell", "redis-cli -a R3d!sPass ping", "R3d!sPass"),
    # chat prose
    Case("holdout2", "prose", "btw the wifi pw is coffee4ever", "coffee4ever"),
    Case("holdout2", "prose", "Use passphrase \"purple monkey dishwasher 7\" for the vault", "monkey dishwasher 7"),
    Case("holdout2", "prose", "login: admin / pass: Xy7#kq2m", "Xy7#kq2m"),
    Case("holdout2", "prose", "here's the API key: 4f9d2c1ab8e7f6d5c4b3a291", "4f9d2c1ab8e7f6d5c4b3a291"),
    Case("holdout2", "prose", "the secret key is Qm9yZWRAdGhlZG9vcjE5", "Qm9yZWRAdGhlZG9vcjE5"),
    Case("holdout2", "prose", "my pin is 9184, don't tell anyone", "9184"),
    Case("holdout2", "prose", "Password - Sn0wfall!88", "Sn0wfall!88"),
    # URLs
    Case("holdout2", "url", "wss://stream.example.com/socket?auth=9c8b7a6d5e4f3a2b1c0d", "9c8b7a6d5e4f3a2b1c0d"),
    Case("holdout2", "url", "ssh admin:P4ss-w0rd@bastion.example.com", "P4ss-w0rd"),
    Case("holdout2", "url", "https://hooks.example.com/in?access_token=a1b2c3d4e5f6a7b8c9d0", "a1b2c3d4e5f6a7b8c9d0"),
    Case("holdout2", "url", "amqp://guest:Gu3st%21pw@mq.example.com:5672/", "Gu3st%21pw"),
    # key formats, glued or not yet named
    Case("holdout2", "glued", f"awskey{AWS_ID}prod", AWS_ID),
    Case("holdout2", "glued", f"token{GITHUB}end", GITHUB[4:]),
    Case("holdout2", "glued", f"slack{SLACK_USER}", SLACK_USER[5:]),
    Case("holdout2", "glued", f"maps{GOOGLE}", GOOGLE[4:]),
    Case("holdout2", "glued", f"cookie:session{JWT}", JWT[3:30]),
    Case("holdout2", "format", f"SENDGRID={SENDGRID}", SENDGRID[3:]),
    Case("holdout2", "format", f"do token {DIGITALOCEAN}", DIGITALOCEAN[7:]),
    Case("holdout2", "name", f"infra{SLACK_USER}", SLACK_USER, name=True),
    Case("holdout2", "name", f"bank/keys/{AWS_ID}x.md", AWS_ID, name=True),
]  # fmt: skip

_PNG_DOC = base64.b64encode(_png(8, 8, 3)).decode()

ORDINARY2: list[Case] = [
    Case("holdout2", "prose", "the PIN code feature ships next sprint", ""),
    Case("holdout2", "prose", "password reset flow sends an email link", ""),
    Case("holdout2", "prose", "token bucket rate limiter with 100 tokens per second", ""),
    Case("holdout2", "prose", "the secret sauce is consistency", ""),
    Case("holdout2", "prose", "Secret Santa list is in the shared doc", ""),
    Case("holdout2", "prose", "passport photo due Friday; bypass the cache with ?nocache=1", ""),
    Case("holdout2", "prose", "the build passes: 142 passed, 3 skipped", ""),
    Case("holdout2", "prose", "the password policy requires 2FA since 2024-03-01", ""),
    Case("holdout2", "prose", "api key rotation: every 90 days", ""),
    Case("holdout2", "prose", "API key: see the vault", ""),
    Case("holdout2", "prose", "password: (ask Minji)", ""),
    Case("holdout2", "prose", "passphrase: see below", ""),
    Case("holdout2", "prose", "PIN: required for card payments", ""),
    Case("holdout2", "prose", "connect PIN 13 to ground and pin numpy==1.26.4", ""),
    Case("holdout2", "prose", "the client_secret field is optional", ""),
    Case("holdout2", "prose", "Basic auth header format: Basic base64(user:pass)", ""),
    Case("holdout2", "prose", "keypass and KeePassXC import, compass heading 270", ""),
    Case("holdout2", "prose", "the secret is that nobody reads the logs", ""),
    Case("holdout2", "ids", "commit 3f9a2c1e8b7d6f5a4c3b2a1908f7e6d5c4b3a291 reverted it", ""),
    Case("holdout2", "ids", "request id 9b2f4c1e-7a3d-4e8b-9c6f-1a2b3c4d5e6f in the docs", ""),
    Case("holdout2", "ids", "version 2.14.0-beta.3+build.5521", ""),
    Case("holdout2", "ids", "SHA-1 da39a3ee5e6b4b0d3255bfef95601890afd80709", ""),
    Case("holdout2", "ids", "AKIA prefix means a long-term key; ghp_ marks a classic token", ""),
    Case("holdout2", "ids", "sk- keys rotate monthly; xoxb tokens belong to bots; JWTs start with eyJ", ""),
    Case("holdout2", "image", f"![logo](data:image/png;base64,{_PNG_DOC})", ""),
    Case("holdout2", "env", "DB_PASS is read from the environment", ""),
    Case("holdout2", "env", "set DB_PASS in .env before starting; JWT_SECRET is rotated by ops", ""),
    Case("holdout2", "env", "MAX_TOKEN_LENGTH=4096\nTOKEN_EXPIRY_SECONDS=3600\nPASSWORD_MIN_LENGTH=12", ""),
    Case("holdout2", "env", "SESSION_KEY_PREFIX=memtree\nCACHE_KEY=users:list:v2\nPRIMARY_KEY=id", ""),
    Case("holdout2", "env", "sort_key: created_at\npartition_key: tenant_id", ""),
    Case("holdout2", "config", "password: '{{ vault_db_password }}'", ""),
    Case("holdout2", "config", "token: <your token here>", ""),
    Case("holdout2", "shell", "curl -u $USER:$TOKEN https://api.example.com", ""),
    Case("holdout2", "shell", "curl -u admin https://api.example.com (prompts for the password)", ""),
    Case("holdout2", "shell", "mysql -u root -p appdb  # prompts", ""),
    Case("holdout2", "shell", "docker login -u ci --password-stdin < token.txt", ""),
    Case("holdout2", "shell", "pg_dump --password-file /run/secrets/db -p 5432 app", ""),
    Case("holdout2", "shell", "tar -czf backup.tgz -p ./data && ssh -p 2222 host", ""),
    Case("holdout2", "url", "git clone https://user@github.com/org/repo.git", ""),
    Case("holdout2", "url", "postgres://app@localhost/app and redis://cache:6379/0", ""),
    Case("holdout2", "code", "password_hash = bcrypt(pw)\ndef set_pin(pin: int) -> None: ...", ""),
    Case("holdout2", "code", "PASS = 'pass'\nFAIL = 'fail'\nstatus: pass", ""),
    Case("holdout2", "korean", "비밀번호 찾기 기능은 다음 주에 배포", ""),
    Case("holdout2", "korean", "핀번호 입력 화면 디자인 리뷰", ""),
    Case("holdout2", "korean", "암호화 알고리즘은 AES-256-GCM 이다", ""),
    Case("holdout2", "korean", "토큰 수 제한: 4096, 토큰 버킷 알고리즘으로 초당 100개", ""),
    Case("holdout2", "korean", "핀 번호는 네 자리 숫자여야 한다", ""),
    Case("holdout2", "name", "bank/auth/password-reset-flow.md", "", name=True),
    Case("holdout2", "name", "project:token-bucket", "", name=True),
    Case("holdout2", "name", "bank/tasks/task-2024-quarterly-review.md", "", name=True),
]  # fmt: skip

SECRETS: list[Case] = TUNE + HOLDOUT + HOLDOUT2
ORDINARY_ALL: list[Case] = ORDINARY + ORDINARY2
