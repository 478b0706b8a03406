"""udm_update_flow: plan a patch -> diff artifacts -> approval (pause) -> commit in a Prefect transaction -> re-index.

`run_update(patch, settings, ...)` is the Python entry point other flows (research) use to write
into the manual: it runs this flow and returns an UpdateResult.

The plan and the commit are udmUpdaterTool calls through `call_tool`, as the CLI and MCP make them:
the tool's input model, its permission level, the call log and the envelope are theirs. The approval
is this flow's pause (a person approves in the Prefect UI after reading the diff); its record (who,
when, the digests of the diff read and of the commit's input) reaches the commit as the call's
`ToolContext.review`, which only in-process code sets, so `call_tool` logs it and does not ask again.
The rollback hook stays a direct engine call (`revert_patch`): it runs inside Prefect's rollback,
where it must never raise and must report the engine's own error text. The flow then writes the
revert's call-log line (`tasks.udm_updater.log_revert`), so the log does not end at the commit.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, Literal

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run as runtime_flow_run
from prefect.states import Completed, Failed, State
from prefect.transactions import Transaction, get_transaction, transaction
from pydantic import BaseModel, Field

from flows.approval import Approval, ApprovalExpiredError, PausedRun, flow_run_url, wait_for_approval
from flows.notify import notify_review_waiting
from flows.run_settings import SettingsParameter, run_policy
from flows.states import state_result
from flows.update_artifacts import artifact_key, artifact_link, plain, publish_plan
from tasks.base import (
    ApprovalUnavailableError,
    Approver,
    Permission,
    Review,
    ToolContext,
    approval_request,
    call_tool,
    input_digest,
    needs_approval,
    plans_only,
    process_policy,
)
from tasks.udm_updater import UdmUpdaterInput, UdmUpdaterOutput, UdmUpdaterTool, log_revert
from udm.config import ApprovalPolicy, Settings
from udm.errors import ConfigError
from udm.patch import Patch, PatchResult, revert_patch

__all__ = [
    "SETTINGS",
    "Approval",
    "UpdateOptions",
    "UpdateResult",
    "artifact_key",
    "review_here",
    "run_update",
    "state_result",
    "udm_update_flow",
    "update_state",
    "update_steps",
]

# The settings a caller's Settings hands to the flow, and the only ones a run may set: paths.
SETTINGS = SettingsParameter(
    passed=("project_root", "root", "state_dir", "logs_dir", "id_patterns", "lock_timeout_s"),
    only_passed=True,
)
# Where the rollback hook leaves the revert's outcome for update_steps (a dict: status, error, revert_id).
_REVERT_KEY = "udm_revert_outcome"


class UpdateOptions(BaseModel):
    """How the update flow runs."""

    approval_policy: ApprovalPolicy | None = Field(
        default=None,
        description="ask_always | smart_auto | full_auto; may only make the policy of the process "
        "running the flow (UDM_APPROVAL_POLICY) stricter, never laxer.",
    )
    approval_timeout_s: int = Field(
        default=3600, ge=1, le=7 * 24 * 3600, description="How long to wait for a reviewer; then Expired."
    )
    poll_interval_s: int = Field(
        default=10, ge=1, le=600, description="How often a paused run checks for input."
    )
    reindex: bool = Field(default=True, description="Refresh the DuckDB index after the commit.")


class UpdateResult(BaseModel):
    """The outcome of one update flow run."""

    status: Literal[
        "committed",
        "unchanged",
        "rejected",
        "expired",
        "conflict",
        "invalid",
        "lock_timeout",
        "error",
        "rolled_back",
    ] = Field(description="What happened.")
    message: str = Field(default="", description="A line saying why.")
    patch_id: str = Field(description="The patch's id.")
    patch: PatchResult | None = Field(default=None, description="The transaction report (plan or commit).")
    approval: dict[str, Any] | None = Field(default=None, description="The reviewer's answer, when asked.")
    review: dict[str, Any] | None = Field(
        default=None, description="What the patch record stores: policy, reviewer, comment, when, flow run."
    )
    reindexed: bool = Field(default=False, description="Whether the index was refreshed.")
    flow_run_id: str | None = Field(default=None, description="The Prefect flow run.")
    artifacts: list[str] = Field(
        default_factory=list, description="Ids of the diff (markdown) and operations (table) artifacts."
    )


# The final state of each status: Prefect users hang notifications and automations on these.
_STATES: dict[str, tuple[bool, str | None]] = {
    "committed": (True, None),
    "unchanged": (True, "Unchanged"),
    "rejected": (True, "Rejected"),
    "expired": (False, "Expired"),
    "invalid": (False, "Invalid"),
    "conflict": (False, "Conflict"),
    "lock_timeout": (False, "LockTimeout"),
    "error": (False, None),
    "rolled_back": (False, "RolledBack"),
}


def update_state(result: UpdateResult) -> State[Any]:
    """The flow run's final state for this result; the result stays its data."""
    ok, name = _STATES[result.status]
    message = f"patch {result.patch_id}: {result.status}" + (f": {result.message}" if result.message else "")
    if ok:
        return Completed(data=result, name=name or "Completed", message=message)
    return Failed(data=result, name=name or "Failed", message=message)


