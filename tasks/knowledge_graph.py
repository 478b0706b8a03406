"""knowledgeGraphQueryTool: Cypher, SPARQL and plain-English questions over the manual's knowledge graph."""

from __future__ import annotations

import time
from enum import StrEnum
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from tasks.base import Permission, Tool, ToolContext, ToolInput
from udm.errors import (
    GraphCycleError,
    GraphQueryError,
    GraphTimeoutError,
    GraphUnavailableError,
    IndexBusyError,
    TargetNotFoundError,
    UdmError,
)
from udm.graph import QueryResult

__all__ = ["KGInput", "KGOutput", "KGStatus", "KnowledgeGraphQueryTool", "format_results"]


class QueryLanguage(StrEnum):
    """Languages the tool accepts."""

    CYPHER = "cypher"
    SPARQL = "sparql"
    GREMLIN = "gremlin"
    NATURAL_LANGUAGE = "natural_language"


class ResultFormat(StrEnum):
    """Shapes of `results`."""

    JSON = "json"
    TABLE = "table"
    TEXT_SUMMARY = "text_summary"


class KGStatus(StrEnum):
    """Outcome of a knowledge-graph query."""

    SUCCESS = "SUCCESS"
    ERROR_KG_CONNECTION = "ERROR_KG_CONNECTION"
    ERROR_INVALID_QUERY = "ERROR_INVALID_QUERY"
    ERROR_NO_RESULTS = "ERROR_NO_RESULTS"
    ERROR_UNKNOWN = "ERROR_UNKNOWN"


class KGInput(ToolInput):
    """Input of knowledgeGraphQueryTool."""

    queryLanguage: QueryLanguage = Field(
        description="cypher, sparql, natural_language (a supported question form), or gremlin (not supported)."
    )
    query: str = Field(min_length=1, max_length=20000, description="The query, or the question in English.")
    resultFormat: ResultFormat = Field(
        default=ResultFormat.JSON,
        description="json: a list of row objects; table: {columns, rows}; text_summary: a short text.",
    )
    timeoutSeconds: float | None = Field(
        default=None, gt=0, le=60, description="Time limit of this query (default: settings.kg_timeout_s)."
    )
    maxRows: int | None = Field(
        default=None, ge=1, le=100000, description="Most rows returned (default: settings.kg_row_cap)."
    )


class KGOutput(BaseModel):
    """Output of knowledgeGraphQueryTool."""

    status: KGStatus = Field(description="Outcome of the query.")
    queryExecuted: str = Field(description="The structured query actually run against the graph.")
    results: Any = Field(default=None, description="The rows, shaped by resultFormatUsed.")
    resultFormatUsed: str | None = Field(default=None, description="The shape of `results`.")
    errorDetails: str | None = Field(default=None, description="What went wrong; null on success.")
    rowCount: int = Field(default=0, description="Rows returned.")
    truncated: bool = Field(default=False, description="True when the row cap cut the rows short.")
    timedOut: bool = Field(default=False, description="True when the query was stopped at its time limit.")
    durationMs: float = Field(default=0.0, description="Time the query took, milliseconds.")


_GREMLIN = (
    "Gremlin is not supported by this knowledge graph. Use cypher (g.V().has('id','X').out('depends_on') "
    "is MATCH (a {id: 'X'})-[:depends_on]->(b) RETURN b.id), sparql (SELECT ?b WHERE { ?a udm:id 'X' ; "
    "udm:depends_on ?b }) or natural_language ('what does X depend on')."
)


def _summary(result: QueryResult, limit: int = 10) -> str:
    if not result.rows:
        return "No results."
    n = len(result.rows)
    lines = [f"{n} result{'s' if n != 1 else ''}{' (truncated at the row cap)' if result.truncated else ''}:"]
    for row in result.rows[:limit]:
        lines.append(
            "- " + ", ".join(f"{c}={v}" for c, v in zip(result.columns, row, strict=False) if v is not None)
        )
    if n > limit:
        lines.append(f"... and {n - limit} more")
    return "\n".join(lines)


