"""fileSystemAccessTool: the specification's schema, every action, every status, approval and the log."""

from __future__ import annotations

import base64
import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tasks import filesystem as fs_module
from tasks.base import Permission, ToolContext, call_tool, deny_all, export_schema
from tasks.filesystem import FileSystemAccessTool, FileSystemInput, FsStatus
from tasks.registry import TOOL_PATHS
from udm.config import ApprovalPolicy

TOOL = FileSystemAccessTool()
ALL_STATUSES = [
    "SUCCESS",
    "ERROR_PATH_NOT_FOUND",
    "ERROR_PERMISSION_DENIED",
    "ERROR_INVALID_PATH",
    "ERROR_WRITE_FAILED",
    "ERROR_READ_FAILED",
    "ERROR_MCP_SERVER_UNAVAILABLE",
    "ERROR_UNKNOWN",
]


def ok(env: dict[str, Any]) -> dict[str, Any]:
    """The data of a successful envelope (asserting the spec's success shape)."""
    assert env["success"] is True, env["error"]
    assert env["error"] is None
    assert env["data"]["status"] == "SUCCESS" and env["data"]["errorDetails"] is None
    data: dict[str, Any] = env["data"]
    return data


def failed(env: dict[str, Any], status: str) -> dict[str, Any]:
    """The data of an error envelope with this status (asserting the error shape)."""
    assert env["success"] is False
    data: dict[str, Any] = env["data"]
    assert data["status"] == status, data
    assert data["errorDetails"] and env["error"].startswith(status)
    assert data["fileContent"] is None
    return data


# -- schema -----------------------------------------------------------------------------------------


def test_registered_under_the_specification_name() -> None:
    assert "tasks.filesystem:FileSystemAccessTool" in TOOL_PATHS
    assert TOOL.name == "fileSystemAccessTool"


def test_input_schema_matches_the_specification() -> None:
    schema = export_schema(TOOL, "jsonschema")["input_schema"]
    props = schema["properties"]
    assert schema["required"] == ["action", "filePath"]
    action_enum = props["action"].get("enum") or schema["$defs"]["FsAction"]["enum"]
    assert action_enum[:7] == [
        "readFile",
        "writeFile",
        "listFiles",
        "listDirectories",
        "createDirectory",
        "deleteFile",
        "checkExists",
    ]
    assert action_enum[7:] == ["moveFile"]
    assert props["encoding"]["enum"] == ["utf8", "base64"] and props["encoding"]["default"] == "utf8"
    assert props["recursive"]["default"] is False and props["recursive"]["type"] == "boolean"
    assert props["maxDepth"]["default"] == 1 and props["maxDepth"]["type"] == "integer"
    assert props["filePath"]["type"] == "string"
    assert {"content", "startLine", "endLine", "maxBytes", "backup", "pattern", "includeHidden"} <= set(props)
    assert "destinationPath" in props
    assert schema["additionalProperties"] is False


def test_output_schema_matches_the_specification() -> None:
    schema = export_schema(TOOL, "jsonschema")["output_schema"]
    props = schema["properties"]
    assert sorted(schema["required"]) == ["actionPerformed", "filePathTargeted", "status"]
    status = props["status"].get("enum") or schema["$defs"]["FsStatus"]["enum"]
    assert status == ALL_STATUSES
    entry = schema["$defs"]["DirectoryEntry"]
    assert {"name", "type"} <= set(entry["required"])
    assert entry["properties"]["type"]["enum"] == ["file", "directory"]
    for name in ("fileExists", "fileContent", "directoryContents", "errorDetails"):
        assert name in props


