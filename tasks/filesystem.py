"""fileSystemAccessTool: read, write, list, move, create and delete files inside the allowed directories.

The specification's schema is kept exactly (actions, fields, defaults, the status enum); the extras
(line ranges, byte limits, backups, globs, hidden files, sizes and times, moveFile) are optional
fields beside it. All file-system work goes through `udm.guard.sandbox`, whose guarantees the README's
"File-system tool and sandbox" section lists. Every outcome is a status: engine errors and errno
values are mapped here, at the tool boundary, and nothing raises to the caller.

ERROR_MCP_SERVER_UNAVAILABLE stays in the enum for fidelity to the specification, but nothing in
this implementation produces it: the tool works on the local file system directly, with no MCP
server in between.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import errno
from contextlib import suppress
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tasks.base import Permission, Tool, ToolContext, ToolInput
from udm.errors import InvalidPathError, PathChangedError, PathOutsideError
from udm.guard import Sandbox, escape_name, tool_sandbox

__all__ = [
    "MAX_READ_BYTES",
    "DirectoryEntry",
    "FileSystemAccessTool",
    "FileSystemInput",
    "FileSystemOutput",
    "FsAction",
    "FsStatus",
]

# The most a readFile returns in one call (JSON envelopes of more are no use to anyone).
MAX_READ_BYTES = 16 * 1024 * 1024
_LIST_LIMIT = 10_000


class FsAction(StrEnum):
    """The actions of the specification, plus moveFile."""

    READ_FILE = "readFile"
    WRITE_FILE = "writeFile"
    LIST_FILES = "listFiles"
    LIST_DIRECTORIES = "listDirectories"
    CREATE_DIRECTORY = "createDirectory"
    DELETE_FILE = "deleteFile"
    CHECK_EXISTS = "checkExists"
    MOVE_FILE = "moveFile"


class FsStatus(StrEnum):
    """The specification's status enum."""

    SUCCESS = "SUCCESS"
    ERROR_PATH_NOT_FOUND = "ERROR_PATH_NOT_FOUND"
    ERROR_PERMISSION_DENIED = "ERROR_PERMISSION_DENIED"
    ERROR_INVALID_PATH = "ERROR_INVALID_PATH"
    ERROR_WRITE_FAILED = "ERROR_WRITE_FAILED"
    ERROR_READ_FAILED = "ERROR_READ_FAILED"
    ERROR_MCP_SERVER_UNAVAILABLE = "ERROR_MCP_SERVER_UNAVAILABLE"
    ERROR_UNKNOWN = "ERROR_UNKNOWN"


_PERMISSIONS: dict[FsAction, Permission] = {
    FsAction.READ_FILE: Permission.SAFE,
    FsAction.LIST_FILES: Permission.SAFE,
    FsAction.LIST_DIRECTORIES: Permission.SAFE,
    FsAction.CHECK_EXISTS: Permission.SAFE,
    FsAction.WRITE_FILE: Permission.MODERATE,
    FsAction.CREATE_DIRECTORY: Permission.MODERATE,
    FsAction.MOVE_FILE: Permission.MODERATE,
    FsAction.DELETE_FILE: Permission.DESTRUCTIVE,
}
_READS = {FsAction.READ_FILE, FsAction.LIST_FILES, FsAction.LIST_DIRECTORIES, FsAction.CHECK_EXISTS}


