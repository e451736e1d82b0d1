"""The memory viewer (issue 15): `memtree view`, the /view routes and their guards, and the page in a real browser.

The API tests always run: they start a real `memtree serve --http` (through `memtree view --no-open`)
over a copy of the sample memory and talk to it with urllib. The browser tests drive Debian's
Chromium (/usr/bin/chromium, /usr/bin/chromedriver) with Selenium, nothing downloaded; they skip,
saying why, where either is missing. ``MEMTREE_SCREENSHOTS=1`` also writes docs/screenshots/*.png.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO

from memtree import schema
from memtree.api import MemTree
from memtree.serve import verbs

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
SHOTS = REPO / "docs" / "screenshots"
XSS = (
    "# 보안\n\n"
    "- <script>window.__pwned = 1</script> 스크립트 노트 "
    "<!-- memtree: id=e-20261101-aaaaaaaa; created={now}; tags=xss; kind=fact; source=manual -->\n"
    '- <img src=x onerror="window.__pwned = 2"> 이미지 노트 '
    "<!-- memtree: id=e-20261101-bbbbbbbb; created={now}; kind=decision; source=auto -->\n"
)
RENDER = (
    "# 렌더링\n\n"
    "| 항목 | 값 |\n|---|---|\n| 배포창 | 화요일 |\n\n"
    '```bash\necho "코드블록마커"\n```\n\n'
    "- 긴 항목 첫 줄\n  둘째 줄\n  셋째 줄\n  넷째 줄\n  다섯째 줄\n  여섯째 줄\n  일곱째 줄 접힘확인\n  여덟째 줄\n"
)
CHANGED = (  # a fact whose value changed on 2026-03-01: the old value kept, marked superseded
    "# Kafka\n\n"
    "- Kafka retention is 7 days, as 정민 set it "
    "<!-- memtree: id=e-20260110-cafe0001; created=2026-01-10T10:00:00+09:00; superseded=2026-03-01; "
    "by=e-20260301-cafe0002 -->\n"
    "- Kafka retention is 14 days <!-- memtree: id=e-20260301-cafe0002; created=2026-03-01T10:00:00+09:00 -->\n"
)
REDIS_OLD = "Redis 연결 풀 크기는 10이면 충분하다"
REDIS_NEW = "Redis 연결 풀은 필요 없다"  # its negation in other words: a conflict
NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def memtree(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memtree", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def make_root(base: Path) -> Path:
    root = base / "sample"
    for part in ("bank", "memory", "recall", "tree-index.json"):
        (shutil.copytree if (REPO / part).is_dir() else shutil.copy2)(REPO / part, root / part)
    now = datetime.now().astimezone().isoformat(timespec="seconds")  # the newest cards, on the first page
    for name, text in (
        ("security/xss.md", XSS.replace("{now}", now)),
        ("render/sample.md", RENDER),
        ("infra/kafka.md", CHANGED),
    ):
        (root / "bank" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "bank" / name).write_text(text, encoding="utf-8")
    mt = MemTree(root)
    mt.index()
    mt.add(REDIS_OLD, to="project/decisions")
    mt.add(REDIS_NEW, to="project/decisions")
    return root


def open_view(root: Path) -> dict[str, Any]:
    done = memtree("view", "--no-open", "--json", "--root", str(root))
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


class Served:
    """A daemon serving a root over HTTP, started by `memtree view`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.opened = open_view(root)
        self.pid: int = self.opened["pid"]
        self.base = self.opened["url"].split("/view/")[0]
        self.token = (root / ".memtree" / "serve.token").read_text(encoding="ascii").strip()

    def link(self) -> str:
        """A fresh one-time link (each one is good for one session)."""
        url: str = open_view(self.root)["url"]
        return url

    def code(self) -> str:
        return self.link().split("#code=")[1]

    def request(self, path: str, body: Any = None, headers: dict[str, str] | None = None) -> tuple[int, Any, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.base + path, data=data, headers=headers or {}, method="POST" if data else "GET"
        )
        try:
            with NO_PROXY.open(req, timeout=30) as answer:
                raw = answer.read()
                return answer.status, answer.headers, raw
        except urllib.error.HTTPError as exc:
            return exc.code, exc.headers, exc.read()

    def session(self) -> str:
        status, headers, _ = self.request("/view/api/session", {"code": self.code()})
        assert status == 200
        return str(headers["set-cookie"]).split(";")[0]

    def call(self, verb: str, args: Any, cookie: str, **extra: str) -> tuple[int, Any]:
        headers = {"Cookie": cookie, "X-Memtree-View": "1", "Content-Type": "application/json"} | extra
        status, _, raw = self.request(f"/view/api/call/{verb}", args, headers)
        return status, json.loads(raw)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    pytest.importorskip("starlette", reason="the viewer is served by `memtree serve --http` (the mcp extra)")
    server = Served(make_root(tmp_path_factory.mktemp("viewer")))
    yield server
    stop(server.pid)


# --- `memtree view` ---------------------------------------------------------------------------------


def test_view_prints_a_one_time_link_and_reuses_the_running_daemon(served: Served) -> None:
    assert set(served.opened) == schema.KEYS["view"] and served.opened["started"] is True
    assert served.opened["url"].startswith("http://127.0.0.1:") and "#code=" in served.opened["url"]
    assert served.token not in served.opened["url"]
    again = open_view(served.root)
    assert again["pid"] == served.pid and again["started"] is False and again["url"] != served.opened["url"]
    record = json.loads((served.root / ".memtree" / "serve.json").read_text(encoding="utf-8"))
    assert record["http"] == served.base.removeprefix("http://")


