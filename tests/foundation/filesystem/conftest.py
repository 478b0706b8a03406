"""Fixtures for the file-system sandbox tests: a project with allowed dirs, and canaries outside them."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tasks.base import ToolContext, always_approve, call_tool
from tasks.filesystem import FileSystemAccessTool
from udm.config import Settings, load_settings
from udm.guard import Sandbox

SECRET = b"TOP-SECRET-CANARY-7f3a\n"


@dataclass
class World:
    """A project folder, the directories around it that must never be touched, and helpers."""

    base: Path  # tmp dir holding everything
    project: Path  # the project root (cwd of the settings)
    outside: Path  # a directory outside every allowed root, holding canary.txt
    settings: Settings
    secret: bytes = SECRET  # the canaries' content: it must never show up in any result

    @property
    def sandbox(self) -> Sandbox:
        """The engine sandbox over the same roots the tool uses."""
        return Sandbox(self.settings.allowed_roots(), self.settings.project_root)

    def ctx(self, **overrides: Any) -> ToolContext:
        """A tool context that approves everything, with optional settings overrides."""
        settings = self.settings.model_copy(update=overrides) if overrides else self.settings
        return ToolContext(settings=settings, approver=always_approve)

    def call(self, ctx: ToolContext | None = None, **raw: Any) -> dict[str, Any]:
        """Call fileSystemAccessTool and return its envelope as a dict."""
        result = call_tool(FileSystemAccessTool(), raw, ctx or self.ctx())
        return result.envelope.model_dump(mode="json")

    def guarded(self) -> list[Path]:
        """Every directory that must stay untouched: the outside dir and the look-alike siblings."""
        return [self.outside, self.project / "scratch_evil", self.project / "allowed_evil"]

    def snapshot(self) -> dict[str, tuple[str, bytes, int]]:
        """Kind, bytes (or link target) and mtime of everything in the guarded dirs and the base."""
        snap: dict[str, tuple[str, bytes, int]] = {}
        for top in self.guarded():
            for dirpath, dirnames, filenames in os.walk(top):
                for name in dirnames + filenames:
                    p = os.path.join(dirpath, name)
                    st = os.lstat(p)
                    if os.path.islink(p):
                        snap[p] = ("link", os.readlink(p).encode(), st.st_mtime_ns)
                    elif os.path.isdir(p):
                        snap[p] = ("dir", b"", st.st_mtime_ns)
                    else:
                        snap[p] = ("file", Path(p).read_bytes(), st.st_mtime_ns)
        # Nothing new may appear beside the project either (e.g. a write to ../x.txt).
        snap["<base>"] = ("dir", "\n".join(sorted(os.listdir(self.base))).encode(), 0)
        return snap


def _build(base: Path) -> World:
    project = base / "project"
    udm = project / "docs" / "udm"
    udm.mkdir(parents=True)
    (udm / "00-index.md").write_text("# Index\n\nSee [intro](01-intro.md).\n", encoding="utf-8")
    (udm / "01-intro.md").write_text("line 1\nline 2\nline 3\nline 4\nline 5\n", encoding="utf-8")
    (udm / ".hidden.md").write_text("hidden\n", encoding="utf-8")
    (udm / "appendices").mkdir()
    (udm / "appendices" / "APP-X-RESEARCH-V1.md").write_text("# Appendix\n", encoding="utf-8")
    for sub in ("scratch", "logs", "prompts", "allowed"):
        (project / sub).mkdir()
    outside = base / "outside"
    outside.mkdir()
    (outside / "canary.txt").write_bytes(SECRET)
    (outside / "sub").mkdir()
    (outside / "sub" / "canary.txt").write_bytes(SECRET)
    # Look-alike siblings of allowed dirs (CVE-2025-53110's shape): never allowed.
    for evil in ("scratch_evil", "allowed_evil"):
        (project / evil).mkdir()
        (project / evil / "canary.txt").write_bytes(SECRET)
    settings = load_settings(cwd=project, allowed_dirs=[project / "allowed"])
    return World(base=base, project=project, outside=outside, settings=settings)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    """A fresh project with docs/udm, scratch, logs, prompts, allowed; canaries outside."""
    w = _build(tmp_path)
    before = w.snapshot()
    yield w
    # Every test, whatever it asserts itself, must leave the outside untouched.
    assert w.snapshot() == before, "something outside the allowed directories changed"


@pytest.fixture
def read_spy(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Every chunk os.read returns during the test (the sandbox reads files only through os.read)."""
    seen: list[bytes] = []
    real = os.read

    def spy(fd: int, n: int) -> bytes:
        data = real(fd, n)
        seen.append(data)
        return data

    monkeypatch.setattr(os, "read", spy)
    return seen


@pytest.fixture
def build_world() -> Any:
    """The world builder itself, for hypothesis tests that need a fresh world per example."""
    return _build
