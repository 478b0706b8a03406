"""Edge input the parser, the index, lint and the query tools must survive: odd lines, BOMs, crafted strings."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tasks.base import ToolContext, call_tool
from tasks.udm_query import UdmQueryTool
from tasks.udm_sql import UdmSqlQueryTool
from udm.config import Settings, load_settings
from udm.errors import TargetNotFoundError
from udm.index import UdmQuery, lint
from udm.markdown import find_section, parse_document, section_text


def q(ctx: ToolContext, **raw: Any) -> dict[str, Any]:
    result = call_tool(UdmQueryTool(), raw, ctx)
    assert result.envelope.data is not None, result.envelope.error
    return result.envelope.data


def test_crafted_heading_identifiers_are_answered_at_once() -> None:
    doc = parse_document("# A\n\n## B #\n\ntext\n", "x.md")
    started = time.process_time()
    for ident in ("## a" + " " * 5000 + "b", "# a" + " " * 5000 + "b #"):
        with pytest.raises(TargetNotFoundError):
            find_section(doc, ident)
    assert time.process_time() - started < 0.5
    assert find_section(doc, "## B").title == "B" and find_section(doc, "## B ##").title == "B"
    with pytest.raises(TargetNotFoundError, match="names no section"):
        find_section(doc, "#")


def test_long_crafted_lines_parse_in_linear_time() -> None:
    text = (
        "# a"
        + " " * 40000
        + "b\n\n"
        + "[" * 40000
        + "]x](y)\n\n"
        + "[a](b" * 20000
        + "\n\n# a"
        + " " * 20000
        + "b #\n"
    )
    started = time.process_time()
    doc = parse_document(text, "x.md")
    assert [s.title for s in doc.sections] == ["a" + " " * 40000 + "b", "a" + " " * 20000 + "b"]
    assert [link.target for link in doc.links] == ["y"]
    # ~0.15 s on an idle core; a quadratic parse of these lines takes minutes. 2 s leaves room for
    # a machine loaded by parallel test runs.
    assert time.process_time() - started < 2.0


def test_lines_break_only_at_newlines() -> None:
    text = "# One\nline\u2028sep\x0cff\n- **ID:** `COMP-003`\n\n## Two\nsee COMP-003\n"
    doc = parse_document(text, "x.md")
    assert [(d.id, d.line) for d in doc.id_defs] == [("COMP-003", 2)]
    assert [(r.id, r.line) for r in doc.id_refs] == [("COMP-003", 5)]
    # The markdown-it path (a list item holding '#') slices the same way.
    mixed = "- # in list\n\nA\u2028B text\n\n# One\nbody COMP-004\n\n# Two\nx\n"
    doc = parse_document(mixed, "y.md")
    assert [section_text(doc, s) for s in doc.sections] == ["# One\nbody COMP-004\n\n", "# Two\nx\n"]


def test_definition_line_is_the_defining_key_with_the_whole_id() -> None:
    text = (
        "# Tasks\n\n```yaml\n- task_id: TASK-P0-M0.1-T002\n  depends_on: [TASK-P0-M0.1-T001]\n"
        "- task_id: TASK-P0-M0.1-T001\n```\n\n```yaml\nnote: COMP-0011 is another\nid: COMP-001\n```\n"
    )
    doc = parse_document(text, "r.md")
    defs = {d.id: d.line for d in doc.id_defs}
    assert defs == {"TASK-P0-M0.1-T002": 3, "TASK-P0-M0.1-T001": 5, "COMP-001": 10}
    refs = [(r.id, r.line) for r in doc.id_refs]
    assert ("TASK-P0-M0.1-T001", 4) in refs and ("TASK-P0-M0.1-T001", 5) not in refs


def test_placeholder_field_defines_nothing() -> None:
    doc = parse_document("# A\n\n- **ID:** TBD\n- **ID:** `COMP-001`\n", "x.md")
    assert [d.id for d in doc.id_defs] == ["COMP-001"]


def test_byte_order_mark_hides_no_heading_or_front_matter() -> None:
    doc = parse_document("\ufeff# Title\n\n- **ID:** `COMP-001`\n\n## Sub\n", "x.md")
    assert [s.title for s in doc.sections] == ["Title", "Sub"]
    assert doc.id_defs[0].section == 0
    front = parse_document("\ufeff---\nid: COMP-077\n---\n# Title\n", "y.md")
    assert front.front_matter == {"id": "COMP-077"} and [d.id for d in front.id_defs] == ["COMP-077"]
    assert [s.title for s in front.sections] == ["Title"]


def test_thematic_breaks_around_prose_are_not_front_matter() -> None:
    doc = parse_document("---\n\n# Intro\n\ntext\n\n---\n\n# Next\n", "x.md")
    assert doc.front_matter_range is None and not doc.errors
    assert [s.title for s in doc.sections] == ["Intro", "Next"]


def test_links_with_titles_brackets_and_escapes() -> None:
    text = "# A\n\n[q](b.md 'T') [s](<my file.md>) [n [1]](c.md) [e](my%20file.md#%C3%A9t%C3%A9)\n"
    doc = parse_document(text, "x.md")
    assert [(link.text, link.target) for link in doc.links] == [
        ("q", "b.md"),
        ("s", "my file.md"),
        ("n [1]", "c.md"),
        ("e", "my file.md#été"),  # percent-escapes decoded as markdown-it shows them
    ]


def _workspace(tmp_path: Path, files: dict[str, str | bytes]) -> Settings:
    root = tmp_path / "udm"
    for rel, body in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(body, bytes):
            path.write_bytes(body)
        else:
            path.write_text(body, encoding="utf-8")
    return load_settings(tmp_path, root="udm", state_dir="state", logs_dir="logs")


def test_front_matter_and_title_heading_are_one_definition(tmp_path: Path) -> None:
    settings = _workspace(
        tmp_path,
        {
            "a.md": "---\nid: COMP-050\n---\n# COMP-050: The thing\n\nText.\n",
            "b.md": "# B\n\nUses COMP-050.\n[e](my%20file.md#%C3%A9t%C3%A9) [out](../../etc/hostname)\n",
            "my file.md": "# Été\n",
        },
    )
    ctx = ToolContext(settings=settings, log=False)
    found = q(ctx, query_type="find_by_id", udm_path_or_id="COMP-050")
    assert found["status"] == "SUCCESS", found
    findings = [(f.file, f.rule, f.message) for f in lint(settings)]
    assert findings == [("b.md", "broken-link", "link target ../../etc/hostname is outside the UDM root")]


def test_query_tool_answers_when_the_file_goes_away_mid_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _workspace(tmp_path, {"d.md": "# D\n\n## Notes\n\ntext\n"})
    ctx = ToolContext(settings=settings, log=False)
    assert q(ctx, udm_filepath="d.md", section_identifier="notes")["status"] == "SUCCESS"
    real = UdmQuery.section

    def vanishing(self: UdmQuery, *args: Any, **kwargs: Any) -> Any:
        found = real(self, *args, **kwargs)
        (settings.udm_root / "d.md").unlink(missing_ok=True)
        return found

    monkeypatch.setattr(UdmQuery, "section", vanishing)
    gone = q(ctx, udm_filepath="d.md", section_identifier="notes")
    assert gone["status"] == "ERROR_FILE_NOT_FOUND" and "changed while it was read" in gone["errorDetails"]


def test_overlong_identifiers_are_invalid_input(qctx: ToolContext) -> None:
    result = call_tool(
        UdmQueryTool(), {"udm_filepath": "04-modes.md", "section_identifier": "x" * 5000}, qctx
    )
    assert not result.envelope.success and "section_identifier" in (result.envelope.error or "")


def test_sql_without_a_udm_root_is_a_status(tmp_path: Path) -> None:
    settings = load_settings(tmp_path, root="missing", state_dir="state", logs_dir="logs")
    result = call_tool(UdmSqlQueryTool(), {"sql": "SELECT 1"}, ToolContext(settings=settings, log=False))
    data = result.envelope.data or {}
    assert data.get("status") == "ERROR_NO_INDEX" and "missing" in (data.get("errorDetails") or "")


@pytest.mark.parametrize(
    ("text", "titles"),
    [
        (
            "# Intro\n\n    $ make\n<custom-tag>\n```\n\n## Install\n\nSteps.\n\n## Usage\n",
            ["Intro", "Install", "Usage"],
        ),
        ("# A\n\n[x]: https://example.com\n<custom-tag>\n```\n\n## B\n```\n", ["A", "B"]),
    ],
)
def test_html_line_after_indented_code_or_link_definition(text: str, titles: list[str]) -> None:
    # What markdown-it (CommonMark) makes of them; the fast scanner used to decide these wrongly.
    assert [s.title for s in parse_document(text, "x.md").sections] == titles


@pytest.mark.parametrize(
    ("title", "anchor"),
    [("हिन्दी भाषा", "हिन्दी-भाषा"), ("x²", "x²"), ("Chapter Ⅻ", "chapter-ⅻ"), ("Été — résumé", "été--résumé")],
)
def test_non_ascii_anchors_match_github(title: str, anchor: str) -> None:
    doc = parse_document(f"# {title}\n", "x.md")
    assert doc.sections[0].anchor == anchor


def test_links_inside_html_comments_are_not_links() -> None:
    text = "# A\n\n<!-- [c](gone.md) -->\n[ok](a.md) <!-- [d](x.md)\n[e](y.md) --> [f](z.md)\n<!-- x -->[g](g.md)\n"
    # A line starting with a comment is an HTML block to its end (CommonMark type 2): g.md is no link.
    assert [link.target for link in parse_document(text, "x.md").links] == ["a.md", "z.md"]


def test_an_unusable_state_folder_is_a_clear_error(tmp_path: Path) -> None:
    from flows.cli import run

    settings = _workspace(tmp_path, {"a.md": "# A\n"})
    settings.state_path.write_text("a file where the state folder should be", encoding="utf-8")
    ctx = ToolContext(settings=settings, log=False)
    found = q(ctx, query_type="find_by_id", udm_path_or_id="A-1")
    assert "as a state folder" in (found["errorDetails"] or ""), found
    sql = call_tool(UdmSqlQueryTool(), {"sql": "SELECT 1"}, ctx).envelope.data or {}
    assert sql.get("status") == "ERROR_NO_INDEX" and "as a state folder" in (sql.get("errorDetails") or "")
    with pytest.raises(Exception, match="as a state folder"):
        lint(settings)
    code = run(["--root", str(settings.udm_root), "--state-dir", str(settings.state_path), "index"])
    assert code == 1


def test_comment_markers_in_code_are_prose_and_links_may_hold_parentheses() -> None:
    text = (
        "# T\n\nStart a comment with `<!--`.\n\nSee [setup](missing.md) and [wiki](https://w.org/Foo_(bar)).\n\n"
        "```html\n<!--\n```\n\n[after](a.md) ends it with `-->`.\n"
    )
    assert [link.target for link in parse_document(text, "x.md").links] == [
        "missing.md",
        "https://w.org/Foo_(bar)",
        "a.md",
    ]
