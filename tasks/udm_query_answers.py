"""udmQueryTool's answers as data: search hits, references, definitions, verification results.

The tool (tasks/udm_query.py) wraps these in its output model and maps lookup errors to statuses.
"""

from __future__ import annotations

import re
from typing import Any

from udm.errors import AmbiguousTargetError, DocumentError, TargetNotFoundError
from udm.index import UdmQuery

__all__ = [
    "PATHLIKE",
    "definitions_content",
    "fragment",
    "is_known",
    "references_content",
    "search_content",
    "verification_content",
]

PATHLIKE = re.compile(r"\.(?:md|markdown)(?:#|$)", re.IGNORECASE)


def fragment(target: str) -> str:
    """'05-roadmap.md#TASK-1' -> 'TASK-1'; anything else unchanged."""
    if "#" in target and PATHLIKE.search(target):
        return target.split("#", 1)[1]
    return target


def search_content(q: UdmQuery, words: str, limit: int) -> list[dict[str, Any]]:
    """Ranked full-text hits, best first."""
    return [
        {
            "file": h.file,
            "line": h.line,
            "section_path": h.path,
            "title": h.title,
            "score": h.score,
            "snippet": h.snippet,
            "snippet_line": h.snippet_line,
        }
        for h in q.search(words, limit)
    ]


def definitions_content(defs: list[Any]) -> list[dict[str, Any]]:
    """Where an ID is defined, one entry a definition."""
    return [{"file": d.file, "line": d.line, "how": d.how, "section_path": d.section_path} for d in defs]


def references_content(q: UdmQuery, ident: str, limit: int) -> dict[str, Any] | None:
    """An ID's definitions and mentions; None when it is neither defined nor mentioned."""
    refs = q.references(ident, limit)
    defs = q.find_by_id(ident)
    if not refs and not defs:
        return None
    return {
        "id": ident,
        "definitions": definitions_content(defs),
        "references": [
            {"file": r.file, "line": r.line, "section_path": r.section_path, "text": r.text} for r in refs
        ],
    }


def is_known(q: UdmQuery, key: str) -> bool:
    """Whether the UDM defines or mentions the ID, or has the section (`file#anchor` or an anchor)."""
    ident = fragment(key)
    if q.find_by_id(ident) or q.references(ident, 1):
        return True
    file, sep, anchor = key.partition("#")
    if sep and (PATHLIKE.search(key) or "/" in file):
        try:
            q.section(file, anchor or None)
        except (TargetNotFoundError, AmbiguousTargetError, DocumentError):
            return False
        return True
    return False


def verification_content(key: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The latest verification per check covering `key`, with a verdict and a one-line summary."""
    checks = [
        {
            "check_id": r["check_id"],
            "run_id": r["run_id"],
            "status": r["status"],
            "passed": r["status"] == "PASS",
            "verified_at": r["verified_at"],
            "reason": r["reason"],
            "udm_refs": list(r["udm_refs"] or []),
            "section": r["section"],
            "url": r["url"],
            "evidence": [p for p in (r["screenshot"], r["diff_image"]) if p],
        }
        for r in rows
    ]
    latest = max((c["verified_at"] for c in checks), default=None)
    passed = all(c["passed"] for c in checks)
    if not checks:
        summary = f"{key}: never verified"
    elif passed:
        summary = f"{key}: last verified {latest}; passed"
    else:
        failing = ", ".join(f"{c['check_id']} {c['status']}" for c in checks if not c["passed"])
        summary = f"{key}: last verified {latest}; NOT passed ({failing})"
    return {
        "target": key,
        "verified": bool(checks),
        # Passed only when every covering check's latest result passed.
        "passed": passed if checks else None,
        "last_verified_at": latest,
        "summary": summary,
        "checks": checks,
    }
