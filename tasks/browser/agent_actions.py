"""The eight browser actions an agent mode calls: launch, click, type, scroll, screenshot, read, check, close."""

from __future__ import annotations

import contextlib
from typing import Any, Literal, cast

from playwright.async_api import TimeoutError as PlaywrightTimeoutError
from playwright.async_api import ViewportSize
from pydantic import BaseModel, Field, model_validator

from tasks.base import Permission, ToolContext
from tasks.browser.actions import ActionError, normalize_url
from tasks.browser.common import (
    BrowserOutput,
    BrowserTool,
    Call,
    PageInput,
    SelectorType,
    SessionInput,
    click_and_follow,
    control_value,
    locate,
    save_screenshot,
)
from tasks.browser.session import MANAGER

__all__ = [
    "CaptureScreenshotTool",
    "CheckElementExistsTool",
    "ClickElementTool",
    "CloseBrowserTool",
    "GetElementTextTool",
    "LaunchBrowserTool",
    "ScrollPageTool",
    "TypeTextTool",
]


class LaunchInput(PageInput):
    """Input of launchBrowser."""

    url: str = Field(min_length=1, description="URL to open; https:// is added when no scheme is given.")
    viewport_width: int | None = Field(
        strict=True, default=None, ge=100, le=7680, description="Viewport width in pixels."
    )
    viewport_height: int | None = Field(
        strict=True, default=None, ge=100, le=4320, description="Viewport height in pixels."
    )
    return_base64: bool = Field(default=False, description="Also return the screenshot as base64.")


class LaunchOutput(BrowserOutput):
    """Result of launchBrowser."""

    page_title: str | None = Field(default=None, description="The page's title.")
    http_status: int | None = Field(default=None, description="HTTP status of the main document.")
    screenshot_path: str | None = Field(default=None, description="File of the initial viewport screenshot.")
    image_base64: str | None = Field(default=None, description="The screenshot, when asked for.")


class LaunchBrowserTool(BrowserTool):
    """launchBrowser."""

    name = "launchBrowser"
    description = (
        "Open a browser tab (starting the browser and the session if needed), go to a URL and return "
        "the page title and the path of a viewport screenshot."
    )
    Input = LaunchInput
    Output = LaunchOutput
    permission = Permission.MODERATE
    needs_page = False
    creates_session = True

    def viewport_of(self, data: Any) -> dict[str, int] | None:
        """The viewport asked for (missing sides take the default)."""
        if data.viewport_width is None and data.viewport_height is None:
            return None
        return {"width": data.viewport_width or 1280, "height": data.viewport_height or 800}

    async def act(self, call: Call) -> dict[str, Any]:
        """Open a tab, size it, navigate and screenshot."""
        data = call.data
        url = normalize_url(data.url, call.ctx.settings)
        previous = call.session.active
        tab_id = await call.session.new_tab()
        call.tab_id, call.page = call.session.page(tab_id)
        try:
            viewport = self.viewport_of(data)
            if viewport:
                await call.page.set_viewport_size(cast(ViewportSize, viewport))
            response = await call.page.goto(url, timeout=call.timeout_ms)
        except BaseException:
            # The viewport must be set before the first load, so the tab cannot open through new_tab(url).
            await call.session.abandon_tab(tab_id, previous)
            raise
        shot = await save_screenshot(call, return_base64=data.return_base64)
        return {
            "page_title": await call.page.title(),
            "http_status": response.status if response else None,
            "screenshot_path": shot["screenshot_path"],
            "image_base64": shot.get("image_base64"),
        }


class SelectorInput(PageInput):
    """Input naming one element by CSS or XPath."""

    selector_type: SelectorType = Field(description="css or xpath.")
    selector_value: str = Field(min_length=1, description="The CSS selector or XPath expression.")


class ClickInput(SelectorInput):
    """Input of clickElement."""

    wait_for_navigation_timeout_ms: int = Field(
        strict=True,
        default=5000,
        ge=0,
        le=600_000,
        description="How long to wait for a navigation the click starts.",
    )


class ClickOutput(BrowserOutput):
    """Result of clickElement."""

    navigated: bool = Field(default=False, description="Whether the click changed the tab's URL.")
    opened_tabs: list[int] = Field(default_factory=list, description="Tabs the click opened (target=_blank).")


