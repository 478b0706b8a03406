"""Schedule tools (schedule_task / schedule_list in spirit): create, list, pause and resume deployment schedules.

Schedules live on Prefect deployments (see prefect.yaml and `udm serve`): a recurring schedule is a
deployment schedule (cron, or an interval such as "every 15 minutes") with its own slug and
parameters; a one-time schedule ("in 2 hours", "at 15:30") is one flow run scheduled for that time,
gone once it ran. Prefect is imported inside execute(), never at module level.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from tasks.base import Permission, Tool, ToolContext, ToolInput, ToolStatusError

__all__ = [
    "ParsedSchedule",
    "ScheduleCreateTool",
    "ScheduleListTool",
    "SchedulePauseTool",
    "ScheduleResumeTool",
    "ScheduleStatus",
    "parse_schedule",
]

ONE_TIME_TAG = "udm-one-time"
_UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 604800}
_WEEKDAYS = {
    d: i for i, d in enumerate(["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"])
}
_CRON_FIELD = r"[\d*/,\-A-Za-z?]+"
_CRON = re.compile(rf"^\s*{_CRON_FIELD}(\s+{_CRON_FIELD}){{4}}\s*$")
_TIME = r"(\d{1,2})(?::(\d{2}))?\s*(am|pm)?"


class ScheduleStatus(StrEnum):
    """Outcome of a schedule tool call."""

    SUCCESS = "SUCCESS"
    ERROR_INVALID_SCHEDULE = "ERROR_INVALID_SCHEDULE"
    ERROR_DEPLOYMENT_NOT_FOUND = "ERROR_DEPLOYMENT_NOT_FOUND"
    ERROR_SCHEDULE_NOT_FOUND = "ERROR_SCHEDULE_NOT_FOUND"
    ERROR_SCHEDULE_EXISTS = "ERROR_SCHEDULE_EXISTS"
    ERROR_SERVER_UNAVAILABLE = "ERROR_SERVER_UNAVAILABLE"


class ParsedSchedule(BaseModel):
    """A schedule string understood: recurring (cron or interval) or one time (run_at)."""

    type: Literal["recurring", "one_time"] = Field(description="recurring or one_time.")
    cron_expression: str | None = Field(default=None, description="Cron, for cron schedules.")
    interval_seconds: float | None = Field(default=None, description="Interval, for 'every N ...'.")
    run_at: datetime | None = Field(default=None, description="When a one-time run starts (UTC).")


def _clock(hour: str, minute: str | None, ampm: str | None) -> tuple[int, int]:
    h, m = int(hour), int(minute or 0)
    if ampm == "pm" and h < 12:
        h += 12
    if ampm == "am" and h == 12:
        h = 0
    if not (0 <= h < 24 and 0 <= m < 60):
        raise ValueError(f"{hour}:{minute or '00'} is not a time of day")
    return h, m


def parse_schedule(text: str, now: datetime | None = None) -> ParsedSchedule:
    """Parse cron, 'every N minutes/hours/days', 'every monday at 2pm', 'in 5 minutes', 'at 15:30'."""
    now = now or datetime.now(UTC)
    s = " ".join(text.strip().lower().split())
    if _CRON.match(s) and not s.startswith(("every", "in ", "at ", "after ")):
        return ParsedSchedule(type="recurring", cron_expression=text.strip())
    m = re.fullmatch(r"every (\d+) (second|minute|hour|day|week)s?", s) or re.fullmatch(
        r"every (an? )?(second|minute|hour|day|week)", s
    )
    if m:
        count = int(m.group(1)) if m.group(1) and m.group(1).strip().isdigit() else 1
        if count < 1:
            raise ValueError("the interval must be at least 1")
        return ParsedSchedule(type="recurring", interval_seconds=count * _UNIT_SECONDS[m.group(2)])
    m = re.fullmatch(rf"(?:every (?:day|morning|evening|night)|daily) at {_TIME}", s)
    if m:
        h, mi = _clock(*m.groups())
        return ParsedSchedule(type="recurring", cron_expression=f"{mi} {h} * * *")
    m = re.fullmatch(rf"every (weekday|{'|'.join(_WEEKDAYS)}) at {_TIME}", s)
    if m:
        h, mi = _clock(m.group(2), m.group(3), m.group(4))
        days = "1-5" if m.group(1) == "weekday" else str(_WEEKDAYS[m.group(1)])
        return ParsedSchedule(type="recurring", cron_expression=f"{mi} {h} * * {days}")
    m = re.fullmatch(r"(?:in|after) (\d+) (second|minute|hour|day|week)s?", s)
    if m:
        delay = timedelta(seconds=int(m.group(1)) * _UNIT_SECONDS[m.group(2)])
        return ParsedSchedule(type="one_time", run_at=now + delay)
    m = re.fullmatch(rf"at {_TIME}", s)
    if m:
        h, mi = _clock(*m.groups())
        at = now.replace(hour=h, minute=mi, second=0, microsecond=0)
        return ParsedSchedule(type="one_time", run_at=at if at > now else at + timedelta(days=1))
    raise ValueError(
        f"'{text}' is not a schedule: use cron ('0 9 * * *'), 'every 15 minutes', 'every hour', "
        "'every day at 9am', 'every monday at 2pm', 'in 5 minutes' or 'at 15:30'"
    )


def _unavailable(exc: Exception) -> ToolStatusError:
    # Transient: call_tool turns it into the tool's Output, raised inside a Prefect task for its retries.
    message = f"the Prefect API is unavailable: {type(exc).__name__}: {exc}"
    return ToolStatusError(ScheduleStatus.ERROR_SERVER_UNAVAILABLE, message, transient=True)


@contextmanager
def _prefect_api() -> Iterator[Any]:
    """A sync Prefect client; an API that cannot be reached is ERROR_SERVER_UNAVAILABLE (transient)."""
    from prefect.client.orchestration import get_client

    try:
        with get_client(sync_client=True) as client:
            yield client
    except Exception as exc:
        if isinstance(exc, OSError | RuntimeError) or type(exc).__module__.startswith("httpx"):
            raise _unavailable(exc) from exc
        raise


# Create ----------------------------------------------------------------------------------------


class ScheduleCreateInput(ToolInput):
    """A schedule for a deployment."""

    name: str = Field(min_length=1, max_length=100, description="The schedule's name (its slug).")
    deployment: str = Field(
        min_length=3, pattern=r"^[^/]+/[^/]+$", description="The deployment, as 'FLOW/DEPLOYMENT'."
    )
    schedule: str = Field(
        min_length=1,
        description="Cron ('0 9 * * *'), 'every N minutes/hours/days', 'every monday at 2pm', 'in 5 minutes', 'at 15:30'.",
    )
    parameters: dict[str, Any] = Field(default_factory=dict, description="Parameters of the scheduled runs.")
    timezone: str = Field(default="UTC", description="Time zone of cron schedules.")
    description: str | None = Field(default=None, description="What the schedule is for.")


class ScheduleCreateOutput(BaseModel):
    """The schedule created."""

    status: ScheduleStatus = Field(description="SUCCESS or an error status.")
    schedule_id: str | None = Field(default=None, description="The deployment schedule's (or flow run's) id.")
    type: Literal["recurring", "one_time"] | None = Field(default=None, description="recurring or one_time.")
    name: str | None = Field(default=None, description="The schedule's name.")
    deployment: str | None = Field(default=None, description="FLOW/DEPLOYMENT.")
    cron_expression: str | None = Field(default=None, description="Cron of a cron schedule.")
    interval_seconds: float | None = Field(default=None, description="Interval of an interval schedule.")
    run_at: datetime | None = Field(default=None, description="Start of a one-time run.")
    errorDetails: str | None = Field(default=None, description="What went wrong.")


class ScheduleCreateTool(Tool[ScheduleCreateInput, ScheduleCreateOutput]):
    """Creates a recurring deployment schedule or a one-time scheduled run."""

    name = "scheduleCreateTool"
    description = (
        "Schedule a deployment: recurring (cron, 'every 15 minutes', 'every day at 9am', 'every monday "
        "at 2pm') as a named deployment schedule, or one time ('in 5 minutes', 'at 15:30') as one "
        "scheduled flow run. Parameters apply to the scheduled runs."
    )
    Input = ScheduleCreateInput
    Output = ScheduleCreateOutput
    permission = Permission.MODERATE

    def execute(self, data: ScheduleCreateInput, ctx: ToolContext) -> ScheduleCreateOutput:
        """Parse the schedule, then create it through the Prefect client."""
        try:
            parsed = parse_schedule(data.schedule)
        except ValueError as exc:
            return ScheduleCreateOutput(status=ScheduleStatus.ERROR_INVALID_SCHEDULE, errorDetails=str(exc))
        from prefect.exceptions import ObjectNotFound

        base = ScheduleCreateOutput(
            status=ScheduleStatus.SUCCESS,
            type=parsed.type,
            name=data.name,
            deployment=data.deployment,
            cron_expression=parsed.cron_expression,
            interval_seconds=parsed.interval_seconds,
            run_at=parsed.run_at,
        )
        with _prefect_api() as client:
            try:
                dep = client.read_deployment_by_name(data.deployment)
            except ObjectNotFound:
                return ScheduleCreateOutput(
                    status=ScheduleStatus.ERROR_DEPLOYMENT_NOT_FOUND,
                    errorDetails=f"no deployment '{data.deployment}' (see `prefect deployment ls`)",
                )
            if parsed.type == "one_time":
                from prefect.states import Scheduled

                run = client.create_flow_run_from_deployment(
                    dep.id,
                    parameters=data.parameters or None,
                    state=Scheduled(scheduled_time=parsed.run_at),
                    name=data.name,
                    tags=[ONE_TIME_TAG],
                )
                return base.model_copy(update={"schedule_id": str(run.id)})
            return _add_recurring(client, dep, data, parsed, base)


def _add_recurring(
    client: Any, dep: Any, data: ScheduleCreateInput, parsed: ParsedSchedule, base: ScheduleCreateOutput
) -> ScheduleCreateOutput:
    """A new named schedule (cron or interval) on the deployment; its name must be new there."""
    from prefect.client.schemas.schedules import CronSchedule, IntervalSchedule

    if any(sched.slug == data.name for sched in dep.schedules or []):
        return ScheduleCreateOutput(
            status=ScheduleStatus.ERROR_SCHEDULE_EXISTS,
            errorDetails=f"{data.deployment} already has a schedule named '{data.name}': "
            "choose another name, or pause/resume that one",
        )
    try:
        schedule: Any = (
            CronSchedule(cron=parsed.cron_expression, timezone=data.timezone)
            if parsed.cron_expression
            else IntervalSchedule(interval=timedelta(seconds=parsed.interval_seconds or 60))
        )
    except ValueError as exc:
        return ScheduleCreateOutput(status=ScheduleStatus.ERROR_INVALID_SCHEDULE, errorDetails=str(exc))
    created = client.create_deployment_schedules(
        dep.id, [(schedule, True)], parameters=data.parameters or None, slug=data.name
    )
    return base.model_copy(update={"schedule_id": str(created[0].id)})


# List ------------------------------------------------------------------------------------------


class ScheduleListInput(ToolInput):
    """Which schedules to list."""

    filter: Literal["all", "active", "paused"] = Field(default="all", description="all, active or paused.")
    deployment: str | None = Field(default=None, description="Only this FLOW/DEPLOYMENT.")


class ScheduledTask(BaseModel):
    """One schedule."""

    id: str = Field(description="The schedule's id (a flow run id for one-time schedules).")
    name: str = Field(description="The schedule's name (slug).")
    deployment: str = Field(description="FLOW/DEPLOYMENT.")
    type: Literal["recurring", "one_time"] = Field(description="recurring or one_time.")
    schedule: str = Field(description="The schedule in words (cron, interval or run time).")
    next_run: datetime | None = Field(
        default=None, description="Next scheduled start (once the server's scheduler has created it)."
    )
    last_run: datetime | None = Field(default=None, description="Start of the latest finished run.")
    status: Literal["active", "paused"] = Field(description="active or paused.")


class ScheduleListOutput(BaseModel):
    """The schedules."""

    status: ScheduleStatus = Field(description="SUCCESS or an error status.")
    tasks: list[ScheduledTask] = Field(default_factory=list, description="The schedules.")
    errorDetails: str | None = Field(default=None, description="What went wrong.")


class _FlowNames:
    """Flow names by id, read once each (the API's /flows/filter needs every filter spelled out)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.names: dict[Any, str] = {}

    def get(self, flow_id: Any) -> str:
        if flow_id not in self.names:
            self.names[flow_id] = self.client.read_flow(flow_id).name
        return self.names[flow_id]


def _describe(schedule: Any) -> str:
    if getattr(schedule, "cron", None):
        return f"cron {schedule.cron} ({schedule.timezone or 'UTC'})"
    interval = getattr(schedule, "interval", None)
    if interval is not None:
        return f"every {int(interval.total_seconds())} s"
    return str(schedule)


class ScheduleListTool(Tool[ScheduleListInput, ScheduleListOutput]):
    """Lists deployment schedules and pending one-time runs with their next and last runs."""

    name = "scheduleListTool"
    description = (
        "List schedules (recurring deployment schedules and pending one-time runs) with their "
        "deployment, schedule, next run, last run and status; filter all, active or paused."
    )
    Input = ScheduleListInput
    Output = ScheduleListOutput
    permission = Permission.SAFE

    def execute(self, data: ScheduleListInput, ctx: ToolContext) -> ScheduleListOutput:
        """Read deployments, their schedules and runs through the Prefect client."""
        from prefect.client.schemas.sorting import DeploymentSort

        tasks: list[ScheduledTask] = []
        with _prefect_api() as client:
            names = _FlowNames(client)
            for dep in client.read_deployments(limit=200, sort=DeploymentSort.NAME_ASC):
                full = f"{names.get(dep.flow_id)}/{dep.name}"
                if data.deployment and full != data.deployment:
                    continue
                tasks += _schedules_of(client, dep, full)
        if data.filter != "all":
            tasks = [t for t in tasks if t.status == data.filter]
        return ScheduleListOutput(status=ScheduleStatus.SUCCESS, tasks=tasks)


def _schedules_of(client: Any, dep: Any, full: str) -> list[ScheduledTask]:
    """A deployment's recurring schedules and its pending one-time runs, with their next and last runs."""
    from prefect.client.schemas.filters import (
        DeploymentFilter,
        DeploymentFilterId,
        FlowRunFilter,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType
    from prefect.client.schemas.sorting import FlowRunSort

    def runs_in(states: list[StateType], sort: FlowRunSort, limit: int) -> list[Any]:
        return list(
            client.read_flow_runs(
                deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[dep.id])),
                flow_run_filter=FlowRunFilter(
                    state=FlowRunFilterState(type=FlowRunFilterStateType(any_=states))
                ),
                sort=sort,
                limit=limit,
            )
        )

    upcoming = runs_in([StateType.SCHEDULED], FlowRunSort.EXPECTED_START_TIME_ASC, 50)
    finished = runs_in(
        [StateType.COMPLETED, StateType.FAILED, StateType.CRASHED], FlowRunSort.START_TIME_DESC, 1
    )
    last = finished[0].start_time if finished else None
    recurring_next = next((r.expected_start_time for r in upcoming if ONE_TIME_TAG not in r.tags), None)
    tasks = [
        ScheduledTask(
            id=str(sched.id),
            name=sched.slug or str(sched.id),
            deployment=full,
            type="recurring",
            schedule=_describe(sched.schedule),
            next_run=recurring_next if sched.active and not dep.paused else None,
            last_run=last,
            status="active" if sched.active and not dep.paused else "paused",
        )
        for sched in dep.schedules or []
    ]
    tasks += [
        ScheduledTask(
            id=str(run.id),
            name=run.name,
            deployment=full,
            type="one_time",
            schedule=f"once at {run.expected_start_time}",
            next_run=run.expected_start_time,
            last_run=None,
            status="active",
        )
        for run in upcoming
        if ONE_TIME_TAG in run.tags
    ]
    return tasks


