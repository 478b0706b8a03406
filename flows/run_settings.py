"""A flow run's settings, there and back: how a caller passes them, how the run rebuilds them, and what
a triggered run may change.

A caller holding the Settings (`run_update`, `run_research`, the CLI) passes them to a flow as its
`settings_overrides` parameter, plain JSON so the flow run records them (`SettingsParameter.dump`).
The run rebuilds them from its process's environment and the named project's udm.toml with the
overrides on top (`SettingsParameter.load`); the flows that take folders as their own parameters
(pipeline, browser verification) rebuild them with `flow_settings`.

Whoever triggers a deployment sets those parameters, and may pass an `env` job variable the worker
merges into the run's environment. The process running the flow (worker, `udm serve`) decides what
the flow may reach; a run may only ask for less:

- no UDM_* setting through the run's own `env` job variable (`refuse_run_settings`), and a
  UDM_APPROVAL_POLICY there only makes the policy stricter (`job_variable_floor`);
- a fetch allow-list that is a subset of the process's, robots.txt honoured when the process honours
  it, and the process's own search, Context7 and LLM endpoints (a run pointing them elsewhere would
  send requests, and API keys, where it likes) (`check_narrowing`);
- folders inside the process's own (`check_scope`), and a pipeline spec file inside its project
  (`check_run_file`);
- destructive browser steps in verification only where the process's own policy would run them
  without asking (`check_destructive`).

In-process callers that hold the Settings (`tasks.base.process_policy`) are the side running the flow
and are not checked.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

from prefect import get_client
from prefect.context import FlowRunContext

from tasks.base import (
    Permission,
    caller_holds_settings,
    effective_policy,
    needs_approval,
    own_settings,
    stricter,
)
from udm.config import ApprovalPolicy, Settings, load_settings
from udm.errors import ConfigError

__all__ = [
    "PROCESS_ONLY",
    "SettingsParameter",
    "check_destructive",
    "check_narrowing",
    "check_run_file",
    "check_run_folders",
    "check_scope",
    "flow_settings",
    "job_variable_floor",
    "refuse_run_settings",
    "run_changed_parameters",
    "run_policy",
    "triggered_parameters",
]

# Where requests go and where secrets come from: the process's values, never a run's.
PROCESS_ONLY = (
    "search_provider",
    "searxng_url",
    "brave_api_url",
    "google_api_url",
    "google_cx",
    "context7_url",
    "llm_protocol",
    "llm_url",
    "llm_model",
    "secrets_from_prefect",
)
_POLICY_ENV = "UDM_APPROVAL_POLICY"


@dataclass(frozen=True)
class SettingsParameter:
    """A flow's `settings_overrides` parameter: the settings a caller passes in it, and what a run may set.

    `passed` are the settings a caller holding Settings hands over (`project_root` always goes too).
    With `only_passed`, a run may set those and nothing else; without it, any setting but the
    approval policy, and a triggered run only narrowing what the process allows (`check_narrowing`;
    in a deployment run whose trigger changed the parameter, or a subflow of a run a worker started,
    its folders too: `check_scope`).
    """

    passed: tuple[str, ...]
    only_passed: bool

    def dump(self, settings: Settings) -> dict[str, Any]:
        """The parameter's value for a run of these settings (plain JSON)."""
        data: dict[str, Any] = settings.model_dump(mode="json", include=set(self.passed))
        data["project_root"] = str(Path(settings.project_root))
        return data

    def load(self, overrides: Mapping[str, Any] | None) -> Settings:
        """The run's settings from the parameter's value; ConfigError naming whatever a run may not set."""
        data = dict(overrides or {})
        if self.only_passed:
            refused = sorted(set(data) - set(self.passed))
            if refused:
                raise ConfigError(
                    f"settings_overrides may set only {', '.join(self.passed)}; not {', '.join(refused)} "
                    f"(the approval policy is the process's setting, {_POLICY_ENV}, or a deployment's job "
                    "variable)"
                )
        elif "approval_policy" in data:
            # The side running the flow decides it (UDM_APPROVAL_POLICY, a deployment's job variable).
            raise ConfigError(
                "settings_overrides may not set approval_policy: it is the process's setting "
                f"({_POLICY_ENV}) or a deployment's job variable; the approval_policy parameter "
                "may only make it stricter"
            )
        settings = flow_settings(data.pop("project_root", None), data)
        if not self.only_passed and not caller_holds_settings():
            # A triggered run: its parameters may only narrow what the process allows (fetch_allow, ...).
            own = own_settings()
            check_narrowing(settings, own)
            if run_changed_parameters(("settings_overrides",)) or _subflow_of_worker_run():
                # Folders a trigger chose (not the deployment; or a step of a spec a trigger may have
                # sent): only inside the process's own, as for the pipeline's `root`; `root: /` would
                # read any file of the worker into the appendix.
                check_scope(settings, own, ["settings_overrides"])
        return settings


