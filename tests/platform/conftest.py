"""Fixtures of the platform tests: small real tools registered in place of the product's tools."""

from __future__ import annotations

import base64
import io
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from tasks import registry
from tasks.base import Permission, Tool, ToolContext, ToolInput, TransientToolError


def png_bytes(color: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    """A small real PNG image."""
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (8, 6), color).save(buf, format="PNG")
    return buf.getvalue()


class EchoIn(ToolInput):
    text: str = Field(min_length=1, description="Text to echo.")
    times: int = Field(default=1, ge=1, le=10, description="How many copies.")


class EchoOut(BaseModel):
    status: str = Field(description="SUCCESS or an error status.")
    echoed: list[str] = Field(default_factory=list, description="The copies.")
    length: int = Field(default=0, description="Length of the text.")
    errorDetails: str | None = Field(default=None, description="What went wrong.")


class EchoTool(Tool[EchoIn, EchoOut]):
    name = "echoTool"
    description = "Echo a text a number of times."
    Input = EchoIn
    Output = EchoOut
    permission = Permission.SAFE

    def execute(self, data: EchoIn, ctx: ToolContext) -> EchoOut:
        if data.text == "fail":
            return EchoOut(status="ERROR_REFUSED", errorDetails="asked to fail")
        return EchoOut(status="SUCCESS", echoed=[data.text] * data.times, length=len(data.text))


class SnapIn(ToolInput):
    url: str = Field(min_length=1, description="Page to capture.")
    saveToFile: bool = Field(default=False, description="Also save a PNG under state/ and return its path.")


class SnapOut(BaseModel):
    status: str = Field(description="SUCCESS or an error status.")
    title: str = Field(default="", description="Page title.")
    screenshot: str | None = Field(default=None, description="PNG as a data URL.")
    screenshotPath: str | None = Field(default=None, description="Saved PNG path.")


class SnapTool(Tool[SnapIn, SnapOut]):
    name = "snapTool"
    description = "Capture a screenshot of a page."
    Input = SnapIn
    Output = SnapOut
    permission = Permission.SAFE

    def execute(self, data: SnapIn, ctx: ToolContext) -> SnapOut:
        raw = png_bytes()
        path = None
        if data.saveToFile:
            target = ctx.settings.state_path / "shots" / "snap.png"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(png_bytes((10, 200, 10)))
            path = str(target)
        uri = "data:image/png;base64," + base64.b64encode(raw).decode()
        return SnapOut(status="SUCCESS", title=f"Page {data.url}", screenshot=uri, screenshotPath=path)


class NoteIn(ToolInput):
    name: str = Field(min_length=1, pattern=r"^[a-z0-9-]+$", description="Note file name.")
    text: str = Field(description="Note text.")


class NoteOut(BaseModel):
    status: str = Field(description="SUCCESS or an error status.")
    path: str = Field(default="", description="Written file.")


class NoteTool(Tool[NoteIn, NoteOut]):
    name = "noteTool"
    description = "Write a note file under state/notes (moderate: it writes)."
    Input = NoteIn
    Output = NoteOut
    permission = Permission.MODERATE

    def execute(self, data: NoteIn, ctx: ToolContext) -> NoteOut:
        target = ctx.settings.state_path / "notes" / f"{data.name}.txt"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(data.text, encoding="utf-8")
        return NoteOut(status="SUCCESS", path=str(target))


class SearchIn(ToolInput):
    query: str = Field(min_length=1, description="Query.")
    numResults: int = Field(default=3, ge=1, le=20, description="How many results.")


class SearchResult(BaseModel):
    title: str = Field(description="Title.")
    link: str = Field(description="URL.")


class SearchOut(BaseModel):
    status: str = Field(description="SUCCESS or an error status.")
    results: list[SearchResult] = Field(default_factory=list, description="Hits.")


class FakeSearchTool(Tool[SearchIn, SearchOut]):
    name = "fakeSearchTool"
    description = "Search a deterministic fake index."
    Input = SearchIn
    Output = SearchOut

    def execute(self, data: SearchIn, ctx: ToolContext) -> SearchOut:
        slug = "-".join(data.query.split())
        hits = [
            SearchResult(title=f"{data.query} #{i}", link=f"http://127.0.0.1:9/{slug}/{i}")
            for i in range(data.numResults)
        ]
        return SearchOut(status="SUCCESS", results=hits)


class FetchIn(ToolInput):
    url: str = Field(min_length=1, description="URL.")
    maxLengthBytes: int = Field(default=100_000, ge=1, le=10_000_000, description="Cap.")
    delay: float = Field(default=0.0, ge=0, le=5, description="Seconds to sleep first.")


class FetchOut(BaseModel):
    status: str = Field(description="SUCCESS or an error status.")
    url: str = Field(default="", description="Fetched URL.")
    cleanedTextContent: str = Field(default="", description="Text.")


class FakeFetchTool(Tool[FetchIn, FetchOut]):
    name = "fakeFetchTool"
    description = "Fetch a page from the fake web."
    Input = FetchIn
    Output = FetchOut

    def execute(self, data: FetchIn, ctx: ToolContext) -> FetchOut:
        if data.delay:
            time.sleep(data.delay)
        return FetchOut(
            status="SUCCESS", url=data.url, cleanedTextContent=f"text of {data.url}"[: data.maxLengthBytes]
        )


class FlakyIn(ToolInput):
    key: str = Field(min_length=1, description="Counter name.")
    failures: int = Field(default=1, ge=0, le=5, description="Transient failures before success.")


class FlakyOut(BaseModel):
    status: str = Field(description="SUCCESS or ERROR_TIMEOUT.")
    attempts: int = Field(default=0, description="Attempts so far.")


class FlakyTool(Tool[FlakyIn, FlakyOut]):
    name = "flakyTool"
    description = "Fail transiently a given number of times (counted in a state file), then succeed."
    Input = FlakyIn
    Output = FlakyOut

    def execute(self, data: FlakyIn, ctx: ToolContext) -> FlakyOut:
        counter = ctx.settings.state_path / f"flaky-{data.key}.count"
        counter.parent.mkdir(parents=True, exist_ok=True)
        attempts = int(counter.read_text()) + 1 if counter.exists() else 1
        counter.write_text(str(attempts))
        if attempts <= data.failures:
            raise TransientToolError("timed out", result=FlakyOut(status="ERROR_TIMEOUT", attempts=attempts))
        return FlakyOut(status="SUCCESS", attempts=attempts)


TEST_TOOLS: list[Tool[Any, Any]] = [
    EchoTool(),
    SnapTool(),
    NoteTool(),
    FakeSearchTool(),
    FakeFetchTool(),
    FlakyTool(),
]


@pytest.fixture
def test_tools(monkeypatch: pytest.MonkeyPatch) -> list[Tool[Any, Any]]:
    """Register the test tools in place of the product's (so the tests do not depend on other areas)."""
    paths = [f"tests.platform:{t.name}" for t in TEST_TOOLS]
    for path, tool in zip(paths, TEST_TOOLS, strict=True):
        monkeypatch.setitem(registry._CACHE, path, tool)
    monkeypatch.setattr(registry, "TOOL_PATHS", paths)
    return TEST_TOOLS


@pytest.fixture
def fixtures_dir() -> Path:
    """The recorded payloads."""
    return Path(__file__).parent / "fixtures"
