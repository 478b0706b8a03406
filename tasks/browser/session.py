"""Browser sessions: one Chromium per process, an isolated context per session, tabs with stable IDs.

Everything here runs on the process-wide tool loop (`tasks.base.run_coroutine`), so the browser
launched by the first call is still there for the next one. Every action goes through
`Session.perform`, which applies the per-action timeout and appends an event (action, parameters,
duration, outcome) to the session's history; a timeout becomes a readable sentence such as
"Timed out after 10 s waiting for selector 'button.submit'".
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import re
import shutil
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar, cast

from playwright.async_api import Browser, BrowserContext, Page, Playwright, ViewportSize, async_playwright
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from tasks.browser.actions import (
    ActionError,
    artifact_path,
    normalize_url,
    pw_selector,
    resolve_timeout_s,
    timeout_message,
)
from tasks.browser.guard import Guard, first_refusal
from udm.config import Settings
from udm.net import AllowList

__all__ = [
    "CHROMIUM_ARGS",
    "MANAGER",
    "ActionError",
    "BrowserManager",
    "Event",
    "Session",
    "artifact_path",
    "find_browser",
    "normalize_url",
    "pw_selector",
    "resolve_timeout_s",
    "timeout_message",
]

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    # WebRTC may send UDP to any address, past the guard proxy: only proxied (TCP) traffic is allowed.
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
]
DEBIAN_CHROMIUM = "/usr/bin/chromium"
# Debian's headless-only build (package chromium-headless-shell), the kind Playwright itself runs for
# headless work. Tried first: the full browser's UI process serialises every context's navigations
# and screenshots, so parallel contexts gained nothing on two cores (see the README's benchmark).
DEBIAN_HEADLESS_SHELL = "/usr/bin/chromium-headless-shell"
DEFAULT_VIEWPORT = {"width": 1280, "height": 800}
# Parameters longer than this are shortened in the event history (typed text, scripts).
_PARAM_LIMIT = 200

T = TypeVar("T")
# Every URL: the pattern that routes a context's WebSockets through its guard.
_ANY_URL = re.compile(r".*")


def find_browser(settings: Settings) -> str | None:
    """The Chromium executable: the `browser` setting, then Debian's (headless shell, then full), else None."""
    if settings.browser:
        path = shutil.which(settings.browser) or settings.browser
        if not Path(path).exists():
            raise ActionError(
                "ERROR_BROWSER_NOT_FOUND", f"the configured browser '{settings.browser}' does not exist"
            )
        return path
    for candidate in (DEBIAN_HEADLESS_SHELL, DEBIAN_CHROMIUM):
        if Path(candidate).exists():
            return candidate
    return None


def _short(value: Any) -> Any:
    if isinstance(value, str) and len(value) > _PARAM_LIMIT:
        return value[:_PARAM_LIMIT] + f"... ({len(value)} chars)"
    return value


