"""The base of every browser tool: shared inputs, the status-style output and the execute() wrapper.

A browser tool only implements `act(call)`, returning its output fields; `BrowserTool.execute`
finds the session and tab, applies the timeout, records the event and turns failures into
statuses (`ERROR_TIMEOUT`, `ERROR_NO_PAGE`, ...). Timeouts of page loads raise TransientToolError
so Prefect retries them; everything else is an ordinary error result.
"""

from __future__ import annotations

import base64
import contextlib
import io
import os
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from PIL import Image
from playwright.async_api import Locator, Page
from pydantic import BaseModel, Field

from tasks.base import Permission, Tool, ToolContext, ToolInput, TransientToolError
from tasks.browser.actions import ActionError, artifact_path, pw_selector, resolve_timeout_s
from tasks.browser.session import MANAGER, Session

__all__ = [
    "SESSION_ID",
    "BrowserOutput",
    "BrowserTool",
    "Call",
    "PageInput",
    "SelectorType",
    "SessionInput",
    "click_and_follow",
    "control_value",
    "locate",
    "save_screenshot",
]

SelectorType = Literal["css", "xpath"]
SESSION_ID = r"^[A-Za-z0-9][A-Za-z0-9._:-]*$"


class SessionInput(ToolInput):
    """Input of every browser tool: which session (an isolated browser context) to act in."""

    session_id: str = Field(
        default="default",
        min_length=1,
        max_length=120,
        pattern=SESSION_ID,
        description="Browser session (isolated context) to use; created on first navigation.",
    )


class PageInput(SessionInput):
    """Input of tools acting on a page: optional tab and per-call timeout."""

    tab_id: int | None = Field(
        strict=True, default=None, ge=1, description="Tab to act on; default the active tab."
    )
    timeout_ms: int | None = Field(
        strict=True,
        default=None,
        ge=1,
        le=600_000,
        description="Timeout of this action in ms; default the browser_timeout_s setting, capped by browser_max_timeout_s.",
    )


class BrowserOutput(BaseModel):
    """Fields every browser tool returns."""

    status: str = Field(default="SUCCESS", description="SUCCESS or an ERROR_* status.")
    errorDetails: str | None = Field(default=None, description="What went wrong, when status is an error.")
    session_id: str | None = Field(default=None, description="The session acted in.")
    tab_id: int | None = Field(default=None, description="The tab acted on.")
    url: str | None = Field(default=None, description="The tab's URL after the action.")


@dataclass
class Call:
    """One running action: its session, tab, input and timeout."""

    tool: BrowserTool
    session: Session
    tab_id: int | None
    page: Page | None
    data: Any
    ctx: ToolContext
    timeout_s: float

    @property
    def timeout_ms(self) -> float:
        """The action's timeout in milliseconds."""
        return self.timeout_s * 1000

    def require_page(self) -> Page:
        """The page acted on (tools with needs_page always have one)."""
        if self.page is None:
            raise ActionError("ERROR_NO_PAGE", f"no page is open in session '{self.session.id}'")
        return self.page

    def matches(self) -> Locator:
        """The elements the input's `selector` (of its `selector_type`) matches on the page acted on."""
        return locate(self.require_page(), self.data.selector, self.data.selector_type)


def locate(page: Page, selector: str, selector_type: str = "css") -> Locator:
    """A locator for a CSS/XPath selector (an `xpath=` prefix wins)."""
    return page.locator(pw_selector(selector, selector_type))


async def control_value(target: Locator) -> str | None:
    """The form control's current value; None when the element has none (not an input) or is gone."""
    with contextlib.suppress(Exception):
        return await target.input_value(timeout=1000)
    return None


async def save_screenshot(
    call: Call,
    *,
    full_page: bool = False,
    locator: Locator | None = None,
    image_format: str = "png",
    quality: int | None = None,
    return_base64: bool = False,
    kind: str = "screenshots",
) -> dict[str, Any]:
    """Capture the page or an element into <state>/<kind>/ and describe the file."""
    page = call.require_page()
    options: dict[str, Any] = {"type": image_format, "timeout": call.timeout_ms}
    if image_format == "jpeg" and quality is not None:
        options["quality"] = quality
    if locator is not None:
        data = await locator.screenshot(**options)
    else:
        data = await page.screenshot(full_page=full_page, **options)
    path = artifact_path(call.ctx.settings, kind, call.session.id, "jpg" if image_format == "jpeg" else "png")
    write_atomic(path, data)
    with Image.open(io.BytesIO(data)) as img:
        width, height = img.size
    result: dict[str, Any] = {
        "screenshot_path": str(path),
        "width": width,
        "height": height,
        "image_format": image_format,
        "size_bytes": len(data),
    }
    if return_base64:
        result["image_base64"] = base64.b64encode(data).decode("ascii")
    return result


def write_atomic(path: Any, data: bytes) -> None:
    """Write bytes to a temp file beside `path`, then rename: never a half-written file."""
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


