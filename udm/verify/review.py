"""The needs-review patch: a note in every UDM section whose claim a browser check found false.

Each failing (or warning) check names the claims it tests (`udm_refs`: IDs, `file#anchor` or
`file`). Every reference is resolved through the index to one section, and that section gets a
GitHub alert line naming the check, the run and the reason. A section that already carries the
note of the same check is left as it is (the note says since when), so re-running a failing
verification proposes nothing new. The patch is only a proposal: the browser flow hands it to
the UDM-update steps with approval required.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from udm.errors import UdmError
from udm.index import UdmQuery
from udm.patch import Patch, parse_patch

__all__ = ["ReviewProposal", "needs_review_patch", "review_marker"]

# Statuses whose claims need a person's look.
_REVIEW_STATUSES = ("FAIL", "WARNING")


def review_marker(check_id: str) -> str:
    """The text that identifies a check's note in a section (what re-runs look for)."""
    return f"**needs-review**: browser check `{check_id}`"


@dataclass
class ReviewProposal:
    """The proposed patch (None when nothing new needs a note) and the references that led nowhere."""

    patch: Patch | None
    targets: list[dict[str, str]] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)
    already_marked: list[str] = field(default_factory=list)


def _target(query: UdmQuery, ref: str) -> tuple[str, str]:
    """(file, '#anchor') of the section one reference names; UdmError when it leads nowhere.

    An ID means the section defining it; `file#anchor` that section; a bare file its first section.
    """
    text = ref.strip()
    if "#" in text or text.endswith(".md"):
        file_part, _, anchor = text.partition("#")
        rel = query.resolve_file(file_part)
        doc, sec = query.section(rel, "#" + anchor) if anchor else (query.document(rel), None)
    else:
        defs = query.find_by_id(text)
        if not defs:
            raise UdmError(f"no definition of '{text}' in the UDM")
        rel = defs[0].file
        doc = query.document(rel)
        index = defs[0].section
        sec = doc.sections[index] if index is not None and index < len(doc.sections) else None
    if sec is None:
        if not doc.sections:
            raise UdmError(f"{rel} has no heading to put a note under")
        sec = doc.sections[0]
    return rel, "#" + sec.anchor


def needs_review_patch(
    query: UdmQuery, results: Iterable[dict[str, Any]], run_id: str, today: date | None = None
) -> ReviewProposal:
    """A patch appending a needs-review note to each section whose claim failed a check."""
    day = (today or date.today()).isoformat()
    proposal = ReviewProposal(patch=None)
    operations: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str]] = set()
    for result in results:
        if result.get("status") not in _REVIEW_STATUSES:
            continue
        check_id = str(result.get("id") or "")
        refs = list(result.get("udm_refs") or []) or ([result["section"]] if result.get("section") else [])
        for ref in refs:
            try:
                file, section = _target(query, str(ref))
            except UdmError as exc:
                proposal.unresolved.append(f"{check_id} -> {ref}: {exc}")
                continue
            if (file, section, check_id) in seen:
                continue
            seen.add((file, section, check_id))
            current = query.section_content(file, section, own=True)
            where = f"{file}{section}"
            if review_marker(check_id) in current:
                proposal.already_marked.append(f"{check_id} -> {where}")
                continue
            reason = " ".join(str(result.get("reason") or "no reason given").split())[:300]
            note = (
                f"> [!WARNING]\n> {review_marker(check_id)} {result['status']} on {day} "
                f"(verification run `{run_id}`): {reason}"
            )
            operations.append({"op": "append_to_section", "file": file, "section": section, "content": note})
            proposal.targets.append({"check": check_id, "file": file, "section": section})
    if operations:
        proposal.patch = parse_patch(
            {
                "description": f"Mark {len(operations)} section(s) needs-review after browser verification {run_id}",
                "author": "browser_verification_flow",
                "source": run_id,
                "operations": operations,
            },
            origin="needs-review patch",
        )
    return proposal