@dataclass
class Event:
    """One entry of a session's history."""

    seq: int
    time: str
    action: str
    parameters: dict[str, Any]
    duration_ms: float
    outcome: str
    error: str | None = None
    url: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The event as JSON-able data."""
        return {
            "seq": self.seq,
            "time": self.time,
            "action": self.action,
            "parameters": self.parameters,
            "duration_ms": self.duration_ms,
            "outcome": self.outcome,
            "error": self.error,
            "url": self.url,
        }


@dataclass
class Session:
    """An isolated browser context with its tabs, history and memory."""

    id: str
    context: BrowserContext
    tabs: dict[int, Page] = field(default_factory=dict)
    active: int | None = None
    history: list[Event] = field(default_factory=list)
    # HTTP status of the last main-frame navigation per tab (for `status` expectations).
    last_status: dict[int, int | None] = field(default_factory=dict)
    # The SSRF guard of this context (routing and proxy); None only for a context made elsewhere.
    guard: Guard | None = None
    _next_tab: int = 1
    _seq: int = 0

    def __post_init__(self) -> None:
        # A link with target=_blank or window.open() opens a page we did not create: adopt it.
        self.context.on("page", self._adopt)

    def _adopt(self, page: Page) -> None:
        if self.tab_id_of(page) is None:
            self._register(page)

    def _register(self, page: Page) -> int:
        tab_id = self._next_tab
        self._next_tab += 1
        self.tabs[tab_id] = page
        if self.active is None:
            self.active = tab_id
        page.on("close", lambda _p: self._forget(tab_id))
        page.on("response", lambda r: self._note_response(tab_id, page, r))
        return tab_id

    def _note_response(self, tab_id: int, page: Page, response: Any) -> None:
        try:
            if response.request.is_navigation_request() and response.frame == page.main_frame:
                self.last_status[tab_id] = response.status
        except PlaywrightError:
            pass

    def _forget(self, tab_id: int) -> None:
        self.tabs.pop(tab_id, None)
        if self.active == tab_id:
            self.active = max(self.tabs) if self.tabs else None

    def tab_id_of(self, page: Page) -> int | None:
        """The stable ID of a page of this session, or None."""
        for tab_id, candidate in self.tabs.items():
            if candidate is page:
                return tab_id
        return None

    async def new_tab(self, url: str | None = None, timeout_s: float = 10.0) -> int:
        """Open a tab (optionally navigating it), make it active and return its ID.

        When the navigation fails the new tab is closed and the previously active tab is active
        again, so a failed open leaves no blank tab behind.
        """
        previous = self.active
        page = await self.context.new_page()
        tab_id = self.tab_id_of(page) or self._register(page)
        self.active = tab_id
        if url:
            try:
                response = await page.goto(url, timeout=timeout_s * 1000)
            except BaseException:
                await self.abandon_tab(tab_id, previous)
                raise
            self.last_status[tab_id] = response.status if response else None
        return tab_id

    async def abandon_tab(self, tab_id: int, previous: int | None) -> None:
        """Close a tab that failed to open and make `previous` (else the newest tab) active again."""
        page = self.tabs.get(tab_id)
        # Also on cancellation (the outer timeout): restore first, then close without waiting long.
        self._forget(tab_id)
        self.last_status.pop(tab_id, None)
        self.active = previous if previous in self.tabs else (max(self.tabs) if self.tabs else None)
        if page is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(page.close(), timeout=5)

    def page(self, tab_id: int | None = None) -> tuple[int, Page]:
        """The tab with this ID, or the active one; ActionError when there is none."""
        if tab_id is not None:
            if tab_id not in self.tabs:
                known = ", ".join(str(t) for t in sorted(self.tabs)) or "none"
                raise ActionError(
                    "ERROR_TAB_NOT_FOUND", f"no tab {tab_id} in session '{self.id}' (open: {known})"
                )
            return tab_id, self.tabs[tab_id]
        if self.active is None or self.active not in self.tabs:
            raise ActionError(
                "ERROR_NO_PAGE",
                f"no page is open in session '{self.id}': call launchBrowser or navigate_to_url first",
            )
        return self.active, self.tabs[self.active]

    async def perform(
        self,
        action: str,
        parameters: dict[str, Any],
        work: Callable[[], Awaitable[T]],
        timeout_s: float,
        waiting_for: str,
    ) -> T:
        """Run one action under its timeout and record it; failures raise ActionError."""
        started = time.perf_counter()
        stamp = datetime.now(UTC).isoformat(timespec="milliseconds")
        outcome, error = "ok", None
        self.context.set_default_timeout(timeout_s * 1000)
        self.context.set_default_navigation_timeout(timeout_s * 1000)
        mark = self.guard.mark() if self.guard else 0
        try:
            # The outer guard catches what Playwright's own timeouts do not cover (a hung evaluate).
            result = await asyncio.wait_for(work(), timeout=timeout_s + 5)
            self._refuse_navigation(mark, action)
            return result
        except (PlaywrightTimeoutError, TimeoutError) as exc:
            outcome, error = "timeout", timeout_message(timeout_s, waiting_for)
            self._refuse_failure(mark, error)
            raise ActionError("ERROR_TIMEOUT", error, transient=action_is_navigation(action)) from exc
        except ActionError as exc:
            outcome, error = "error", exc.message
            if exc.status != "ERROR_URL_BLOCKED":
                self._refuse_failure(mark, exc.message)
            raise
        except PlaywrightError as exc:
            outcome, error = "error", _first_line(exc.message)
            self._refuse_failure(mark, error)
            transient = "net::ERR_" in exc.message
            status = "ERROR_NAVIGATION" if transient else "ERROR_BROWSER"
            raise ActionError(status, error, transient=transient) from exc
        finally:
            self._seq += 1
            url = None
            with contextlib.suppress(ActionError):
                url = self.page()[1].url
            self.history.append(
                Event(
                    seq=self._seq,
                    time=stamp,
                    action=action,
                    parameters={k: _short(v) for k, v in parameters.items()},
                    duration_ms=round((time.perf_counter() - started) * 1000, 1),
                    outcome=outcome,
                    error=error,
                    url=url,
                )
            )

    def _refuse_navigation(self, mark: int, action: str) -> None:
        """ERROR_URL_BLOCKED when the guard refused a tab's navigation during an action that succeeded.

        Routing marks a refused navigation as such; the proxy cannot tell a navigation from an image,
        so its refusal counts when the tab now shows the refused URL (a redirect hop it refused).
        """
        if self.guard is None:
            return
        refused = self.guard.since(mark)
        if not refused:
            return
        urls = {page.url for page in self.tabs.values() if not page.is_closed()}
        for item in refused:
            if item.navigation or item.url in urls:
                raise ActionError("ERROR_URL_BLOCKED", f"{action}: {item.message}")

    def _refuse_failure(self, mark: int, error: str) -> None:
        """ERROR_URL_BLOCKED instead of a failure the guard caused (a refused download or tunnel)."""
        item = first_refusal(self.guard.since(mark)) if self.guard else None
        if item is not None:
            raise ActionError("ERROR_URL_BLOCKED", f"{item.message} ({error})")


def action_is_navigation(action: str) -> bool:
    """Whether a timeout of this action is worth retrying (loading a page, not finding an element)."""
    return action in {"navigate_to_url", "launchBrowser", "refresh", "openInNewTab", "browser_tabs"}


def _first_line(message: str) -> str:
    lines = [ln.strip() for ln in (message or "").splitlines() if ln.strip()]
    return lines[0] if lines else "browser error"


class BrowserManager:
    """The process's one browser and its sessions; every method runs on the tool loop."""

    def __init__(self) -> None:
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.sessions: dict[str, Session] = {}
        # session_memory lives apart from the browser so it works before any page is open.
        self.memory: dict[str, dict[str, Any]] = {}
        self.executable: str | None = None
        self._atexit = False

    def _guard(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._lock is None or self._loop is not loop:
            self._lock, self._loop = asyncio.Lock(), loop
        return self._lock

    def alive(self) -> bool:
        """Whether the shared browser and the Playwright driver talking to it are both still there."""
        if self._browser is None or not self._browser.is_connected():
            return False
        # When the driver process dies, Playwright (1.5x) keeps is_connected() True and only marks
        # its connection closed; every later call then fails with TargetClosedError. Read that mark
        # (absent attributes count as alive, so a Playwright upgrade cannot make this fail closed).
        connection = getattr(getattr(self._browser, "_impl_obj", None), "_connection", None)
        return getattr(connection, "_closed_error", None) is None

    async def browser(self, settings: Settings) -> Browser:
        """The shared browser, launched on first use (and again if it or its driver died)."""
        async with self._guard():
            if self._browser is not None and self.alive():
                return self._browser
            executable = find_browser(settings)
            if self._browser is not None:
                # The browser died (crash, kill, or its Playwright driver went with it): a driver that
                # lost its browser may be dead too, so both are started afresh.
                await self._discard()
            if self._playwright is None:
                try:
                    self._playwright = await async_playwright().start()
                except Exception as exc:
                    raise ActionError(
                        "ERROR_BROWSER_LAUNCH", f"could not start the Playwright driver: {exc}"
                    ) from exc
            try:
                self._browser = await self._playwright.chromium.launch(
                    executable_path=executable, args=CHROMIUM_ARGS, headless=True
                )
            except PlaywrightError as exc:
                raise ActionError(
                    "ERROR_BROWSER_LAUNCH",
                    f"could not launch the browser ({executable or 'Playwright Chromium'}): "
                    f"{_first_line(exc.message)}",
                ) from exc
            self.executable = executable
            self.sessions.clear()
            if not self._atexit:
                atexit.register(_shutdown_at_exit)
                self._atexit = True
            return self._browser

    async def session(
        self,
        session_id: str,
        settings: Settings,
        *,
        create: bool = True,
        viewport: dict[str, int] | None = None,
        accept_downloads: bool = True,
        route_websockets: bool = True,
    ) -> Session | None:
        """The session with this ID; created (a fresh context) when missing and `create` is set.

        `route_websockets=False` leaves page WebSockets to the guard proxy alone (it refuses them at
        CONNECT too, with a less specific error in the page): Playwright's WebSocket routing injects a
        script into every page, which verification contexts skip to save browser CPU.
        """
        existing = self.sessions.get(session_id)
        if existing is not None and self.alive():
            if existing.guard is not None:
                existing.guard.set_allow(settings.fetch_allow, *_file_roots(settings))
            return existing
        if not create:
            return None
        guard = Guard(AllowList.parse(settings.fetch_allow))
        guard.set_allow(settings.fetch_allow, *_file_roots(settings))
        options: dict[str, Any] = {
            "viewport": cast(ViewportSize, viewport or DEFAULT_VIEWPORT),
            "accept_downloads": accept_downloads,
            # Every connection of the context goes through its guard (see tasks.browser.guard).
            "proxy": {"server": await guard.start()},
        }
        try:
            context = await self._new_context(settings, options)
            await context.route("**/*", guard.on_route)
            if route_websockets:
                await context.route_web_socket(_ANY_URL, guard.on_websocket)
        except BaseException:
            await guard.close()
            raise
        session = Session(id=session_id, context=context, guard=guard)
        self.sessions[session_id] = session
        return session

    async def _new_context(self, settings: Settings, options: dict[str, Any]) -> BrowserContext:
        """A new context of the shared browser, relaunching it once if it died in between."""
        browser = await self.browser(settings)
        try:
            context = await browser.new_context(**options)
        except PlaywrightError as exc:
            if self.alive():
                raise ActionError(
                    "ERROR_BROWSER", f"could not open a browser context: {_first_line(exc.message)}"
                ) from exc
            # The browser went away between the check and the call: one fresh start, then give up.
            browser = await self.browser(settings)
            try:
                context = await browser.new_context(**options)
            except PlaywrightError as again:
                raise ActionError(
                    "ERROR_BROWSER", f"could not open a browser context: {_first_line(again.message)}"
                ) from again
        return context

    async def close_session(self, session_id: str) -> bool:
        """Close a session's context and forget it; False when there was none."""
        session = self.sessions.pop(session_id, None)
        if session is None:
            return False
        with contextlib.suppress(PlaywrightError):
            await session.context.close()
        if session.guard is not None:
            await session.guard.close()
        return True

    async def _discard(self) -> None:
        """Forget a dead browser, its sessions and its driver (closing whatever still answers)."""
        for session in self.sessions.values():
            if session.guard is not None:
                await session.guard.close()
        self.sessions.clear()
        browser, playwright = self._browser, self._playwright
        self._browser, self._playwright = None, None
        if browser is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(browser.close(), timeout=5)
        if playwright is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(playwright.stop(), timeout=5)

    async def shutdown(self) -> None:
        """Close every session, the browser and Playwright."""
        for sid in list(self.sessions):
            await self.close_session(sid)
        if self._browser is not None:
            with contextlib.suppress(PlaywrightError):
                await self._browser.close()
            self._browser = None
        if self._playwright is not None:
            with contextlib.suppress(Exception):
                await self._playwright.stop()
            self._playwright = None


def _file_roots(settings: Settings) -> tuple[list[str], list[str]]:
    """The allowed directories and the protected folders in them, for the guard's file: check."""
    return [str(r) for r in settings.allowed_roots()], [str(p) for p in settings.protected_paths()]


MANAGER = BrowserManager()


def _shutdown_at_exit() -> None:
    # Runs at interpreter exit while the (daemon) loop thread is still alive.
    from tasks.base import run_coroutine

    if MANAGER._browser is None and MANAGER._playwright is None:
        return
    with contextlib.suppress(Exception):
        run_coroutine(MANAGER.shutdown(), timeout=10)
