"""The browser tools in real headless Chromium against the loopback site."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from PIL import Image

from tasks.base import Permission, export_schema
from tasks.browser.catalog import browser_tool, browser_tool_names
from tasks.browser.session import normalize_url, pw_selector, resolve_timeout_s, timeout_message
from udm.config import load_settings

pytestmark = pytest.mark.browser

SPEC_002 = [
    "navigate_to_url", "scroll", "refresh", "go_back", "go_forward", "click", "type_text", "hover", "focus",
    "select_option", "extract_text", "extract_links", "extract_data", "extract_table", "extract_form",
    "wait_for_element", "wait_for_condition", "screenshot", "session_memory", "get_element_info",
    "history_tracker", "persistent_cache",
]  # fmt: skip
AGENT_8 = [
    "launchBrowser", "clickElement", "typeText", "scrollPage", "captureScreenshot", "getElementText",
    "checkElementExists", "closeBrowser",
]  # fmt: skip
PAGE_TOOLS = [
    "getPageText",
    "searchOnPage",
    "getPageStructure",
    "getImage",
    "getLinks",
    "getTabs",
    "openInNewTab",
    "getFullPageScreenshot",
]
TAB_TOOLS = ["browser_read_page", "browser_tabs", "browser_cookies", "browser_download"]


def test_every_tool_is_registered_with_schema_and_permission() -> None:
    names = browser_tool_names()
    assert set(SPEC_002 + AGENT_8 + PAGE_TOOLS + TAB_TOOLS) <= set(names)
    assert len(names) == len(set(names)) == 42
    for name in names:
        tool = browser_tool(name)
        assert tool is not None
        schema = export_schema(tool, "anthropic")
        assert schema["input_schema"]["type"] == "object"
    perm = {n: browser_tool(n).permission for n in names}  # type: ignore[union-attr]
    assert perm["getElementText"] is perm["extract_table"] is perm["browser_read_page"] is Permission.SAFE
    assert perm["click"] is perm["typeText"] is perm["navigate_to_url"] is Permission.MODERATE
    assert perm["browser_cookies"] is perm["browser_download"] is Permission.DESTRUCTIVE
    assert perm["wait_for_condition"] is Permission.CRITICAL


def test_helpers_normalise_urls_selectors_and_timeouts(tmp_path: Path) -> None:
    assert normalize_url("example.com/x") == "https://example.com/x"
    assert normalize_url("http://127.0.0.1:8000/") == "http://127.0.0.1:8000/"
    assert normalize_url("about:blank") == "about:blank"
    assert pw_selector("//h1", "xpath") == "xpath=//h1"
    assert pw_selector("xpath=//h1", "css") == "xpath=//h1"
    settings = load_settings(cwd=tmp_path, browser_timeout_s=10, browser_max_timeout_s=30)
    assert resolve_timeout_s(settings) == 10
    assert resolve_timeout_s(settings, 2500) == 2.5
    assert resolve_timeout_s(settings, 600_000) == 30  # capped
    assert (
        timeout_message(10.0, "selector 'button.submit'")
        == "Timed out after 10 s waiting for selector 'button.submit'"
    )


def test_find_browser_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tasks.browser.session as session
    from tasks.browser.session import ActionError, find_browser

    shell, full = tmp_path / "chromium-headless-shell", tmp_path / "chromium"
    monkeypatch.setattr(session, "DEBIAN_HEADLESS_SHELL", str(shell))
    monkeypatch.setattr(session, "DEBIAN_CHROMIUM", str(full))
    plain = load_settings(cwd=tmp_path)
    assert find_browser(plain) is None  # neither installed: Playwright's own
    full.write_text("")
    assert find_browser(plain) == str(full)
    shell.write_text("")
    assert find_browser(plain) == str(shell)  # the headless shell first
    assert find_browser(load_settings(cwd=tmp_path, browser=str(full))) == str(full)  # the setting wins
    with pytest.raises(ActionError, match="does not exist"):
        find_browser(load_settings(cwd=tmp_path, browser=str(tmp_path / "nope")))


def test_bad_input_names_the_field(call) -> None:  # type: ignore[no-untyped-def]
    env = call("getElementText", {"selector_type": "css", "selector_value": ""})
    assert not env["success"] and "selector_value" in env["error"]
    env = call("captureScreenshot", {"quality": 101})
    assert not env["success"] and "quality" in env["error"]
    env = call("scrollPage", {"direction": "to_element"})
    assert not env["success"] and "selector_value is required" in env["error"]
    env = call(
        "clickElement", {"selector_type": "css", "selector_value": "a", "wait_for_navigation_timeout_ms": -1}
    )
    assert not env["success"] and "wait_for_navigation_timeout_ms" in env["error"]


def test_no_page_is_a_clear_error_without_launching(call) -> None:  # type: ignore[no-untyped-def]
    env = call("getElementText", {"selector_type": "css", "selector_value": "h1"})
    assert not env["success"]
    assert env["data"]["status"] == "ERROR_NO_PAGE" and "launchBrowser" in env["error"]


def test_launch_screenshot_by_path_base64_on_request(call, site) -> None:  # type: ignore[no-untyped-def]
    env = call("launchBrowser", {"url": site + "/", "viewport_width": 800, "viewport_height": 600})
    assert env["success"], env
    data = env["data"]
    assert data["page_title"] == "Home" and data["http_status"] == 200 and data["tab_id"] == 1
    assert data["image_base64"] is None
    shot = Path(data["screenshot_path"])
    assert shot.is_file() and "screenshots" in shot.parts
    with Image.open(shot) as img:
        assert img.size == (800, 600)
    env = call(
        "captureScreenshot",
        {"capture_type": "element", "selector_value": "h1", "image_format": "jpeg", "return_base64": True},
    )
    assert env["success"]
    assert base64.b64decode(env["data"]["image_base64"])[:3] == b"\xff\xd8\xff"
    env = call("getFullPageScreenshot", {})
    assert env["success"] and Path(env["data"]["screenshot_path"]).is_file()


def test_form_typing_select_and_submit(call, site) -> None:  # type: ignore[no-untyped-def]
    assert call("navigate_to_url", {"url": site + "/form"})["success"]
    form = call("extract_form", {"selector": "#login"})["data"]
    fields = {f["name"]: f for f in form["fields"]}
    assert form["method"] == "get" and fields["user"]["required"] is True
    assert fields["pw"]["value"] == "********"  # passwords are masked
    assert [o["value"] for o in fields["country"]["options"]] == ["DE", "US"]
    assert fields["remember"]["value"] == "yes"
    env = call("typeText", {"selector_type": "css", "selector_value": "#user", "text_to_type": "ann"})
    assert env["success"] and env["data"]["value"] == "ann"
    env = call(
        "typeText",
        {
            "selector_type": "xpath",
            "selector_value": "//input[@id='user']",
            "text_to_type": "ie",
            "clear_before_type": False,
        },
    )
    assert env["data"]["value"] == "annie"
    env = call("select_option", {"selector": "#country", "value": "United States"})
    assert env["success"] and env["data"]["values"] == ["US"]
    env = call("clickElement", {"selector_type": "css", "selector_value": "button[type=submit]"})
    assert env["success"] and env["data"]["navigated"] is True
    assert "/home?user=annie" in env["data"]["url"]
    assert (
        call("getElementText", {"selector_type": "css", "selector_value": "h1"})["data"]["text"]
        == "Welcome annie"
    )


def test_tables_rows_keyed_by_header(call, site) -> None:  # type: ignore[no-untyped-def]
    call("navigate_to_url", {"url": site + "/table"})
    data = call("extract_table", {"selector": "table.data"})["data"]
    assert data["headers"] == ["Name", "Count"]
    assert data["rows"] == [{"Name": "alpha", "Count": "1"}, {"Name": "beta", "Count": "2"}]
    assert call("extract_table", {"selector": "#nohead"})["data"]["rows"] == [
        {"column_1": "x", "column_2": "y"}
    ]
    env = call("extract_table", {"selector": "table.none"})
    assert env["data"]["status"] == "ERROR_ELEMENT_NOT_FOUND"


def test_content_that_appears_after_a_delay(call, site) -> None:  # type: ignore[no-untyped-def]
    call("navigate_to_url", {"url": site + "/delayed"})
    assert (
        call("checkElementExists", {"selector_type": "css", "selector_value": ".late"})["data"]["count"] == 0
    )
    env = call("wait_for_element", {"selector": ".late", "timeout": 5000})
    assert env["success"] and env["data"]["count"] == 1
    assert (
        call("getElementText", {"selector_type": "css", "selector_value": ".late"})["data"]["text"]
        == "arrived"
    )


def test_navigation_history_and_event_history(call, site) -> None:  # type: ignore[no-untyped-def]
    call("navigate_to_url", {"url": site + "/a"})
    env = call("click", {"selector": "#to-b"})
    assert env["data"]["navigated"] and env["data"]["url"].endswith("/b")
    back = call("go_back", {})["data"]
    assert back["url"].endswith("/a") and back["page_title"] == "Page A"
    fwd = call("go_forward", {})["data"]
    assert fwd["url"].endswith("/b")
    assert call("refresh", {})["data"]["http_status"] == 200
    hist = call("history_tracker", {})["data"]
    actions = [e["action"] for e in hist["events"]]
    assert actions == ["navigate_to_url", "click", "go_back", "go_forward", "refresh"]
    assert all(e["outcome"] == "ok" and e["duration_ms"] >= 0 for e in hist["events"])
    assert call("history_tracker", {"action": "clear"})["data"]["count"] == 5
    assert call("history_tracker", {})["data"]["count"] == 0


def test_link_opening_a_new_tab(call, site) -> None:  # type: ignore[no-untyped-def]
    call("navigate_to_url", {"url": site + "/tabs"})
    env = call("clickElement", {"selector_type": "css", "selector_value": "#newtab"})
    assert env["success"] and env["data"]["opened_tabs"] == [2]
    tabs = call("getTabs", {})["data"]
    assert [t["tab_id"] for t in tabs["tabs"]] == [1, 2] and tabs["active_tab"] == 1
    assert tabs["tabs"][1]["url"].endswith("/b")
    env = call("browser_tabs", {"action": "switch", "tab_id": 2})
    assert env["data"]["active_tab"] == 2
    assert call("getElementText", {"selector_type": "css", "selector_value": "h1"})["data"]["text"] == "B"
    env = call("openInNewTab", {"url": site + "/a", "activate": False})
    assert env["data"]["tab_id"] == 3 and env["data"]["active_tab"] == 2
    env = call("browser_tabs", {"action": "close", "tab_id": 2})
    assert [t["tab_id"] for t in env["data"]["tabs"]] == [1, 3]
    env = call("browser_tabs", {"action": "switch", "tab_id": 9})
    assert env["data"]["status"] == "ERROR_TAB_NOT_FOUND"
    assert (
        browser_tool("browser_tabs").permission_for(
            browser_tool("browser_tabs").Input(action="close", tab_id=1)
        )
        is Permission.DESTRUCTIVE
    )  # type: ignore[union-attr]


def test_download_only_into_allowed_dirs(call, site, bctx, tmp_path) -> None:  # type: ignore[no-untyped-def]
    call("navigate_to_url", {"url": site + "/download"})
    env = call(
        "browser_download",
        {"selector": "#dl", "save_path": str(bctx.settings.scratch_path / "downloads") + "/"},
    )
    assert env["success"], env
    saved = Path(env["data"]["path"])
    assert saved.name == "report.csv" and saved.read_bytes() == b"a,b\n1,2\n"
    env = call("browser_download", {"url": site + "/files/report.csv", "save_path": "scratch/direct.csv"})
    assert env["success"] and env["data"]["mime_type"] == "text/csv" and env["data"]["size_bytes"] == 8
    # No save_path: the scratch folder, under the suggested name.
    env = call("browser_download", {"url": site + "/files/report.csv"})
    assert env["success"] and Path(env["data"]["path"]) == bctx.settings.scratch_path / "report.csv", env
    # Never into the engine's state folder (#17.3).
    env = call("browser_download", {"url": site + "/files/report.csv", "save_path": "state/graph.json"})
    assert not env["success"] and env["data"]["status"] == "ERROR_PATH_NOT_ALLOWED", env
    assert not (bctx.settings.state_path / "graph.json").exists()
    outside = tmp_path.parent / "elsewhere.csv"
    env = call("browser_download", {"url": site + "/files/report.csv", "save_path": str(outside)})
    assert not env["success"] and env["data"]["status"] == "ERROR_PATH_NOT_ALLOWED"
    assert not outside.exists()
    env = call("browser_download", {"url": site + "/x", "selector": "#dl", "save_path": "scratch/x"})
    assert not env["success"] and "exactly one of url or selector" in env["error"]


def test_images_saved_with_original_bytes(call, site) -> None:  # type: ignore[no-untyped-def]
    import httpx

    served = httpx.get(site + "/logo.png").content
    call("navigate_to_url", {"url": site + "/images"})
    env = call("getImage", {"selector": "#logo", "return_base64": True})
    assert env["success"], env
    data = env["data"]
    assert data["method"] == "download" and data["mime_type"] == "image/png" and data["alt"] == "Logo"
    assert Path(data["image_path"]).read_bytes() == served
    assert base64.b64decode(data["image_base64"]) == served
    assert (data["natural_width"], data["natural_height"]) == (40, 30)
    items = call("extract_data", {"selector": "img", "attributes": ["alt", "src"]})["data"]["items"]
    assert [i["attributes"]["alt"] for i in items] == ["Logo", "Thumb"]
    assert items[0]["attributes"]["src"] == "/logo.png"


def test_timeouts_are_readable_errors_in_the_history(call, site) -> None:  # type: ignore[no-untyped-def]
    env = call("navigate_to_url", {"url": site + "/never", "timeout_ms": 1000})
    assert not env["success"]
    assert env["data"]["status"] == "ERROR_TIMEOUT"
    assert env["data"]["errorDetails"] == f"Timed out after 1 s waiting for the page {site}/never to load"
    call("navigate_to_url", {"url": site + "/a"})
    env = call("wait_for_element", {"selector": "button.submit", "timeout": 500})
    assert env["error"] == "ERROR_TIMEOUT: Timed out after 0.5 s waiting for selector 'button.submit'"
    env = call("clickElement", {"selector_type": "css", "selector_value": "button.submit", "timeout_ms": 300})
    assert env["data"]["errorDetails"] == "Timed out after 0.3 s waiting for selector 'button.submit'"
    events = call("history_tracker", {})["data"]
    timeouts = [e for e in events["events"] if e["outcome"] == "timeout"]
    assert [e["action"] for e in timeouts] == ["navigate_to_url", "wait_for_element", "clickElement"]
    assert timeouts[1]["error"] == "Timed out after 0.5 s waiting for selector 'button.submit'"
    assert events["errors"] == 3


def test_page_reading_tools(call, site) -> None:  # type: ignore[no-untyped-def]
    call("navigate_to_url", {"url": site + "/article"})
    text = call("getPageText", {})["data"]
    assert "five minutes" in text["markdown"] and "footer text" not in text["markdown"]
    found = call("searchOnPage", {"query": "FIVE minutes", "context_chars": 20})["data"]
    assert found["total"] == 1 and "caches results for five minutes" in found["matches"][0]["context"]
    bad = call("searchOnPage", {"query": "(", "regex": True})
    assert bad["data"]["status"] == "ERROR_INVALID_QUERY"
    outline = call("getPageStructure", {})["data"]["headings"]
    assert [(h["level"], h["text"]) for h in outline] == [(1, "Cache policy"), (2, "Why"), (2, "How")]
    links = call("getLinks", {"scope": "external"})["data"]
    assert [lk["href"] for lk in links["links"]] == ["https://example.invalid/x"]
    assert call("extract_links", {})["data"]["count"] == 2
    assert call("extract_text", {"selector": "h2"})["data"]["texts"] == ["Why", "How"]
    html = call("browser_read_page", {"mode": "html", "selector": "#how"})["data"]["content"]
    assert html == '<h2 id="how">How</h2>'
    tree = call("browser_read_page", {"mode": "accessibility_tree", "selector": "article"})["data"]
    assert 'heading "Cache policy" [level=1]' in tree["content"] and tree["tree"]
    info = call("get_element_info", {"selector": "xpath=//h1"})["data"]
    assert info["tag"] == "h1" and info["attributes"] == {"id": "top"} and info["bounding_box"]["height"] > 0
    shot = call("browser_read_page", {"mode": "screenshot"})["data"]
    assert Path(shot["screenshot_path"]).is_file()


def test_scrolling_hover_focus_and_condition(call, site) -> None:  # type: ignore[no-untyped-def]
    call("navigate_to_url", {"url": site + "/tall"})
    assert call("scroll", {"x": 0, "y": 300})["data"]["scroll_y"] == 300
    down = call("scrollPage", {"direction": "down", "pages": 2})["data"]
    assert down["scroll_y"] == 300 + 2 * 800 and down["page_height"] > 5000
    assert call("scrollPage", {"direction": "up"})["data"]["scroll_y"] == 300 + 800
    assert (
        call("scrollPage", {"direction": "to_element", "selector_value": "#bottom"})["data"]["scroll_y"]
        > 4000
    )
    assert call("hover", {"selector": "#hov"})["success"]
    assert (
        call("getElementText", {"selector_type": "css", "selector_value": "#hov"})["data"]["text"]
        == "hovered"
    )
    assert call("focus", {"selector": "#hov"})["success"]
    env = call("wait_for_condition", {"condition": "document.activeElement.id === 'hov'", "timeout": 2000})
    assert env["success"] and env["data"]["value"] is True
    env = call("wait_for_condition", {"condition": "window.neverTrue === 1", "timeout": 300})
    assert env["data"]["errorDetails"].startswith("Timed out after 0.3 s waiting for condition")


def test_session_memory_cookies_and_persistent_cache(call, site, bctx) -> None:  # type: ignore[no-untyped-def]
    assert call("session_memory", {"action": "set", "key": "user", "value": {"n": 1}})["success"]
    assert call("session_memory", {"action": "get", "key": "user"})["data"]["value"] == {"n": 1}
    assert call("session_memory", {"action": "get", "key": "nope"})["data"]["found"] is False
    env = call("session_memory", {"action": "set", "key": "x"})
    assert not env["success"] and "value is required" in env["error"]
    assert call("session_memory", {"action": "clear"})["data"]["count"] == 0
    call("navigate_to_url", {"url": site + "/cookie"})
    cookies = call("browser_cookies", {"domain": "127.0.0.1"})["data"]["cookies"]
    assert [(c["name"], c["value"]) for c in cookies] == [("session", "abc123")]
    assert call("browser_cookies", {"domain": "example.com"})["data"]["cookies"] == []
    assert call("persistent_cache", {"action": "set", "key": "theme", "value": "dark"})["success"]
    cache_file = bctx.settings.state_path / "browser-cache" / "cache.json"
    assert cache_file.is_file()
    # A fresh tool instance (as after a restart) reads what was stored.
    from tasks.base import call_tool
    from tasks.browser.memory import PersistentCacheTool

    env = call_tool(PersistentCacheTool(), {"action": "get", "key": "theme"}, bctx).envelope
    assert env.data and env.data["value"] == "dark" and env.data["found"] is True
    assert call("persistent_cache", {"action": "clear"})["data"]["count"] == 0
