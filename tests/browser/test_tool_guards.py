"""Guards of the browser tools: allowed URL schemes, download limits, failures that leave clean state."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.browser.session import ActionError, normalize_url
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