class FileSystemInput(ToolInput):
    """Input of fileSystemAccessTool: the specification's fields, then the optional extras."""

    action: FsAction = Field(description="The file-system action to perform.")
    filePath: str = Field(
        min_length=1,
        description="File or directory to act on: relative to the project root, or absolute. It must "
        "lie inside an allowed directory (the UDM root, scratch, logs, prompts or a configured one) and "
        "never in the engine's state folder.",
    )
    content: str | None = Field(
        default=None, description="writeFile: the content to write (text, or base64 with encoding=base64)."
    )
    encoding: Literal["utf8", "base64"] = Field(
        default="utf8", description="readFile/writeFile: content as UTF-8 text or as base64 bytes."
    )
    recursive: bool = Field(
        default=False,
        description="createDirectory: also create missing parents. listFiles/listDirectories: descend "
        "into subdirectories, down to maxDepth levels.",
    )
    maxDepth: int = Field(
        default=1, ge=1, le=64, description="Recursive listing: how many levels to descend (1 = this one)."
    )
    startLine: int | None = Field(
        default=None, ge=1, description="readFile: first line to return, 1-based, inclusive."
    )
    endLine: int | None = Field(
        default=None, ge=1, description="readFile: last line to return, 1-based, inclusive."
    )
    maxBytes: int | None = Field(
        default=None,
        ge=1,
        le=MAX_READ_BYTES,
        description="readFile: return at most this many bytes (the output says when it was truncated).",
    )
    backup: bool = Field(
        default=False, description="writeFile: keep what is overwritten as '<name>.bak' beside it."
    )
    pattern: str | None = Field(
        default=None,
        min_length=1,
        description="listFiles/listDirectories: glob on entry names ('*.md'); with a '/', on the "
        "path relative to filePath ('appendices/*.md').",
    )
    includeHidden: bool = Field(
        default=False, description="listFiles/listDirectories: include names starting with '.'."
    )
    destinationPath: str | None = Field(
        default=None,
        min_length=1,
        description="moveFile: the new path (inside an allowed directory; must not exist yet).",
    )

    @field_validator("filePath", "destinationPath", mode="before")
    @classmethod
    def _utf8_path(cls, value: Any) -> Any:
        # A name decoded with surrogateescape (undecodable bytes) can never be a valid path here;
        # say so plainly instead of pydantic's "unable to parse raw data as a unicode string".
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError(
                    f"not valid UTF-8 ({escape_name(value)!r} holds undecodable bytes or lone surrogates)"
                ) from None
        return value

    @model_validator(mode="after")
    def _fields_fit_the_action(self) -> FileSystemInput:
        if self.action is FsAction.WRITE_FILE:
            if self.content is None:
                raise ValueError("'content' is required for writeFile (use \"\" for an empty file)")
            if self.encoding == "base64":
                try:
                    base64.b64decode(self.content, validate=True)
                except (binascii.Error, ValueError):
                    raise ValueError("'content' is not valid base64 (encoding is base64)") from None
            else:
                try:
                    self.content.encode("utf-8")
                except UnicodeEncodeError:
                    raise ValueError(
                        "'content' holds a lone surrogate; it is not valid Unicode text"
                    ) from None
        if self.action is FsAction.MOVE_FILE and self.destinationPath is None:
            raise ValueError("'destinationPath' is required for moveFile")
        if self.startLine is not None and self.endLine is not None and self.endLine < self.startLine:
            raise ValueError("'endLine' is before 'startLine'")
        return self


class DirectoryEntry(BaseModel):
    """One listed entry: the specification's name and type, plus size, time and symlink flag."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Path relative to the listed directory, '/'-separated.")
    type: Literal["file", "directory"] = Field(description="file or directory.")
    size: int | None = Field(default=None, description="Size in bytes (files only).")
    modified: str = Field(description="Last modification time, ISO 8601 UTC.")
    symlink: bool = Field(default=False, description="True when the entry is a symlink (kept inside).")


class FileSystemOutput(BaseModel):
    """Output of fileSystemAccessTool: the specification's fields, then the extras."""

    actionPerformed: str = Field(description="The action, as given.")
    filePathTargeted: str = Field(
        description="The absolute path acted on once resolved (symlinks inside followed), else as given."
    )
    status: FsStatus = Field(description="Outcome of the operation.")
    fileExists: bool | None = Field(default=None, description="checkExists: whether the path exists.")
    fileContent: str | None = Field(
        default=None, description="readFile: the content (null on error or for other actions)."
    )
    directoryContents: list[DirectoryEntry] | None = Field(
        default=None, description="listFiles/listDirectories: the entries."
    )
    errorDetails: str | None = Field(default=None, description="What went wrong; null when nothing did.")
    fileSize: int | None = Field(default=None, description="readFile: size of the whole file in bytes.")
    truncated: bool | None = Field(
        default=None, description="readFile: content was cut at maxBytes; listing: cut at the entry limit."
    )
    bytesWritten: int | None = Field(default=None, description="writeFile: bytes written.")
    backupPath: str | None = Field(default=None, description="writeFile with backup: the .bak written.")
    created: bool | None = Field(
        default=None, description="writeFile/createDirectory: whether the file or directory is new."
    )
    destinationPathTargeted: str | None = Field(
        default=None, description="moveFile: the resolved destination."
    )
    warnings: list[str] | None = Field(
        default=None, description="Entries skipped by a listing and why (odd names, links leaving the roots)."
    )

    @model_validator(mode="after")
    def _details_iff_error(self) -> FileSystemOutput:
        if (self.status is FsStatus.SUCCESS) != (self.errorDetails is None):
            raise ValueError("errorDetails is set exactly when the status is an error")
        if self.status is not FsStatus.SUCCESS and self.fileContent is not None:
            raise ValueError("fileContent is null on error")
        return self


