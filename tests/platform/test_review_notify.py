"""A waiting review notifies: a JSON POST to the configured webhook and a saved Prefect notification block."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fakes.webhooks import running_webhook
from udm.config import Settings
from udm.patch import parse_patch

pytestmark = pytest.mark.prefect


@pytest.fixture
def hook() -> Iterator[tuple[str, list[tuple[str, Any]]]]:
    """A loopback HTTP server recording every POST as (path, JSON body) (tests/fakes/webhooks.py)."""
    with running_webhook() as receiver:
        yield receiver


def test_a_waiting_review_calls_the_webhook_and_the_block(
    prefect_server: None,
    settings: Settings,
    reviewer: Any,
    hook: tuple[str, list[tuple[str, Any]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from prefect.blocks.notifications import CustomWebhookNotificationBlock

    from flows.udm_update import run_update

    base, received = hook
    CustomWebhookNotificationBlock(
        name="udm-reviews", url=f"{base}/block", json_data={"text": "{{subject}}|{{body}}"}
    ).save("udm-review-hook", overwrite=True)
    monkeypatch.setenv("UDM_REVIEW_WEBHOOK_URL", f"{base}/webhook")
    monkeypatch.setenv("UDM_REVIEW_NOTIFY_BLOCK", "custom-webhook/udm-review-hook")
    patch = parse_patch(
        {
            "id": "notify-me",
            "description": "Raise the timeout",
            "operations": [
                {"op": "replace_text", "file": "06-config.md", "old": "timeout: 10", "new": "timeout: 20"}
            ],
        }
    )
    thread, seen = reviewer({"approve": False, "reviewer": "ann"})
    result = run_update(patch, settings, policy="ask_always", poll_interval_s=1)
    thread.join(5)
    assert result.status == "rejected", result
    # Both were told while the run waited (the notifications go out before its first poll).
    assert sorted(path for path, _ in received) == ["/block", "/webhook"]
    by_path = dict(received)
    note = by_path["/webhook"]
    assert note["event"] == "udm.review.waiting" and note["patch_id"] == "notify-me"
    assert note["diff_artifact_key"] == "udm-patch-notify-me-diff" and note["files"] == ["06-config.md"]
    assert note["flow_run_id"] == str(seen["run_id"]) == result.flow_run_id
    assert note["review_url"] and result.flow_run_id in note["review_url"]
    text = by_path["/block"]["text"]
    assert text.startswith("Review waiting: patch notify-me: Raise the timeout|")
    assert result.flow_run_id in text


def test_a_dead_webhook_does_not_fail_the_review(
    prefect_server: None, settings: Settings, reviewer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flows.udm_update import run_update

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("UDM_REVIEW_WEBHOOK_URL", f"http://127.0.0.1:{port}/nobody")
    monkeypatch.setenv("UDM_REVIEW_NOTIFY_BLOCK", "custom-webhook/no-such-block")
    patch = parse_patch(
        {
            "id": "notify-dead",
            "description": "d",
            "operations": [
                {"op": "replace_text", "file": "06-config.md", "old": "timeout: 10", "new": "timeout: 30"}
            ],
        }
    )
    thread, _seen = reviewer({"approve": True, "reviewer": "ann"})
    result = run_update(patch, settings, policy="ask_always", poll_interval_s=1)
    thread.join(5)
    assert result.status == "committed", result


def test_the_waiting_event_keeps_its_published_name(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Automations and webhook receivers match this exact name: moving the code into packages must not
    # rename it (the package move once rewrote it to `udm.verify.review.waiting` as if it were a module).
    import logging
    import uuid

    import flows.notify as notify
    from flows.approval import PausedRun

    emitted: list[dict[str, Any]] = []
    monkeypatch.setattr(notify, "emit_event", lambda **kw: emitted.append(kw))
    monkeypatch.setattr(notify, "get_run_logger", lambda: logging.getLogger("test"))
    run = PausedRun(flow_run_id=uuid.uuid4(), keyset={})
    quiet = settings.model_copy(update={"review_webhook_url": None, "review_notify_block": None})

    notify.notify_review_waiting(quiet, [run], subject="s", what={"patch_id": "p"}, timeout_s=5)

    assert [e["event"] for e in emitted] == ["udm.review.waiting"]
    assert emitted[0]["payload"]["event"] == "udm.review.waiting"
    assert notify.review_note([run], subject="s", what={}, timeout_s=5)["event"] == "udm.review.waiting"