def test_view_refuses_a_daemon_without_http_and_says_how(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    daemon = subprocess.Popen(
        [sys.executable, "-m", "memtree", "serve", "--root", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not (root / ".memtree" / "serve.json").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        done = memtree("view", "--no-open", "--root", str(root))
        assert done.returncode == 2 and "has no HTTP" in done.stderr and f"kill {daemon.pid}" in done.stderr
        assert done.stderr.count("\n") == 1
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)


# --- the routes and their guards --------------------------------------------------------------------


def test_the_page_is_static_offline_and_forbids_inline_script(served: Served) -> None:
    status, headers, raw = served.request("/view/")
    assert status == 200 and headers["content-type"].startswith("text/html")
    csp = headers["content-security-policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp and "unsafe-inline" not in csp
    assert headers["x-content-type-options"] == "nosniff" and "access-control-allow-origin" not in headers
    page = raw.decode()
    assert '<script src="app.js" defer></script>' in page and "<script>" not in page
    for name in ("app.js", "app.css", ""):
        _, _, body = served.request(f"/view/{name}")
        assert b"http://" not in body.replace(b"http://${", b"") and b"https://" not in body.replace(
            b"https?:\\/\\/", b""
        ), name
        assert b"@import" not in body and b"@font-face" not in body
    assert served.request("/view/secret.txt")[0] == 404
    assert served.request("/view/../serve.token")[0] == 404


def test_a_session_comes_only_from_a_fresh_one_time_code(served: Served) -> None:
    code = served.code()
    status, headers, _ = served.request("/view/api/session", {"code": code})
    assert status == 200
    cookie = str(headers["set-cookie"])
    port = served.base.rsplit(":", 1)[1]
    assert cookie.startswith(f"memtree_view_{port}=") and "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert served.token not in cookie
    assert served.request("/view/api/session", {"code": code})[0] == 401  # used once already
    assert served.request("/view/api/session", {"code": "guessed"})[0] == 401
    assert served.request("/view/api/code", {})[0] == 401  # a code needs the bearer token
    assert served.request("/view/api/code", {}, {"Authorization": "Bearer wrong"})[0] == 401


def test_calls_need_the_session_the_header_and_the_same_origin(served: Served) -> None:
    cookie = served.session()
    status, doc = served.call("version", {}, cookie)
    assert status == 200 and isinstance(doc["version"], str)
    assert served.call("version", {}, "memtree_view_1=nope")[0] == 401
    assert served.call("version", {}, "")[0] == 401
    assert served.call("version", {}, cookie, Origin="http://evil.example")[0] == 403
    assert served.call("version", {}, cookie, **{"Sec-Fetch-Site": "cross-site"})[0] == 403
    assert served.call("version", {}, cookie, Host="evil.example")[0] == 403
    assert served.call("version", {}, cookie, Origin=served.base)[0] == 200
    headers = {"Cookie": cookie, "Content-Type": "application/json"}  # no X-Memtree-View: a form post could do this
    assert served.request("/view/api/call/version", {}, headers)[0] == 403
    assert served.call("consolidate", {}, cookie)[0] == 404  # not a viewer verb
    status, _, _ = served.request("/v1/status", {}, {"Cookie": cookie})
    assert status == 401  # the session opens the viewer's calls only, never the bearer API


def test_memory_content_travels_as_json_never_as_html(served: Served) -> None:
    cookie = served.session()
    status, _, raw = served.request(
        "/view/api/call/entries",
        {"bank": "security"},
        {"Cookie": cookie, "X-Memtree-View": "1", "Content-Type": "application/json"},
    )
    doc = json.loads(raw)
    assert status == 200 and doc["total_count"] == 2
    assert any("<script>" in e["content"] for e in doc["entries"])  # the words as written; the page escapes them
    status, headers, _ = served.request("/view/api/call/entries", {}, {"Cookie": cookie, "X-Memtree-View": "1"})
    assert headers["content-type"] == "application/json" and headers["x-content-type-options"] == "nosniff"


# --- the verbs the viewer added to the daemon's API ---------------------------------------------------


def test_entries_are_cards_newest_first_filtered_and_paged(sample_root: Path) -> None:
    (sample_root / "bank/security").mkdir()
    (sample_root / "bank/security/xss.md").write_text(XSS.replace("{now}", "2026-11-01T10:00:00+09:00"), "utf-8")
    mt = MemTree(sample_root)
    made = verbs.call(mt, "add", {"text": "배포는 화요일 오전에만 한다", "to": "project/rules", "kind": "decision"})
    doc = verbs.call(mt, "entries", {"limit": 5})
    first = doc["entries"][0]
    assert first["id"] == made["entry_id"] and first["kind"] == "decision" and first["source"] == "manual"
    assert first["node"] == "project/rules" and first["bank"] == "project" and first["weight"] > 0
    assert len(doc["entries"]) == 5 and doc["total_count"] == doc["entry_count"] > 100
    times = [c["changed_at"] for c in verbs.call(mt, "entries", {"limit": 1000})["entries"]]
    assert times[0] >= times[-1]
    assert verbs.call(mt, "entries", {"kind": "decision"})["total_count"] == 2
    plain = verbs.call(mt, "entries", {"kind": "unclassified"})
    assert plain["total_count"] == doc["kinds"]["unclassified"] and all(c["kind"] is None for c in plain["entries"])
    auto = verbs.call(mt, "entries", {"bank": "security"})["entries"]
    assert {c["source"] for c in auto} == {"manual", "auto"} and {c["tags"][0] for c in auto if c["tags"]} == {"xss"}
    page2 = verbs.call(mt, "entries", {"offset": 5, "limit": 5})["entries"]
    assert page2[0] == verbs.call(mt, "entries", {"limit": 6})["entries"][5]


def test_the_write_contract_verbs_answer_their_cli_shapes(sample_root: Path) -> None:
    mt = MemTree(sample_root)
    before = verbs.call(mt, "version", {})["version"]
    made = verbs.call(mt, "add", {"text": "로그 보관은 30일이다", "to": "project/rules"})
    assert verbs.call(mt, "version", {})["version"] != before
    changed = verbs.call(mt, "update", {"ref": made["entry_id"], "text": "로그 보관은 14일이다"})
    assert set(changed) == schema.KEYS["update"] and changed["decision"] == "updated"
    gone = verbs.call(mt, "forget", {"ref": made["entry_id"], "reason": "test"})
    assert set(gone) == schema.KEYS["forget"] and gone["archive"].startswith("bank/_archive/")
    last = verbs.call(mt, "history", {"limit": 1})
    assert set(last) == schema.KEYS["history"] and last["changes"][0]["command"] == "forget"
    back = verbs.call(mt, "undo", {})
    assert set(back) == schema.KEYS["undo"] and "14일" in (sample_root / "bank/project/rules.md").read_text("utf-8")
    off = verbs.call(mt, "set_bank", {"name": "technical", "enabled": False})
    assert off == {"bank": "technical", "enabled": False, "disabled_banks": ["technical"]}
    verbs.call(mt, "set_bank", {"name": "technical", "enabled": True})
    exported = verbs.call(mt, "export", {"bank": "identity"})
    assert set(exported) == schema.KEYS["export"]
    again = verbs.call(mt, "import", {"document": exported, "dry_run": True})
    assert set(again) == schema.KEYS["import"] and again["written_count"] == 0
    assert set(verbs.call(mt, "decay", {"all": True})) == schema.KEYS["decay"]
    nodes = verbs.call(mt, "tree", {})["nodes"]
    assert any(n["id"] == "identity/values" and n["keywords"] for n in nodes)
    found = verbs.call(mt, "explain", {"query": "가치관", "k": 3})
    assert "keyword" in found["hits"][0]["explain"] and found["hits"][0]["matched"]
    with pytest.raises(verbs.BadRequest):
        verbs.call(mt, "import", {"document": "not an object"})


def test_explain_answers_as_of_a_day_and_marks_what_no_longer_holds(served: Served) -> None:
    cookie = served.session()

    def texts(args: dict[str, Any]) -> list[tuple[str, str]]:
        status, doc = served.call("explain", args, cookie)
        assert status == 200, doc
        return [(h["text"], h["status"]) for h in doc["hits"]]

    now = texts({"query": "Kafka retention"})
    assert "14 days" in now[0][0] and not any("7 days" in t for t, _ in now)
    then = texts({"query": "Kafka retention", "as_of": "2026-02-01"})
    assert "7 days" in then[0][0] and then[0][1] == "current" and not any("14 days" in t for t, _ in then)
    assert texts({"query": "Kafka retention", "as_of": None})[0] == now[0]  # null: now, as the page sends it
    # only the old value answers: it is served, marked as search marks it
    past = texts({"query": "정민"})
    assert past and "7 days" in past[0][0] and past[0][1] == "superseded 2026-03-01 by e-20260301-cafe0002"
    status, doc = served.call("explain", {"query": "Kafka", "as_of": "last week"}, cookie)
    assert status == 400 and "--as-of wants a day" in doc["error"] and "\n" not in doc["error"]


# --- the page, in a real browser ------------------------------------------------------------------------


def _browser_missing() -> str | None:
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        return "Debian's chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    return None


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    missing = _browser_missing()
    if missing:
        pytest.skip(missing)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    downloads = tmp_path_factory.mktemp("downloads")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900"):
        options.add_argument(arg)
    options.add_argument("--no-proxy-server")
    options.add_experimental_option("prefs", {"download.default_directory": str(downloads)})
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    driver.downloads = downloads
    driver.set_script_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def wait(driver: Any, condition: Any, timeout: float = 20) -> Any:
    """Wait for ``condition``; a list re-rendered meanwhile (a live update) is looked at again, and an
    element not yet clickable (a view still being shown, on a loaded machine) is tried again."""
    from selenium.common.exceptions import (
        ElementClickInterceptedException,
        ElementNotInteractableException,
        NoSuchElementException,
        StaleElementReferenceException,
    )
    from selenium.webdriver.support.ui import WebDriverWait

    ignored = (
        StaleElementReferenceException,
        NoSuchElementException,
        StopIteration,
        ElementClickInterceptedException,
        ElementNotInteractableException,
    )
    return WebDriverWait(driver, timeout, poll_frequency=0.05, ignored_exceptions=ignored).until(condition)


def centred(driver: Any, element: Any) -> bool:
    """Click ``element`` scrolled to the window's middle (WebDriver's own scroll may leave it under the
    sticky tab bar)."""
    js(driver, "arguments[0].scrollIntoView({block: 'center'})", element)
    element.click()
    return True


def click(driver: Any, css: str) -> None:
    """Click the first element ``css`` names (again if a live update replaced it meanwhile)."""
    wait(driver, lambda d: centred(d, by(d, css)))


def js(driver: Any, script: str, *args: Any) -> Any:
    return driver.execute_script(script, *args)


def ready(driver: Any, url: str) -> None:
    driver.get(url)
    wait(driver, lambda d: js(d, "return document.body.dataset.ready") == "1")


def by(driver: Any, css: str) -> Any:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, css)


def all_by(driver: Any, css: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return list(driver.find_elements(By.CSS_SELECTOR, css))


def toast(driver: Any, *words: str) -> str:
    """Wait for the toast to say all of ``words``; its text."""
    wait(driver, lambda d: all(w in by(d, "#toast").get_attribute("textContent") for w in words))
    text: str = by(driver, "#toast").get_attribute("textContent")
    return text


def press(driver: Any, label: str) -> None:
    """Click the dialog's button labelled ``label``."""
    wait(driver, lambda d: js(d, "return document.getElementById('dialog').open"))
    button = next(b for b in all_by(driver, "#dialog-actions button") if b.text == label)
    button.click()


def shot(driver: Any, name: str) -> None:
    if os.environ.get("MEMTREE_SCREENSHOTS"):
        SHOTS.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(SHOTS / f"{name}.png"))


def card_with(driver: Any, text: str) -> Any:
    return next((c for c in all_by(driver, "#cards > .card") if text in c.get_attribute("textContent")), None)


def click_in_card(driver: Any, text: str, css: str) -> None:
    """Click ``css`` in the card saying ``text`` (again if a live update replaced the card meanwhile)."""

    def go(d: Any) -> bool:
        found = card_with(d, text)
        if found is None:
            return False
        return centred(d, found.find_element("css selector", css))

    wait(driver, go)


@pytest.fixture(scope="module")
def page(browser: Any, served: Served) -> Any:
    ready(browser, served.link())
    assert "#code=" not in browser.current_url  # the code leaves the address bar at once
    return browser


def test_cards_render_markdown_and_metadata_with_memory_as_text(page: Any, served: Served) -> None:
    assert len(all_by(page, "#cards > .card")) == 100 and "shown" in by(page, "#list-summary").text
    xss = card_with(page, "스크립트 노트")
    assert xss is not None and "<script>window.__pwned = 1</script>" in xss.get_attribute("textContent")
    img = card_with(page, "이미지 노트")
    assert img is not None and '<img src=x onerror="window.__pwned = 2">' in img.get_attribute("textContent")
    assert js(page, "return window.__pwned === undefined")
    assert not all_by(page, "#cards script, #cards img")
    badges = [b.text for b in img.find_elements("css selector", ".badge")]
    assert badges[:2] == ["auto", "decision"]
    meta = xss.find_element("css selector", ".meta").text
    assert "bank/security/xss.md:3" in meta and "weight" in meta and "recalls" in meta and "scope global" in meta
    assert "#xss" in xss.text and xss.find_element("css selector", "time").get_attribute("datetime")
    long = card_with(page, "긴 항목 첫 줄")
    assert long is not None and "접힘확인" not in long.text  # folded at 6 lines
    fold = long.find_element("css selector", "button.fold")
    assert fold.get_attribute("aria-expanded") == "false" and "8 lines" in fold.text
    fold.click()
    assert "접힘확인" in long.text and fold.get_attribute("aria-expanded") == "true"
    assert not [e for e in page.get_log("browser") if e["level"] == "SEVERE"]
    shot(page, "entries")


def test_kind_filter_with_unclassified(page: Any) -> None:
    from selenium.webdriver.support.ui import Select

    Select(by(page, "#kind-filter")).select_by_value("decision")
    wait(page, lambda d: "1 entry" in by(d, "#list-summary").text)
    assert card_with(page, "이미지 노트") is not None
    Select(by(page, "#kind-filter")).select_by_value("unclassified")
    wait(page, lambda d: card_with(d, "이미지 노트") is None and card_with(d, "스크립트 노트") is None)
    assert not all_by(page, "#cards .badge.kind")
    Select(by(page, "#kind-filter")).select_by_value("")
    wait(page, lambda d: card_with(d, "스크립트 노트") is not None)


def test_add_shows_the_decision_before_and_after_writing(page: Any, served: Served) -> None:
    from selenium.webdriver.support.ui import Select

    by(page, "#add-button").click()
    wait(page, lambda d: js(d, "return document.getElementById('dialog').open"))
    by(page, "#dialog textarea").send_keys("배포 전에는 반드시 스테이징에서 스모크 테스트를 돌린다")
    Select(by(page, "#dialog select")).select_by_value("decision")
    press(page, "Check")
    wait(page, lambda d: "Would be: Created" in by(d, "#dialog .outcome").text)
    assert "스모크" not in (served.root / "bank").joinpath("project/rules.md").read_text("utf-8")  # a dry run
    press(page, "Remember")
    toast(page, "Created")
    wait(page, lambda d: "스모크 테스트" in by(d, "#cards > .card").text)  # newest first
    assert by(page, "#cards > .card .badge.kind").text == "decision"
    by(page, "#add-button").click()
    by(page, "#dialog textarea").send_keys("배포 전에는 반드시 스테이징에서 스모크 테스트를 돌린다")
    press(page, "Check")
    wait(page, lambda d: "Duplicate" in by(d, "#dialog .outcome").text)
    press(page, "Cancel")


def test_edit_forget_and_undo_go_through_the_write_contract(page: Any, served: Served) -> None:
    if card_with(page, "스모크") is None:  # run alone: the entry the add test writes, written here instead
        memtree("add", "배포 전에는 반드시 스테이징에서 스모크 테스트를 돌린다", "--root", str(served.root))
    wait(page, lambda d: "스모크" in by(d, "#cards > .card").text)
    click(page, "#cards > .card button.edit")
    area = by(page, "#cards > .card.editing textarea")
    area.clear()
    area.send_keys("배포 전에는 반드시 스테이징에서 스모크와 회귀 테스트를 돌린다")
    click(page, "#cards > .card.editing button.save")
    press(page, "Save")
    toast(page, "Updated")
    wait(page, lambda d: "회귀" in by(d, "#cards > .card").text)
    click(page, "#cards > .card button.forget")
    by(page, "#dialog input").send_keys("viewer test")
    press(page, "Forget")
    toast(page, "Forgotten", "bank/_archive/")
    wait(page, lambda d: card_with(d, "회귀 테스트") is None)
    archive = served.root / "bank/_archive/project/rules.md"
    assert "회귀 테스트" in archive.read_text("utf-8")
    wait(page, lambda d: "forget" in (by(d, "#undo-button").get_attribute("title") or ""))
    by(page, "#undo-button").click()
    wait(page, lambda d: "forget" in by(d, "#dialog-body").text)
    press(page, "Undo")
    toast(page, "Undone")
    wait(page, lambda d: card_with(d, "회귀 테스트") is not None)


def test_search_highlights_and_explains_within_one_bank_or_all(page: Any) -> None:
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    by(page, "body").send_keys("/")
    assert js(page, "return document.activeElement.id") == "search-query"
    js(page, "document.activeElement.value = ''")
    by(page, "#search-query").send_keys("가치관", Keys.ENTER)
    wait(page, lambda d: all_by(d, "#hits > .card"))
    hit = by(page, "#hits > .card")
    assert next(m.text for m in hit.find_elements("css selector", "mark")) == "가치관"
    hit.find_element("css selector", "details.explain summary").click()
    assert "keyword 0.4×" in hit.find_element("css selector", "details.explain pre").text
    shot(page, "search")
    Select(by(page, "#search-bank")).select_by_value("render")
    by(page, "#search-query").clear()
    by(page, "#search-query").send_keys("배포창", Keys.ENTER)
    wait(page, lambda d: "in render" in by(d, "#search-summary").text)
    paths = [h.get_attribute("data-path") for h in all_by(page, "#hits > .card")]
    assert paths and all(p.startswith("bank/render/") for p in paths)
    assert [c.text for c in all_by(page, "#hits .md-table td")][:2] == ["배포창", "화요일"]
    by(page, "#search-query").clear()
    by(page, "#search-query").send_keys("코드블록마커", Keys.ENTER)
    wait(page, lambda d: "코드블록마커" in by(d, "#hits pre code").text)
    by(page, "#clear-search").click()
    Select(by(page, "#search-bank")).select_by_value("")
    assert by(page, "#cards").is_displayed()


def test_search_as_of_a_day_from_the_date_beside_the_search_box(page: Any) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    field = by(page, "#search-query")
    field.clear()
    field.send_keys("Kafka retention", Keys.ENTER)
    wait(page, lambda d: "14 days" in by(d, "#hits > .card").text)
    assert "as of" not in by(page, "#search-summary").text and not all_by(page, "#hits .badge.past")
    assert by(page, "#search-as-of").get_attribute("type") == "date"
    assert by(page, "label[for=search-as-of]").text == "as of" and by(page, "#clear-as-of").is_displayed() is False
    by(page, "#search-as-of").click()  # a person types the day into the date's fields
    by(page, "#search-as-of").send_keys("02012026")
    if by(page, "#search-as-of").get_attribute("value") != "2026-02-01":  # another locale orders the fields otherwise
        js(
            page,
            "const f = arguments[0]; f.value = '2026-02-01'; f.dispatchEvent(new Event('change'))",
            by(page, "#search-as-of"),
        )
    wait(page, lambda d: "as of 2026-02-01" in by(d, "#search-summary").text)
    wait(page, lambda d: "7 days" in by(d, "#hits > .card").text)
    assert not any("14 days" in h.text for h in all_by(page, "#hits > .card"))
    shot(page, "as-of")
    # cleared from the keyboard: back to the facts that hold now
    clear = by(page, "#clear-as-of")
    assert clear.is_displayed() and clear.get_attribute("aria-label")
    js(page, "arguments[0].focus()", clear)
    ActionChains(page).send_keys(Keys.ENTER).perform()
    wait(page, lambda d: "as of" not in by(d, "#search-summary").text and "14 days" in by(d, "#hits > .card").text)
    assert by(page, "#search-as-of").get_attribute("value") == "" and not clear.is_displayed()
    assert js(page, "return document.activeElement.id") == "search-as-of"
    # when only the old value answers, it is shown marked
    field.clear()
    field.send_keys("정민", Keys.ENTER)
    wait(page, lambda d: all_by(d, "#hits .badge.past"))
    assert by(page, "#hits .badge.past").text == "superseded 2026-03-01 by e-20260301-cafe0002"
    by(page, "#clear-search").click()


def test_a_search_shows_its_results_from_whichever_view_it_was_started(page: Any) -> None:
    from selenium.webdriver.common.keys import Keys

    for view in ("conflicts", "banks", "tree", "status"):
        by(page, f"[data-view={view}]").click()
        wait(page, lambda d, v=view: by(d, f"#view-{v}").is_displayed())
        by(page, "#search-query").clear()
        by(page, "#search-query").send_keys("가치관", Keys.ENTER)
        wait(page, lambda d: by(d, "#hits > .card").is_displayed(), timeout=10)
        assert by(page, "[data-view=entries]").get_attribute("aria-current") == "page", view
        assert "가치관" in by(page, "#search-summary").text
        by(page, "#clear-search").click()
    assert by(page, "#cards").is_displayed()


def in_view(driver: Any, element: Any) -> bool:
    """Whether ``element`` is inside the window (and not under the sticky tab bar)."""
    return bool(
        js(
            driver,
            """const r = arguments[0].getBoundingClientRect();
            const bar = document.querySelector('.tabs').getBoundingClientRect();
            return r.height > 0 && r.top >= bar.bottom - 1 && r.top < window.innerHeight;""",
            element,
        )
    )


def test_a_whole_note_opens_from_a_card_or_a_hit_at_the_entry_s_place(page: Any) -> None:
    from selenium.webdriver.common.keys import Keys

    click_in_card(page, "긴 항목 첫 줄", "button.open-note")
    wait(page, lambda d: by(d, "#view-note").is_displayed() and by(d, "#note .here"))
    assert by(page, "#note-title").text == "bank/render/sample.md"
    here = by(page, "#note .here")
    assert "긴 항목 첫 줄" in here.text and "접힘확인" in here.text and in_view(page, here)
    # the parts of a note that are not entries: its table and its code block
    assert [c.text for c in all_by(page, "#note .md-table td")][:2] == ["배포창", "화요일"]
    assert "코드블록마커" in by(page, "#note pre code").text
    shot(page, "note")
    by(page, "#note-back").click()
    wait(page, lambda d: by(d, "#cards").is_displayed() and card_with(d, "긴 항목 첫 줄") is not None)
    # from a search hit to its place in the note
    by(page, "#search-query").clear()
    by(page, "#search-query").send_keys("가치관", Keys.ENTER)
    first_hit = "const h = document.querySelector('#hits > .card');"
    first_hit += "return h && [h.dataset.path, +h.dataset.line, h.querySelector('.md > *').textContent]"
    path, line, words = wait(page, lambda d: js(d, first_hit))
    click(page, "#hits > .card button.open-note")
    wait(page, lambda d: by(d, "#note-title").text == path and by(d, "#note .here"))
    here = by(page, "#note .here")
    assert int(here.get_attribute("data-line")) <= line <= int(here.get_attribute("data-end"))
    assert in_view(page, here) and words in "".join(h.get_attribute("textContent") for h in all_by(page, "#note .here"))
    by(page, "#note-back").click()
    wait(page, lambda d: by(d, "#hits").is_displayed())
    by(page, "#clear-search").click()
    # a note holding HTML shows it as text; its metadata comments are not shown
    click_in_card(page, "스크립트 노트", "button.open-note")
    wait(page, lambda d: by(d, "#note-title").text == "bank/security/xss.md")
    note = by(page, "#note").get_attribute("textContent")
    assert "<script>window.__pwned = 1</script>" in note and '<img src=x onerror="window.__pwned = 2">' in note
    assert "memtree:" not in note and not all_by(page, "#note script, #note img")
    assert js(page, "return window.__pwned === undefined")
    by(page, "#note-back").click()
    wait(page, lambda d: by(d, "#cards").is_displayed())


def test_links_in_a_note_open_their_target_at_its_place_and_a_note_shows_its_backlinks(
    page: Any, served: Served
) -> None:
    linking = served.root / "bank/render/links.md"
    linking.write_text(
        "# 링크 노트\n\n- 링크항목은 [[identity/values#4. 로컬 우선, 오프라인|가치관의 로컬 원칙]]을 따른다.\n",
        encoding="utf-8",
    )
    wait(page, lambda d: card_with(d, "링크항목은") is not None, timeout=30)
    click_in_card(page, "링크항목은", "a.wikilink")
    wait(page, lambda d: by(d, "#note-title").text == "bank/identity/values.md" and by(d, "#note .here"))
    assert "로컬 우선, 오프라인" in by(page, "#note .here").text and in_view(page, by(page, "#note .here"))
    # the note names what links to it; one click goes there
    wait(page, lambda d: "bank/render/links.md:3" in by(d, "#backlinks").text)
    click(page, "#backlinks button.backlink")
    wait(page, lambda d: by(d, "#note-title").text == "bank/render/links.md")
    assert by(page, "#note a.wikilink").text == "가치관의 로컬 원칙"
    # a link to no note says so, in one line
    linking.write_text("# 링크 노트\n\n- 끊긴 링크항목 [[nowhere/at-all]]\n", encoding="utf-8")
    wait(page, lambda d: by(d, "#note a.wikilink").text == "nowhere/at-all", timeout=30)
    click(page, "#note a.wikilink")
    toast(page, "no node or note named 'nowhere/at-all'")
    by(page, "#note-back").click()
    wait(page, lambda d: by(d, "#view-note").is_displayed() is False)


def test_an_entry_in_an_open_conflict_is_marked_and_leads_to_it(page: Any) -> None:
    marks = """return [...document.querySelectorAll('#cards > .card')].filter(c => c.textContent.includes(arguments[0]))
      .map(c => c.querySelector('.conflict-mark')).map(m => m && [m.dataset.conflict, m.textContent]);"""
    newer = wait(page, lambda d: js(d, marks, "필요 없다")[0])
    older = wait(page, lambda d: js(d, marks, "10이면 충분")[0])
    conflict = newer[0]
    assert conflict and older[0] == conflict and conflict in newer[1]
    assert js(page, marks, "긴 항목 첫 줄") == [None]
    click_in_card(page, "필요 없다", ".conflict-mark")
    wait(page, lambda d: by(d, "#view-conflicts").is_displayed() and by(d, "#conflicts .conflict.here"))
    assert by(page, "#conflicts .conflict.here").get_attribute("data-conflict") == conflict
    assert js(page, "return document.activeElement.dataset.conflict") == conflict
    by(page, "[data-view=entries]").click()


def test_banks_switch_conflicts_side_by_side_tree_and_status(page: Any, served: Served) -> None:
    by(page, "[data-view=banks]").click()
    wait(page, lambda d: by(d, "#bank-switch-technical").is_selected())
    click(page, "#bank-switch-technical")
    toast(page, "technical is left out of search")
    assert "technical" in (served.root / "memtree.yaml").read_text("utf-8")
    shot(page, "banks")
    click(page, "#bank-switch-technical")
    toast(page, "technical is searched again")
    by(page, "[data-view=conflicts]").click()
    wait(page, lambda d: all_by(d, "#conflicts .conflict"))
    wait(page, lambda d: "필요 없다" in by(d, "#conflicts .sides").text and "10이면" in by(d, "#conflicts").text)
    shot(page, "conflicts")
    click(page, "#conflicts .conflict .card-actions button:nth-child(3)")  # keep both
    press(page, "Keep both")
    wait(page, lambda d: "No open conflicts" in by(d, "#conflicts").text)
    by(page, "[data-view=tree]").click()
    wait(page, lambda d: "identity/values" in by(d, "#tree").text)
    assert "가치관" in by(page, "#tree").text and all_by(page, "#tree .chip")
    shot(page, "tree")
    wait(page, lambda d: centred(d, next(b for b in all_by(d, "#tree button") if b.text == "identity/values")))
    wait(page, lambda d: by(d, "#cards").is_displayed() and all_by(d, "#cards > .card"))
    wait(page, lambda d: all("identity/values" in c.text for c in all_by(d, "#cards > .card")))
    click(page, "#node-filter button")
    by(page, "[data-view=status]").click()
    wait(page, lambda d: "fresh" in by(d, "#status").text)
    assert all_by(page, "#status meter") and "archive candidates" in by(page, "#status").text
    assert "last consolidation" in by(page, "#status").text
    shot(page, "status")
    by(page, "[data-view=entries]").click()


def test_export_then_import(page: Any, served: Served, tmp_path: Path) -> None:
    by(page, "#export-button").click()
    toast(page, "Exported")
    wait(page, lambda d: list(page.downloads.glob("memtree-export-*.json")))
    exported = json.loads(next(page.downloads.glob("memtree-export-*.json")).read_text("utf-8"))
    assert exported["memtree"] == "export"
    other = tmp_path / "other"
    (other / "bank/misc").mkdir(parents=True)
    (other / "tree-index.json").write_text('{"version": 1, "nodes": []}', encoding="utf-8")
    MemTree(other).add("가져오기 확인용 항목: 커피는 하루 두 잔까지", to="misc/notes")
    doc = other / "doc.json"
    doc.write_text(json.dumps(MemTree(other).export(), ensure_ascii=False), encoding="utf-8")
    by(page, "#import-file").send_keys(str(doc))
    wait(page, lambda d: "would be written" in by(d, "#dialog-body").text)
    press(page, "Import")
    toast(page, "Imported: 1 written")
    wait(page, lambda d: card_with(d, "커피는 하루 두 잔") is not None)


def test_an_edit_on_disk_shows_up_without_a_reload(page: Any, served: Served) -> None:
    marker = js(page, "return performance.timeOrigin")
    note = served.root / "bank/identity/values.md"
    note.write_text(note.read_text("utf-8") + "\n- 디스크에서 직접 고친 줄이 바로 보인다\n", encoding="utf-8")
    wait(page, lambda d: card_with(d, "디스크에서 직접 고친 줄") is not None, timeout=30)
    assert js(page, "return performance.timeOrigin") == marker  # the same page: no reload


def test_keyboard_labels_zoom_narrow_and_themes(page: Any) -> None:
    unlabelled = js(
        page,
        """return [...document.querySelectorAll('input, select, textarea, button')].filter(c => {
          if (c.closest('[hidden]') || c.type === 'hidden') return false;
          const named = c.labels && c.labels.length || c.getAttribute('aria-label')
            || (c.tagName === 'BUTTON' && c.textContent.trim());
          return !named; }).map(c => c.outerHTML.slice(0, 80));""",
    )
    assert unlabelled == []
    from selenium.webdriver.common.action_chains import ActionChains

    js(page, "document.activeElement.blur()")
    ActionChains(page).send_keys("j").perform()  # to whatever has the focus, as a person's keys go
    assert js(page, "return document.activeElement.classList.contains('card')")
    ActionChains(page).send_keys("j").perform()
    second = js(page, "return document.activeElement.dataset.line + document.activeElement.dataset.path")
    first = js(page, "const c = document.querySelector('#cards > .card'); return c.dataset.line + c.dataset.path")
    assert second != first
    original = page.get_window_size()
    try:
        for width in (640, 360):  # 1280 px at 200 % zoom is 640 CSS px; 360: a phone
            page.set_window_size(width, 800)
            wait(page, lambda d, w=width: js(d, "return window.innerWidth") <= w)
            overflow = js(page, "return document.documentElement.scrollWidth - document.documentElement.clientWidth")
            assert overflow <= 1, (width, overflow)
        shot(page, "narrow")
    finally:
        page.set_window_size(original["width"], original["height"])
    light = js(page, "return getComputedStyle(document.body).backgroundColor")
    page.execute_cdp_cmd(
        "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]}
    )
    try:
        dark = js(page, "return getComputedStyle(document.body).backgroundColor")
        assert dark != light
        shot(page, "dark")
    finally:
        page.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})