def _commit_input(planned: Patch) -> dict[str, Any]:
    """The updater's input that commits the planned patch (the fields it was given, its `expect` hashes)."""
    return {"patch": planned.model_dump(mode="json", exclude_unset=True)}


def _call_updater(
    raw: dict[str, Any], settings: Settings, patch: Patch, review: Review | None
) -> PatchResult:
    """One udmUpdaterTool call through the tool contract; the engine's report, or an error report
    saying why the call was refused before the engine ran."""
    result = call_tool(
        UdmUpdaterTool(), raw, ToolContext(settings=settings, approver=plans_only, review=review)
    )
    out = result.output
    if isinstance(out, UdmUpdaterOutput) and out.report is not None:
        return out.report
    refused_input = result.decision == "invalid" or isinstance(out, UdmUpdaterOutput)
    return PatchResult(
        patch_id=patch.id,
        status="invalid" if refused_input else "error",
        description=patch.description,
        destructive=patch.destructive,
        error=result.envelope.error or "udmUpdaterTool refused the call",
    )


@task(name="plan-patch", cache_policy=NO_CACHE)
def plan_patch_task(patch: Patch, settings: Settings) -> PatchResult:
    """Load-validate-dry-run: per-operation status, files, unified diff, preconditions."""
    raw = {"patch": patch.model_dump(mode="json", exclude_unset=True), "dry_run": True}
    return _call_updater(raw, settings, patch, None)


@task(name="commit-patch", cache_policy=NO_CACHE)
def commit_patch_task(
    planned: Patch, settings: Settings, review: dict[str, Any] | None = None
) -> PatchResult:
    """Apply the planned patch as one transaction (its preconditions make drift a conflict); `review`
    is this run's approval of exactly that input, stored in the patch record."""
    approval = Review.model_validate(review) if review is not None else None
    result = _call_updater(_commit_input(planned), settings, planned, approval)
    if result.committed:
        txn = get_transaction()
        if txn is not None:
            txn.set("patch_id", result.patch_id)
            txn.set("settings", SETTINGS.dump(settings))
    return result


