"""udmQueryTool: sections, tasks, modes, tools, config values, IDs, references and search from the UDM.

Both shapes of the specification are accepted: `query_type` + `udm_path_or_id` (the earlier one)
and `udm_filepath` + `section_identifier` + `return_format`. Answers come from the DuckDB index,
which is refreshed from the files before every answer, so they are never stale.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import StrEnum
from typing import Any, ClassVar

from pydantic import BaseModel, Field, model_validator

from tasks.base import ErrorTable, Failure, Permission, Tool, ToolContext, ToolInput
from tasks.udm_query_answers import (
    PATHLIKE,
    definitions_content,
    fragment,
    is_known,
    references_content,
    search_content,
    verification_content,
)
from udm.errors import (
    AmbiguousTargetError,
    ConfigError,
    DocumentError,
    IndexBusyError,
    TargetNotFoundError,
    UdmError,
)
from udm.index import UdmQuery, definition_places, get_query
from udm.markdown import split_lines
from udm.verify import last_verified

__all__ = ["QueryType", "ReturnFormat", "UdmQueryInput", "UdmQueryOutput", "UdmQueryStatus", "UdmQueryTool"]


class QueryType(StrEnum):
    """What to look up (the `query_type` shape)."""

    GET_SECTION_CONTENT = "get_section_content"
    GET_TASK_DEFINITION = "get_task_definition"
    GET_MODE_DEFINITION = "get_mode_definition"
    GET_TOOL_DEFINITION = "get_tool_definition"
    GET_CONFIG_VALUE = "get_config_value"
    FIND_BY_ID = "find_by_id"
    SEARCH = "search"
    REFERENCES = "references"
    # Extension beside the specification's types: verification results from the index.
    LAST_VERIFIED = "last_verified"


# Far above any heading path in a manual; bounds the work one identifier can cost.
MAX_TARGET_CHARS = 2000


class ReturnFormat(StrEnum):
    """How a section is returned (the `udm_filepath` shape)."""

    MARKDOWN = "markdown"
    JSON_PARSED_SECTION = "json_parsed_section"
    RAW_TEXT = "raw_text"


class UdmQueryStatus(StrEnum):
    """Statuses of both shapes."""

    SUCCESS = "SUCCESS"
    ERROR_PATH_NOT_FOUND = "ERROR_PATH_NOT_FOUND"
    ERROR_ID_NOT_FOUND = "ERROR_ID_NOT_FOUND"
    ERROR_PARSING_UDM_SECTION = "ERROR_PARSING_UDM_SECTION"
    ERROR_AMBIGUOUS_QUERY = "ERROR_AMBIGUOUS_QUERY"
    ERROR_FILE_NOT_FOUND = "ERROR_FILE_NOT_FOUND"
    ERROR_SECTION_NOT_FOUND = "ERROR_SECTION_NOT_FOUND"
    ERROR_PARSE_FAILED = "ERROR_PARSE_FAILED"
    ERROR_INVALID_INPUT = "ERROR_INVALID_INPUT"
    ERROR_UNKNOWN = "ERROR_UNKNOWN"


class UdmQueryInput(ToolInput):
    """Either `query_type` + `udm_path_or_id`, or `udm_filepath` (+ `section_identifier`, `return_format`)."""

    query_type: QueryType | None = Field(
        default=None,
        description="The type of query: get_section_content, get_task_definition, get_mode_definition, "
        "get_tool_definition, get_config_value, find_by_id, search (ranked full text), references "
        "(every mention of an ID) or last_verified (extension: the latest browser-check results for an "
        "ID, check ID or section).",
    )
    udm_path_or_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_TARGET_CHARS,
        description="For query_type: a UDM file path with an optional '#section' (heading text, anchor or ID), "
        "an ID such as 'TASK-P0-M0.1-T001', a tool name, a dotted config key, or search words.",
    )
    udm_filepath: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_TARGET_CHARS,
        description="The UDM Markdown file to read, relative to the UDM root (e.g. '04-modes.md').",
    )
    section_identifier: str | None = Field(
        default=None,
        max_length=MAX_TARGET_CHARS,
        description="Optional: heading text ('## 5.3 Mode: ROO-MODE-PLAN-STRATEGIC' or without the hashes), "
        "heading path ('A > B'), anchor ('#x' or 'x') or an ID the section defines. Omitted: the whole file.",
    )
    return_format: ReturnFormat = Field(
        default=ReturnFormat.MARKDOWN,
        description="markdown (default), json_parsed_section (the section's YAML/JSON block parsed) or raw_text.",
    )
    limit: int = Field(default=10, ge=1, le=500, description="Most results for search and references.")

    @model_validator(mode="after")
    def _one_shape(self) -> UdmQueryInput:
        if self.query_type is not None and self.udm_filepath is not None:
            raise ValueError("give either query_type + udm_path_or_id or udm_filepath, not both")
        if self.query_type is None and self.udm_filepath is None:
            raise ValueError("give query_type + udm_path_or_id, or udm_filepath")
        if self.query_type is not None and not self.udm_path_or_id:
            raise ValueError("udm_path_or_id is required with query_type")
        if self.udm_filepath is not None and self.udm_path_or_id is not None:
            raise ValueError("udm_path_or_id belongs to the query_type shape; use section_identifier")
        return self


class SourceRef(BaseModel):
    """Where an answer came from."""

    file: str = Field(description="File relative to the UDM root.")
    line: int = Field(description="1-based line.")
    section_path: str | None = Field(default=None, description="Heading path of the section.")


class UdmQueryOutput(BaseModel):
    """The answer: `queryPerformed`/`retrievedContent` for the query_type shape, `content` for the other."""

    status: UdmQueryStatus = Field(description="SUCCESS or what went wrong.")
    queryPerformed: str | None = Field(default=None, description="The query, as understood.")
    retrievedContent: Any = Field(
        default=None,
        description="Markdown for sections; the parsed definition for tasks, modes, tools and config; "
        "a list for search and references. Null on error.",
    )
    udm_filepath_queried: str | None = Field(default=None, description="The file read (udm_filepath shape).")
    section_identifier_used: str | None = Field(
        default=None, description="The section that matched, as its heading path."
    )
    content: Any = Field(default=None, description="The content in the requested return_format.")
    source: SourceRef | None = Field(default=None, description="File and line of the answer.")
    candidates: list[str] = Field(
        default_factory=list, description="What an ambiguous query could mean, 'path (line N)' each."
    )
    errorDetails: str | None = Field(default=None, description="What went wrong; null on success.")


def plain_text(markdown: str) -> str:
    """Markdown reduced to plain text: markup, fences and link targets dropped, words kept."""
    out: list[str] = []
    for line in markdown.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            continue
        line = re.sub(r"^\s{0,3}#{1,6}\s+", "", line)
        line = re.sub(r"^\s*[=\-]{3,}\s*$", "", line)
        line = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", line)
        line = re.sub(r"(\*\*|__|`)", "", line)
        line = re.sub(r"<[^>]+>", "", line)
        out.append(line.rstrip())
    return "\n".join(out).strip() + "\n"


class UdmQueryTool(Tool[UdmQueryInput, UdmQueryOutput]):
    """Query the UDM through its never-stale index."""

    name: ClassVar[str] = "udmQueryTool"
    description: ClassVar[str] = (
        "Looks things up in the Unified Development Manual without reading whole files: a section's "
        "Markdown (by file and heading, anchor or ID), a task, mode or tool definition, a configuration "
        "value by dotted key, where an ID is defined or mentioned, or a ranked full-text search. "
        "Answers always reflect the files on disk."
    )
    Input: ClassVar[type[BaseModel]] = UdmQueryInput
    Output: ClassVar[type[BaseModel]] = UdmQueryOutput
    permission: ClassVar[Permission] = Permission.SAFE
    # The other errors' statuses depend on the query type (and ConfigError's on the input's shape):
    # those stay in _by_type/_by_file and below.
    errors: ClassVar[ErrorTable] = {
        IndexBusyError: Failure(UdmQueryStatus.ERROR_UNKNOWN, transient=True, retry_after=1.0),
    }

    def execute(self, data: UdmQueryInput, ctx: ToolContext) -> UdmQueryOutput:
        """Answer one query; expected failures are statuses."""
        query = get_query(ctx.settings)
        try:
            if data.query_type is not None:
                return _by_type(query, data)
            return _by_file(query, data)
        except ConfigError as exc:
            # No UDM to look in: the path (or file) the caller named cannot exist.
            status = (
                UdmQueryStatus.ERROR_PATH_NOT_FOUND
                if data.query_type
                else UdmQueryStatus.ERROR_FILE_NOT_FOUND
            )
            return UdmQueryOutput(status=status, errorDetails=str(exc))


# ----- query_type shape -----------------------------------------------------------------------------


def _by_type(q: UdmQuery, data: UdmQueryInput) -> UdmQueryOutput:
    """The query_type shape: one answer per type (`_ANSWERS`); lookup errors become statuses."""
    qt = data.query_type
    target = (data.udm_path_or_id or "").strip()
    performed = f"{qt.value if qt else ''}: {target}"
    try:
        return _ANSWERS.get(qt, _definition)(q, data, target, performed)  # type: ignore[arg-type]
    except AmbiguousTargetError as exc:
        return _error(
            performed,
            UdmQueryStatus.ERROR_AMBIGUOUS_QUERY,
            f"{exc}; candidates: {'; '.join(exc.candidates)}",
            exc.candidates,
        )
    except TargetNotFoundError as exc:
        status = (
            UdmQueryStatus.ERROR_PATH_NOT_FOUND
            if qt is QueryType.GET_SECTION_CONTENT
            else UdmQueryStatus.ERROR_ID_NOT_FOUND
        )
        hint = ""
        if qt is QueryType.GET_CONFIG_VALUE:
            keys = q.config_keys(fragment(target).split(".")[-1])
            hint = f"; similar keys: {', '.join(keys)}" if keys else ""
        return _error(performed, status, f"{exc}{hint}")
    except (ConfigError, IndexBusyError):
        raise  # the errors table's statuses (a busy index is transient: retried inside a Prefect task)
    except (DocumentError, UdmError) as exc:
        return _error(performed, UdmQueryStatus.ERROR_PARSING_UDM_SECTION, str(exc))


def _error(
    performed: str, status: UdmQueryStatus, details: str, candidates: list[str] | None = None
) -> UdmQueryOutput:
    return UdmQueryOutput(
        status=status, queryPerformed=performed, errorDetails=details, candidates=candidates or []
    )


def _search(q: UdmQuery, data: UdmQueryInput, target: str, performed: str) -> UdmQueryOutput:
    """search: ranked full-text hits."""
    content = search_content(q, target, data.limit)
    return UdmQueryOutput(status=UdmQueryStatus.SUCCESS, queryPerformed=performed, retrievedContent=content)


def _references(q: UdmQuery, data: UdmQueryInput, target: str, performed: str) -> UdmQueryOutput:
    """references: an ID's definitions and every mention."""
    ident = fragment(target)
    content = references_content(q, ident, data.limit)
    if content is None:
        return _error(
            performed, UdmQueryStatus.ERROR_ID_NOT_FOUND, f"'{ident}' is neither defined nor mentioned"
        )
    return UdmQueryOutput(
        status=UdmQueryStatus.SUCCESS, queryPerformed=f"references: {ident}", retrievedContent=content
    )