class ClickElementTool(BrowserTool):
    """clickElement."""

    name = "clickElement"
    description = (
        "Click the element matched by a CSS selector or XPath, then wait for a navigation it starts."
    )
    Input = ClickInput
    Output = ClickOutput
    permission = Permission.MODERATE

    async def act(self, call: Call) -> dict[str, Any]:
        """Click and wait for the load a navigation causes."""
        data = call.data
        page = call.require_page()
        return await click_and_follow(
            call, locate(page, data.selector_value, data.selector_type), data.wait_for_navigation_timeout_ms
        )


class TypeInput(SelectorInput):
    """Input of typeText."""

    text_to_type: str = Field(min_length=1, description="The text to type.")
    clear_before_type: bool = Field(default=True, description="Clear the field first.")
    submit_after_type: bool = Field(default=False, description="Press Enter afterwards (submits a form).")


class TypeOutput(BrowserOutput):
    """Result of typeText."""

    value: str | None = Field(default=None, description="The field's value after typing.")


class TypeTextTool(BrowserTool):
    """typeText."""

    name = "typeText"
    description = "Type text into an input, textarea or editable element; optionally clear it first and press Enter after."
    Input = TypeInput
    Output = TypeOutput
    permission = Permission.MODERATE

    def summarize(self, data: Any) -> str:
        """Name the field, not the text (it may be a password)."""
        return f"typeText into {data.selector_type} '{data.selector_value}' ({len(data.text_to_type)} characters)"

    async def act(self, call: Call) -> dict[str, Any]:
        """Fill or append, then optionally submit."""
        data = call.data
        page = call.require_page()
        target = locate(page, data.selector_value, data.selector_type).first
        if data.clear_before_type:
            await target.fill(data.text_to_type, timeout=call.timeout_ms)
        else:
            await target.click(timeout=call.timeout_ms)
            await page.keyboard.press("End")
            await page.keyboard.type(data.text_to_type)
        value = await control_value(target)
        if data.submit_after_type:
            await target.press("Enter", timeout=call.timeout_ms)
            with contextlib.suppress(PlaywrightTimeoutError):
                await page.wait_for_load_state("load", timeout=call.timeout_ms)
        return {"value": value}


class ScrollPageInput(PageInput):
    """Input of scrollPage."""

    direction: Literal["up", "down", "to_element"] = Field(
        default="down", description="up, down or to_element."
    )
    pages: int = Field(
        strict=True, default=1, ge=1, le=1000, description="Screen heights to scroll (up/down)."
    )
    selector_type: SelectorType = Field(default="css", description="css or xpath (to_element).")
    selector_value: str | None = Field(default=None, min_length=1, description="The element (to_element).")

    @model_validator(mode="after")
    def _needs_selector(self) -> ScrollPageInput:
        if self.direction == "to_element" and not self.selector_value:
            raise ValueError("selector_value is required when direction is 'to_element'")
        return self


class ScrollOutput(BrowserOutput):
    """Position after a scroll."""

    scroll_x: float = Field(default=0, description="Horizontal scroll position, pixels.")
    scroll_y: float = Field(default=0, description="Vertical scroll position, pixels.")
    page_height: float | None = Field(default=None, description="Height of the document, pixels.")


SCROLL_STATE = "() => ({x: window.scrollX, y: window.scrollY, h: document.documentElement.scrollHeight})"


class ScrollPageTool(BrowserTool):
    """scrollPage."""

    name = "scrollPage"
    description = "Scroll the page up or down by screen heights, or to an element."
    Input = ScrollPageInput
    Output = ScrollOutput
    permission = Permission.MODERATE

    async def act(self, call: Call) -> dict[str, Any]:
        """Scroll and report the new position."""
        data = call.data
        page = call.require_page()
        if data.direction == "to_element":
            await locate(page, data.selector_value, data.selector_type).first.scroll_into_view_if_needed(
                timeout=call.timeout_ms
            )
        else:
            sign = -1 if data.direction == "up" else 1
            await page.evaluate("d => window.scrollBy(0, d * window.innerHeight)", sign * data.pages)
        state = await page.evaluate(SCROLL_STATE)
        return {"scroll_x": state["x"], "scroll_y": state["y"], "page_height": state["h"]}


class CaptureInput(PageInput):
    """Input of captureScreenshot."""

    capture_type: Literal["full_page", "viewport", "element"] = Field(
        default="viewport", description="full_page, viewport or element."
    )
    selector_type: SelectorType = Field(default="css", description="css or xpath (element).")
    selector_value: str | None = Field(default=None, min_length=1, description="The element (element).")
    image_format: Literal["png", "jpeg"] = Field(default="png", description="png or jpeg.")
    quality: int = Field(strict=True, default=75, ge=1, le=100, description="JPEG quality, 1-100.")
    return_base64: bool = Field(default=False, description="Also return the image as base64.")

    @model_validator(mode="after")
    def _needs_selector(self) -> CaptureInput:
        if self.capture_type == "element" and not self.selector_value:
            raise ValueError("selector_value is required when capture_type is 'element'")
        return self


