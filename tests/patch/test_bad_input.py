"""Bad input through `udm patch apply`: a clear error, exit 1, and not one byte changes on disk."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any, get_args

import pytest

from flows.cli import run
from tasks.base import ToolContext, always_approve, call_tool, export_schema
from tasks.registry import get_tool
from udm.config import Settings
from udm.errors import PatchError
from udm.patch import SerializationError, edit_text, load_patch
from udm.patch.format import OPERATION_TYPES, Operation
from udm.patch.loading import loads_patch

from .conftest import snapshot


def alias_levels(levels: int = 9, width: int = 10) -> list[str]:
    """Flow lists of a YAML "billion laughs": each lists the one before `width` times (width**levels in all)."""
    items = [f"&l0 [{', '.join(['lol'] * width)}]"]
    items += [f"&l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, levels)]
    return items


def alias_bomb(levels: int = 9, width: int = 10) -> str:
    """A YAML mapping whose key `l<i>` holds level i of `alias_levels`."""
    return "".join(f"l{i}: {item}\n" for i, item in enumerate(alias_levels(levels, width)))


CASES = {
    "unknown operation": (
        "operations: [{op: frobnicate, file: roadmap.md}]",
        "unknown operation 'frobnicate'",
    ),
    "missing target": (
        "operations: [{op: append_to_section, file: roadmap.md, section: Phase 9, content: x}]",
        "no section 'Phase 9'",
    ),
    "ambiguous target": (
        "operations: [{op: append_to_section, file: dup.md, section: Notes, content: x}]",
        "matches 2 sections",
    ),
    "invalid YAML value": (
        "operations: [{op: replace_code_block, file: config.md, section: HTTP, content: 'http: [1, 2'}]",
        "block does not parse",
    ),
    "YAML block that does not parse": (
        "operations: [{op: set_yaml_key, file: broken.md, section: Broken, key: a, value: 1}]",
        "YAML does not parse",
    ),
    "front matter with a date past the calendar": (
        "operations: [{op: set_front_matter, file: dated.md, key: title, value: y}]",
        "YAML does not parse: day is out of range for month",
    ),
    "TOML front matter": (
        "operations: [{op: set_front_matter, file: toml.md, key: title, value: y}]",
        "its front matter is TOML ('+++'); set_front_matter edits YAML only",
    ),
    "YAML block with a number past 4,300 digits": (
        "operations: [{op: set_yaml_key, file: digits.md, section: Digits, key: a, value: 1}]",
        "YAML does not parse: Exceeds the limit (4300 digits)",
    ),
    "key path not found": (
        "operations: [{op: set_yaml_key, file: config.md, section: HTTP, key: 'http.pool.size', value: 4}]",
        "no key 'pool' under http",
    ),
    "path outside the root": (
        "operations: [{op: create_file, file: ../../escape.md, content: x}]",
        "leaves the UDM root",
    ),
    "absolute path": (
        "operations: [{op: delete_file, file: /etc/hostname}]",
        "must be relative to the UDM root",
    ),
    "symlink out of the root": (
        "operations: [{op: replace_text, file: outside/secret.md, old: s, new: t}]",
        "outside the allowed directories",
    ),
    "non-UTF-8 file": (
        "operations: [{op: replace_text, file: latin1.md, old: caf, new: tea}]",
        "not valid UTF-8",
    ),
    "patch file that is not YAML": (
        "operations: [{op: replace_text, file: x.md, old: a\n  new: b",
        "is not valid YAML",
    ),
    "patch that is a list": ("- op: delete_file\n  file: roadmap.md\n", "a patch is a mapping"),
    "YAML alias bomb in a patch": (
        "operations: [{op: set_yaml_key, file: config.md, section: HTTP, key: http.timeout, "
        f"value: [{', '.join(alias_levels())}]}}]",
        "alias expansion exceeded the limit",
    ),
    "patch nested too deeply": ("operations: " + "[" * 100_000, "nested too deeply"),
    "second operation fails": (
        "operations:\n  - {op: replace_text, file: config.md, old: 'timeout: 10', new: 'timeout: 20'}\n"
        "  - {op: delete_section, file: roadmap.md, section: Nowhere}",
        "operations[1] (delete_section)",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_changes_nothing(
    small: Settings, tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = small.udm_root
    (root / "dup.md").write_text("# D\n\n## Notes\n\na\n\n## Notes\n\nb\n", encoding="utf-8")
    (root / "broken.md").write_text("# B\n\n## Broken\n\n```yaml\na: [1\n```\n", encoding="utf-8")
    (root / "dated.md").write_text("---\ntitle: x\ndate: 2001-02-30\n---\n# D\n", encoding="utf-8")
    (root / "toml.md").write_text('+++\ntitle = "x"\n+++\n# T\n', encoding="utf-8")
    digits = "# D\n\n## Digits\n\n```yaml\na: 0\nn: " + "9" * 5000 + "\n```\n"
    (root / "digits.md").write_text(digits, encoding="utf-8")
    (root / "latin1.md").write_bytes("# Caf\xe9\n\ncaf\xe9\n".encode("latin-1"))
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.md").write_text("s\n", encoding="utf-8")
    os.symlink(outside, root / "outside")
    text, needle = CASES[case]
    patch_file = tmp_path / "bad.yaml"
    patch_file.write_text(text, encoding="utf-8")
    before = snapshot(tmp_path)
    code = run(
        [
            "--root",
            str(root),
            "--state-dir",
            str(small.state_path),
            "patch",
            "apply",
            str(patch_file),
            "--yes",
        ]
    )
    captured = capsys.readouterr()
    assert code == 1
    assert needle in captured.err, captured.err
    assert "Traceback" not in captured.err + captured.out
    assert snapshot(tmp_path) == before


def test_not_utf8_patch_file(tmp_path: Path) -> None:
    bad = tmp_path / "p.yaml"
    bad.write_bytes(b"operations: [\xff]")
    with pytest.raises(PatchError, match="not UTF-8"):
        load_patch(bad)


# ---------------------------------------------------------------- hostile structured text


def yaml_tool(**fields: Any) -> dict[str, Any]:
    """The yamlJsonParserEditorTool's envelope data for one call (it must not be an internal error)."""
    res = call_tool("yamlJsonParserEditorTool", fields)
    assert res.envelope.data is not None, res.envelope.error
    return res.envelope.data


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "action", [{"action": "get_value"}, {"action": "set_value", "keyPath": "x", "newValue": 1}]
)
def test_yaml_alias_bomb_is_a_parse_error(action: dict[str, Any]) -> None:
    data = yaml_tool(textContent=alias_bomb(), format="yaml", **action)
    assert data["status"] == "ERROR_PARSING"
    assert "alias expansion exceeded the limit" in data["errorDetails"]