# The typed definitions: the lookup and the column of its row that is the answer.
_DEFINITIONS = {
    QueryType.GET_TASK_DEFINITION: ("task", "definition"),
    QueryType.GET_MODE_DEFINITION: ("mode", "definition"),
    QueryType.GET_TOOL_DEFINITION: ("tool", "definition"),
    QueryType.GET_CONFIG_VALUE: ("config", "value"),
}


def _definition(q: UdmQuery, data: UdmQueryInput, target: str, performed: str) -> UdmQueryOutput:
    """get_task/mode/tool_definition, get_config_value: the parsed definition and where it is."""
    lookup, column = _DEFINITIONS[data.query_type]  # type: ignore[index]
    row = getattr(q, lookup)(fragment(target))
    return UdmQueryOutput(
        status=UdmQueryStatus.SUCCESS,
        queryPerformed=performed,
        retrievedContent=row[column],
        source=SourceRef(file=row["file"], line=row["line"], section_path=row.get("section_path")),
    )


def _section_by_target(q: UdmQuery, data: UdmQueryInput, target: str, performed: str) -> UdmQueryOutput:
    """get_section_content: `file#section`, or the section an ID defines."""
    if PATHLIKE.search(target) or "/" in target:
        file, _, ident = target.partition("#")
        doc, sec = q.section(file, ident or None)
        text = q.markdown(doc, sec)
        line = 1 if sec is None else sec.start + 1
        return UdmQueryOutput(
            status=UdmQueryStatus.SUCCESS,
            queryPerformed=f"get_section_content: {doc.path}" + (f"#{sec.anchor}" if sec else ""),
            retrievedContent=text,
            source=SourceRef(file=doc.path, line=line, section_path=sec.path if sec else None),
        )
    return _find_by_id(q, target.lstrip("#"), performed, content_only=True)


