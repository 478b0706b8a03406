"""udmSqlQueryTool: read-only SQL over the UDM index (one SELECT/WITH; row, time, memory, thread and temp-space limits)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from tasks.base import ErrorTable, Failure, Permission, Tool, ToolContext, ToolInput
from udm.errors import ConfigError, IndexBusyError, SqlQueryFailedError
from udm.index import SqlLimits, SqlMemoryError, SqlRefusedError, SqlTimeoutError, get_query, run_readonly_sql

__all__ = ["UdmSqlInput", "UdmSqlOutput", "UdmSqlQueryTool", "UdmSqlStatus"]


class UdmSqlStatus(StrEnum):
    """Outcome of one query."""

    SUCCESS = "SUCCESS"
    ERROR_REFUSED = "ERROR_REFUSED"
    ERROR_QUERY_FAILED = "ERROR_QUERY_FAILED"
    ERROR_TIMEOUT = "ERROR_TIMEOUT"
    ERROR_OUT_OF_MEMORY = "ERROR_OUT_OF_MEMORY"
    ERROR_INDEX_BUSY = "ERROR_INDEX_BUSY"
    ERROR_NO_INDEX = "ERROR_NO_INDEX"


class UdmSqlInput(ToolInput):
    """One read-only query."""

    sql: str = Field(
        min_length=1,
        description="One SELECT or WITH statement over the index tables: files, sections, blocks, ids, "
        "tasks, modes, tools, config, links.",
    )
    max_rows: int | None = Field(
        default=None, ge=1, le=100_000, description="Row cap for this query (at most the configured cap)."
    )


class UdmSqlOutput(BaseModel):
    """Rows of the query, or why it was refused."""

    status: UdmSqlStatus = Field(description="SUCCESS or what went wrong.")
    columns: list[str] = Field(default_factory=list, description="Column names.")
    rows: list[list[Any]] = Field(default_factory=list, description="Rows, as JSON values.")
    rowCount: int = Field(default=0, description="Rows returned.")
    truncated: bool = Field(default=False, description="True when the row cap cut the result.")
    elapsedMs: float = Field(default=0.0, description="Query time in milliseconds.")
    errorDetails: str | None = Field(default=None, description="What went wrong; null on success.")


class UdmSqlQueryTool(Tool[UdmSqlInput, UdmSqlOutput]):
    """Read-only SQL over the never-stale index."""

    name: ClassVar[str] = "udmSqlQueryTool"
    description: ClassVar[str] = (
        "Runs one read-only SQL query (SELECT or WITH only) over the UDM index: tables files, sections, "
        "blocks, ids, tasks, modes, tools, config and links. Results are capped in rows, time, memory and "
        "temporary disk; any other statement is refused."
    )
    Input: ClassVar[type[BaseModel]] = UdmSqlInput
    Output: ClassVar[type[BaseModel]] = UdmSqlOutput
    permission: ClassVar[Permission] = Permission.SAFE
    errors: ClassVar[ErrorTable] = {
        SqlTimeoutError: Failure(
            UdmSqlStatus.ERROR_TIMEOUT, details=lambda exc: f"{exc} (setting sql_timeout_s)"
        ),
        SqlMemoryError: UdmSqlStatus.ERROR_OUT_OF_MEMORY,
        SqlQueryFailedError: UdmSqlStatus.ERROR_QUERY_FAILED,
        SqlRefusedError: UdmSqlStatus.ERROR_REFUSED,
        # No UDM root to index: nothing to query, and nothing the SQL text could change.
        ConfigError: UdmSqlStatus.ERROR_NO_INDEX,
        IndexBusyError: Failure(UdmSqlStatus.ERROR_INDEX_BUSY, transient=True, retry_after=1.0),
    }

    def execute(self, data: UdmSqlInput, ctx: ToolContext) -> UdmSqlOutput:
        """Check, run and cap one query."""
        settings = ctx.settings
        cap = min(data.max_rows or settings.sql_row_cap, settings.sql_row_cap)
        query = get_query(settings)
        query.fresh()
        result = run_readonly_sql(
            query.index,
            data.sql,
            row_cap=cap,
            timeout_s=settings.sql_timeout_s,
            limits=SqlLimits.from_settings(settings),
        )
        return UdmSqlOutput(
            status=UdmSqlStatus.SUCCESS,
            columns=result.columns,
            rows=result.rows,
            rowCount=len(result.rows),
            truncated=result.truncated,
            elapsedMs=result.elapsed_ms,
        )
