"""Tell someone a review is waiting: a Prefect event always, a webhook and a notification block if set.

Every waiting review emits the event `udm.review.waiting` (resource: the paused flow run), so a
Prefect automation can act on it. `review_webhook_url` gets a JSON POST; `review_notify_block` names
a saved Prefect notification block (Slack, Teams, a custom webhook ...) whose `notify` is called. A
notification that fails is logged and never fails the run: the review still waits in the UI.
"""

from __future__ import annotations

from typing import Any

import httpx
from prefect import get_run_logger
from prefect.events import emit_event

from flows.approval import PausedRun, flow_run_url
from udm.config import Settings

__all__ = ["notify_review_waiting", "review_note"]

# A webhook that does not answer within this long is not waited for.
_WEBHOOK_TIMEOUT_S = 10.0


def review_note(
    runs: list[PausedRun], *, subject: str, what: dict[str, Any], timeout_s: int
) -> dict[str, Any]:
    """The JSON a webhook receives: what waits, where to review it, for how long."""
    urls = [flow_run_url(r.flow_run_id) for r in runs]
    return {
        "event": "udm.review.waiting",
        "subject": subject,
        **what,
        "flow_run_id": str(runs[0].flow_run_id),
        "flow_run_url": urls[0],
        # Where a person watching looks: the outermost run (a pipeline or research run) first.
        "review_url": urls[-1] or urls[0],
        "paused_runs": [str(r.flow_run_id) for r in runs],
        "timeout_s": timeout_s,
    }


def notify_review_waiting(
    settings: Settings, runs: list[PausedRun], *, subject: str, what: dict[str, Any], timeout_s: int
) -> None:
    """Emit the event and send the configured notifications; failures are logged, never raised."""
    logger = get_run_logger()
    note = review_note(runs, subject=subject, what=what, timeout_s=timeout_s)
    try:
        emit_event(
            event="udm.review.waiting",
            resource={"prefect.resource.id": f"prefect.flow-run.{runs[0].flow_run_id}"},
            payload=note,
        )
    except Exception as exc:  # the event stream is optional
        logger.warning("could not emit udm.review.waiting: %s", exc)
    if settings.review_webhook_url:
        try:
            response = httpx.post(settings.review_webhook_url, json=note, timeout=_WEBHOOK_TIMEOUT_S)
            response.raise_for_status()
        except httpx.HTTPError as exc:
            logger.warning("review webhook %s failed: %s", settings.review_webhook_url, exc)
    if settings.review_notify_block:
        body = f"{subject}\nReview it: {note['review_url'] or note['flow_run_id']}"
        try:
            from prefect.blocks.core import Block

            block: Any = Block.load(settings.review_notify_block)
            block.notify(body, subject=subject)
        except Exception as exc:  # a missing block or a failed send: say so, keep waiting
            logger.warning("review notification block %s failed: %s", settings.review_notify_block, exc)