class ScreenshotOutput(BrowserOutput):
    """A screenshot written to a file."""

    screenshot_path: str | None = Field(default=None, description="The image file.")
    width: int | None = Field(default=None, description="Image width, pixels.")
    height: int | None = Field(default=None, description="Image height, pixels.")
    image_format: str | None = Field(default=None, description="png or jpeg.")
    size_bytes: int | None = Field(default=None, description="File size.")
    image_base64: str | None = Field(default=None, description="The image, when asked for.")


class CaptureScreenshotTool(BrowserTool):
    """captureScreenshot."""

    name = "captureScreenshot"
    description = (
        "Screenshot the viewport, the full page or one element into a file under <state>/screenshots/."
    )
    Input = CaptureInput
    Output = ScreenshotOutput
    permission = Permission.SAFE

    async def act(self, call: Call) -> dict[str, Any]:
        """Capture as asked."""
        data = call.data
        page = call.require_page()
        locator = (
            locate(page, data.selector_value, data.selector_type).first
            if data.capture_type == "element"
            else None
        )
        return await save_screenshot(
            call,
            full_page=data.capture_type == "full_page",
            locator=locator,
            image_format=data.image_format,
            quality=data.quality,
            return_base64=data.return_base64,
        )


class TextOutput(BrowserOutput):
    """Text of an element."""

    text: str | None = Field(default=None, description="The element's visible text (innerText).")
    element_count: int = Field(default=0, description="How many elements matched.")


class GetElementTextTool(BrowserTool):
    """getElementText."""

    name = "getElementText"
    description = "Read the visible text of the first element matched by a CSS selector or XPath."
    Input = SelectorInput
    Output = TextOutput
    permission = Permission.SAFE

    async def act(self, call: Call) -> dict[str, Any]:
        """Wait for the element and read its innerText."""
        data = call.data
        matches = locate(call.require_page(), data.selector_value, data.selector_type)
        await matches.first.wait_for(state="attached", timeout=call.timeout_ms)
        return {
            "text": await matches.first.inner_text(timeout=call.timeout_ms),
            "element_count": await matches.count(),
        }


class ExistsInput(SelectorInput):
    """Input of checkElementExists."""

    wait_ms: int = Field(
        strict=True,
        default=0,
        ge=0,
        le=600_000,
        description="Wait up to this long for the element to appear.",
    )


class ExistsOutput(BrowserOutput):
    """Whether elements exist."""

    exists: bool = Field(default=False, description="True when at least one element matched.")
    count: int = Field(default=0, description="How many elements matched.")


class CheckElementExistsTool(BrowserTool):
    """checkElementExists."""

    name = "checkElementExists"
    description = "Check whether elements matching a CSS selector or XPath exist on the page, and how many."
    Input = ExistsInput
    Output = ExistsOutput
    permission = Permission.SAFE

    async def act(self, call: Call) -> dict[str, Any]:
        """Count the matches (after an optional wait); absence is a result, not an error."""
        data = call.data
        matches = locate(call.require_page(), data.selector_value, data.selector_type)
        if data.wait_ms:
            with contextlib.suppress(PlaywrightTimeoutError):
                await matches.first.wait_for(state="attached", timeout=data.wait_ms)
        count = await matches.count()
        return {"exists": count > 0, "count": count}


class CloseOutput(BaseModel):
    """Result of closeBrowser."""

    status: str = Field(default="SUCCESS", description="SUCCESS or an ERROR_* status.")
    errorDetails: str | None = Field(default=None, description="What went wrong.")
    session_id: str | None = Field(default=None, description="The session closed.")
    closed: bool = Field(default=False, description="False when no such session was open.")


class CloseBrowserTool(BrowserTool):
    """closeBrowser."""

    name = "closeBrowser"
    description = (
        "Close a browser session (its context and every tab); the browser itself stays for other sessions."
    )
    Input = SessionInput
    Output = CloseOutput
    permission = Permission.MODERATE
    needs_page = False

    async def execute(self, data: Any, ctx: ToolContext) -> BaseModel:
        """Close the session's context."""
        try:
            closed = await MANAGER.close_session(data.session_id)
        except ActionError as exc:
            return CloseOutput(status=exc.status, errorDetails=exc.message, session_id=data.session_id)
        return CloseOutput(session_id=data.session_id, closed=closed)