def test_at_360px_no_view_scrolls_sideways_and_a_dialog_fits(page: Any) -> None:
    original = page.get_window_size()
    overflow = "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
    try:
        page.set_window_size(360, 800)
        wait(page, lambda d: js(d, "return window.innerWidth") <= 360)
        for view in ("entries", "conflicts", "banks", "tree", "status"):
            by(page, f"[data-view={view}]").click()
            wait(page, lambda d, v=view: by(d, f"#view-{v}").is_displayed())
            if view == "banks":
                wait(page, lambda d: all_by(d, "#banks tr"))
            assert js(page, overflow) <= 1, view
        by(page, "[data-view=banks]").click()
        wait(page, lambda d: by(d, "#view-banks").is_displayed())
        by(page, "#add-button").click()  # a dialog opened from the Banks tab
        wait(page, lambda d: js(d, "return document.getElementById('dialog').open"))
        box = js(
            page,
            """const d = document.getElementById('dialog'), r = d.getBoundingClientRect();
            return [r.left, r.right, r.top, r.bottom, window.innerWidth, window.innerHeight,
                    d.scrollWidth - d.clientWidth];""",
        )
        left, right, top, bottom, width, height, clipped = box
        assert left >= 0 and right <= width and top >= 0 and bottom <= height and clipped <= 1, box
        assert js(page, overflow) <= 1
        shot(page, "narrow-dialog")
        press(page, "Cancel")
        by(page, "[data-view=entries]").click()
        click_in_card(page, "긴 항목 첫 줄", "button.open-note")
        wait(page, lambda d: by(d, "#note .here"))
        assert js(page, overflow) <= 1  # the note's table and code scroll inside their own boxes
        shot(page, "narrow-note")
        by(page, "#note-back").click()
    finally:
        page.set_window_size(original["width"], original["height"])
    by(page, "[data-view=entries]").click()


