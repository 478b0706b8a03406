"""Browser test fixtures: the loopback site (tests/fakes/static_site.py), a shared browser, sessions."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tasks.base import ToolContext, always_approve, call_tool, run_coroutine
from tasks.browser.catalog import browser_tool
from tests.fakes.static_site import running_static_site
from udm.config import load_settings
from udm.index.links import LinkSource


def external_link(url: str, line: int = 1) -> LinkSource:
    """An external link of a.md, as the link extractor reports one."""
    return LinkSource(file="a.md", line=line, text="t", target=url, kind="external")


@pytest.fixture(scope="session")
def site() -> Iterator[str]:
    """Base URL of the loopback test site (one server for the session)."""
    with running_static_site() as base:
        yield base


@pytest.fixture(scope="session")
def shared_browser() -> Iterator[None]:
    """One Chromium for every browser test; closed once at the end of the session."""
    from tasks.browser.session import MANAGER

    yield
    run_coroutine(MANAGER.shutdown(), timeout=30)


@pytest.fixture
def bctx(tmp_path: Path, shared_browser: None) -> ToolContext:
    """A tool context whose state folder is this test's tmp dir; the loopback test site is allow-listed."""
    (tmp_path / "docs" / "udm").mkdir(parents=True, exist_ok=True)
    # The SSRF guard refuses loopback by default: the tests allow the test site's address explicitly.
    settings = load_settings(cwd=tmp_path, fetch_allow=["127.0.0.1"])
    return ToolContext(settings=settings, approver=always_approve)


@pytest.fixture
def sid(request: pytest.FixtureRequest, bctx: ToolContext) -> Iterator[str]:
    """A session ID unique to the test; the session is closed afterwards."""
    from tasks.browser.session import MANAGER

    name = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name)[:80] + f"-{time.monotonic_ns() % 100000}"
    yield name
    run_coroutine(MANAGER.close_session(name), timeout=30)


def _call(name: str, data: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    tool = browser_tool(name)
    assert tool is not None, name
    return call_tool(tool, data, ctx).envelope.model_dump()


@pytest.fixture
def call(bctx: ToolContext, sid: str) -> Any:
    """call(name, input) -> envelope dict, in this test's session and context."""

    def run(name: str, data: dict[str, Any] | None = None, ctx: ToolContext | None = None) -> dict[str, Any]:
        payload = dict(data or {})
        tool = browser_tool(name)
        assert tool is not None, name
        if "session_id" in tool.Input.model_fields:
            payload.setdefault("session_id", sid)
        return _call(name, payload, ctx or bctx)

    return run
