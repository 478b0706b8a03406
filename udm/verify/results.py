"""Verification results in the index (<state>/index.duckdb, table `verifications`): record and look up.

Answers "when was this claim last verified, and did it pass" for a check ID, a UDM ID in a
check's `udm_refs`, or a section (`file#anchor` or just the anchor). Writes take the index's
writer lock and a short read-write connection, like every index writer.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import duckdb
from filelock import FileLock, Timeout

from udm.config import Settings, ensure_folder
from udm.errors import IndexBusyError
from udm.index import UdmIndex

__all__ = ["COLUMNS", "DDL", "last_verified", "record_verifications", "verification_history"]

DDL = (
    "CREATE TABLE IF NOT EXISTS verifications (run_id VARCHAR, check_id VARCHAR, status VARCHAR, "
    "verified_at TIMESTAMP, duration_ms DOUBLE, reason VARCHAR, udm_refs VARCHAR[], section VARCHAR, "
    "source VARCHAR, url VARCHAR, screenshot VARCHAR, diff_image VARCHAR)"
)
COLUMNS = [
    "run_id",
    "check_id",
    "status",
    "verified_at",
    "duration_ms",
    "reason",
    "udm_refs",
    "section",
    "source",
    "url",
    "screenshot",
    "diff_image",
]


def record_verifications(settings: Settings, run_id: str, results: Iterable[dict[str, Any]]) -> int:
    """Append one row per check result (dicts with the CheckResult fields); returns the row count."""
    now = datetime.now(UTC).replace(tzinfo=None)
    rows = []
    for r in results:
        started = r.get("started_at")
        when = datetime.fromisoformat(started).astimezone(UTC).replace(tzinfo=None) if started else now
        rows.append(
            [
                run_id,
                r["id"],
                r["status"],
                when,
                float(r.get("duration_ms") or 0.0),
                r.get("reason"),
                list(r.get("udm_refs") or []),
                r.get("section"),
                r.get("source"),
                r.get("url"),
                r.get("screenshot"),
                r.get("diff_image"),
            ]
        )
    if not rows:
        return 0
    index = UdmIndex(settings)
    ensure_folder(settings.state_path)
    lock = FileLock(str(settings.state_path / "index.write.lock"))
    try:
        lock.acquire(timeout=settings.index_busy_timeout_s)
    except Timeout as exc:
        raise IndexBusyError(
            f"index busy: could not record verifications within {settings.index_busy_timeout_s:g} s"
        ) from exc
    try:
        with index.connect(read_only=False) as con:
            con.execute(DDL)
            placeholders = ", ".join("?" for _ in COLUMNS)
            con.executemany(f"INSERT INTO verifications ({', '.join(COLUMNS)}) VALUES ({placeholders})", rows)
            # Read-only connections (udm sql, other processes) do not replay a WAL: fold it in now.
            con.execute("CHECKPOINT")
    finally:
        lock.release()
        index.close()
    return len(rows)


_MATCH = (
    "(lower(check_id) = lower(?) OR list_contains(udm_refs, ?) OR list_contains(udm_refs, upper(?)) "
    "OR lower(section) = lower(?) OR lower(section) LIKE '%#' || lower(?))"
)


def _query(settings: Settings, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    if not (settings.state_path / "index.duckdb").exists():
        return []
    index = UdmIndex(settings)
    try:
        with index.connect(read_only=True) as con:
            try:
                cur = con.execute(sql, params)
            except duckdb.CatalogException:
                return []  # no verification has been recorded yet
            names = [d[0] for d in cur.description or []]
            out = []
            for row in cur.fetchall():
                item = dict(zip(names, row, strict=True))
                if isinstance(item.get("verified_at"), datetime):
                    item["verified_at"] = (
                        item["verified_at"].replace(tzinfo=UTC).isoformat(timespec="seconds")
                    )
                out.append(item)
            return out
    finally:
        index.close()


def last_verified(settings: Settings, target: str | None = None) -> list[dict[str, Any]]:
    """The latest result of every check (matching a check ID, UDM ID or section when given)."""
    where = f"WHERE {_MATCH}" if target else ""
    params = [target] * 5 if target else []
    sql = (
        f"SELECT {', '.join(COLUMNS)} FROM verifications {where} "
        "QUALIFY row_number() OVER (PARTITION BY check_id ORDER BY verified_at DESC) = 1 ORDER BY check_id"
    )
    return _query(settings, sql, params)


def verification_history(settings: Settings, target: str, limit: int = 20) -> list[dict[str, Any]]:
    """Every recorded result for a check ID, UDM ID or section, newest first."""
    sql = f"SELECT {', '.join(COLUMNS)} FROM verifications WHERE {_MATCH} ORDER BY verified_at DESC LIMIT ?"
    return _query(settings, sql, [target] * 5 + [int(limit)])
