"""Expectations that wait: text, attribute, count, url and title retry until they hold or time out."""

from __future__ import annotations

import time

import pytest

from tasks.browser.verify import run_checks_sync
from udm.verify import Check

pytestmark = pytest.mark.browser


def test_values_a_page_sets_after_load_pass(site, bctx) -> None:  # type: ignore[no-untyped-def]
    check = Check.model_validate(
        {
            "id": "CHK-LATE",
            "url": "/late",
            "timeout": 5,
            "expect": [
                {"text": {"selector": "#status", "equals": "ready"}},
                {"attribute": {"selector": "#status", "name": "data-state", "equals": "done"}},
                {"count": {"selector": "#items li", "equals": 3}},
                {"url": {"contains": "done=1"}},
                {"title": {"equals": "Ready"}},
            ],
        }
    )
    result = run_checks_sync([check], bctx.settings, base_url=site)[0]
    assert result.status == "PASS", result.failures
    assert result.screenshot is None  # a passing check keeps no screenshot unless it asks


def test_a_value_that_never_matches_fails_within_its_timeout_naming_the_last_value(site, bctx) -> None:  # type: ignore[no-untyped-def]
    checks = [
        Check.model_validate(
            {
                "id": "CHK-TEXT",
                "url": "/late",
                "timeout": 1.5,
                "expect": [{"text": {"selector": "#status", "equals": "never"}}],
            }
        ),
        Check.model_validate(
            {
                "id": "CHK-COUNT",
                "url": "/late",
                "timeout": 1.5,
                "expect": [{"count": {"selector": "#items li", "min": 5}}],
            }
        ),
        Check.model_validate(
            {
                "id": "CHK-GONE",
                "url": "/late",
                "timeout": 1,
                "expect": [{"text": {"selector": "#nothing", "contains": "x"}}],
            }
        ),
    ]
    started = time.perf_counter()
    results = {r.id: r for r in run_checks_sync(checks, bctx.settings, base_url=site, concurrency=3)}
    # Each waits its own timeout at most (plus the page load and the failure's screenshot).
    assert time.perf_counter() - started < 1.5 + 4
    text = results["CHK-TEXT"]
    assert text.status == "FAIL" and text.duration_ms >= 1400, text
    # The last value seen is the one set after load, not the first one read.
    assert "text of '#status' is 'ready', expected it equals \"never\"" in (text.reason or ""), text.reason
    assert "after waiting 1.5 s" in (text.reason or "")
    assert text.screenshot is not None  # a failure keeps its evidence
    assert "count of '#items li' is 3, expected it at least 5" in (results["CHK-COUNT"].reason or "")
    assert "Timed out after 1 s waiting for selector '#nothing'" in (results["CHK-GONE"].reason or "")


def test_a_reused_context_keeps_nothing_from_the_previous_check(site, bctx) -> None:  # type: ignore[no-untyped-def]
    # /state shows the storage and cookies it finds, then sets both, after load and when left (a
    # pagehide handler): every visit must find none.
    clean = {"text": {"selector": "#prev", "equals": "prev:|"}}
    checks = [
        Check.model_validate({"id": "CHK-FIRST", "url": "/state", "expect": [clean]}),
        # No URL of its own: it must start on a blank page, not on the previous check's.
        Check.model_validate(
            {
                "id": "CHK-NEXT",
                "steps": [{"tool": "getTabs", "input": {}}],
                "expect": [{"url": {"equals": "about:blank"}}],
            }
        ),
        Check.model_validate({"id": "CHK-AGAIN", "url": "/state", "expect": [clean]}),
        Check.model_validate({"id": "CHK-THIRD", "url": "/state", "expect": [clean]}),
    ]
    results = run_checks_sync(checks, bctx.settings, base_url=site, concurrency=1)
    assert [r.status for r in results] == ["PASS"] * 4, [r.reason for r in results]