def test_every_schema_format_exports() -> None:
    for fmt in ("jsonschema", "mcp", "anthropic", "openai"):
        exported = json.dumps(export_schema(TOOL, fmt))
        assert "fileSystemAccessTool" in exported and "filePath" in exported
    assert export_schema(TOOL, "mcp")["annotations"]["destructiveHint"] is True


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        ({"action": "readFile"}, "filePath"),
        ({"action": "readFile", "filePath": ""}, "filePath"),
        ({"action": "fly", "filePath": "x"}, "action"),
        ({"action": "writeFile", "filePath": "scratch/x"}, "'content' is required"),
        ({"action": "writeFile", "filePath": "scratch/x", "content": "!!", "encoding": "base64"}, "base64"),
        ({"action": "writeFile", "filePath": "scratch/x", "content": "\ud800"}, "surrogate"),
        ({"action": "moveFile", "filePath": "scratch/x"}, "destinationPath"),
        ({"action": "readFile", "filePath": "x", "startLine": 3, "endLine": 2}, "endLine"),
        ({"action": "readFile", "filePath": "x", "startLine": 0}, "startLine"),
        ({"action": "readFile", "filePath": "x", "maxBytes": 0}, "maxBytes"),
        ({"action": "listFiles", "filePath": "x", "maxDepth": 0}, "maxDepth"),
        ({"action": "readFile", "filePath": "x", "encoding": "latin1"}, "encoding"),
        ({"action": "readFile", "filePath": "x", "path": "typo"}, "path"),
    ],
)
def test_bad_input_is_named(world: Any, raw: dict[str, Any], needle: str) -> None:
    env = world.call(**raw)
    assert env["success"] is False and env["data"] is None
    assert env["error"].startswith("invalid input") and needle in env["error"]


# -- every action ----------------------------------------------------------------------------------


def test_read_file_text_lines_bytes_and_base64(world: Any) -> None:
    data = ok(world.call(action="readFile", filePath="docs/udm/01-intro.md"))
    assert data["fileContent"] == "line 1\nline 2\nline 3\nline 4\nline 5\n"
    assert data["filePathTargeted"] == str(world.project / "docs/udm/01-intro.md")
    assert data["fileSize"] == 35 and data["truncated"] is False
    assert data["actionPerformed"] == "readFile" and data["directoryContents"] is None
    lines = ok(world.call(action="readFile", filePath="docs/udm/01-intro.md", startLine=2, endLine=3))
    assert lines["fileContent"] == "line 2\nline 3\n"
    head = ok(world.call(action="readFile", filePath="docs/udm/01-intro.md", maxBytes=8))
    assert head["fileContent"] == "line 1\nl" and head["truncated"] is True
    absolute = ok(world.call(action="readFile", filePath=str(world.project / "docs/udm/01-intro.md")))
    assert absolute["fileContent"].startswith("line 1")
    (world.project / "scratch" / "bin.dat").write_bytes(bytes(range(256)))
    b64 = ok(world.call(action="readFile", filePath="scratch/bin.dat", encoding="base64"))
    assert base64.b64decode(b64["fileContent"]) == bytes(range(256))


def test_read_cut_inside_a_multibyte_character_drops_the_partial_one(world: Any) -> None:
    (world.project / "scratch" / "u.md").write_text("aé", encoding="utf-8")  # é is 2 bytes
    data = ok(world.call(action="readFile", filePath="scratch/u.md", maxBytes=2))
    assert data["fileContent"] == "a" and data["truncated"] is True


def test_write_file_text_base64_and_backup(world: Any) -> None:
    target = world.project / "scratch" / "note.md"
    data = ok(world.call(action="writeFile", filePath="scratch/note.md", content="# Note\n"))
    assert data["created"] is True and data["bytesWritten"] == 7 and data["backupPath"] is None
    assert data["filePathTargeted"] == str(target)
    assert target.read_text(encoding="utf-8") == "# Note\n"
    again = ok(world.call(action="writeFile", filePath="scratch/note.md", content="# New\n", backup=True))
    assert again["created"] is False and again["backupPath"] == str(target) + ".bak"
    assert Path(again["backupPath"]).read_text(encoding="utf-8") == "# Note\n"
    payload = base64.b64encode(b"\x00\xffbinary").decode()
    ok(world.call(action="writeFile", filePath="scratch/b.bin", content=payload, encoding="base64"))
    assert (world.project / "scratch" / "b.bin").read_bytes() == b"\x00\xffbinary"
    ok(world.call(action="writeFile", filePath="scratch/empty.md", content=""))
    assert (world.project / "scratch" / "empty.md").read_bytes() == b""


