"""Navigation, interaction and synchronisation tools: navigate_to_url ... wait_for_condition."""

from __future__ import annotations

import re
from typing import Any, Literal

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page
from playwright.async_api import TimeoutError as PlaywrightTimeoutError
from pydantic import Field

from tasks.base import Permission
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
)

__all__ = [
    "ClickTool",
    "FocusTool",
    "GoBackTool",
    "GoForwardTool",
    "HoverTool",
    "NavigateToUrlTool",
    "RefreshTool",
    "ScrollTool",
    "SelectOptionTool",
    "TypeTextSimpleTool",
    "WaitForConditionTool",
    "WaitForElementTool",
]

WaitUntil = Literal["load", "domcontentloaded", "networkidle", "commit"]


class NavigateInput(PageInput):
    """Input of navigate_to_url."""

    url: str = Field(min_length=1, description="URL to open; https:// is added when no scheme is given.")
    wait_until: WaitUntil = Field(default="load", description="When the navigation counts as done.")


class NavOutput(BrowserOutput):
    """Result of a navigation."""

    page_title: str | None = Field(default=None, description="The page's title.")
    http_status: int | None = Field(
        default=None, description="HTTP status of the main document loaded (null if none, or nothing loaded)."
    )
    navigated: bool = Field(
        default=True, description="False when there was nowhere to go (go_back at the start)."
    )


class NavigateToUrlTool(BrowserTool):
    """navigate_to_url."""

    name = "navigate_to_url"
    description = "Go to a URL in the active tab (opening the session and a tab if needed); returns title and HTTP status."
    Input = NavigateInput
    Output = NavOutput
    permission = Permission.MODERATE
    creates_session = True

    async def act(self, call: Call) -> dict[str, Any]:
        """Navigate and report."""
        page = call.require_page()
        response = await page.goto(
            normalize_url(call.data.url, call.ctx.settings),
            wait_until=call.data.wait_until,
            timeout=call.timeout_ms,
        )
        return {"page_title": await page.title(), "http_status": response.status if response else None}


class ScrollInput(PageInput):
    """Input of scroll."""

    x: float = Field(strict=True, ge=0, le=10_000_000, description="Horizontal scroll position, pixels.")
    y: float = Field(strict=True, ge=0, le=10_000_000, description="Vertical scroll position, pixels.")


class PositionOutput(BrowserOutput):
    """Scroll position after the action."""

    scroll_x: float = Field(default=0, description="Horizontal scroll position, pixels.")
    scroll_y: float = Field(default=0, description="Vertical scroll position, pixels.")


class ScrollTool(BrowserTool):
    """scroll."""

    name = "scroll"
    description = "Scroll the page to an absolute position (x, y) in pixels."
    Input = ScrollInput
    Output = PositionOutput
    permission = Permission.MODERATE

    async def act(self, call: Call) -> dict[str, Any]:
        """Scroll and report where the page ended up (it stops at the document's edge)."""
        page = call.require_page()
        state = await page.evaluate(
            "([x, y]) => { window.scrollTo(x, y); return {x: window.scrollX, y: window.scrollY}; }",
            [call.data.x, call.data.y],
        )
        return {"scroll_x": state["x"], "scroll_y": state["y"]}


class _HistoryTool(BrowserTool):
    """Shared body of refresh, go_back and go_forward."""

    Input = PageInput
    Output = NavOutput
    permission = Permission.MODERATE
    verb = "reload"

    def waiting_for(self, data: Any) -> str:
        """Name the navigation that was waited for."""
        return f"the page to {self.verb.replace('_', ' ')}"

    async def act(self, call: Call) -> dict[str, Any]:
        """Reload or move through the tab's history."""
        page = call.require_page()
        before = page.url
        if self.verb == "go_back" and await _back_entry(page) is None:
            return {"page_title": await page.title(), "http_status": None, "navigated": False}
        if self.verb == "reload":
            response = await page.reload(timeout=call.timeout_ms)
        elif self.verb == "go_back":
            response = await page.go_back(timeout=call.timeout_ms)
        else:
            response = await page.go_forward(timeout=call.timeout_ms)
        navigated = self.verb == "reload" or response is not None or page.url != before
        if not navigated:
            # Nothing was loaded, so there is no status to report (the last one belongs to an older load).
            return {"page_title": await page.title(), "http_status": None, "navigated": False}
        status = response.status if response else call.session.last_status.get(call.tab_id or 0)
        return {"page_title": await page.title(), "http_status": status, "navigated": navigated}


async def _back_entry(page: Page) -> str | None:
    """The URL go_back would open; '' when unknown (not Chromium); None when there is no previous page.

    Every tab starts on the blank page new_page() opens, so the first page a tool loads is history
    entry 1; going back to that blank entry is not going back to a page.
    """
    try:
        cdp = await page.context.new_cdp_session(page)
        try:
            history = await cdp.send("Page.getNavigationHistory")
        finally:
            await cdp.detach()
    except PlaywrightError:
        return ""
    index, entries = history.get("currentIndex", 0), history.get("entries", [])
    if index <= 0 or (index == 1 and entries[0].get("url") == "about:blank"):
        return None
    return str(entries[index - 1].get("url", ""))