def _find(q: UdmQuery, data: UdmQueryInput, target: str, performed: str) -> UdmQueryOutput:
    """find_by_id: the ID's definitions and the section of its one definition place."""
    return _find_by_id(q, target, performed)


def _find_by_id(q: UdmQuery, ident: str, performed: str, *, content_only: bool = False) -> UdmQueryOutput:
    defs = q.find_by_id(ident)
    if not defs:
        similar = q.similar_ids(ident)
        hint = f"; similar IDs: {', '.join(similar)}" if similar else ""
        return _error(
            performed, UdmQueryStatus.ERROR_ID_NOT_FOUND, f"no definition of '{ident}' in the UDM{hint}"
        )
    places = definition_places(defs)
    if len(places) > 1:
        candidates = [f"{d.file}:{d.line} {d.section_path or ''}".strip() for d in places]
        details = f"'{ident}' is defined in {len(places)} places: {'; '.join(candidates)}"
        return _error(performed, UdmQueryStatus.ERROR_AMBIGUOUS_QUERY, details, candidates)
    first = places[0]
    doc = q.document(first.file)
    sec = doc.sections[first.section] if first.section is not None else None
    if sec is not None:
        markdown = q.markdown(doc, sec)
    else:
        markdown = "".join(split_lines(q.read_text(first.file))[first.line - 1 : first.line])
    source = SourceRef(
        file=first.file, line=(sec.start + 1) if sec else first.line, section_path=first.section_path
    )
    content: Any = (
        markdown
        if content_only
        else {"id": ident, "definitions": definitions_content(defs), "section": markdown}
    )
    return UdmQueryOutput(
        status=UdmQueryStatus.SUCCESS, queryPerformed=performed, retrievedContent=content, source=source
    )