@pytest.mark.timeout(30)
def test_yaml_alias_bomb_through_the_updater_changes_nothing(small: Settings) -> None:
    bomb = small.udm_root / "bomb.yaml"
    bomb.write_text(alias_bomb(), encoding="utf-8")
    before = snapshot(small.udm_root)
    res = call_tool(
        "udmUpdaterTool",
        {
            "udm_updates_list": [
                {"target_file": "bomb.yaml", "operation": "set_yaml_key", "key": "x", "value": 1}
            ]
        },
        ToolContext(settings=small, approver=always_approve),
    )
    assert res.envelope.data is not None, res.envelope.error
    assert res.envelope.data["status"] != "SUCCESS"
    assert "alias expansion exceeded the limit" in res.envelope.data["errorDetails"]
    assert snapshot(small.udm_root) == before


def test_aliases_below_the_limit_still_read() -> None:
    data = yaml_tool(textContent=alias_bomb(levels=3), format="yaml", action="get_value", keyPath="l2[9][9]")
    assert data["status"] == "SUCCESS" and data["extractedValue"] == ["lol"] * 10


@pytest.mark.parametrize("fmt", ["yaml", "json", "json5"])
@pytest.mark.parametrize(
    "action", [{"action": "get_value"}, {"action": "set_value", "keyPath": "x", "newValue": 1}]
)
def test_deep_nesting_is_a_parse_error(fmt: str, action: dict[str, Any]) -> None:
    data = yaml_tool(textContent="[" * 100_000, format=fmt, **action)
    assert data["status"] == "ERROR_PARSING"
    assert "nested too deeply" in data["errorDetails"]


def test_deeply_nested_value_is_a_serialization_error() -> None:
    value: list[Any] = []
    for _ in range(5_000):
        value = [value]
    for fmt, text in (("yaml", "a: 1\n"), ("json", '{"a": 1}')):
        with pytest.raises(SerializationError, match="nested too deeply"):
            edit_text(text, fmt, "set", "a", value)  # type: ignore[arg-type]
    # The YAML instance that failed midway is not reused: a later round trip still writes its edit.
    assert edit_text("a: 1\n", "yaml", "set", "a", None) == "a:\n"


def test_patch_json_nested_too_deeply() -> None:
    with pytest.raises(PatchError, match="nested too deeply"):
        loads_patch('{"operations": ' + "[" * 100_000)


@pytest.mark.parametrize(
    ("fmt", "text", "expected"),
    [
        ("yaml", "a: .inf\nb: -.Inf\nc: .NaN\nd: 1.5\n", [".inf", "-.inf", ".nan", 1.5]),
        (
            "json",
            '{"a": Infinity, "b": -Infinity, "c": NaN, "d": 1.5}',
            ["Infinity", "-Infinity", "NaN", 1.5],
        ),
        ("json5", "{a: Infinity, b: -Infinity, c: NaN, d: 1.5}", ["Infinity", "-Infinity", "NaN", 1.5]),
    ],
)
def test_get_value_spells_infinities_and_nan(fmt: str, text: str, expected: list[Any]) -> None:
    data = yaml_tool(textContent=text, format=fmt, action="get_value")
    assert data["status"] == "SUCCESS"
    assert list(data["extractedValue"].values()) == expected
    json.dumps(data, allow_nan=False)