def test_list_files_and_directories(world: Any) -> None:
    data = ok(world.call(action="listFiles", filePath="docs/udm"))
    entries = data["directoryContents"]
    assert [(e["name"], e["type"]) for e in entries] == [
        ("00-index.md", "file"),
        ("01-intro.md", "file"),
        ("appendices", "directory"),
    ]
    assert entries[0]["size"] > 0 and entries[0]["modified"].endswith("Z") and entries[2]["size"] is None
    assert data["warnings"] is None and data["truncated"] is False
    hidden = ok(world.call(action="listFiles", filePath="docs/udm", includeHidden=True))
    assert ".hidden.md" in [e["name"] for e in hidden["directoryContents"]]
    deep = ok(world.call(action="listFiles", filePath="docs/udm", recursive=True, maxDepth=2, pattern="*.md"))
    assert [e["name"] for e in deep["directoryContents"]] == [
        "00-index.md",
        "01-intro.md",
        "appendices/APP-X-RESEARCH-V1.md",
    ]
    # recursive without a larger maxDepth stays at one level (the spec's default depth is 1).
    shallow = ok(world.call(action="listFiles", filePath="docs/udm", recursive=True, pattern="*.md"))
    assert len(shallow["directoryContents"]) == 2
    dirs = ok(world.call(action="listDirectories", filePath="docs/udm"))
    assert dirs["directoryContents"] == [
        {
            "name": "appendices",
            "type": "directory",
            "size": None,
            "modified": dirs["directoryContents"][0]["modified"],
            "symlink": False,
        }
    ]


def test_create_directory(world: Any) -> None:
    data = ok(world.call(action="createDirectory", filePath="scratch/runs"))
    assert data["created"] is True and (world.project / "scratch/runs").is_dir()
    assert ok(world.call(action="createDirectory", filePath="scratch/runs"))["created"] is False
    failed(world.call(action="createDirectory", filePath="scratch/a/b/c"), "ERROR_PATH_NOT_FOUND")
    ok(world.call(action="createDirectory", filePath="scratch/a/b/c", recursive=True))
    assert (world.project / "scratch/a/b/c").is_dir()
    failed(world.call(action="createDirectory", filePath="docs/udm/00-index.md"), "ERROR_INVALID_PATH")


def test_check_exists(world: Any) -> None:
    yes = ok(world.call(action="checkExists", filePath="docs/udm/00-index.md"))
    assert yes["fileExists"] is True
    assert ok(world.call(action="checkExists", filePath="docs/udm"))["fileExists"] is True
    no = ok(world.call(action="checkExists", filePath="docs/udm/nope/deeper.md"))
    assert no["fileExists"] is False and no["filePathTargeted"] == str(
        world.project / "docs/udm/nope/deeper.md"
    )
    # Outside: refused, so not even existence leaks.
    failed(world.call(action="checkExists", filePath="../outside/canary.txt"), "ERROR_PERMISSION_DENIED")


def test_move_file(world: Any) -> None:
    (world.project / "scratch" / "draft.md").write_text("draft", encoding="utf-8")
    data = ok(world.call(action="moveFile", filePath="scratch/draft.md", destinationPath="docs/udm/draft.md"))
    assert data["destinationPathTargeted"] == str(world.project / "docs/udm/draft.md")
    assert (world.project / "docs/udm/draft.md").read_text(encoding="utf-8") == "draft"
    # An existing destination is never replaced.
    failed(
        world.call(action="moveFile", filePath="docs/udm/draft.md", destinationPath="docs/udm/00-index.md"),
        "ERROR_WRITE_FAILED",
    )
    failed(
        world.call(action="moveFile", filePath="docs/udm/draft.md", destinationPath="../outside/x.md"),
        "ERROR_PERMISSION_DENIED",
    )
    assert (world.project / "docs/udm/draft.md").exists()


def test_delete_file_is_off_by_default_and_works_when_enabled(world: Any) -> None:
    target = world.project / "scratch" / "old.md"
    target.write_text("old", encoding="utf-8")
    data = failed(world.call(action="deleteFile", filePath="scratch/old.md"), "ERROR_PERMISSION_DENIED")
    assert "allow_delete" in data["errorDetails"] and target.exists()
    ctx = world.ctx(allow_delete=True)
    assert ok(world.call(ctx, action="deleteFile", filePath="scratch/old.md"))["filePathTargeted"] == str(
        target
    )
    assert not target.exists()
    failed(world.call(ctx, action="deleteFile", filePath="scratch/old.md"), "ERROR_PATH_NOT_FOUND")
    failed(world.call(ctx, action="deleteFile", filePath="scratch"), "ERROR_INVALID_PATH")
    failed(world.call(ctx, action="deleteFile", filePath="docs/udm/appendices"), "ERROR_INVALID_PATH")


