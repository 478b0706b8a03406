"""Guards of the browser tools: allowed URL schemes, download limits, failures that leave clean state."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from tasks.browser.session import ActionError, normalize_url
from tests.fakes.loopback import loopback_server
from udm.config import load_settings

pytestmark = pytest.mark.browser


def test_normalize_url_allows_only_safe_schemes(tmp_path: Path) -> None:
    settings = load_settings(cwd=tmp_path)
    assert normalize_url("localhost:8000/x") == "https://localhost:8000/x"
    assert normalize_url("data:text/html,hi") == "data:text/html,hi"
    inside = settings.udm_root / "page.html"
    assert normalize_url(inside.as_uri(), settings) == inside.as_uri()
    for url, scheme in [("javascript:alert(1)", "javascript"), ("chrome://version", "chrome")]:
        with pytest.raises(ActionError) as info:
            normalize_url(url, settings)
        assert info.value.status == "ERROR_INVALID_INPUT" and f"'{scheme}:'" in info.value.message
    with pytest.raises(ActionError) as info:
        normalize_url("about:config", settings)
    assert info.value.status == "ERROR_INVALID_INPUT"
    with pytest.raises(ActionError) as info:
        normalize_url("file:///etc/passwd", settings)
    assert info.value.status == "ERROR_PATH_NOT_ALLOWED" and "/etc/passwd" in info.value.message
    # Spellings Chromium reads as another file than Python does: refused before any check of the path.
    escapes = [
        inside.parent.as_uri() + "/..\\..\\..\\..\\etc\\passwd",
        inside.parent.as_uri() + "/..%5C..%5C..%5Cetc%5Cpasswd",
        "file:etc/passwd",
        "file:/etc/passwd",
    ]
    for url in escapes:
        with pytest.raises(ActionError) as info:
            normalize_url(url, settings)
        assert info.value.status in ("ERROR_INVALID_INPUT", "ERROR_PATH_NOT_ALLOWED"), url


def test_navigation_refuses_files_outside_the_allowed_dirs(call, bctx) -> None:  # type: ignore[no-untyped-def]
    page = bctx.settings.udm_root / "sample.html"
    page.write_text("<title>Sample</title><p>inside the manual</p>", encoding="utf-8")
    env = call("navigate_to_url", {"url": page.as_uri()})
    assert env["success"], env
    assert "inside the manual" in call("getPageText", {})["data"]["markdown"]
    env = call("navigate_to_url", {"url": "file:///etc/passwd"})
    assert not env["success"] and env["data"]["status"] == "ERROR_PATH_NOT_ALLOWED"
    assert "root:" not in str(call("getPageText", {})["data"])
    env = call("openInNewTab", {"url": "javascript:alert(1)"})
    assert env["data"]["status"] == "ERROR_INVALID_INPUT" and "'javascript:'" in env["error"]
    env = call("browser_tabs", {"action": "create", "url": "file:///etc/passwd"})
    assert env["data"]["status"] == "ERROR_PATH_NOT_ALLOWED"
    assert [t["tab_id"] for t in call("getTabs", {})["data"]["tabs"]] == [1]


class BigHandler(BaseHTTPRequestHandler):
    """/declared claims a huge Content-Length; /endless streams chunks with no length until cut off."""

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the access log."""

    def do_GET(self) -> None:
        """Answer without ever holding the big body in memory."""
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        if self.path == "/declared":
            self.send_header("Content-Length", str(200 * 1024 * 1024))
            self.end_headers()
            with contextlib.suppress(OSError):
                self.wfile.write(b"x" * 1024)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chunk = b"y" * 65536
        with contextlib.suppress(OSError):
            for _ in range(64):  # 4 MiB at most, far above the test's cap
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")


def test_download_stops_at_max_bytes(call, site, bctx) -> None:  # type: ignore[no-untyped-def]
    downloads = bctx.settings.scratch_path / "downloads"
    with loopback_server(BigHandler) as base:
        env = call("browser_download", {"url": base + "/declared", "save_path": str(downloads) + "/"})
        assert env["data"]["status"] == "ERROR_TOO_LARGE", env
        assert "Content-Length" in env["error"] and "max_bytes" in env["error"]
        env = call(
            "browser_download",
            {"url": base + "/endless", "save_path": str(downloads) + "/", "max_bytes": 100_000},
        )
        assert env["data"]["status"] == "ERROR_TOO_LARGE", env
        assert "100,000 bytes" in env["error"]
    assert not downloads.exists() or not any(downloads.iterdir())
    call("navigate_to_url", {"url": site + "/download"})
    env = call("browser_download", {"selector": "#dl", "save_path": str(downloads) + "/", "max_bytes": 4})
    assert env["data"]["status"] == "ERROR_TOO_LARGE" and "report.csv" in env["error"], env
    env = call("browser_download", {"url": site + "/files/report.csv", "save_path": "scratch/ok.csv"})
    assert env["success"] and env["data"]["size_bytes"] == 8, env


