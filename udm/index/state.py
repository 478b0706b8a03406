"""What a refresh works from: its plan (which files to parse, drop or restat) and the process's memo.

The memo holds what this process learnt about the index at its last refresh (the files table,
section anchors, the route table), valid while the index is still at that generation and epoch:
small refreshes use it to skip reads.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from udm.index.schema import Indexed, RefreshStats
from udm.site import Routes

__all__ = ["CacheKey", "Memo", "Plan", "plan_refresh"]

# (generation, epoch) as the meta table holds them; None where missing.
CacheKey = tuple[str | None, str | None]


@dataclass
class Plan:
    """The files one refresh deals with, against the files table as it found it."""

    disk: dict[str, tuple[int, int]]
    indexed: dict[str, Indexed]
    removed: list[str]
    to_parse: list[str]
    # Same bytes under a new mtime (touch, checkout): (path, size, mtime_ns) to update, nothing to parse.
    touched: list[tuple[str, int, int]]

    @property
    def gone(self) -> list[str]:
        """The files whose rows go: removed ones and those parsed anew."""
        return sorted(set(self.removed) | set(self.to_parse))

    def count_into(self, stats: RefreshStats) -> None:
        """Record the plan's file counts in a refresh's stats."""
        stats.removed = len(self.removed)
        stats.touched = len(self.touched)
        stats.parsed = len(self.to_parse)
        stats.unchanged = len(self.disk) - len(self.to_parse) - len(self.touched)

    def parse_bytes(self) -> int:
        """How much text the refresh parses."""
        return sum(self.disk[p][0] for p in self.to_parse)


def plan_refresh(root: Path, disk: dict[str, tuple[int, int]], indexed: dict[str, Indexed]) -> Plan:
    """Which files are gone, which to parse, and which only changed their stat (same content hash)."""
    removed = sorted(set(indexed) - set(disk))
    candidates = sorted(p for p, st in disk.items() if p not in indexed or indexed[p][:2] != st)
    to_parse: list[str] = []
    touched: list[tuple[str, int, int]] = []
    for rel in candidates:
        if rel in indexed:
            try:
                digest = hashlib.sha256((root / rel).read_bytes()).hexdigest()
            except OSError:
                digest = ""
            if digest == indexed[rel][2]:
                touched.append((rel, *disk[rel]))
                continue
        to_parse.append(rel)
    return Plan(disk, indexed, removed, to_parse, touched)


@dataclass
class Memo:
    """What this process knows of the index after its own refreshes."""

    # The (generation, epoch) the running refresh read under the write lock.
    key: CacheKey = (None, None)
    # (key, the files table then): spares re-reading it while the index is still there.
    files: tuple[CacheKey, dict[str, Indexed]] | None = None
    # Section anchors by file, valid at `files`' key (small refreshes resolve links).
    anchors: dict[str, set[str]] = field(default_factory=dict)
    # The route table (udm.site.routes) at `files`' key; the one a small refresh is committing.
    routes: tuple[CacheKey, Routes] | None = None
    pending_routes: Routes | None = None