class RefreshTool(_HistoryTool):
    """refresh."""

    name = "refresh"
    description = "Reload the current page."
    verb = "reload"


class GoBackTool(_HistoryTool):
    """go_back."""

    name = "go_back"
    description = "Go back one page in the tab's history (navigated=false when there is no previous page)."
    verb = "go_back"


class GoForwardTool(_HistoryTool):
    """go_forward."""

    name = "go_forward"
    description = "Go forward one page in the tab's history (navigated=false when there is no next page)."
    verb = "go_forward"


class CssInput(PageInput):
    """Input naming an element; CSS by default, XPath with selector_type or an `xpath=` prefix."""

    selector: str = Field(
        min_length=1, description="CSS selector (or XPath with selector_type=xpath / 'xpath=' prefix)."
    )
    selector_type: SelectorType = Field(default="css", description="css or xpath.")


class ActOutput(BrowserOutput):
    """Result of an interaction."""

    navigated: bool = Field(default=False, description="Whether the tab's URL changed.")
    opened_tabs: list[int] = Field(default_factory=list, description="Tabs the action opened.")


class ClickTool(BrowserTool):
    """click."""

    name = "click"
    description = (
        "Click the element matched by a CSS selector (XPath with selector_type or an 'xpath=' prefix)."
    )
    Input = CssInput
    Output = ActOutput
    permission = Permission.MODERATE

    async def act(self, call: Call) -> dict[str, Any]:
        """Click, then let a started navigation finish loading."""
        return await click_and_follow(call, call.matches(), call.timeout_ms)


class TypeTextInput(CssInput):
    """Input of type_text."""

    text: str = Field(min_length=1, description="Text to type.")
    clear: bool = Field(default=True, description="Replace the field's content (false appends).")


class ValueOutput(BrowserOutput):
    """The value of a form control after the action."""

    value: str | None = Field(default=None, description="The control's value.")
    values: list[str] = Field(default_factory=list, description="Selected option values (select_option).")


class TypeTextSimpleTool(BrowserTool):
    """type_text."""

    name = "type_text"
    description = "Type text into the input matched by a CSS selector."
    Input = TypeTextInput
    Output = ValueOutput
    permission = Permission.MODERATE

    def summarize(self, data: Any) -> str:
        """Name the field, not the text (it may be a password)."""
        return f"type_text into '{data.selector}' ({len(data.text)} characters)"

    async def act(self, call: Call) -> dict[str, Any]:
        """Fill, or append keystrokes."""
        target = call.matches().first
        if call.data.clear:
            await target.fill(call.data.text, timeout=call.timeout_ms)
        else:
            await target.press_sequentially(call.data.text, timeout=call.timeout_ms)
        return {"value": await control_value(target)}


class HoverTool(BrowserTool):
    """hover."""

    name = "hover"
    description = "Move the mouse over the element matched by a CSS selector (opens hover menus)."
    Input = CssInput
    Output = ActOutput
    permission = Permission.MODERATE

    async def act(self, call: Call) -> dict[str, Any]:
        """Hover."""
        await call.matches().first.hover(timeout=call.timeout_ms)
        return {}


class FocusTool(BrowserTool):
    """focus."""

    name = "focus"
    description = "Give keyboard focus to the element matched by a CSS selector."
    Input = CssInput
    Output = ActOutput
    permission = Permission.MODERATE

    async def act(self, call: Call) -> dict[str, Any]:
        """Focus."""
        await call.matches().first.focus(timeout=call.timeout_ms)
        return {}


class SelectInput(CssInput):
    """Input of select_option."""

    value: str = Field(min_length=1, description="Value (or visible label) of the option to select.")


class SelectOptionTool(BrowserTool):
    """select_option."""

    name = "select_option"
    description = "Select an option of a <select> by its value or its label."
    Input = SelectInput
    Output = ValueOutput
    permission = Permission.MODERATE

    async def act(self, call: Call) -> dict[str, Any]:
        """Select by value, else by label; a missing option is an error naming the ones there are."""
        target = call.matches().first
        await target.wait_for(state="attached", timeout=call.timeout_ms)
        # Playwright waits the whole timeout for a missing option to appear and then reports only a
        # timeout on the selector; the options present are read once to say what went wrong instead.
        options = await target.evaluate(_OPTIONS_JS)
        wanted = call.data.value
        if options is not None and not any(wanted in (o["value"], o["label"]) for o in options):
            listed = ", ".join(
                o["value"] if o["value"] == o["label"] else f"{o['value']} ({o['label']})"
                for o in options[:50]
            )
            more = f" and {len(options) - 50} more" if len(options) > 50 else ""
            raise ActionError(
                "ERROR_ELEMENT_NOT_FOUND",
                f"no option with value or label '{wanted}' in '{call.data.selector}' "
                f"(options: {listed or 'none'}{more})",
            )
        values = await target.select_option(wanted, timeout=call.timeout_ms)
        return {"values": values, "value": values[0] if values else None}