def _last_verified(q: UdmQuery, data: UdmQueryInput, target: str, performed: str) -> UdmQueryOutput:
    """Latest verification per check covering the target; unknown targets are ERROR_ID_NOT_FOUND."""
    key = target.lstrip("#")
    rows = last_verified(q.settings, key)
    if not rows and not is_known(q, key):
        similar = q.similar_ids(fragment(key))
        hint = f"; similar IDs: {', '.join(similar)}" if similar else ""
        return _error(
            performed,
            UdmQueryStatus.ERROR_ID_NOT_FOUND,
            f"'{key}' is not an ID, section or check known to the UDM or its verifications{hint}",
        )
    return UdmQueryOutput(
        status=UdmQueryStatus.SUCCESS,
        queryPerformed=performed,
        retrievedContent=verification_content(key, rows),
    )


# One answer per query type; the typed definitions (`_DEFINITIONS`) share one.
_ANSWERS: dict[QueryType, Callable[[UdmQuery, UdmQueryInput, str, str], UdmQueryOutput]] = {
    QueryType.GET_SECTION_CONTENT: _section_by_target,
    QueryType.FIND_BY_ID: _find,
    QueryType.LAST_VERIFIED: _last_verified,
    QueryType.SEARCH: _search,
    QueryType.REFERENCES: _references,
}


