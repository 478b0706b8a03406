"""What a triggered run's settings may change: only narrow what the process running the flow allows.

A flow's `settings_overrides` parameter (and the udm.toml of a `project_root` it names) comes from
whoever triggers a deployment. The process running the flow (worker, `udm serve`) decides what the
flow may reach; a run may only ask for less: a fetch allow-list that is a subset of the process's,
robots.txt honoured when the process honours it, and the process's own search, Context7 and LLM
endpoints (a run pointing them elsewhere would send requests, and API keys, where it likes).
In-process callers that hold the Settings (`run_research`, the CLI) are the side running the flow
and are not checked.
"""

from __future__ import annotations

from udm.config import Settings
from udm.errors import ConfigError

__all__ = ["PROCESS_ONLY", "check_narrowing", "check_scope"]

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
    wider = [
        str(r) for r in settings.allowed_roots() if not any(r == o or r.is_relative_to(o) for o in own_roots)
    ]
    if settings.state_path != own.state_path:
        wider.append(f"state folder {settings.state_path}")
    if wider:
        raise ConfigError(
            f"a run may not set {', '.join(changed)} to reach beyond what the process running it allows "
            f"({', '.join(wider)}): set them as the deployment's parameters, or run it where they are the "
            "process's own settings"
        )