def _status_for_errno(code: int | None, action: FsAction) -> FsStatus:
    if code == errno.ENOENT:
        return FsStatus.ERROR_PATH_NOT_FOUND
    if code in (errno.EACCES, errno.EPERM):
        return FsStatus.ERROR_PERMISSION_DENIED
    if code in (errno.EISDIR, errno.ENOTDIR, errno.ENAMETOOLONG, errno.ELOOP, errno.EINVAL):
        return FsStatus.ERROR_INVALID_PATH
    if code == errno.EEXIST and action is FsAction.CREATE_DIRECTORY:
        return FsStatus.ERROR_INVALID_PATH  # something that is not a directory is in the way
    return FsStatus.ERROR_READ_FAILED if action in _READS else FsStatus.ERROR_WRITE_FAILED


def _iso(mtime: float) -> str:
    return datetime.fromtimestamp(mtime, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class FileSystemAccessTool(Tool[FileSystemInput, FileSystemOutput]):
    """The sandboxed file tool of the specification (section 2.5.1), plus moveFile and the extras."""

    name: ClassVar[str] = "fileSystemAccessTool"
    description: ClassVar[str] = (
        "Work with files of this project: read a file (whole, a line range or its first bytes; text "
        "or base64), write one (atomically, optionally keeping a .bak), list files or directories "
        "(glob, recursion depth, hidden files, sizes and times), create directories, move files, "
        "check whether a path exists, and delete files when the settings allow it. Paths are "
        "relative to the project root or absolute and must stay inside the allowed directories: "
        "the manual (UDM root), scratch (for scratch files), logs, prompts and any configured extra "
        "directory. The engine's state folder is never readable or writable, even inside one of them. "
        "A path that leaves them (through '..', a symlink or a look-alike name) gets "
        "ERROR_PERMISSION_DENIED; NUL bytes, over-long or non-UTF-8 names and device files get "
        "ERROR_INVALID_PATH. Reading, listing and checking are safe; writing, creating and moving "
        "are moderate; deleting is destructive."
    )
    Input: ClassVar[type[BaseModel]] = FileSystemInput
    Output: ClassVar[type[BaseModel]] = FileSystemOutput
    # The worst any call can do; permission_for() gives each call its own level.
    permission: ClassVar[Permission] = Permission.DESTRUCTIVE

    def permission_for(self, data: FileSystemInput) -> Permission:
        """safe for reads, moderate for writes/creates/moves, destructive for deleteFile."""
        return _PERMISSIONS[data.action]

    def summarize(self, data: FileSystemInput) -> str:
        """One line for the approval prompt: action, path(s) and size; never the content itself."""
        text = f"{self.name}: {data.action.value} {data.filePath!r}"
        if data.destinationPath is not None:
            text += f" -> {data.destinationPath!r}"
        if data.content is not None:
            text += f" ({len(data.content)} characters of {data.encoding} content)"
        return text

    def execute(self, data: FileSystemInput, ctx: ToolContext) -> FileSystemOutput:
        """Run the action inside the sandbox; every failure becomes a status with errorDetails."""
        out = FileSystemOutput(
            actionPerformed=data.action.value, filePathTargeted=data.filePath, status=FsStatus.SUCCESS
        )
        try:
            box = tool_sandbox(ctx.settings)
            self._run(box, data, out, ctx)
        except PathOutsideError as exc:
            return self._fail(out, FsStatus.ERROR_PERMISSION_DENIED, str(exc))
        except InvalidPathError as exc:
            return self._fail(out, FsStatus.ERROR_INVALID_PATH, str(exc))
        except PathChangedError as exc:
            status = FsStatus.ERROR_READ_FAILED if data.action in _READS else FsStatus.ERROR_WRITE_FAILED
            return self._fail(out, status, str(exc))
        except OSError as exc:
            status = _status_for_errno(exc.errno, data.action)
            where = f": {exc.filename}" if exc.filename else ""
            if status is FsStatus.ERROR_PATH_NOT_FOUND:
                # Name the path that was looked for, resolved as far as it exists.
                with suppress(Exception):
                    out.filePathTargeted = str(box.resolve(data.filePath))
            return self._fail(out, status, f"{exc.strerror or exc}{where}")
        except Exception as exc:  # the boundary: anything unforeseen is a status, never a traceback
            return self._fail(out, FsStatus.ERROR_UNKNOWN, f"{type(exc).__name__}: {exc}")
        return out

    @staticmethod
    def _fail(out: FileSystemOutput, status: FsStatus, details: str) -> FileSystemOutput:
        values: dict[str, Any] = {
            "actionPerformed": out.actionPerformed,
            "filePathTargeted": out.filePathTargeted,
            "destinationPathTargeted": out.destinationPathTargeted,
            "status": status,
            "errorDetails": details or status.value,
        }
        return FileSystemOutput(**values)

    def _run(self, box: Sandbox, data: FileSystemInput, out: FileSystemOutput, ctx: ToolContext) -> None:
        action = data.action
        if action is FsAction.READ_FILE:
            self._read(box, data, out)
        elif action is FsAction.WRITE_FILE:
            payload = (
                base64.b64decode(data.content or "", validate=True)
                if data.encoding == "base64"
                else (data.content or "").encode("utf-8")
            )
            written = box.write(data.filePath, payload, backup=data.backup)
            out.filePathTargeted = str(written.path)
            out.bytesWritten = written.bytes_written
            out.created = written.created
            out.backupPath = str(written.backup_path) if written.backup_path else None
        elif action in (FsAction.LIST_FILES, FsAction.LIST_DIRECTORIES):
            listing = box.list(
                data.filePath,
                recursive=data.recursive,
                max_depth=data.maxDepth,
                include_hidden=data.includeHidden,
                pattern=data.pattern,
                only_dirs=action is FsAction.LIST_DIRECTORIES,
                limit=_LIST_LIMIT,
            )
            out.filePathTargeted = str(listing.path)
            out.directoryContents = [
                DirectoryEntry(
                    name=e.name, type=e.kind, size=e.size, modified=_iso(e.mtime), symlink=e.symlink
                )
                for e in listing.entries
            ]
            out.truncated = listing.truncated
            out.warnings = listing.skipped or None
        elif action is FsAction.CREATE_DIRECTORY:
            path, created = box.mkdir(data.filePath, parents=data.recursive)
            out.filePathTargeted = str(path)
            out.created = created
        elif action is FsAction.CHECK_EXISTS:
            info = box.info(data.filePath)
            out.fileExists = info is not None
            out.filePathTargeted = str(info.path if info else box.resolve(data.filePath))
        elif action is FsAction.DELETE_FILE:
            if not ctx.settings.allow_delete:
                raise PermissionError(
                    errno.EPERM,
                    "deleteFile is disabled; set allow_delete (UDM_ALLOW_DELETE=true) to enable it",
                )
            out.filePathTargeted = str(box.delete(data.filePath))
        elif action is FsAction.MOVE_FILE:
            src, dst = box.move(data.filePath, data.destinationPath or "")
            out.filePathTargeted, out.destinationPathTargeted = str(src), str(dst)

    @staticmethod
    def _read(box: Sandbox, data: FileSystemInput, out: FileSystemOutput) -> None:
        limit = data.maxBytes if data.maxBytes is not None else MAX_READ_BYTES
        got = box.read(data.filePath, max_bytes=limit, start_line=data.startLine, end_line=data.endLine)
        out.filePathTargeted = str(got.path)
        out.fileSize = got.size
        if got.truncated and data.maxBytes is None:
            raise OSError(
                errno.EFBIG,
                f"the selection is larger than {MAX_READ_BYTES} bytes; pass maxBytes or startLine/endLine",
                str(got.path),
            )
        out.truncated = got.truncated
        if data.encoding == "base64":
            out.fileContent = base64.b64encode(got.data).decode("ascii")
            return
        try:
            # A cut may split a character: an incremental decoder leaves the partial bytes out.
            decoder = codecs.getincrementaldecoder("utf-8")()
            out.fileContent = decoder.decode(got.data, final=not got.truncated)
        except UnicodeDecodeError as exc:
            raise OSError(
                errno.EILSEQ,
                f"the file is not valid UTF-8 (byte {exc.start}); read it with encoding base64",
                str(got.path),
            ) from None