def flow_settings(project: str | Path | None, overrides: Mapping[str, Any]) -> Settings:
    """A flow run's settings as seen from `project` (default: the working directory) with `overrides`
    on top, once the run is known not to set UDM_* through its own env job variable."""
    refuse_run_settings()
    return load_settings(project, **overrides)


def _job_variable_envs() -> tuple[dict[str, Any], Any] | None:
    """(the run's own `env` job variable, its deployment's) of the deployment run this process was
    started for by a worker; None outside one, or when the run set no env of its own."""
    run_id = os.environ.get("PREFECT__FLOW_RUN_ID")
    if not run_id:
        return None
    with get_client(sync_client=True) as client:
        run = client.read_flow_run(UUID(run_id))
        asked = (run.job_variables or {}).get("env") or {}
        if not isinstance(asked, dict) or not asked or run.deployment_id is None:
            return None
        deployment = client.read_deployment(run.deployment_id)
    return asked, (deployment.job_variables or {}).get("env") or {}


def job_variable_floor() -> ApprovalPolicy | None:
    """The least strict policy this process may use when its run was started with a run-level `env`
    job variable setting UDM_APPROVAL_POLICY: the deployment's own value, else ask_always (the worker's
    value was replaced, so it is unknown); None when no run-level override set it.

    Whoever triggers a deployment can pass job variables with the run; the worker merges them into
    the flow run's environment, where they would otherwise lower the deployment's policy."""
    envs = _job_variable_envs()
    if envs is None or envs[0].get(_POLICY_ENV) is None:
        return None
    own = envs[1].get(_POLICY_ENV) if isinstance(envs[1], dict) else None
    try:
        return ApprovalPolicy(own) if own else ApprovalPolicy.ASK_ALWAYS
    except ValueError:
        return ApprovalPolicy.ASK_ALWAYS


def run_policy(settings: Settings, requested: ApprovalPolicy | str | None = None) -> ApprovalPolicy:
    """The approval policy a flow run applies: the process's (`effective_policy`), made stricter by
    `requested` and by a run-level UDM_APPROVAL_POLICY job variable (`job_variable_floor`)."""
    return stricter(effective_policy(settings, requested), job_variable_floor())


def refuse_run_settings() -> None:
    """ConfigError naming each UDM_* setting other than the approval policy that the run (not its
    deployment) set through its `env` job variable; nothing when the run was not started by a worker.

    The worker merges a run's job variables into the flow run's environment, so whoever triggers a
    deployment could otherwise widen what the flow may do (UDM_FETCH_ALLOW, UDM_ALLOWED_DIRS,
    UDM_ROOT, UDM_GIT_COMMIT=false, ...); those are the deployment's settings. A run-level
    UDM_APPROVAL_POLICY is handled by job_variable_floor (it may only make the policy stricter)."""
    envs = _job_variable_envs()
    if envs is None:
        return
    asked, own = envs
    changed = sorted(
        str(key)
        for key, value in asked.items()
        if str(key).upper().startswith("UDM_")
        and str(key).upper() != _POLICY_ENV
        and (not isinstance(own, dict) or own.get(key) != value)
    )
    if changed:
        raise ConfigError(
            f"a run may not set {', '.join(changed)} through its env job variable: what the flow may "
            "reach and write is the deployment's setting (edit the deployment's job variables)"
        )


def run_changed_parameters(names: tuple[str, ...]) -> list[str]:
    """Those of these parameters that this deployment run set differently from its deployment (the
    trigger's choice, not the deployment's); empty outside a deployment run."""
    context = FlowRunContext.get()
    if context is None or context.flow_run is None:
        return []
    with get_client(sync_client=True) as client:
        run = client.read_flow_run(context.flow_run.id)
        if run.deployment_id is None:
            return []
        deployment = client.read_deployment(run.deployment_id)
    own = deployment.parameters or {}
    return [n for n in names if (run.parameters or {}).get(n) != own.get(n)]


def _subflow_of_worker_run() -> bool:
    """Whether this flow run is a subflow inside a run a worker started (a pipeline step's flow)."""
    top = os.environ.get("PREFECT__FLOW_RUN_ID")
    context = FlowRunContext.get()
    return (
        bool(top) and context is not None and context.flow_run is not None and str(context.flow_run.id) != top
    )


def triggered_parameters(given: Mapping[str, Any]) -> list[str]:
    """Those of the `given` parameters a trigger chose: in a deployment run, the ones it set differently
    from its deployment; in a subflow of a run a worker started (a pipeline step), any that is set;
    none for in-process callers that hold the Settings."""
    if caller_holds_settings():
        return []
    names = tuple(given)
    return [n for n in names if given[n]] if _subflow_of_worker_run() else run_changed_parameters(names)