# Pause / resume --------------------------------------------------------------------------------


class ScheduleToggleInput(ToolInput):
    """The schedule to pause or resume."""

    schedule_id: str = Field(
        min_length=1, description="The schedule's id or name (slug), from scheduleListTool."
    )
    deployment: str | None = Field(
        default=None, pattern=r"^[^/]+/[^/]+$", description="FLOW/DEPLOYMENT, to disambiguate a name."
    )


class ScheduleToggleOutput(BaseModel):
    """The schedule's new state."""

    status: ScheduleStatus = Field(description="SUCCESS or an error status.")
    schedule_id: str | None = Field(default=None, description="The schedule's id.")
    name: str | None = Field(default=None, description="The schedule's name.")
    deployment: str | None = Field(default=None, description="FLOW/DEPLOYMENT.")
    active: bool | None = Field(default=None, description="True when the schedule now creates runs.")
    errorDetails: str | None = Field(default=None, description="What went wrong.")


def _toggle(data: ScheduleToggleInput, active: bool) -> ScheduleToggleOutput:
    """Set the schedule named by `data` active or paused (resuming its deployment when it was paused)."""
    from prefect.client.schemas.sorting import DeploymentSort

    with _prefect_api() as client:
        names = _FlowNames(client)
        matches = []
        for dep in client.read_deployments(limit=200, sort=DeploymentSort.NAME_ASC):
            full = f"{names.get(dep.flow_id)}/{dep.name}"
            if data.deployment and full != data.deployment:
                continue
            for sched in dep.schedules or []:
                if data.schedule_id in (str(sched.id), sched.slug):
                    matches.append((dep, full, sched))
        if not matches:
            return ScheduleToggleOutput(
                status=ScheduleStatus.ERROR_SCHEDULE_NOT_FOUND,
                errorDetails=f"no schedule '{data.schedule_id}' (see scheduleListTool)",
            )
        if len(matches) > 1:
            owners = ", ".join(m[1] for m in matches)
            return ScheduleToggleOutput(
                status=ScheduleStatus.ERROR_SCHEDULE_NOT_FOUND,
                errorDetails=f"'{data.schedule_id}' names schedules of {owners}: pass deployment",
            )
        dep, full, sched = matches[0]
        client.update_deployment_schedule(dep.id, sched.id, active=active)
        if active and dep.paused:
            # A paused deployment (e.g. after `udm serve` stopped) creates no runs at all.
            client.resume_deployment(dep.id)
        return ScheduleToggleOutput(
            status=ScheduleStatus.SUCCESS,
            schedule_id=str(sched.id),
            name=sched.slug,
            deployment=full,
            active=active,
        )


class _ScheduleToggleTool(Tool[ScheduleToggleInput, ScheduleToggleOutput]):
    """Pause or resume a deployment schedule: the two tools differ only in the state they set."""

    Input = ScheduleToggleInput
    Output = ScheduleToggleOutput
    permission = Permission.MODERATE
    sets_active: ClassVar[bool]

    def execute(self, data: ScheduleToggleInput, ctx: ToolContext) -> ScheduleToggleOutput:
        """Set the schedule active (resume) or inactive (pause)."""
        return _toggle(data, active=self.sets_active)


class SchedulePauseTool(_ScheduleToggleTool):
    """Pauses a deployment schedule."""

    name = "schedulePauseTool"
    description = "Pause a recurring schedule (by id or name) so it creates no new runs until resumed."
    sets_active = False


class ScheduleResumeTool(_ScheduleToggleTool):
    """Resumes a paused deployment schedule."""

    name = "scheduleResumeTool"
    description = "Resume a paused recurring schedule (by id or name)."
    sets_active = True