def test_a_message_covers_nothing_moves_nothing_and_can_be_dismissed(page: Any) -> None:
    by(page, "[data-view=entries]").click()
    js(page, "window.scrollTo(0, 0)")
    first = wait(page, lambda d: by(d, "#cards > .card"))
    before = js(page, "return arguments[0].getBoundingClientRect().top", first)
    by(page, "#export-button").click()
    wait(page, lambda d: by(d, "#toast").is_displayed() and "Exported" in by(d, "#toast").text)
    covered = js(
        page,
        """const t = document.getElementById('toast').getBoundingClientRect();
        const controls = 'main .card, main button, header button, header input, header select, .tabs button[data-view]';
        return [...document.querySelectorAll(controls)]
          .filter(e => e.offsetParent !== null).map(e => [e, e.getBoundingClientRect()])
          .filter(([e, r]) => r.width && r.left < t.right && r.right > t.left && r.top < t.bottom && r.bottom > t.top)
          .map(([e]) => e.outerHTML.slice(0, 60));""",
    )
    assert covered == []
    assert js(page, "return arguments[0].getBoundingClientRect().top", first) == before
    by(page, "#toast-close").click()
    wait(page, lambda d: not by(d, "#toast").is_displayed())


def test_an_expired_session_disables_writing_and_says_how_to_get_a_new_one(page: Any, served: Served) -> None:
    page.delete_all_cookies()  # as when the daemon restarted: the page's session is gone
    wait(page, lambda d: by(d, "#notice").is_displayed() and "expired" in by(d, "#notice").text)
    assert "memtree view" in by(page, "#notice").text
    for control in ("#add-button", "#export-button", "#import-file", "#cards > .card button.edit"):
        assert by(page, control).get_attribute("disabled") is not None, control
    assert by(page, "#import-label").get_attribute("aria-disabled") == "true"
    shot(page, "expired")
    page.get("about:blank")  # (the same page with only a new #code would not load again)
    ready(page, served.link())  # a new link: a new session, writing again
    assert by(page, "#add-button").get_attribute("disabled") is None and not by(page, "#notice").is_displayed()