# The options of a <select> as {value, label}; null for any other element (Playwright reports that).
_OPTIONS_JS = (
    "e => e instanceof HTMLSelectElement ? [...e.options].map(o => ({value: o.value, label: o.label})) : null"
)


class WaitElementInput(SessionInput):
    """Input of wait_for_element."""

    tab_id: int | None = Field(
        strict=True, default=None, ge=1, description="Tab to act on; default the active tab."
    )
    selector: str = Field(min_length=1, description="CSS selector (or XPath) to wait for.")
    selector_type: SelectorType = Field(default="css", description="css or xpath.")
    state: Literal["attached", "visible", "hidden", "detached"] = Field(
        default="visible", description="What to wait for."
    )
    timeout: int = Field(strict=True, default=5000, ge=1, le=600_000, description="Timeout in milliseconds.")


class WaitOutput(BrowserOutput):
    """Result of a wait."""

    waited_ms: float | None = Field(default=None, description="How long the wait took.")
    count: int | None = Field(default=None, description="Matching elements once the wait ended.")
    value: Any = Field(default=None, description="The condition's final value (wait_for_condition).")


class WaitForElementTool(BrowserTool):
    """wait_for_element."""

    name = "wait_for_element"
    description = "Wait until an element matching a CSS selector is visible (or attached, hidden, detached)."
    Input = WaitElementInput
    Output = WaitOutput
    permission = Permission.SAFE

    def timeout_ms_of(self, data: Any) -> float | None:
        """This tool's timeout field is `timeout` (ms), as specified."""
        return float(data.timeout)

    def waiting_for(self, data: Any) -> str:
        """Name the selector and the state."""
        suffix = "" if data.state == "visible" else f" to be {data.state}"
        return f"selector '{data.selector}'{suffix}"

    async def act(self, call: Call) -> dict[str, Any]:
        """Wait for the state and count the matches."""
        import time

        started = time.perf_counter()
        matches = call.matches()
        await matches.first.wait_for(state=call.data.state, timeout=call.timeout_ms)
        return {"waited_ms": round((time.perf_counter() - started) * 1000, 1), "count": await matches.count()}


class WaitConditionInput(SessionInput):
    """Input of wait_for_condition."""

    tab_id: int | None = Field(
        strict=True, default=None, ge=1, description="Tab to act on; default the active tab."
    )
    condition: str = Field(
        min_length=1, description="A JavaScript expression; the wait ends when it is truthy."
    )
    timeout: int = Field(strict=True, default=5000, ge=1, le=600_000, description="Timeout in milliseconds.")


class WaitForConditionTool(BrowserTool):
    """wait_for_condition."""

    name = "wait_for_condition"
    description = (
        "Wait until a JavaScript expression evaluated in the page is truthy (runs arbitrary code: critical)."
    )
    Input = WaitConditionInput
    Output = WaitOutput
    permission = Permission.CRITICAL

    def timeout_ms_of(self, data: Any) -> float | None:
        """This tool's timeout field is `timeout` (ms), as specified."""
        return float(data.timeout)

    def waiting_for(self, data: Any) -> str:
        """Quote the condition (shortened)."""
        text = data.condition if len(data.condition) <= 80 else data.condition[:77] + "..."
        return f"condition '{text}'"

    async def act(self, call: Call) -> dict[str, Any]:
        """Poll the condition until truthy; a condition that throws is reported, not waited out."""
        import time

        started = time.perf_counter()
        page = call.require_page()
        condition = call.data.condition
        # One evaluation first: a syntax or runtime error surfaces now as itself instead of depending
        # on how Playwright's polling treats a throwing predicate (a timeout, at worst).
        try:
            handle = await page.evaluate_handle(condition)
            truthy = bool(await handle.evaluate("v => !!v"))
        except PlaywrightTimeoutError:
            raise
        except PlaywrightError as exc:
            _raise_condition_error(exc)
            truthy = False  # e.g. the page was navigating: the wait below runs in the new document
        if not truthy:
            try:
                handle = await page.wait_for_function(condition, timeout=call.timeout_ms)
            except PlaywrightTimeoutError:
                raise
            except PlaywrightError as exc:
                _raise_condition_error(exc)
                raise
        value = await handle.json_value()
        return {"waited_ms": round((time.perf_counter() - started) * 1000, 1), "value": value}


_JS_ERROR = re.compile(r"\b((?:[A-Z][A-Za-z]*)?Error): (.*)")


def _raise_condition_error(exc: PlaywrightError) -> None:
    """Raise the ActionError for a condition that threw a JavaScript error; return for other errors."""
    lines = [ln.strip() for ln in (exc.message or "").splitlines() if ln.strip()]
    match = _JS_ERROR.search(lines[0]) if lines else None
    if match is None:
        return
    if match.group(1) == "SyntaxError":
        raise ActionError(
            "ERROR_INVALID_INPUT", f"the condition is not valid JavaScript: {match.group(0)}"
        ) from exc
    raise ActionError("ERROR_BROWSER", f"the condition threw {match.group(0)}") from exc
