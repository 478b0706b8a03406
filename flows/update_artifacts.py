"""The update flow's artifacts: the plan's diff as Markdown and its operations as a table, keyed per patch."""

from __future__ import annotations

import hashlib
import re

from prefect.artifacts import create_markdown_artifact, create_table_artifact

from udm.patch import Patch, PatchResult

__all__ = ["MAX_ARTIFACT_DIFF", "artifact_key", "artifact_link", "diff_markdown", "plain", "publish_plan"]

# The largest diff put into one markdown artifact; the rest is cut with a note.
MAX_ARTIFACT_DIFF = 60_000


def artifact_key(patch_id: str) -> str:
    """The key prefix of a patch's artifacts (`-diff` markdown, `-ops` table): `udm-patch-<id>`, stable
    per patch id so Prefect groups a patch's versions. Keys allow [a-z0-9-] only: an id with other
    characters is lowered and dashed, plus a short hash so `Fix_A` and `fix-a` stay apart."""
    slug = re.sub(r"[^a-z0-9]+", "-", patch_id.lower()).strip("-")
    if slug != patch_id:
        slug = f"{slug}-{hashlib.sha1(patch_id.encode()).hexdigest()[:8]}"
    return "udm-patch-" + slug


def plain(text: str) -> str:
    """Text shown literally in Markdown: one line, every ASCII punctuation mark backslash-escaped."""
    return re.sub(r"([!-/:-@\[-`{-~])", r"\\\1", " ".join(text.split()))


def _code(text: str) -> str:
    """An inline code span holding `text` as is, whatever backticks it contains."""
    ticks = "`" * (max(map(len, re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _destructive(patch: Patch) -> bool:
    # As udmUpdaterTool asks it: an override forces links past the validator, a delete's level too.
    return patch.destructive or patch.override is not None


def diff_markdown(plan: PatchResult, patch: Patch) -> str:
    """The diff artifact's Markdown: the patch's id, description, files and its diff in a fence."""
    diff = plan.diff
    if len(diff) > MAX_ARTIFACT_DIFF:
        diff = (
            diff[:MAX_ARTIFACT_DIFF]
            + f"\n... ({len(plan.diff) - MAX_ARTIFACT_DIFF} more characters; see `udm patch check`)\n"
        )
    files = (
        "\n".join(f"- {_code(f.path)} {f.action} (+{f.added} -{f.removed})" for f in plan.files)
        or "- no file changes"
    )
    # A fence ends at the first line of as many backticks, so it must outrun every run in the diff.
    fence = "`" * max(3, max(map(len, re.findall(r"`+", diff)), default=0) + 1)
    return (
        f"# Patch {_code(patch.id)}\n\n{plain(patch.description) or '(no description)'}\n\n"
        f"Author: {plain(patch.author or '') or '-'} · source: {plain(patch.source or '') or '-'} · "
        f"{'**destructive**' if _destructive(patch) else 'moderate'}\n\n## Files\n\n{files}\n\n"
        f"## Diff\n\n{fence}diff\n{diff}{fence}\n"
    )


def artifact_link(artifact_id: str, key: str) -> str:
    """Markdown pointing the reviewer at the diff artifact: a UI link when a UI address is configured."""
    from prefect.settings import PREFECT_UI_URL

    ui = PREFECT_UI_URL.value()
    if ui:
        return f"[{key}]({ui.rstrip('/')}/artifacts/artifact/{artifact_id})"
    return f"artifact `{key}` (Artifacts tab of this run)"


def publish_plan(plan: PatchResult, patch: Patch) -> list[str]:
    markdown = diff_markdown(plan, patch)
    key = artifact_key(patch.id)
    ids = [
        create_markdown_artifact(
            markdown=markdown, key=key + "-diff", description=f"Diff of patch {patch.id}"
        )
    ]
    rows = [
        {
            "index": o.index,
            "op": o.op,
            "file": o.file,
            "status": o.status,
            "target": o.target,
            "lines": f"+{o.added} -{o.removed}",
        }
        for o in plan.operations
    ]
    ids.append(
        create_table_artifact(table=rows, key=key + "-ops", description=f"Operations of patch {patch.id}")
    )
    return [str(i) for i in ids]