# ----- udm_filepath shape ---------------------------------------------------------------------------


def _by_file(q: UdmQuery, data: UdmQueryInput) -> UdmQueryOutput:
    """The udm_filepath shape: the file, then the section, then its content in the asked format."""
    given = (data.udm_filepath or "").strip()
    ident = data.section_identifier.strip() if data.section_identifier else None
    out = UdmQueryOutput(
        status=UdmQueryStatus.SUCCESS, udm_filepath_queried=given, section_identifier_used=ident
    )
    found = _file_section(q, given, ident, out)
    if found is None:
        return out
    file, doc, sec = found
    try:
        markdown = q.markdown(doc, sec)
        blocks = (
            [b for b in q.section_blocks(file, sec) if b["lang"] in ("yaml", "yml", "json")]
            if data.return_format is ReturnFormat.JSON_PARSED_SECTION
            else []
        )
    except (TargetNotFoundError, OSError) as exc:
        # The file went away between the lookup and the read (an editor saving, say).
        out.status = UdmQueryStatus.ERROR_FILE_NOT_FOUND
        out.errorDetails = f"{file} changed while it was read: {exc}"
        return out
    except DocumentError as exc:
        out.status, out.errorDetails = UdmQueryStatus.ERROR_PARSE_FAILED, str(exc)
        return out
    if data.return_format is ReturnFormat.MARKDOWN:
        out.content = markdown
    elif data.return_format is ReturnFormat.RAW_TEXT:
        out.content = plain_text(markdown)
    else:
        _parsed_blocks(out, file, sec, blocks)
    return out


def _file_section(
    q: UdmQuery, given: str, ident: str | None, out: UdmQueryOutput
) -> tuple[str, Any, Any] | None:
    """The file and section asked for (recorded in `out`); None with `out`'s error status set."""
    try:
        file = q.resolve_file(given)
    except AmbiguousTargetError as exc:
        out.status, out.errorDetails, out.candidates = (
            UdmQueryStatus.ERROR_INVALID_INPUT,
            str(exc),
            exc.candidates,
        )
        return None
    except TargetNotFoundError as exc:
        out.status, out.errorDetails = UdmQueryStatus.ERROR_FILE_NOT_FOUND, str(exc)
        return None
    out.udm_filepath_queried = file
    try:
        doc, sec = q.section(file, ident)
    except AmbiguousTargetError as exc:
        out.status = UdmQueryStatus.ERROR_SECTION_NOT_FOUND
        out.errorDetails = f"{exc}; candidates: {'; '.join(exc.candidates)}"
        out.candidates = exc.candidates
        return None
    except TargetNotFoundError as exc:
        out.status, out.errorDetails = UdmQueryStatus.ERROR_SECTION_NOT_FOUND, str(exc)
        return None
    except DocumentError as exc:
        out.status, out.errorDetails = UdmQueryStatus.ERROR_PARSE_FAILED, str(exc)
        return None
    if sec is not None:
        out.section_identifier_used = sec.path
    out.source = SourceRef(
        file=file, line=sec.start + 1 if sec else 1, section_path=sec.path if sec else None
    )
    return file, doc, sec


def _parsed_blocks(out: UdmQueryOutput, file: str, sec: Any, blocks: list[dict[str, Any]]) -> None:
    """json_parsed_section: the section's YAML/JSON block parsed (a list when there are several)."""
    bad = [b for b in blocks if b["error"]]
    if bad:
        out.status, out.errorDetails = UdmQueryStatus.ERROR_PARSE_FAILED, bad[0]["error"]
    elif not blocks:
        where = f"section '{sec.path}'" if sec else "the file"
        out.status = UdmQueryStatus.ERROR_PARSE_FAILED
        out.errorDetails = f"{file}: {where} has no YAML/JSON block to parse"
    else:
        out.content = blocks[0]["data"] if len(blocks) == 1 else [b["data"] for b in blocks]