BIG_NOTES, BIG_PER_NOTE = 50, 100


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    if _browser_missing():
        pytest.skip(str(_browser_missing()))
    root = tmp_path_factory.mktemp("big") / "root"
    (root / "bank/big").mkdir(parents=True)
    (root / "tree-index.json").write_text('{"version": 1, "nodes": []}', encoding="utf-8")
    kinds = ("fact", "preference", "entity", "decision", "")
    for n in range(BIG_NOTES):
        lines = [f"# 묶음 {n}", ""]
        for i in range(BIG_PER_NOTE):
            k = kinds[i % 5]
            meta = f"id=e-2026110{1 + n % 9}-{n:04d}{i:04d}; created=2026-11-0{1 + n % 9}T{i % 24:02d}:00:00+09:00"
            meta += f"; tags=t{i % 7}" + (f"; kind={k}" if k else "")
            meta += "; source=" + ("auto" if i % 3 == 0 else "manual")
            lines.append(f"- 항목 {n}-{i}: 서버 {i % 13}번의 설정값은 {n * i}이다 <!-- memtree: {meta} -->")
        (root / f"bank/big/n{n:02d}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    server = Served(root)
    yield server
    stop(server.pid)


def test_a_5000_entry_bank_paints_within_a_second_and_scrolls(browser: Any, big: Served) -> None:
    ready(browser, big.link())
    painted = js(browser, "return performance.getEntriesByName('memtree:first-cards')[0].startTime")
    print(f"\nfirst paint of the 5,000-entry bank: {painted:.0f} ms (from navigation start)")
    assert painted < 5000  # the design's budget is 1 s; generous here, for a loaded machine
    assert "(5000)" in by(browser, "#entry-count").text
    js(browser, "window.scrollTo(0, document.body.scrollHeight)")
    wait(browser, lambda d: len(all_by(d, "#cards > .card")) >= 200)
    started = js(browser, "return performance.now()")
    js(browser, "window.scrollBy(0, -3000)")
    frame = browser.execute_async_script(
        "const done = arguments[0]; requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now())));"
    )
    assert frame - started < 1000  # a scroll is painted promptly
    shot(browser, "big")
