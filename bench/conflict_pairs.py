"""Labelled entry pairs for the conflict rule (issue 30 item 4): Korean and English, four kinds.

Each row is one fact as first written and four later texts about it:

    update         the same thing with another value (a number, name, day, state): the newer replaces it
    contradiction  the opposite or an incompatible statement: a person must see the pair
    restatement    the same fact in other words: no conflict (a merge or a duplicate)
    different      another fact on the same topic: no conflict, both are kept

``update`` and ``contradiction`` are the pairs the rule should flag (replace or conflict); the
other two it should leave alone. ROWS come as ko/en couples alternating between the halves (the
first couple tunes, the next reports, ...), so no fact is in both; TUNE_ROWS, added later, all tune.
Written by hand for this set, not drawn from any dev or test data.
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("update", "contradiction", "restatement", "different")
FLAGGED = frozenset({"update", "contradiction"})
"""The kinds the conflict rule should flag."""

ROWS: tuple[tuple[str, str, str, str, str], ...] = (
    # (first written, update, contradiction, restatement, different fact on the topic)
    (
        "Redis 커넥션 풀은 50개로 둔다",
        "Redis 커넥션 풀은 80개로 둔다",
        "Redis 커넥션 풀은 두지 않는다",
        "Redis 커넥션 풀 크기는 50개로 설정한다",
        "Redis 캐시 만료 시간은 10분이다",
    ),
    (
        "Redis pool size is 50",
        "Redis pool size is 80",
        "Redis does not use a connection pool",
        "The Redis connection pool holds 50 connections",
        "Redis runs on a dedicated r6g.large node",
    ),
    (
        "배포는 매주 목요일에 한다",
        "배포는 매주 화요일에 한다",
        "배포는 목요일에 하지 않는다",
        "매주 목요일마다 배포를 진행한다",
        "배포 승인은 팀장이 한다",
    ),
    (
        "We deploy every Thursday",
        "We deploy every Tuesday",
        "We never deploy on Thursdays",
        "Deploys go out each Thursday",
        "Deploy approval comes from the team lead",
    ),
    (
        "스테이징 DB는 매일 새벽 4시에 초기화된다",
        "스테이징 DB는 매일 새벽 2시에 초기화된다",
        "스테이징 DB는 초기화되지 않는다",
        "매일 새벽 4시마다 스테이징 DB를 초기화한다",
        "스테이징 DB는 운영 DB의 10분의 1 크기다",
    ),
    (
        "The staging database is reset daily at 4 am",
        "The staging database is reset daily at 2 am",
        "The staging database is never reset",
        "Every day at 4 am the staging database gets reset",
        "The staging database runs Postgres 15",
    ),
    (
        "API 요청 타임아웃은 30초다",
        "API 요청 타임아웃은 10초다",
        "API 요청에는 타임아웃이 없다",
        "API 요청의 타임아웃을 30초로 잡아 둔다",
        "API 요청 로그는 14일 보관한다",
    ),
    (
        "The API request timeout is 30 seconds",
        "The API request timeout is 10 seconds",
        "API requests have no timeout",
        "API requests time out after 30 seconds",
        "API request logs are kept for 14 days",
    ),
    (
        "온콜 담당은 김민수다",
        "온콜 담당은 이지우다",
        "온콜 담당자는 따로 없다",
        "김민수가 온콜을 맡고 있다",
        "온콜 교대는 매주 월요일 오전 10시다",
    ),
    (
        "Alice is the on-call engineer",
        "Bob is the on-call engineer",
        "There is no on-call engineer",
        "The on-call engineer is Alice",
        "On-call handover happens on Monday at 10 am",
    ),
    (
        "결제 기능 플래그는 운영에서 켜져 있다",
        "결제 기능 플래그는 운영에서 꺼져 있다",
        "운영에서는 결제 기능 플래그를 쓰지 않는다",
        "운영 환경에서 결제 기능 플래그가 켜진 상태다",
        "결제 기능은 토스 API로 연동한다",
    ),
    (
        "The checkout feature flag is on in production",
        "The checkout feature flag is off in production",
        "Production does not use the checkout feature flag",
        "In production the checkout feature flag is enabled",
        "Checkout calls the Stripe API",
    ),
    (
        "백업은 매일 새벽 2시에 돈다",
        "백업은 매일 새벽 3시에 돈다",
        "백업은 돌지 않는다",
        "매일 새벽 2시에 백업이 실행된다",
        "백업 파일은 S3에 30일 보관한다",
    ),
    (
        "Backups run nightly at 02:00 UTC",
        "Backups run nightly at 03:00 UTC",
        "Backups do not run at night",
        "Every night at 02:00 UTC the backups run",
        "Backup files are kept in S3 for 30 days",
    ),
    (
        "사용자 데이터는 서울 리전에 저장한다",
        "사용자 데이터는 도쿄 리전에 저장한다",
        "사용자 데이터는 서울 리전에 저장하지 않는다",
        "사용자 데이터의 저장 위치는 서울 리전이다",
        "사용자 데이터는 AES-256으로 암호화한다",
    ),
    (
        "User data is stored in the EU region",
        "User data is stored in the US region",
        "User data is not stored in the EU region",
        "The EU region is where user data is stored",
        "User data is encrypted with AES-256",
    ),
    (
        "코드 리뷰는 두 명이 승인해야 머지한다",
        "코드 리뷰는 한 명이 승인하면 머지한다",
        "코드 리뷰 승인 없이 머지한다",
        "두 명의 승인을 받아야 머지할 수 있다",
        "코드 리뷰 요청은 슬랙 #review 채널에 올린다",
    ),
    (
        "A pull request needs two approvals to merge",
        "A pull request needs one approval to merge",
        "Pull requests merge without any approval",
        "Two approvals are required before a pull request merges",
        "Pull requests are announced in the #review channel",
    ),
    (
        "회의는 월요일 오전 10시에 한다",
        "회의는 월요일 오후 2시에 한다",
        "월요일에는 회의를 하지 않는다",
        "월요일 오전 10시에 회의를 진행한다",
        "회의록은 노션에 정리한다",
    ),
    (
        "The weekly sync is on Monday at 10 am",
        "The weekly sync is on Wednesday at 10 am",
        "There is no weekly sync on Mondays",
        "We hold the weekly sync Mondays at 10 am",
        "Weekly sync notes go to Notion",
    ),
    (
        "로그 보관 기간은 30일이다",
        "로그 보관 기간은 90일이다",
        "로그는 보관하지 않는다",
        "로그는 30일 동안 보관한다",
        "로그는 Loki로 수집한다",
    ),
    (
        "Logs are retained for 30 days",
        "Logs are retained for 90 days",
        "Logs are not retained",
        "We keep logs for 30 days",
        "Logs are shipped to Loki",
    ),
    (
        "프론트엔드는 React로 만든다",
        "프론트엔드는 Vue로 만든다",
        "프론트엔드는 React를 쓰지 않는다",
        "프론트엔드 개발에는 React를 사용한다",
        "프론트엔드 빌드는 Vite로 한다",
    ),
    (
        "The frontend is built with React",
        "The frontend is built with Svelte",
        "The frontend does not use React",
        "We use React for the frontend",
        "The frontend bundle is built with Vite",
    ),
    (
        "사내망에서 SSH 접속은 허용한다",
        "사내망에서 SSH 접속은 차단한다",
        "사내망에서도 SSH 접속은 안 된다",
        "사내망에서는 SSH로 접속할 수 있다",
        "SSH 키는 6개월마다 교체한다",
    ),
    (
        "SSH access is allowed from the office network",
        "SSH access is blocked from the office network",
        "SSH access is not allowed from the office network",
        "From the office network you can connect over SSH",
        "SSH keys are rotated every six months",
    ),
    (
        "캐시 만료 시간은 30초로 둔다",
        "캐시 만료 시간은 30분으로 둔다",
        "캐시는 만료시키지 않는다",
        "캐시가 30초 뒤에 만료되도록 둔다",
        "캐시 적중률은 그라파나에서 본다",
    ),
    (
        "The cache TTL is 60 seconds",
        "The cache TTL is 300 seconds",
        "Cache entries never expire",
        "Cache entries expire after 60 seconds",
        "Cache hit rate is on the Grafana dashboard",
    ),
    (
        "데이터베이스 마이그레이션은 배포 전에 돌린다",
        "데이터베이스 마이그레이션은 배포 후에 돌린다",
        "데이터베이스 마이그레이션은 배포 때 돌리지 않는다",
        "배포하기 전에 데이터베이스 마이그레이션을 실행한다",
        "데이터베이스 마이그레이션은 Flyway로 관리한다",
    ),
    (
        "Run the database migrations before the deploy",
        "Run the database migrations after the deploy",
        "Do not run database migrations during a deploy",
        "Database migrations run ahead of the deploy",
        "Database migrations are managed with Flyway",
    ),
    (
        "신규 입사자 노트북은 맥북 프로를 준다",
        "신규 입사자 노트북은 맥북 에어를 준다",
        "신규 입사자에게 노트북을 주지 않는다",
        "신규 입사자에게 맥북 프로를 지급한다",
        "신규 입사자 교육은 첫 주 수요일이다",
    ),
    (
        "New hires get a MacBook Pro",
        "New hires get a ThinkPad",
        "New hires do not get a laptop",
        "A MacBook Pro is given to every new hire",
        "New hire onboarding is on their first Wednesday",
    ),
    (
        "사내 위키는 컨플루언스를 쓴다",
        "사내 위키는 노션을 쓴다",
        "사내 위키는 따로 없다",
        "사내 위키로 컨플루언스를 사용한다",
        "사내 위키 편집 권한은 팀장이 준다",
    ),
    (
        "Our wiki lives in Confluence",
        "Our wiki lives in Notion",
        "We do not have a wiki",
        "Confluence hosts our wiki",
        "Wiki edit rights are granted by team leads",
    ),
    (
        "휴가 신청은 일주일 전에 한다",
        "휴가 신청은 이틀 전에 한다",
        "휴가 신청은 미리 하지 않아도 된다",
        "휴가는 일주일 전에 미리 신청한다",
        "휴가 일수는 연 15일이다",
    ),
    (
        "Vacation requests are due one week ahead",
        "Vacation requests are due two days ahead",
        "Vacation requests need no notice",
        "Request vacation a week in advance",
        "Everyone gets 15 vacation days a year",
    ),
    (
        "모니터링 알림은 슬랙 #alerts 채널로 간다",
        "모니터링 알림은 슬랙 #ops 채널로 간다",
        "모니터링 알림은 슬랙으로 보내지 않는다",
        "슬랙 #alerts 채널에서 모니터링 알림을 받는다",
        "모니터링은 프로메테우스로 한다",
    ),
    (
        "Monitoring alerts go to the #alerts Slack channel",
        "Monitoring alerts go to the #ops Slack channel",
        "Monitoring alerts are not sent to Slack",
        "The #alerts Slack channel receives monitoring alerts",
        "Monitoring runs on Prometheus",
    ),
    (
        "점심 회식은 금요일에 한다",
        "점심 회식은 수요일에 한다",
        "금요일에는 점심 회식을 하지 않는다",
        "금요일마다 점심 회식을 한다",
        "점심 회식 예산은 1인당 2만원이다",
    ),
    (
        "Team lunch is on Friday",
        "Team lunch is on Wednesday",
        "There is no team lunch on Friday",
        "We have team lunch every Friday",
        "Team lunch budget is 20 dollars per person",
    ),
    (
        "빌드 서버는 젠킨스를 쓴다",
        "빌드 서버는 깃허브 액션을 쓴다",
        "빌드 서버는 쓰지 않는다",
        "젠킨스로 빌드 서버를 운영한다",
        "빌드 산출물은 넥서스에 올린다",
    ),
    (
        "CI runs on Jenkins",
        "CI runs on GitHub Actions",
        "We do not run CI",
        "Jenkins runs our CI",
        "Build artifacts are pushed to Nexus",
    ),
)

TUNE_ROWS: tuple[tuple[str, str, str, str, str], ...] = (
    # Added for issue 30 item 4's rule change, to the tune half only (the report half is unchanged):
    # written before the rule scored them, weighted toward what the first tune half had too few of —
    # restatements in another verb, ending or order, and different facts in the same frame (another
    # subject with the same value).
    (
        "운영 DB 비밀번호는 90일마다 바꾼다",
        "운영 DB 비밀번호는 30일마다 바꾼다",
        "운영 DB 비밀번호는 바꾸지 않는다",
        "90일에 한 번씩 운영 DB 비밀번호를 교체한다",
        "운영 DB 비밀번호는 1Password 금고에 보관한다",
    ),
    (
        "The production database password is rotated every 90 days",
        "The production database password is rotated every 30 days",
        "The production database password is never rotated",
        "Every 90 days we change the production database password",
        "The production database password is stored in 1Password",
    ),
    (
        "주간 회의는 월요일 오전 10시에 진행한다",
        "주간 회의는 월요일 오후 2시에 진행한다",
        "주간 회의는 이제 하지 않는다",
        "주간 회의는 월요일 오전 10시에 한다",
        "주간 회의록은 노션에 정리한다",
    ),
    (
        "The weekly sync is held on Monday at 10 am",
        "The weekly sync is held on Monday at 2 pm",
        "We no longer hold a weekly sync",
        "The weekly sync takes place Mondays at 10 am",
        "Notes from the weekly sync go into Notion",
    ),
    (
        "프론트엔드 빌드는 Node 18을 쓴다",
        "프론트엔드 빌드는 Node 20을 쓴다",
        "프론트엔드 빌드에는 Node를 쓰지 않는다",
        "프론트엔드 빌드에 사용하는 Node 버전은 18이다",
        "프론트엔드 빌드 결과물은 CDN에 올린다",
    ),
    (
        "The frontend build uses Node 18",
        "The frontend build uses Node 20",
        "The frontend build does not use Node",
        "Node 18 is what the frontend build runs on",
        "Frontend build output is uploaded to the CDN",
    ),
    (
        "휴가 신청은 팀장 승인을 받아야 한다",
        "휴가 신청은 인사팀 승인을 받아야 한다",
        "휴가 신청에는 승인이 필요 없다",
        "휴가를 쓰려면 팀장에게 승인을 받는다",
        "휴가 신청은 최소 3일 전에 올린다",
    ),
    (
        "Vacation requests need approval from your manager",
        "Vacation requests need approval from HR",
        "Vacation requests need no approval",
        "Your manager has to approve vacation requests",
        "Vacation requests must be filed at least three days ahead",
    ),
    (
        "결제 서비스는 Go로 작성되어 있다",
        "결제 서비스는 Rust로 작성되어 있다",
        "결제 서비스는 Go로 작성되지 않았다",
        "결제 서비스 코드는 Go로 짜여 있다",
        "결제 서비스는 쿠버네티스에서 돌아간다",
    ),
    (
        "The payment service is written in Go",
        "The payment service is written in Rust",
        "The payment service is not written in Go",
        "Go is the language of the payment service",
        "The payment service runs on Kubernetes",
    ),
    (
        "사내 VPN은 WireGuard를 사용한다",
        "사내 VPN은 OpenVPN을 사용한다",
        "사내에는 VPN이 없다",
        "WireGuard로 사내 VPN을 운영하고 있다",
        "사내 VPN 계정은 보안팀이 발급한다",
    ),
    (
        "The company VPN uses WireGuard",
        "The company VPN uses OpenVPN",
        "The company has no VPN",
        "Our VPN is built on WireGuard",
        "VPN accounts are issued by the security team",
    ),
    (
        "스테이징 서버는 t3.medium 인스턴스를 쓴다",
        "스테이징 서버는 t3.large 인스턴스를 쓴다",
        "스테이징 서버는 EC2를 쓰지 않는다",
        "스테이징 서버의 인스턴스 타입은 t3.medium이다",
        "배치 서버는 t3.medium 인스턴스를 쓴다",
    ),
    (
        "The staging server runs on a t3.medium instance",
        "The staging server runs on a t3.large instance",
        "The staging server does not run on EC2",
        "A t3.medium instance hosts the staging server",
        "The batch server runs on a t3.medium instance",
    ),
)


@dataclass(frozen=True)
class Pair:
    """One labelled pair: the text first written, the later one, its kind, and its half."""

    old: str
    new: str
    kind: str
    half: str  # "tune" or "report"
    lang: str  # "ko" or "en"

    @property
    def flagged(self) -> bool:
        """Whether the conflict rule should flag it."""
        return self.kind in FLAGGED


def pairs() -> list[Pair]:
    """Every labelled pair (four per row), each in its row's half; TUNE_ROWS all tune."""
    out = []
    rows = [("tune" if i % 4 < 2 else "report", row) for i, row in enumerate(ROWS)]  # a ko/en couple stays in one half
    for half, (old, *later) in [*rows, *(("tune", row) for row in TUNE_ROWS)]:
        lang = "ko" if any("\uac00" <= c <= "\ud7a3" for c in old) else "en"
        out += [Pair(old, new, kind, half, lang) for kind, new in zip(KINDS, later)]
    return out
