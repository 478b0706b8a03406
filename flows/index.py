"""index_flow: bring the UDM's DuckDB index up to date and report what changed as artifacts."""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

# Prefect's workers load this file as a script (prefect.yaml's entrypoint): importing the package
# is what installs its engine patch and defaults there. The other flow modules import from it anyway.
import flows  # noqa: F401
from udm.config import load_settings
from udm.errors import IndexBusyError
from udm.index import UdmIndex

__all__ = ["index_flow", "refresh_index"]


def _busy_only(task: Any, task_run: Any, state: Any) -> bool:
    # Retry when another process held the index; a broken file is not worth retrying.
    try:
        state.result()
    except IndexBusyError:
        return True
    except Exception:
        return False
    return False


@task(
    name="refresh-udm-index",
    cache_policy=NO_CACHE,
    retries=3,
    retry_delay_seconds=[1, 2, 4],
    retry_condition_fn=_busy_only,
)
def refresh_index(full: bool, overrides: dict[str, Any]) -> dict[str, Any]:
    """Refresh the index (only changed files unless `full`) and return the stats."""
    from udm.site import note_line, site_notes

    settings = load_settings(**overrides)
    index = UdmIndex(settings)
    try:
        stats = index.refresh(full=full).as_dict()
        site = index.site()
    finally:
        index.close()
    # What could not be read of the site the links resolve by (see `udm index`): told, never dropped.
    return {
        **stats,
        "site_notes": [note_line(p, m) for p, m in site_notes(settings, site)],
    }


@flow(name="udm-index", log_prints=False)
def index_flow(full: bool = False, root: str | None = None, state_dir: str | None = None) -> dict[str, Any]:
    """Refresh the index of the UDM (settings from the environment, or the given root/state) and publish stats."""
    overrides: dict[str, Any] = {}
    if root:
        overrides["root"] = root
    if state_dir:
        overrides["state_dir"] = state_dir
    if overrides:
        # A trigger (or a pipeline step a trigger sent) may not index another folder into the state
        # the tools query, nor write an index elsewhere.
        from flows.run_settings import check_run_folders, flow_settings

        check_run_folders(flow_settings(None, overrides), {"root": root, "state_dir": state_dir})
    stats = refresh_index(full, overrides)
    logger = get_run_logger()
    logger.info(
        "indexed %s files: %s parsed, %s removed in %.2f s",
        stats["files"],
        stats["parsed"],
        stats["removed"],
        stats["seconds"],
    )
    for note in stats["site_notes"]:
        logger.warning("site config: %s", note)
    rows = [
        {"measure": key, "value": str(stats[key])}
        for key in (
            "files",
            "parsed",
            "unchanged",
            "touched",
            "removed",
            "sections",
            "ids",
            "tasks",
            "workers",
            "seconds",
            "generation",
        )
    ]
    create_table_artifact(key="udm-index-stats", table=rows, description="What the last index refresh did.")
    errors = stats["errors"]
    body = "\n".join(f"- `{e}`" for e in errors[:50]) if errors else "No parse errors."
    more = f"\n\n(and {len(errors) - 50} more)" if len(errors) > 50 else ""
    notes = stats["site_notes"]
    site = ("\n## Site config\n\n" + "\n".join(f"- `{n}`" for n in notes) + "\n") if notes else ""
    create_markdown_artifact(
        key="udm-index-errors",
        markdown=f"# UDM index refresh\n\n{stats['parsed']} files parsed, {stats['removed']} removed.\n\n## Parse errors\n\n{body}{more}\n{site}",
        description="Blocks and front matter that did not parse.",
    )
    return stats