def test_get_value_gives_binary_as_base64() -> None:
    text = "blob: !!binary |\n  aGVsbG8g\n  d29ybGQ=\n"
    data = yaml_tool(textContent=text, format="yaml", action="get_value", keyPath="blob")
    assert data["status"] == "SUCCESS"
    assert base64.b64decode(data["extractedValue"]) == b"hello world"


# ---------------------------------------------------------------- statuses and schema


@pytest.mark.parametrize("action", ["set_value", "modifyKeyValue", "add_item"])
def test_yaml_editor_missing_new_value_is_invalid_input(action: str) -> None:
    res = call_tool(
        "yamlJsonParserEditorTool",
        {"textContent": "a: [1]\n", "format": "yaml", "action": action, "keyPath": "a"},
    )
    assert not res.envelope.success and res.envelope.data is None
    assert (res.envelope.error or "").startswith("invalid input") and "needs newValue" in (
        res.envelope.error or ""
    )


@pytest.mark.parametrize(
    ("action", "field"),
    [
        ("rename_heading", "newHeading"),
        ("move_section", "targetSection"),
        ("replace_section", "newSectionContent"),
        ("insertSection", "newSectionContent"),
    ],
)
def test_markdown_editor_missing_field_is_invalid_input(action: str, field: str) -> None:
    res = call_tool(
        "markdownParserEditorTool",
        {"markdownContent": "# A\n\ntext\n", "action": action, "sectionHeader": "A"},
    )
    assert not res.envelope.success and res.envelope.data is None
    error = res.envelope.error or ""
    assert error.startswith("invalid input") and f"needs {field}" in error


def test_markdown_editor_empty_content_clears_a_section() -> None:
    res = call_tool(
        "markdownParserEditorTool",
        {
            "markdownContent": "# A\n\ntext\n\n# B\n",
            "action": "replace_section",
            "sectionHeader": "A",
            "newSectionContent": "",
        },
    )
    data = res.envelope.data or {}
    assert data.get("status") == "SUCCESS" and "text" not in data["modifiedMarkdownContent"]


def test_yaml_editor_null_new_value_is_a_value() -> None:
    data = yaml_tool(textContent="a: 1\n", format="yaml", action="set_value", keyPath="a", newValue=None)
    assert data["status"] == "SUCCESS"
    assert data["modifiedTextContent"] is not None and "a: 1" not in data["modifiedTextContent"]


@pytest.mark.parametrize(
    ("target", "needle"),
    [("../../escape.md", "leaves the UDM root"), ("/etc/hostname", "must be relative to the UDM root")],
)
def test_updater_path_outside_the_root_is_an_invalid_update(
    small: Settings, target: str, needle: str
) -> None:
    outside = (small.udm_root / target).resolve()
    before = snapshot(small.udm_root), outside.read_bytes() if outside.exists() else None
    res = call_tool(
        "udmUpdaterTool",
        {"udm_updates_list": [{"target_file": target, "operation": "create_file", "content": "x"}]},
        ToolContext(settings=small, approver=always_approve),
    )
    assert res.envelope.data is not None, res.envelope.error
    assert res.envelope.data["status"] == "ERROR_INVALID_UPDATE"
    assert needle in res.envelope.data["errorDetails"]
    assert (snapshot(small.udm_root), outside.read_bytes() if outside.exists() else None) == before


@pytest.mark.parametrize("fmt", ["jsonschema", "mcp", "anthropic", "openai"])
def test_updater_operation_schema_lists_the_operations(fmt: str) -> None:
    tool = get_tool("udmUpdaterTool")
    assert tool is not None
    text = json.dumps(export_schema(tool, fmt))  # type: ignore[arg-type]
    assert json.dumps({"enum": list(OPERATION_TYPES)})[1:-1] in text


def test_operation_enum_matches_the_patch_models() -> None:
    union = get_args(Operation)[0]
    tags = [get_args(model.model_fields["op"].annotation)[0] for model in get_args(union)]
    assert tags == list(OPERATION_TYPES)


def test_updater_unknown_operation_is_invalid_input(small: Settings) -> None:
    res = call_tool(
        "udmUpdaterTool",
        {"udm_updates_list": [{"target_file": "roadmap.md", "operation": "frobnicate"}]},
        ToolContext(settings=small, approver=always_approve),
    )
    assert not res.envelope.success
    assert "invalid input" in (res.envelope.error or "") and "delete_file" in (res.envelope.error or "")