# -- every status ----------------------------------------------------------------------------------


def test_path_not_found(world: Any) -> None:
    data = failed(world.call(action="readFile", filePath="docs/udm/missing.md"), "ERROR_PATH_NOT_FOUND")
    assert "docs/udm/missing.md" in data["errorDetails"]
    assert data["filePathTargeted"] == str(world.project / "docs/udm/missing.md")
    failed(world.call(action="listFiles", filePath="docs/udm/none"), "ERROR_PATH_NOT_FOUND")
    failed(world.call(action="writeFile", filePath="scratch/no/dir.md", content="x"), "ERROR_PATH_NOT_FOUND")


def test_permission_denied_from_the_os(world: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # The tests run as root, where mode bits never deny: the OS refusal is injected at os.open.
    real_open = os.open

    def denying(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if path == "00-index.md":
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", denying)
    data = failed(world.call(action="readFile", filePath="docs/udm/00-index.md"), "ERROR_PERMISSION_DENIED")
    assert "Permission denied" in data["errorDetails"]


def test_invalid_path(world: Any) -> None:
    failed(world.call(action="readFile", filePath="docs/udm"), "ERROR_INVALID_PATH")  # a directory
    failed(world.call(action="listFiles", filePath="docs/udm/00-index.md"), "ERROR_INVALID_PATH")
    failed(world.call(action="readFile", filePath="docs/udm/00-index.md/x"), "ERROR_INVALID_PATH")
    failed(world.call(action="writeFile", filePath="scratch/a\x00b", content="x"), "ERROR_INVALID_PATH")


def test_write_failed(world: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    target = world.project / "scratch" / "doc.md"
    target.write_text("old", encoding="utf-8")
    real_write = os.write

    def full(fd: int, data: Any) -> int:
        if bytes(data[:3]) == b"new":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", full)
    data = failed(
        world.call(action="writeFile", filePath="scratch/doc.md", content="new"), "ERROR_WRITE_FAILED"
    )
    assert "No space left" in data["errorDetails"]
    assert target.read_text(encoding="utf-8") == "old" and os.listdir(target.parent) == ["doc.md"]


def test_read_failed(world: Any) -> None:
    (world.project / "scratch" / "latin1.txt").write_bytes(b"caf\xe9\n")
    data = failed(world.call(action="readFile", filePath="scratch/latin1.txt"), "ERROR_READ_FAILED")
    assert "not valid UTF-8" in data["errorDetails"] and "base64" in data["errorDetails"]
    assert ok(world.call(action="readFile", filePath="scratch/latin1.txt", encoding="base64"))["fileContent"]


def test_read_failed_for_a_file_over_the_limit(world: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fs_module, "MAX_READ_BYTES", 10)
    data = failed(world.call(action="readFile", filePath="docs/udm/01-intro.md"), "ERROR_READ_FAILED")
    assert "maxBytes" in data["errorDetails"]
    assert (
        ok(world.call(action="readFile", filePath="docs/udm/01-intro.md", maxBytes=6))["fileContent"]
        == "line 1"
    )


def test_unknown_error_is_a_status_not_a_traceback(world: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("disk controller on fire")

    monkeypatch.setattr(fs_module.Sandbox, "read", broken)
    data = failed(world.call(action="readFile", filePath="docs/udm/00-index.md"), "ERROR_UNKNOWN")
    assert "disk controller on fire" in data["errorDetails"]


@pytest.mark.parametrize(
    "raw",
    [
        {"action": "readFile", "filePath": "docs/udm/00-index.md"},
        {"action": "readFile", "filePath": "docs/udm/missing.md"},
        {"action": "writeFile", "filePath": "scratch/w.md", "content": "x"},
        {"action": "listFiles", "filePath": "docs/udm"},
        {"action": "listDirectories", "filePath": "docs/udm"},
        {"action": "createDirectory", "filePath": "scratch/d"},
        {"action": "deleteFile", "filePath": "scratch/none.md"},
        {"action": "checkExists", "filePath": "scratch/none.md"},
        {"action": "moveFile", "filePath": "scratch/none.md", "destinationPath": "scratch/b.md"},
        {"action": "readFile", "filePath": "/etc/passwd"},
    ],
)
def test_mcp_server_unavailable_is_never_produced(world: Any, raw: dict[str, Any]) -> None:
    """Honest: the tool works on the local file system; no MCP server exists that could be down."""
    env = world.call(world.ctx(allow_delete=True), **raw)
    assert env["data"]["status"] != FsStatus.ERROR_MCP_SERVER_UNAVAILABLE
    assert env["data"]["status"] in ALL_STATUSES


# -- permissions, approval and the log ------------------------------------------------------------


def test_permission_by_action() -> None:
    expected = {
        "readFile": Permission.SAFE,
        "listFiles": Permission.SAFE,
        "listDirectories": Permission.SAFE,
        "checkExists": Permission.SAFE,
        "writeFile": Permission.MODERATE,
        "createDirectory": Permission.MODERATE,
        "moveFile": Permission.MODERATE,
        "deleteFile": Permission.DESTRUCTIVE,
    }
    for action, permission in expected.items():
        data = FileSystemInput(action=action, filePath="scratch/x", content="", destinationPath="scratch/y")
        assert TOOL.permission_for(data) is permission


def test_smart_auto_runs_reads_and_asks_for_writes(world: Any) -> None:
    ctx = ToolContext(settings=world.settings, approver=deny_all)
    assert ctx.settings.approval_policy is ApprovalPolicy.SMART_AUTO
    assert call_tool(TOOL, {"action": "readFile", "filePath": "docs/udm/00-index.md"}, ctx).envelope.success
    denied = call_tool(TOOL, {"action": "writeFile", "filePath": "scratch/x.md", "content": "x"}, ctx)
    assert not denied.envelope.success and "approval denied" in (denied.envelope.error or "")
    assert not (world.project / "scratch" / "x.md").exists()
    full = ToolContext(
        settings=world.settings.model_copy(update={"approval_policy": "full_auto"}), approver=deny_all
    )
    assert call_tool(
        TOOL, {"action": "writeFile", "filePath": "scratch/x.md", "content": "x"}, full
    ).envelope.success


def test_approval_summary_and_log_never_hold_the_content(world: Any) -> None:
    data = FileSystemInput(action="writeFile", filePath="scratch/s.md", content="SECRET-BODY")
    assert "SECRET-BODY" not in TOOL.summarize(data) and "scratch/s.md" in TOOL.summarize(data)
    ok(world.call(action="writeFile", filePath="scratch/s.md", content="SECRET-BODY"))
    log = (world.project / "logs" / "tool-calls.jsonl").read_text(encoding="utf-8")
    record = json.loads(log.splitlines()[-1])
    assert record["tool"] == "fileSystemAccessTool" and record["status"] == "SUCCESS"
    assert record["permission"] == "moderate" and "SECRET-BODY" not in log


# -- the CLI ---------------------------------------------------------------------------------------


def _cli(world: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    from flows.cli import run

    monkeypatch.chdir(world.project)
    code = run(list(args))
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_cli_refuses_etc_passwd(
    world: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for path in ("../../etc/passwd", "../" * 30 + "etc/passwd", "/etc/passwd"):
        raw = json.dumps({"action": "readFile", "filePath": path})
        code, env = _cli(world, monkeypatch, capsys, "tools", "call", "fileSystemAccessTool", "--json", raw)
        assert code == 1
        assert env["success"] is False and env["data"]["status"] == "ERROR_PERMISSION_DENIED"
        assert env["data"]["fileContent"] is None and "root:" not in json.dumps(env)


def test_cli_reads_inside(
    world: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = json.dumps({"action": "readFile", "filePath": "docs/udm/00-index.md"})
    code, env = _cli(world, monkeypatch, capsys, "tools", "call", "fileSystemAccessTool", "--json", raw)
    assert code == 0 and env["data"]["fileContent"].startswith("# Index")