class BrowserTool(Tool[Any, Any]):
    """A tool acting in a browser session; subclasses implement `act`."""

    permission: ClassVar[Permission] = Permission.MODERATE
    # Whether the tool acts on a tab (and so fails with ERROR_NO_PAGE when none is open).
    needs_page: ClassVar[bool] = True
    # Whether the call may create the session (navigation does; reading a missing page does not).
    creates_session: ClassVar[bool] = False

    def waiting_for(self, data: Any) -> str:
        """What a timeout of this call was waiting for, for the readable message."""
        selector = getattr(data, "selector_value", None) or getattr(data, "selector", None)
        if selector:
            return f"selector '{selector}'"
        url = getattr(data, "url", None)
        if url:
            return f"the page {url} to load"
        return "the page"

    def timeout_ms_of(self, data: Any) -> float | None:
        """The per-call timeout the input asks for, in ms (None: the setting)."""
        value = getattr(data, "timeout_ms", None)
        return float(value) if value is not None else None

    def viewport_of(self, data: Any) -> dict[str, int] | None:
        """The viewport a new session should get (only launchBrowser sets one)."""
        return None

    async def act(self, call: Call) -> dict[str, Any]:
        """Do the action; return the output fields (tab_id/url are filled in when missing)."""
        raise NotImplementedError

    async def execute(self, data: Any, ctx: ToolContext) -> BaseModel:
        """Find the session and tab, run `act` under the timeout, and map failures to statuses."""
        sid = data.session_id
        timeout_s = resolve_timeout_s(ctx.settings, self.timeout_ms_of(data))
        params = data.model_dump(exclude={"session_id"}, exclude_none=True)
        session: Session | None = None
        try:
            session = await MANAGER.session(
                sid, ctx.settings, create=self.creates_session, viewport=self.viewport_of(data)
            )
            if session is None:
                raise ActionError(
                    "ERROR_NO_PAGE",
                    f"no browser session '{sid}' is open: call launchBrowser or navigate_to_url first",
                )

            async def work() -> dict[str, Any]:
                tab_id, page = None, None
                if self.needs_page:
                    if self.creates_session and session.active is None:
                        tab_id = await session.new_tab()
                    tab_id, page = session.page(getattr(data, "tab_id", None))
                call = Call(self, session, tab_id, page, data, ctx, timeout_s)
                fields = await self.act(call)
                if call.page is not None and not call.page.is_closed():
                    fields.setdefault("tab_id", call.tab_id)
                    fields.setdefault("url", call.page.url)
                return fields

            fields = await session.perform(self.name, params, work, timeout_s, self.waiting_for(data))
        except ActionError as exc:
            out = self.Output(
                status=exc.status,
                errorDetails=exc.message,
                session_id=sid,
                **self._failure_fields(session, data),
            )
            if exc.transient:
                raise TransientToolError(exc.message, result=out) from exc
            return out
        return self.Output(session_id=sid, **fields)

    def _failure_fields(self, session: Session | None, data: Any) -> dict[str, Any]:
        """Where a failed call left things: the tab asked for (else the active one) and its URL."""
        fields: dict[str, Any] = {}
        if "navigated" in self.Output.model_fields:
            fields["navigated"] = False  # a failed action is never reported as having navigated
        if session is None:
            return fields
        with contextlib.suppress(ActionError):
            tab_id, page = session.page(getattr(data, "tab_id", None))
            if not page.is_closed():
                fields.update(tab_id=tab_id, url=page.url)
        return fields


_OPENS_TAB_JS = "e => { const a = e.closest('a, area'); return !!(a && a.target && !['_self', '_parent', '_top'].includes(a.target)); }"


async def click_and_follow(call: Call, locator: Locator, wait_ms: float) -> dict[str, Any]:
    """Click; wait for the navigation or the new tab it starts; report both."""
    from playwright.async_api import TimeoutError as PlaywrightTimeoutError

    page = call.require_page()
    before_url = page.url
    target = locator.first
    await target.wait_for(state="attached", timeout=call.timeout_ms)
    opens_tab = bool(await target.evaluate(_OPENS_TAB_JS))
    opened: list[int] = []
    if opens_tab:
        async with page.expect_popup(timeout=call.timeout_ms) as popup_info:
            await target.click(timeout=call.timeout_ms)
        popup = await popup_info.value
        tab_id = call.session.tab_id_of(popup) or call.session._register(popup)
        opened.append(tab_id)
        with contextlib.suppress(PlaywrightTimeoutError):
            await popup.wait_for_load_state("load", timeout=call.timeout_ms)
    else:
        await target.click(timeout=call.timeout_ms)
    if wait_ms:
        # A click that does not navigate finds the page already loaded and returns at once.
        with contextlib.suppress(PlaywrightTimeoutError):
            await page.wait_for_load_state("load", timeout=wait_ms)
    return {"navigated": page.url != before_url, "opened_tabs": opened}