def _kill_our_playwright_driver() -> int:
    """SIGKILL the Playwright driver this test process started; returns how many were killed."""
    killed = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if parent == os.getpid() and b"run-driver" in cmdline:
            os.kill(int(entry.name), signal.SIGKILL)
            killed += 1
    return killed


def test_a_dead_driver_is_replaced_on_the_next_call(call, site) -> None:  # type: ignore[no-untyped-def]
    assert call("navigate_to_url", {"url": site + "/a"})["success"]
    assert _kill_our_playwright_driver() == 1
    time.sleep(0.5)
    env = call("navigate_to_url", {"url": site + "/b"})
    assert env["success"], env
    assert env["data"]["page_title"] == "Page B"


def test_a_failing_new_context_is_a_browser_error(call, site, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from playwright.async_api import Browser
    from playwright.async_api import Error as PlaywrightError

    async def refuse(self: Browser, **kwargs: Any) -> None:
        raise PlaywrightError("too many contexts")

    assert call("navigate_to_url", {"url": site + "/a"})["success"]  # the browser is up
    monkeypatch.setattr(Browser, "new_context", refuse)
    env = call("launchBrowser", {"url": site + "/", "session_id": "fresh-context-refused"})
    assert env["data"]["status"] == "ERROR_BROWSER", env
    assert "could not open a browser context: too many contexts" in env["error"]


def test_download_save_path_with_a_nul_byte_is_invalid_input(call, site) -> None:  # type: ignore[no-untyped-def]
    env = call("browser_download", {"url": site + "/files/report.csv", "save_path": "scratch/a\x00b.csv"})
    assert env["data"] is not None, env  # an error result, not an internal error
    assert env["data"]["status"] == "ERROR_INVALID_INPUT" and "save_path" in env["error"], env
    assert "null byte" in env["error"]


def _closed_port_url() -> str:
    """A loopback URL nobody listens on (connection refused at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/"


def test_a_tab_that_fails_to_open_is_closed_and_the_old_one_stays_active(call, site) -> None:  # type: ignore[no-untyped-def]
    call("navigate_to_url", {"url": site + "/a"})
    dead = _closed_port_url()
    env = call("openInNewTab", {"url": dead})
    assert env["data"]["status"] == "ERROR_NAVIGATION", env
    env = call("browser_tabs", {"action": "create", "url": dead})
    assert env["data"]["status"] == "ERROR_NAVIGATION", env
    tabs = call("getTabs", {})["data"]
    assert [t["tab_id"] for t in tabs["tabs"]] == [1] and tabs["active_tab"] == 1, tabs
    assert call("getElementText", {"selector_type": "css", "selector_value": "h1"})["data"]["text"] == "A"
    env = call("launchBrowser", {"url": dead, "viewport_width": 800})
    assert env["data"]["status"] == "ERROR_NAVIGATION", env
    tabs = call("getTabs", {})["data"]
    assert [t["tab_id"] for t in tabs["tabs"]] == [1] and tabs["active_tab"] == 1, tabs
    env = call("openInNewTab", {"url": site + "/b"})
    assert env["success"] and env["data"]["http_status"] == 200 and env["data"]["active_tab"] == 5, env


def test_condition_errors_and_missing_options_are_named(call, site) -> None:  # type: ignore[no-untyped-def]
    call("navigate_to_url", {"url": site + "/form"})
    started = time.monotonic()
    env = call("wait_for_condition", {"condition": "syntax error ((", "timeout": 4000})
    assert env["data"]["status"] == "ERROR_INVALID_INPUT", env
    assert "not valid JavaScript: SyntaxError" in env["error"] and time.monotonic() - started < 3
    env = call("wait_for_condition", {"condition": "() => { throw new Error('boom') }", "timeout": 4000})
    assert env["data"]["status"] == "ERROR_BROWSER" and "the condition threw Error: boom" in env["error"]
    env = call("wait_for_condition", {"condition": "document.title === 'Sign in'", "timeout": 4000})
    assert env["success"] and env["data"]["value"] is True, env
    started = time.monotonic()
    env = call("select_option", {"selector": "#country", "value": "FR", "timeout_ms": 4000})
    assert env["data"]["status"] == "ERROR_ELEMENT_NOT_FOUND", env
    assert "no option with value or label 'FR'" in env["error"]
    assert "DE (Germany), US (United States)" in env["error"] and time.monotonic() - started < 3
    env = call("select_option", {"selector": "#country", "value": "United States"})
    assert env["success"] and env["data"]["values"] == ["US"], env


def test_go_back_on_the_first_page_stays_put(call, site) -> None:  # type: ignore[no-untyped-def]
    call("navigate_to_url", {"url": site + "/a"})
    back = call("go_back", {})
    assert back["success"], back
    data = back["data"]
    assert data["navigated"] is False and data["http_status"] is None, data
    assert data["url"].endswith("/a") and data["page_title"] == "Page A"
    fwd = call("go_forward", {})["data"]
    assert fwd["navigated"] is False and fwd["http_status"] is None and fwd["url"].endswith("/a"), fwd
    call("navigate_to_url", {"url": site + "/b"})
    back = call("go_back", {})["data"]
    assert back["navigated"] is True and back["http_status"] == 200 and back["url"].endswith("/a"), back


def test_failed_calls_report_the_tab_and_url_and_no_navigation(call, site) -> None:  # type: ignore[no-untyped-def]
    call("navigate_to_url", {"url": site + "/a"})
    env = call("click", {"selector": "#missing", "timeout_ms": 300})
    assert env["data"]["status"] == "ERROR_TIMEOUT", env
    assert env["data"]["tab_id"] == 1 and env["data"]["url"].endswith("/a") and not env["data"]["navigated"]
    env = call("navigate_to_url", {"url": _closed_port_url()})
    assert env["data"]["status"] == "ERROR_NAVIGATION", env
    assert env["data"]["navigated"] is False and env["data"]["tab_id"] == 1 and env["data"]["url"], env
    env = call("refresh", {"tab_id": 7})
    assert env["data"]["status"] == "ERROR_TAB_NOT_FOUND" and env["data"]["navigated"] is False, env


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ("- {tool: getTabs, input: [1, 2]}\n", "step 1: 'input' of getTabs must be a mapping"),
        ("- {tool: getTabs}\n- {tool: getTabs, input: just text}\n", "step 2: 'input' of getTabs"),
        (
            "- {tool: getTabs}\n- [getTabs]\n",
            "step 2: expected a mapping with 'tool' and 'input', got a list",
        ),
        ("- {tool: noSuchTool}\n", "step 1: unknown browser tool 'noSuchTool'"),
    ],
)
def test_browser_run_names_the_bad_step(
    steps: str,
    expected: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from flows.cli import run

    monkeypatch.chdir(tmp_path)
    path = tmp_path / "steps.yaml"
    path.write_text(steps, encoding="utf-8")
    assert run(["browser", "run", str(path)]) == 2
    captured = capsys.readouterr()
    assert expected in captured.err and "Traceback" not in captured.err + captured.out
    assert "[1]" not in captured.out  # nothing ran


def test_numbers_given_as_strings_are_refused(call, site) -> None:  # type: ignore[no-untyped-def]
    call("navigate_to_url", {"url": site + "/tall"})
    env = call("scroll", {"x": "10", "y": 0})
    assert not env["success"] and env["data"] is None and "x" in env["error"], env
    env = call("getPageText", {"tab_id": "1"})
    assert not env["success"] and "tab_id" in env["error"], env
    env = call("wait_for_element", {"selector": "#bottom", "timeout": "5000"})
    assert not env["success"] and "timeout" in env["error"], env
    env = call("scroll", {"x": 0, "y": 200.5, "timeout_ms": 5000})
    assert env["success"] and env["data"]["scroll_y"] > 0, env


def test_download_cookies_go_only_where_the_browser_would_send_them() -> None:
    import urllib.request
    from http.cookiejar import CookieJar

    from tasks.browser.browser_tools import _fill_jar

    jar = CookieJar()
    _fill_jar(
        jar,
        [
            {"name": "sid", "value": "host-only", "domain": "example.com", "path": "/"},
            {"name": "pref", "value": "shared", "domain": ".example.com", "path": "/"},
        ],
    )

    def sent(url: str) -> str:
        request = urllib.request.Request(url)
        jar.add_cookie_header(request)
        return request.get_header("Cookie") or ""

    assert "sid=host-only" in sent("http://example.com/") and "pref=shared" in sent("http://example.com/")
    assert sent("http://evil.sub.example.com/") == "pref=shared"
    assert sent("http://notexample.com/") == ""
