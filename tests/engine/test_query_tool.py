"""udmQueryTool in both input shapes, every status; udmSqlQueryTool's refusals, caps and time limit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tasks.base import ToolContext, call_tool
from tasks.udm_query import UdmQueryTool, plain_text
from tasks.udm_sql import UdmSqlQueryTool
from udm.config import load_settings
from udm.errors import TargetNotFoundError
from udm.index import SqlRefusedError, UdmQuery
from udm.index.sql import check_readonly_sql


def q(ctx: ToolContext, **raw: Any) -> dict[str, Any]:
    result = call_tool(UdmQueryTool(), raw, ctx)
    assert result.envelope.data is not None, result.envelope.error
    return result.envelope.data


def test_find_by_id(qctx: ToolContext) -> None:
    data = q(qctx, query_type="find_by_id", udm_path_or_id="COMP-002")
    assert data["status"] == "SUCCESS"
    content = data["retrievedContent"]
    assert content["definitions"][0]["file"] == "02-system-architecture.md"
    assert content["section"].startswith("### 2.2.2 Component: Query Gateway")
    missing = q(qctx, query_type="find_by_id", udm_path_or_id="COMP-0")
    assert missing["status"] == "ERROR_ID_NOT_FOUND" and "similar IDs: COMP-001" in missing["errorDetails"]


def test_section_content_by_path_anchor_heading_and_id(qctx: ToolContext) -> None:
    for target in (
        "/docs/udm/04-modes.md#ROO-MODE-PLAN-STRATEGIC",
        "04-modes.md#53-mode-roo-mode-plan-strategic",
        "04-modes.md#5.3 Mode: ROO-MODE-PLAN-STRATEGIC",
        "ROO-MODE-PLAN-STRATEGIC",
    ):
        data = q(qctx, query_type="get_section_content", udm_path_or_id=target)
        assert data["status"] == "SUCCESS", (target, data)
        assert data["retrievedContent"].startswith("## 5.3 Mode: ROO-MODE-PLAN-STRATEGIC\n")
    whole = q(qctx, query_type="get_section_content", udm_path_or_id="06-config.md")
    assert whole["retrievedContent"].startswith("# Section 07")
    assert (
        q(qctx, query_type="get_section_content", udm_path_or_id="nope.md#x")["status"]
        == "ERROR_PATH_NOT_FOUND"
    )
    assert (
        q(qctx, query_type="get_section_content", udm_path_or_id="04-modes.md#Nope")["status"]
        == "ERROR_PATH_NOT_FOUND"
    )


def test_definitions(qctx: ToolContext) -> None:
    task = q(qctx, query_type="get_task_definition", udm_path_or_id="05-roadmap.md#TASK-P0-M0.1-T002")
    assert task["retrievedContent"]["depends_on"] == ["TASK-P0-M0.1-T001"]
    assert task["source"]["file"] == "05-roadmap.md"
    mode = q(qctx, query_type="get_mode_definition", udm_path_or_id="ROO-MODE-RESEARCH")
    assert "webSearchTool" in mode["retrievedContent"]["tools"]
    tool = q(qctx, query_type="get_tool_definition", udm_path_or_id="fileSystemAccessTool")
    assert tool["retrievedContent"]["input_schema"]["required"] == ["action", "filePath"]
    assert q(qctx, query_type="get_config_value", udm_path_or_id="browser.viewport")["retrievedContent"] == {
        "width": 1280,
        "height": 800,
    }
    bad = q(qctx, query_type="get_config_value", udm_path_or_id="http.timeoutz")
    assert bad["status"] == "ERROR_ID_NOT_FOUND"
    assert (
        q(qctx, query_type="get_task_definition", udm_path_or_id="TASK-X-1")["status"] == "ERROR_ID_NOT_FOUND"
    )


def test_ambiguous_queries_list_candidates(qctx: ToolContext, settings: Any) -> None:
    extra = settings.udm_root / "99-dup.md"
    extra.write_text(
        "# Dup\n\n- **ID:** `COMP-003`\n\n## http\n\n```yaml\nhttp:\n  timeout: 3\n```\n", encoding="utf-8"
    )
    data = q(qctx, query_type="find_by_id", udm_path_or_id="COMP-003")
    assert data["status"] == "ERROR_AMBIGUOUS_QUERY" and len(data["candidates"]) == 2
    assert any(c.startswith("99-dup.md:3") for c in data["candidates"])
    # Config lives only in config files; this one is not, so the key is still unique.
    assert q(qctx, query_type="get_config_value", udm_path_or_id="http.timeout")["status"] == "SUCCESS"
    (settings.udm_root / "07-settings.md").write_text(
        "# S\n\n```yaml\nhttp:\n  timeout: 3\n```\n", encoding="utf-8"
    )
    data = q(qctx, query_type="get_config_value", udm_path_or_id="http.timeout")
    assert data["status"] == "ERROR_AMBIGUOUS_QUERY" and len(data["candidates"]) == 2


def test_parse_error_status(qctx: ToolContext, settings: Any) -> None:
    (settings.udm_root / "bad.md").write_bytes(b"# Bad\n\xff\xfe\n")
    data = q(qctx, query_type="get_section_content", udm_path_or_id="bad.md#Bad")
    assert data["status"] == "ERROR_PARSING_UDM_SECTION"


def test_search_and_references(qctx: ToolContext) -> None:
    data = q(qctx, query_type="search", udm_path_or_id="symlink sandbox", limit=3)
    hits = data["retrievedContent"]
    assert data["status"] == "SUCCESS" and 1 <= len(hits) <= 3
    assert {"file", "line", "section_path", "snippet", "score"} <= set(hits[0])
    by_id = q(qctx, query_type="search", udm_path_or_id="TASK-P0-M0.1-T001")["retrievedContent"]
    assert by_id and "TASK-P0-M0.1-T001" in by_id[0]["section_path"]
    # Sections that only mention an ID are found through it too (the parse's `mentions`).
    mentioned = q(qctx, query_type="search", udm_path_or_id="COMP-006", limit=20)["retrievedContent"]
    assert any(h["file"] == "00-index.md" for h in mentioned), mentioned
    refs = q(qctx, query_type="references", udm_path_or_id="COMP-006", limit=200)["retrievedContent"]
    assert refs["definitions"][0]["how"] == "field"
    assert any(r["file"] == "00-index.md" for r in refs["references"])
    assert all("COMP-006" in r["text"] for r in refs["references"])
    assert q(qctx, query_type="references", udm_path_or_id="NOPE-1")["status"] == "ERROR_ID_NOT_FOUND"


def test_filepath_shape(qctx: ToolContext) -> None:
    md = q(qctx, udm_filepath="04-modes.md", section_identifier="## 5.3 Mode: ROO-MODE-PLAN-STRATEGIC")
    assert md["status"] == "SUCCESS" and md["content"].startswith("## 5.3 Mode")
    assert md["section_identifier_used"] == "Section 05: Roo Modes > 5.3 Mode: ROO-MODE-PLAN-STRATEGIC"
    parsed = q(
        qctx, udm_filepath="04-modes.md", section_identifier="5.3", return_format="json_parsed_section"
    )
    assert parsed["content"]["id"] == "ROO-MODE-PLAN-STRATEGIC"
    raw = q(
        qctx, udm_filepath="05-roadmap.md", section_identifier="TASK-P0-M0.1-T001", return_format="raw_text"
    )
    assert raw["content"].startswith("TASK-P0-M0.1-T001: Set up") and "```" not in raw["content"]
    whole = q(qctx, udm_filepath="appendices/00-appendix-index.md")
    assert whole["status"] == "SUCCESS" and whole["content"].startswith("#")
    assert q(qctx, udm_filepath="missing.md")["status"] == "ERROR_FILE_NOT_FOUND"
    assert (
        q(qctx, udm_filepath="04-modes.md", section_identifier="Nope")["status"] == "ERROR_SECTION_NOT_FOUND"
    )
    noblock = q(
        qctx,
        udm_filepath="04-modes.md",
        section_identifier="Section 05: Roo Modes",
        return_format="json_parsed_section",
    )
    assert noblock["status"] == "ERROR_PARSE_FAILED"


def test_filepath_shape_parse_failed_and_invalid(qctx: ToolContext, settings: Any) -> None:
    (settings.udm_root / "broken.md").write_text("# B\n\n```yaml udm\na: [x\n```\n", encoding="utf-8")
    data = q(qctx, udm_filepath="broken.md", section_identifier="B", return_format="json_parsed_section")
    assert data["status"] == "ERROR_PARSE_FAILED" and data["errorDetails"].startswith("broken.md:4")
    (settings.udm_root / "x").mkdir()
    (settings.udm_root / "x" / "04-modes.md").write_text("# Other\n", encoding="utf-8")
    # 'modes.md' could be either file: the input is ambiguous.
    (settings.udm_root / "y").mkdir()
    (settings.udm_root / "y" / "same.md").write_text("# Y\n", encoding="utf-8")
    (settings.udm_root / "x" / "same.md").write_text("# X\n", encoding="utf-8")
    amb = q(qctx, udm_filepath="same.md")
    assert amb["status"] == "ERROR_INVALID_INPUT" and sorted(amb["candidates"]) == ["x/same.md", "y/same.md"]


def test_invalid_inputs_are_named(qctx: ToolContext) -> None:
    for raw in (
        {},
        {"query_type": "find_by_id"},
        {"query_type": "find_by_id", "udm_path_or_id": "X-1", "udm_filepath": "a.md"},
        {"query_type": "nope", "udm_path_or_id": "X"},
        {"udm_filepath": ""},
        {"udm_filepath": "a.md", "return_format": "pdf"},
    ):
        env = call_tool(UdmQueryTool(), raw, qctx).envelope
        assert not env.success and env.error and env.error.startswith("invalid input"), raw


def test_plain_text() -> None:
    assert plain_text("## T\n\n**b** [l](u) `c`\n```yaml\na: 1\n```\n") == "T\n\nb l c\na: 1\n"


def test_sql_tool(qctx: ToolContext) -> None:
    tool = UdmSqlQueryTool()
    ok = call_tool(
        tool, {"sql": "SELECT status, count(*) AS n FROM tasks GROUP BY status ORDER BY status"}, qctx
    )
    assert ok.envelope.success and ok.envelope.data["columns"] == ["status", "n"]  # type: ignore[index]
    capped = call_tool(
        tool, {"sql": "WITH t AS (SELECT * FROM ids) SELECT id FROM t", "max_rows": 5}, qctx
    ).envelope.data
    assert capped is not None and capped["rowCount"] == 5 and capped["truncated"] is True
    for sql in (
        "DELETE FROM tasks",
        "SELECT 1; DROP TABLE tasks",
        "PRAGMA version",
        "COPY tasks TO '/tmp/x.csv'",
        "ATTACH 'x.db'",
    ):
        data = call_tool(tool, {"sql": sql}, qctx).envelope.data
        assert data is not None and data["status"] == "ERROR_REFUSED", sql
    files = call_tool(tool, {"sql": "SELECT * FROM read_text('/etc/hostname')"}, qctx).envelope.data
    assert files is not None and files["status"] == "ERROR_QUERY_FAILED"


def test_sql_time_limit(qctx: ToolContext) -> None:
    qctx.settings.sql_timeout_s = 0.3
    slow = "SELECT count(*) FROM range(100000000000) a"
    data = call_tool(UdmSqlQueryTool(), {"sql": slow}, qctx).envelope.data
    assert data is not None and data["status"] == "ERROR_TIMEOUT"


def test_check_readonly_sql() -> None:
    assert check_readonly_sql("  -- note\n/* c */ select 1; ") == "-- note\n/* c */ select 1"
    with pytest.raises(SqlRefusedError, match="only SELECT"):
        check_readonly_sql("insert into t values (1)")
    with pytest.raises(SqlRefusedError, match="empty"):
        check_readonly_sql(" ; ")


def test_missing_udm_root_is_a_status(tmp_path: Any) -> None:
    from tasks.base import always_approve
    from udm.config import load_settings

    ctx = ToolContext(settings=load_settings(tmp_path, root="nowhere"), approver=always_approve, log=False)
    one = q(ctx, query_type="find_by_id", udm_path_or_id="COMP-001")
    assert one["status"] == "ERROR_PATH_NOT_FOUND" and "is not a directory" in one["errorDetails"]
    two = q(ctx, udm_filepath="a.md")
    assert two["status"] == "ERROR_FILE_NOT_FOUND"


def test_search_snippets_point_at_their_line_and_survive_a_lost_index(
    qctx: ToolContext, settings: Any
) -> None:
    import shutil

    hits = q(qctx, query_type="search", udm_path_or_id="symlink", limit=5)["retrievedContent"]
    assert hits
    for hit in hits:
        lines = (settings.udm_root / hit["file"]).read_text(encoding="utf-8").splitlines()
        assert "symlink" in hit["snippet"].lower()
        assert "symlink" in lines[hit["snippet_line"] - 1].lower()
    # The search index is a cache of a cache: lose it and it is rebuilt from the sections table.
    shutil.rmtree(settings.state_path / "search")
    from udm.index.query import _QUERIES

    _QUERIES.clear()
    again = q(qctx, query_type="search", udm_path_or_id="symlink", limit=5)["retrievedContent"]
    assert [(h["file"], h["line"]) for h in again] == [(h["file"], h["line"]) for h in hits]


def test_symlinks_out_of_the_root_are_not_indexed_or_served(
    qctx: ToolContext, settings: Any, tmp_path: Any
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\n- **ID:** `SECRET-001`\n", encoding="utf-8")
    (settings.udm_root / "leak.md").symlink_to(outside / "secret.md")
    (settings.udm_root / "leakdir").symlink_to(outside, target_is_directory=True)
    (settings.udm_root / "alias.md").symlink_to(settings.udm_root / "04-modes.md")
    missing = q(qctx, query_type="find_by_id", udm_path_or_id="SECRET-001")
    assert missing["status"] == "ERROR_ID_NOT_FOUND"
    assert q(qctx, udm_filepath="leak.md")["status"] == "ERROR_FILE_NOT_FOUND"
    assert q(qctx, udm_filepath="leakdir/secret.md")["status"] == "ERROR_FILE_NOT_FOUND"
    # A link that stays inside the manual is an ordinary file.
    assert q(qctx, udm_filepath="alias.md", section_identifier="5.3")["status"] == "SUCCESS"


@pytest.mark.parametrize("query_type", ["find_by_id", "get_task_definition", "get_section_content"])
def test_a_busy_index_is_transient_in_every_typed_query(
    qctx: ToolContext, monkeypatch: pytest.MonkeyPatch, query_type: str
) -> None:
    """A locked index is retried inside a Prefect task and reported as busy, never as a parse error."""
    from tasks.base import TransientToolError
    from udm.errors import IndexBusyError
    from udm.index.query import UdmQuery

    def busy(*_: Any, **__: Any) -> Any:
        raise IndexBusyError("index busy: another process holds the write lock")

    for name in ("fresh", "find_by_id", "task", "section", "resolve_file"):
        if hasattr(UdmQuery, name):
            monkeypatch.setattr(UdmQuery, name, busy)
    raw = {"query_type": query_type, "udm_path_or_id": "TASK-P0-M0.1-T002"}
    with pytest.raises(TransientToolError) as info:
        call_tool(UdmQueryTool(), raw, qctx, raise_transient=True)
    assert isinstance(info.value.__cause__, IndexBusyError)
    after = call_tool(UdmQueryTool(), raw, qctx).envelope.data
    assert after is not None and after["status"] != "ERROR_PARSING_UDM_SECTION"
    assert "index busy" in after["errorDetails"]


def test_a_path_in_another_folder_is_never_read_as_its_namesake(tmp_path: Path) -> None:
    # 'ja/guides/x.md' with only en/guides/x.md present used to answer with the English page (leading
    # folders were dropped to find it); only the root's own folders may be left out.
    root = tmp_path / "site" / "docs"
    (root / "en" / "guides").mkdir(parents=True)
    (root / "en" / "guides" / "x.md").write_text("# X\n")
    query = UdmQuery(load_settings(cwd=tmp_path, root=root, state_dir=tmp_path / "state"))
    try:
        with pytest.raises(TargetNotFoundError, match=r"files of that name: en/guides/x\.md"):
            query.resolve_file("ja/guides/x.md")
        assert query.resolve_file("/site/docs/en/guides/x.md") == "en/guides/x.md"
        assert query.resolve_file(f"{root}/en/guides/x.md") == "en/guides/x.md"
        assert query.resolve_file("guides/X.md") == "en/guides/x.md"
    finally:
        query.close()