def check_run_file(name: str, path: str | Path, settings: Settings, project: str | None) -> None:
    """ConfigError when a trigger chose the parameter `name`, a file to read, outside the projects the
    run may read (by real path, symlinks followed): the process's own project, and the run's `project`
    when the deployment (not the trigger) set it. A pipeline spec's YAML error quotes the file's lines,
    so any file of the worker could be read through it."""
    if not triggered_parameters({name: str(path)}):
        return
    bases = [own_settings().project_root]
    if not triggered_parameters({"project": project}):
        bases.append(settings.project_root)
    real = Path(os.path.realpath(path))
    allowed = [Path(os.path.realpath(b)) for b in bases]
    if not any(real.is_relative_to(b) for b in allowed):
        raise ConfigError(
            f"a run may not set {name} to a file outside the project of the process running it "
            f"({path}): name a file inside {' or '.join(str(b) for b in dict.fromkeys(allowed))}, "
            "or pass the spec itself"
        )


def check_destructive(settings: Settings, allow_destructive: bool) -> None:
    """ConfigError when a trigger turned `allow_destructive` on for a run whose process would ask before
    a destructive call (its approval policy, `run_policy`): verification runs such browser steps
    without asking, so only the deployment, or a process running them unasked anyway, may allow them."""
    if not allow_destructive or not triggered_parameters({"allow_destructive": allow_destructive}):
        return
    policy = run_policy(settings)
    if needs_approval(policy, Permission.DESTRUCTIVE):
        raise ConfigError(
            "a run may not set allow_destructive: the process running it asks before destructive "
            f"steps (approval policy {policy.value}); allow them in the deployment's parameters"
        )


def check_run_folders(settings: Settings, given: Mapping[str, Any], files_param: str | None = None) -> None:
    """ConfigError when folders, or the files listed by the parameter `files_param`, that a trigger
    chose (the `given` parameters it changed in a deployment run, or any given in a subflow of a run a
    worker started, such as a pipeline step) reach beyond the process's own folders; nothing for
    in-process callers or parameters the deployment set.

    For flows that take folders as their own parameters (browser verification, the link check, the
    index): `root: /` would run and record another folder's checks, `state_dir` would write the
    index and records anywhere, and `specs` would read any file of the worker (a YAML error quotes it).
    """
    changed = triggered_parameters(given)
    if not changed:
        return
    own = own_settings()
    check_scope(settings, own, changed)
    files: Iterable[str | Path] = (given.get(files_param) or []) if files_param in changed else []
    own_real = [Path(os.path.realpath(r)) for r in own.allowed_roots()]
    outside = [
        str(f) for f in files if not any(Path(os.path.realpath(f)).is_relative_to(r) for r in own_real)
    ]
    if outside:
        raise ConfigError(
            f"a run may not set {files_param} to read files outside the folders of the process running "
            f"it ({', '.join(outside)}): set them as the deployment's parameters"
        )


def check_narrowing(settings: Settings, own: Settings) -> None:
    """ConfigError naming each setting of a triggered run's `settings` that widens the process's `own`."""
    problems: list[str] = []
    extra = [h for h in settings.fetch_allow if h not in own.fetch_allow]
    if extra:
        allowed = ", ".join(own.fetch_allow) or "nothing"
        problems.append(
            f"fetch_allow may only narrow the process's allow-list ({allowed}); not {', '.join(extra)}"
        )
    if own.fetch_respect_robots and not settings.fetch_respect_robots:
        problems.append("fetch_respect_robots may not be turned off by a run")
    for name in PROCESS_ONLY:
        if getattr(settings, name) != getattr(own, name):
            problems.append(f"{name} is the process's setting; a run may not change it")
    if problems:
        raise ConfigError(
            "settings_overrides may only narrow what the process running the flow allows (set these "
            "in its environment, UDM_*, or the deployment's env job variable): " + "; ".join(problems)
        )


def check_scope(settings: Settings, own: Settings, changed: list[str]) -> None:
    """ConfigError when the `changed` parameters gave `settings` folders beyond the process's `own`:
    every folder the tools may touch must lie inside one of its own, and the state folder stay its own."""
    own_roots = own.allowed_roots()
    own_real = [Path(os.path.realpath(o)) for o in own_roots]
    # Inside by its spelling and by where it leads: a folder of the manual that is a symlink to
    # elsewhere (which the process's sandbox refuses to follow) would be the run's root, trusted.
    wider = [
        str(r)
        for r in settings.allowed_roots()
        if not any(r == o or r.is_relative_to(o) for o in own_roots)
        or not any(Path(os.path.realpath(r)).is_relative_to(o) for o in own_real)
    ]
    if settings.state_path != own.state_path:
        wider.append(f"state folder {settings.state_path}")
    if wider:
        raise ConfigError(
            f"a run may not set {', '.join(changed)} to reach beyond what the process running it allows "
            f"({', '.join(wider)}): set them as the deployment's parameters, or run it where they are the "
            "process's own settings"
        )
