"""Research test fixtures: the loopback web site and search/Context7 APIs (from tests/fakes), settings."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tasks.base import ToolContext, always_approve
from tests.fakes.research_site import Site, running_site
from tests.fakes.search_apis import SearchApi, running_search_api
from udm.config import Settings, load_settings


@pytest.fixture
def site() -> Iterator[Site]:
    """The loopback web site on 127.0.0.1, plus a trap server on 127.0.0.2 that must never be reached."""
    with running_site() as s:
        yield s


@pytest.fixture(autouse=True)
def _fresh_fetch_state() -> Iterator[None]:
    """Robots.txt cache, host gates and clients are process-wide: each test starts clean."""
    from udm.net import clear_fetch_state

    clear_fetch_state()
    yield
    clear_fetch_state()


@pytest.fixture
def rsettings(workspace: Path) -> Settings:
    """Settings allowing 127.0.0.1 only, fast timeouts, no politeness delay."""
    return load_settings(
        cwd=workspace,
        fetch_allow=["127.0.0.1"],
        fetch_timeout_s=1.0,
        fetch_host_delay_s=0.0,
        retry_max_wait_s=2.0,
    )


@pytest.fixture
def rctx(rsettings: Settings) -> ToolContext:
    """An approve-all tool context over the research settings."""
    return ToolContext(settings=rsettings, approver=always_approve)


@pytest.fixture
def api() -> Iterator[SearchApi]:
    """The fake search/Context7 API server on 127.0.0.1."""
    with running_search_api() as a:
        yield a