@commit_patch_task.on_rollback
def _undo_commit(txn: Transaction) -> None:
    """A later step failed: revert the committed patch (itself a transaction) and record how that went."""
    patch_id = txn.get("patch_id", None)
    if not patch_id:
        return
    outcome: dict[str, Any]
    started = time.perf_counter()
    try:
        result = revert_patch(patch_id, SETTINGS.load(txn.get("settings")))
        why = result.error or f"the revert ended {result.status}"
        outcome = {"status": result.status, "error": why, "revert_id": result.patch_id}
    except Exception as exc:  # a raising hook would leave the flow nothing to report
        outcome = {"status": "error", "error": f"{type(exc).__name__}: {exc}", "revert_id": None}
    outcome["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
    # The hook gets the task's own transaction; update_steps holds the enclosing one.
    for holder in (txn, txn.get_parent()):
        if holder is not None:
            holder.set(_REVERT_KEY, outcome)
    if outcome["status"] != "committed":
        # The hook cannot fail the flow again; say loudly what is left to do by hand.
        get_run_logger().error("could not revert patch %s: %s", patch_id, outcome["error"])


@task(name="reindex", cache_policy=NO_CACHE)
def reindex_task(settings: Settings, paths: list[str]) -> bool:
    """Refresh the index for the changed files (when the engine's index module is installed)."""
    return _reindex(settings, paths)


def _reindex(settings: Settings, paths: list[str]) -> bool:
    # The engine's index (udm/index/core.py) may be absent in a trimmed install; the files are the truth.
    try:
        from udm.index import UdmIndex
    except ImportError:
        return False
    index = UdmIndex(settings)
    try:
        index.refresh()
    finally:
        index.close()
    return True


@flow(name="udm-update", log_prints=False, persist_result=False)
def udm_update_flow(
    patch: Patch, options: UpdateOptions | None = None, settings_overrides: dict[str, Any] | None = None
) -> State[Any]:
    """Plan, show, approve, commit (rolled back if a later step fails) and re-index one patch.

    Ends Completed (committed), Completed "Unchanged" or "Rejected", or Failed ("Expired", "Invalid",
    "Conflict", ...); the UpdateResult is the state's data (`state_result`)."""
    try:
        settings = SETTINGS.load(settings_overrides)
    except ConfigError as exc:
        run_id = str(runtime_flow_run.id) if runtime_flow_run.id else None
        return update_state(
            UpdateResult(status="invalid", message=str(exc), patch_id=patch.id, flow_run_id=run_id)
        )
    return update_state(update_steps(patch, options or UpdateOptions(), settings))


class _Outcome:
    """Builds the run's UpdateResult, logging it: the patch, the run and the artifacts published so far."""

    def __init__(self, patch: Patch) -> None:
        self.patch_id = patch.id
        self.run_id = str(runtime_flow_run.id) if runtime_flow_run.id else None
        self.artifacts: list[str] = []

    def __call__(self, status: Any, message: str, **extra: Any) -> UpdateResult:
        """Log and build the run's result."""
        get_run_logger().info("patch %s: %s %s", self.patch_id, status, message)
        return UpdateResult(
            status=status,
            message=message,
            patch_id=self.patch_id,
            flow_run_id=self.run_id,
            artifacts=self.artifacts,
            **extra,
        )


def _ask(
    patch: Patch,
    plan: PatchResult,
    permission: Permission,
    options: UpdateOptions,
    done: _Outcome,
    settings: Settings,
) -> Approval | None:
    """Pause this run (and those above it) until a reviewer answers; the answer (None: resumed without
    one). ApprovalExpiredError when nobody answered in time."""
    link = artifact_link(done.artifacts[0], artifact_key(patch.id) + "-diff")
    prompt = Approval.with_initial_data(
        description=f"Approve patch `{patch.id}` ({permission.value}): {plain(patch.description)}\n\n"
        f"Read the diff first: {link}.",
        approve=False,
    )

    def tell(runs: list[PausedRun]) -> None:
        """Notify whoever the settings name that this review waits."""
        what = {
            "patch_id": patch.id,
            "description": patch.description,
            "permission": permission.value,
            "diff_artifact_key": artifact_key(patch.id) + "-diff",
            "files": [f.path for f in plan.files],
        }
        subject = f"Review waiting: patch {patch.id}: {' '.join(patch.description.split())[:120]}"
        notify_review_waiting(
            settings, runs, subject=subject, what=what, timeout_s=options.approval_timeout_s
        )

    return wait_for_approval(
        prompt, timeout_s=options.approval_timeout_s, poll_interval_s=options.poll_interval_s, on_paused=tell
    )


# A reviewer in this process (a terminal), set by the caller holding the settings (`review_here`).
_REVIEWER_HERE: contextvars.ContextVar[Approver | None] = contextvars.ContextVar(
    "udm_reviewer_here", default=None
)


@contextlib.contextmanager
def review_here(approver: Approver) -> Iterator[None]:
    """Within this block, a review the update steps need is asked of `approver` in this process (e.g.
    the terminal, when the run's temporary Prefect server has no UI to approve in) instead of pausing."""
    token = _REVIEWER_HERE.set(approver)
    try:
        yield
    finally:
        _REVIEWER_HERE.reset(token)


def _ask_here(
    approver: Approver, plan: PatchResult, commit: dict[str, Any], permission: Permission, digest: str
) -> Approval:
    """The review asked in this process: udmUpdaterTool's own approval request for the commit, with the
    plan's diff under it; the answer as a reviewer's in the UI would be."""
    data = UdmUpdaterInput.model_validate(commit)
    request = approval_request(UdmUpdaterTool(), data, permission, digest)
    shown = request.model_copy(update={"summary": f"{request.summary}\n\n{plan.diff}".rstrip()})
    try:
        approved = approver(shown)
    except ApprovalUnavailableError as exc:
        return Approval(approve=False, reviewer="", comment=f"approval required: {exc}")
    who = f"{os.environ.get('USER') or os.environ.get('USERNAME') or 'someone'} at the terminal"
    return Approval(
        approve=approved, reviewer=who, comment="" if approved else "not approved at the terminal"
    )


def _review(
    patch: Patch,
    plan: PatchResult,
    planned: Patch,
    options: UpdateOptions,
    done: _Outcome,
    settings: Settings,
) -> tuple[dict[str, Any], Approval | None, UpdateResult | None]:
    """(the review the patch record stores, the reviewer's answer, the run's result when the review
    ended it: expired or rejected). No answer is asked for when the policy lets the patch through.

    The permission is the tool's for the commit's input; the review names that input's digest (the
    one call it approves) and the digest of the diff the reviewer was shown."""
    policy = settings.approval_policy
    commit = _commit_input(planned)
    permission = UdmUpdaterTool().permission_for(UdmUpdaterInput.model_validate(commit))
    review: dict[str, Any] = {
        "policy": policy.value,
        "decision": "auto",
        "input_digest": input_digest(commit),
        "diff_digest": "sha256:" + hashlib.sha256(plan.diff.encode("utf-8", "surrogatepass")).hexdigest(),
        "reviewer": None,
        "comment": "",
        "decided_at": None,
        "flow_run_id": done.run_id,
        "flow_run_url": flow_run_url(done.run_id),
    }
    if not needs_approval(policy, permission):
        return review, None, None
    here = _REVIEWER_HERE.get()
    try:
        if here is not None:
            answer: Approval | None = _ask_here(here, plan, commit, permission, review["input_digest"])
        else:
            answer = _ask(patch, plan, permission, options, done, settings)
    except ApprovalExpiredError:
        why = f"nobody decided within {options.approval_timeout_s} s; nothing was changed"
        return review, None, done("expired", why, patch=plan)
    review.update(
        decision="approved" if answer is not None and answer.approve else "rejected",
        reviewer=answer.reviewer if answer else None,
        comment=answer.comment if answer else "",
        decided_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    if answer is None or not answer.approve:
        info = answer.model_dump(include={"approve", "reviewer", "comment"}) if answer else None
        why = (answer.comment if answer else "") or "rejected by the reviewer"
        return review, answer, done("rejected", why, patch=plan, approval=info, review=review)
    return review, answer, None


def _commit(
    planned: Patch,
    plan: PatchResult,
    options: UpdateOptions,
    settings: Settings,
    review: dict[str, Any],
    approval: dict[str, Any] | None,
    done: _Outcome,
) -> UpdateResult:
    """Commit the planned patch and re-index in one Prefect transaction: a failed re-index reverts it."""
    txn: Transaction | None = None
    committed: PatchResult | None = None
    try:
        with transaction() as txn:
            committed = commit_patch_task(planned, settings, review)
            if not committed.committed:
                return done(committed.status, committed.error or "", patch=committed, approval=approval)
            reindexed = (
                reindex_task(settings, [f.path for f in committed.files]) if options.reindex else False
            )
    except Exception as exc:  # the transaction rolled back; the hook recorded whether its revert committed
        outcome = txn.get(_REVERT_KEY, None) if txn is not None else None
        if committed is not None and committed.committed:
            # Without this line the call log showed the commit's SUCCESS and nothing after it.
            undone = {"reverts": review["input_digest"], "cause": f"{type(exc).__name__} after the commit"}
            log_revert(settings, committed.patch_id, outcome, **undone, flow_run_id=done.run_id)
        if outcome is not None and outcome["status"] == "committed":
            return done(
                "rolled_back",
                f"a step after the commit failed, so it was reverted by {outcome['revert_id']}: {exc}",
                patch=plan,
                approval=approval,
            )
        if committed is None or not committed.committed:
            return done("error", f"the commit step failed: {exc}", patch=plan, approval=approval)
        why = outcome["error"] if outcome is not None else "the rollback hook did not run"
        return done(
            "error",
            f"committed, revert failed: {why}; patch {planned.id} stays applied "
            f"(a step after the commit failed: {exc})",
            patch=committed,
            approval=approval,
        )
    return done(
        "committed",
        f"{len(committed.files)} file(s) changed",
        patch=committed,
        approval=approval,
        reindexed=reindexed,
        review=review,
    )


def update_steps(patch: Patch, options: UpdateOptions, settings: Settings) -> UpdateResult:
    """The update flow's steps inside the current flow run: plan, artifacts, approval, commit, re-index.

    udm_update_flow is these steps as their own run; research_flow runs them inside its own run, since
    a subflow's first API write waits until the server has recorded every task run before it (seconds
    after a 200-source fan-out). The pause for approval pauses whichever run called this.
    """
    done = _Outcome(patch)
    # The tool calls decide approval under this run's policy (the process's, made only stricter).
    settings = settings.model_copy(update={"approval_policy": run_policy(settings, options.approval_policy)})
    plan = plan_patch_task(patch, settings)
    if not plan.ok:
        return done(plan.status, plan.error or "", patch=plan)
    done.artifacts = publish_plan(plan, patch)
    if not plan.files:
        return done("unchanged", "the manual already reads as the patch asks", patch=plan)
    planned = Patch.model_validate(plan.planned_patch)
    review, answer, ended = _review(patch, plan, planned, options, done, settings)
    if ended is not None:
        return ended
    approval = answer.model_dump(include={"approve", "reviewer", "comment"}) if answer else None
    return _commit(planned, plan, options, settings, review, approval, done)


def run_update(
    patch: Patch,
    settings: Settings,
    *,
    policy: ApprovalPolicy | str | None = None,
    approval_timeout_s: int = 3600,
    poll_interval_s: int = 10,
    reindex: bool = True,
) -> UpdateResult:
    """Write a patch into the manual through the update flow; the flow's result.

    The caller holds the settings, so it is the side running the flow: `policy` (default: the settings'
    policy) is this process's policy for the run, not a parameter a triggered run could send."""
    overrides = SETTINGS.dump(settings)
    options = UpdateOptions(
        approval_timeout_s=approval_timeout_s, poll_interval_s=poll_interval_s, reindex=reindex
    )
    with process_policy(policy or settings.approval_policy):
        state = udm_update_flow(patch=patch, options=options, settings_overrides=overrides, return_state=True)
    result: UpdateResult = state_result(state)
    return result
