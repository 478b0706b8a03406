"""The three tools through call_tool, and the property that bytes outside an edit stay put (golden edits: test_golden)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from tasks.base import ToolContext, always_approve, call_tool, deny_all
from udm.config import ApprovalPolicy, Settings
from udm.patch import Workspace, apply_operations, parse_patch

from .conftest import SMALL_DOC


def test_markdown_editor_get_append_and_errors() -> None:
    got = call_tool(
        "markdownParserEditorTool",
        {"markdownContent": SMALL_DOC, "action": "get_section", "sectionHeader": "Phase 2"},
    )
    assert got.envelope.success and got.envelope.data["extractedContent"] == "## Phase 2\n\nClosing words.\n"
    edited = call_tool(
        "markdownParserEditorTool",
        {
            "markdownContent": SMALL_DOC,
            "action": "appendToSection",
            "sectionHeader": "Phase 2",
            "newSectionContent": "More.",
        },
    )
    assert edited.envelope.data["modifiedMarkdownContent"] == SMALL_DOC + "\nMore.\n"
    missing = call_tool(
        "markdownParserEditorTool",
        {"markdownContent": SMALL_DOC, "action": "delete_section", "sectionHeader": "Nope"},
    )
    assert missing.envelope.data["status"] == "ERROR_SECTION_NOT_FOUND" and not missing.envelope.success


def test_yaml_editor_shapes_and_statuses() -> None:
    text = "a:\n  b: 1  # note\nlist: [1, 2]\n"
    set_ = call_tool(
        "yamlJsonParserEditorTool",
        {"textContent": text, "format": "yaml", "action": "modifyKeyValue", "keyPath": "a.b", "newValue": 2},
    )
    assert set_.envelope.data["modifiedTextContent"] == "a:\n  b: 2  # note\nlist: [1, 2]\n"
    get = call_tool(
        "yamlJsonParserEditorTool",
        {"textContent": text, "format": "yaml", "action": "get_value", "keyPath": "list[1]"},
    )
    assert get.envelope.data["extractedValue"] == 2
    nokey = call_tool(
        "yamlJsonParserEditorTool",
        {"textContent": text, "format": "yaml", "action": "delete_key", "keyPath": "a.z"},
    )
    assert nokey.envelope.data["status"] == "ERROR_KEY_NOT_FOUND"
    bad = call_tool(
        "yamlJsonParserEditorTool",
        {"textContent": "{a: [", "format": "yaml", "action": "get_value", "keyPath": "a"},
    )
    assert bad.envelope.data["status"] == "ERROR_PARSING"
    j5 = call_tool(
        "yamlJsonParserEditorTool",
        {
            "textContent": "{\n  // c\n  a: 1,\n  b: 2,\n}\n",
            "format": "json5",
            "action": "set_value",
            "keyPath": "b",
            "newValue": 3,
        },
    )
    assert j5.envelope.data["modifiedTextContent"] == "{\n  // c\n  a: 1,\n  b: 3,\n}\n"


def test_udm_updater_transaction_report_and_permissions(small: Settings) -> None:
    ctx = ToolContext(settings=small, approver=always_approve)
    res = call_tool(
        "udmUpdaterTool",
        {
            "description": "close T001",
            "udm_updates_list": [
                {
                    "target_file": "roadmap.md",
                    "section": "TASK-P0-M0.1-T001",
                    "operation": "set_yaml_key",
                    "key": "status",
                    "value": "done",
                    "rationale": "reviewed",
                },
                {
                    "target_file": "roadmap.md",
                    "section": "Phase 2",
                    "operation": "append_to_section",
                    "content": "Done.",
                },
            ],
        },
        ctx,
    )
    data = res.envelope.data
    assert res.envelope.success and data["status"] == "SUCCESS" and data["committed"]
    assert [o["status"] for o in data["operations"]] == ["applied", "applied"]
    assert "+status: done" in data["unified_diff"] and data["patch_id"]
    strict = small.model_copy(update={"approval_policy": ApprovalPolicy.SMART_AUTO})
    denied = call_tool(
        "udmUpdaterTool",
        {
            "udm_updates_list": [
                {"target_file": "roadmap.md", "section": "Phase 2", "operation": "delete_section"}
            ]
        },
        ToolContext(settings=strict, approver=deny_all),
    )
    assert not denied.envelope.success and "destructive" in (denied.envelope.error or "")
    assert "## Phase 2" in (small.udm_root / "roadmap.md").read_text(encoding="utf-8")


_title = (
    st.text(
        alphabet=st.characters(whitelist_categories=("Lu", "Ll", "Nd"), whitelist_characters=" -"),
        min_size=1,
        max_size=12,
    )
    .map(str.strip)
    .filter(bool)
)
_line = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="#`~<>[]|*_-+=\\"),
    max_size=30,
).map(str.strip)


@hsettings(max_examples=60, deadline=None)
@given(
    bodies=st.lists(st.lists(_line, max_size=4), min_size=2, max_size=6),
    pick=st.integers(min_value=0),
    kind=st.sampled_from(["append", "prepend", "replace", "yaml"]),
    new=_line.filter(bool),
)
def test_bytes_outside_the_edited_section_stay_identical(
    bodies: list[list[str]], pick: int, kind: str, new: str
) -> None:
    parts = ["# Top\n\n"]
    for n, body in enumerate(bodies):
        parts.append(f"## Section {n}\n\n")
        parts.extend(f"{ln}\n\n" for ln in body if ln)
        parts.append(f"```yaml\nkey{n}: value  # c\nother: 1\n```\n\n")
    text = "".join(parts)
    n = pick % len(bodies)
    section = f"Section {n}"
    op = {
        "append": {"op": "append_to_section", "content": new, "format": False},
        "prepend": {"op": "prepend_to_section", "content": new, "format": False},
        "replace": {"op": "replace_section", "content": new, "format": False},
        "yaml": {"op": "set_yaml_key", "key": f"key{n}", "value": new},
    }[kind]
    ws = Workspace(Path("/"), reader=lambda rel: text.encode() if rel == "d.md" else None)
    apply_operations(parse_patch({"operations": [{**op, "file": "d.md", "section": section}]}), ws)
    after = ws.read("d.md")
    assert after is not None
    start = text.index(f"## Section {n}\n")
    nxt = text.find("## Section", start + 5)
    end = len(text) if nxt < 0 else nxt
    # Everything before the section and after it is byte-identical.
    assert after.startswith(text[:start])
    assert after.endswith(text[end:])
    if kind == "yaml":
        assert sum(a != b for a, b in zip(after.splitlines(), text.splitlines(), strict=False)) == 1


_scalar = st.one_of(st.integers(-1000, 1000), st.booleans(), st.none(), st.text(max_size=8))
_json_doc = st.dictionaries(
    st.text(alphabet="abcdefgh", min_size=1, max_size=5),
    st.one_of(
        _scalar,
        st.lists(_scalar, max_size=3),
        st.dictionaries(st.text(alphabet="xyz", min_size=1, max_size=3), _scalar, max_size=3),
    ),
    min_size=1,
    max_size=8,
)


@hsettings(max_examples=80, deadline=None)
@given(doc=_json_doc, pick=st.integers(min_value=0), value=_scalar, inline=st.booleans())
def test_json_set_changes_only_the_value(
    doc: dict[str, object], pick: int, value: object, inline: bool
) -> None:
    import json

    from udm.patch import edit_text

    # Indented documents whose nested containers are written on one line, as people write them.
    lines = ["{"] + [f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in doc.items()]
    lines[-1] = lines[-1].rstrip(",")
    text = "\n".join([*lines, "}"]) + "\n" if inline else json.dumps(doc, indent=2) + "\n"
    key = list(doc)[pick % len(doc)]
    after = edit_text(text, "json", "set", f'["{key}"]', value)
    assert json.loads(after) == {**doc, key: value}
    # split("\n"), not splitlines(): a value may hold U+0085 or U+2028, which splitlines() breaks on.
    old_lines, new_lines = text.split("\n"), after.split("\n")
    if not isinstance(doc[key], (list, dict)) or inline:
        assert len(old_lines) == len(new_lines)
        assert sum(a != b for a, b in zip(old_lines, new_lines, strict=True)) <= 1