def format_results(result: QueryResult, fmt: ResultFormat | str) -> Any:
    """Shape rows as json (row objects), table ({columns, rows}) or text_summary (a string)."""
    fmt = ResultFormat(fmt)
    if fmt is ResultFormat.TABLE:
        return {"columns": result.columns, "rows": result.rows}
    if fmt is ResultFormat.TEXT_SUMMARY:
        return _summary(result)
    return result.records()


class KnowledgeGraphQueryTool(Tool[KGInput, KGOutput]):
    """Queries the knowledge graph of the manual."""

    name: ClassVar[str] = "knowledgeGraphQueryTool"
    description: ClassVar[str] = (
        "Answers questions about how the manual's parts relate: tasks and their dependencies, components "
        "and owner modes, modes and their tools, sections and the IDs they mention, links and checks. "
        "Query with Cypher (node property `id`, `kind`; relationships depends_on, defined_in, references, "
        "owned_by, uses_tool, links_to, part_of, verified_by), SPARQL over an RDF view (prefix udm:), "
        "or plain questions such as 'what depends on TASK-P0-M0.1-T001'. Read-only, time-limited."
    )
    Input: ClassVar[type[BaseModel]] = KGInput
    Output: ClassVar[type[BaseModel]] = KGOutput
    permission: ClassVar[Permission] = Permission.SAFE

    def execute(self, data: KGInput, ctx: ToolContext) -> KGOutput:
        """Run the query on the current graph and shape its rows."""
        from udm.graph import open_graph

        started = time.perf_counter()
        executed = data.query
        fmt = data.resultFormat

        def out(status: KGStatus, **kw: Any) -> KGOutput:
            return KGOutput(
                status=status,
                queryExecuted=executed,
                durationMs=round((time.perf_counter() - started) * 1000, 3),
                **kw,
            )

        if data.queryLanguage is QueryLanguage.GREMLIN:
            return out(KGStatus.ERROR_INVALID_QUERY, errorDetails=_GREMLIN)
        try:
            handle = open_graph(ctx.settings)
        except (GraphUnavailableError, IndexBusyError, OSError) as exc:
            return out(KGStatus.ERROR_KG_CONNECTION, errorDetails=f"cannot open the knowledge graph: {exc}")
        try:
            if data.queryLanguage is QueryLanguage.CYPHER:
                result = handle.cypher(data.query, timeout_s=data.timeoutSeconds, row_cap=data.maxRows)
            elif data.queryLanguage is QueryLanguage.SPARQL:
                result = handle.sparql(data.query, timeout_s=data.timeoutSeconds, row_cap=data.maxRows)
            else:
                from udm.graph import translate

                plan = translate(data.query)
                executed = f"{plan.language}: {plan.text}"
                _, result = handle.natural_language(
                    data.query, timeout_s=data.timeoutSeconds, row_cap=data.maxRows
                )
        except GraphTimeoutError as exc:
            return out(KGStatus.ERROR_INVALID_QUERY, errorDetails=f"TIMEOUT: {exc}", timedOut=True)
        except (GraphQueryError, TargetNotFoundError, GraphCycleError) as exc:
            return out(KGStatus.ERROR_INVALID_QUERY, errorDetails=str(exc))
        except (GraphUnavailableError, IndexBusyError) as exc:
            return out(KGStatus.ERROR_KG_CONNECTION, errorDetails=str(exc))
        except UdmError as exc:
            return out(KGStatus.ERROR_INVALID_QUERY, errorDetails=str(exc))
        except Exception as exc:  # an engine failure we did not foresee is reported, not raised
            return out(KGStatus.ERROR_UNKNOWN, errorDetails=f"{type(exc).__name__}: {exc}")
        shaped = format_results(result, fmt)
        if not result.rows:
            return out(
                KGStatus.ERROR_NO_RESULTS,
                results=shaped,
                resultFormatUsed=fmt.value,
                errorDetails="the query ran and matched nothing",
            )
        return out(
            KGStatus.SUCCESS,
            results=shaped,
            resultFormatUsed=fmt.value,
            rowCount=len(result.rows),
            truncated=result.truncated,
        )
