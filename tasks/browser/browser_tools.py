"""Tab-level tools: browser_read_page, browser_tabs, browser_cookies, browser_download (allowed dirs only)."""

from __future__ import annotations

import mimetypes
import os
import re
from http.cookiejar import Cookie, CookieJar, DefaultCookiePolicy
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

import httpx
import yaml
from pydantic import Field, model_validator

from tasks.base import Permission
from tasks.browser.actions import ActionError, normalize_url, require_allowed, timeout_message
from tasks.browser.common import (
    BrowserOutput,
    BrowserTool,
    Call,
    PageInput,
    SelectorType,
    locate,
    save_screenshot,
)
from tasks.browser.page_tools import tab_list
from udm.config import Settings
from udm.datalimits import DataLimitError, check_yaml
from udm.errors import InvalidURLError
from udm.guard import tool_sandbox
from udm.net import split_url, verified_ssl_context

__all__ = [
    "BrowserCookiesTool",
    "BrowserDownloadTool",
    "BrowserReadPageTool",
    "BrowserTabsTool",
    "download_target",
]

# The whole body is held in memory before the sandbox writes it: this bounds that memory.
MAX_DOWNLOAD_BYTES = 100 * 1024 * 1024


class ReadPageInput(PageInput):
    """Input of browser_read_page."""

    mode: Literal["text", "html", "screenshot", "accessibility_tree"] = Field(
        default="text", description="text, html, screenshot or accessibility_tree."
    )
    selector: str | None = Field(
        default=None, min_length=1, description="Read only this element (CSS or XPath)."
    )
    selector_type: SelectorType = Field(default="css", description="css or xpath.")
    max_chars: int = Field(
        strict=True, default=200_000, ge=100, le=10_000_000, description="Cut text/html at this length."
    )
    return_base64: bool = Field(default=False, description="screenshot mode: also return base64.")


class ReadPageOutput(BrowserOutput):
    """Page content in the mode asked for."""

    mode: str | None = Field(default=None, description="The mode read.")
    content: str | None = Field(default=None, description="Text, HTML, or the accessibility tree as YAML.")
    tree: Any = Field(default=None, description="accessibility_tree mode: the tree as structured data.")
    truncated: bool = Field(default=False, description="Whether content was cut at max_chars.")
    screenshot_path: str | None = Field(default=None, description="screenshot mode: the image file.")
    image_base64: str | None = Field(default=None, description="screenshot mode, on request.")


class BrowserReadPageTool(BrowserTool):
    """browser_read_page."""

    name = "browser_read_page"
    description = (
        "Read a tab as text, HTML, a screenshot file or its accessibility tree (optionally one element only)."
    )
    Input = ReadPageInput
    Output = ReadPageOutput
    permission = Permission.SAFE

    async def act(self, call: Call) -> dict[str, Any]:
        """Read in the chosen mode."""
        data = call.data
        page = call.require_page()
        target = (
            locate(page, data.selector, data.selector_type).first if data.selector else page.locator("body")
        )
        if data.selector:
            await target.wait_for(state="attached", timeout=call.timeout_ms)
        if data.mode == "screenshot":
            shot = await save_screenshot(
                call, locator=target if data.selector else None, return_base64=data.return_base64
            )
            return {
                "mode": data.mode,
                "screenshot_path": shot["screenshot_path"],
                "image_base64": shot.get("image_base64"),
            }
        tree: Any = None
        if data.mode == "text":
            content = await target.inner_text(timeout=call.timeout_ms)
        elif data.mode == "html":
            content = await target.evaluate("e => e.outerHTML") if data.selector else await page.content()
        else:
            content = await target.aria_snapshot(timeout=call.timeout_ms)
            try:
                # A page can nest elements as deeply as it likes; the parser recurses per level.
                check_yaml(content, what="the accessibility tree")
                tree = yaml.safe_load(content)
            except (yaml.YAMLError, DataLimitError):
                tree = None  # the YAML text in `content` is still the answer
        return {
            "mode": data.mode,
            "content": content[: data.max_chars],
            "tree": tree,
            "truncated": len(content) > data.max_chars,
        }


class TabsInput(PageInput):
    """Input of browser_tabs."""

    action: Literal["list", "create", "close", "switch"] = Field(
        default="list", description="list, create, close or switch."
    )
    url: str | None = Field(
        default=None, min_length=1, description="create: URL to open (default about:blank)."
    )

    @model_validator(mode="after")
    def _needs_tab(self) -> TabsInput:
        if self.action in {"close", "switch"} and self.tab_id is None:
            raise ValueError(f"tab_id is required when action is '{self.action}'")
        return self


class TabsOutput(BrowserOutput):
    """The tabs after the action."""

    tabs: list[dict[str, Any]] = Field(default_factory=list, description="tab_id, url, title, active.")
    active_tab: int | None = Field(default=None, description="The active tab's ID.")


class BrowserTabsTool(BrowserTool):
    """browser_tabs."""

    name = "browser_tabs"
    description = "List, create, close or switch the session's tabs; tabs keep stable IDs."
    Input = TabsInput
    Output = TabsOutput
    permission = Permission.SAFE
    needs_page = False
    creates_session = True

    def permission_for(self, data: Any) -> Permission:
        """list is safe, create/switch moderate, close destructive."""
        return {
            "list": Permission.SAFE,
            "create": Permission.MODERATE,
            "switch": Permission.MODERATE,
            "close": Permission.DESTRUCTIVE,
        }[data.action]

    async def act(self, call: Call) -> dict[str, Any]:
        """Do the action and list the tabs."""
        data = call.data
        session = call.session
        if data.action == "create":
            tab_id = await session.new_tab(
                normalize_url(data.url, call.ctx.settings) if data.url else None, call.timeout_s
            )
            call.tab_id, call.page = session.page(tab_id)
        elif data.action in {"close", "switch"}:
            tab_id, page = session.page(data.tab_id)
            if data.action == "close":
                await page.close()
            else:
                session.active = tab_id
                await page.bring_to_front()
        return {"tabs": await tab_list(call), "active_tab": session.active}


class CookiesInput(PageInput):
    """Input of browser_cookies."""

    domain: str = Field(min_length=1, description="Domain whose cookies to read (subdomains included).")


class CookiesOutput(BrowserOutput):
    """Cookies of a domain."""

    cookies: list[dict[str, Any]] = Field(
        default_factory=list, description="name, value, domain, path, expires, httpOnly, secure."
    )


class BrowserCookiesTool(BrowserTool):
    """browser_cookies."""

    name = "browser_cookies"
    description = "Read the session's cookies for a domain (they can hold session tokens: destructive)."
    Input = CookiesInput
    Output = CookiesOutput
    permission = Permission.DESTRUCTIVE
    needs_page = False

    async def act(self, call: Call) -> dict[str, Any]:
        """Filter the context's cookies by domain."""
        wanted = call.data.domain.strip().lower().lstrip(".")
        if "://" in wanted:
            try:
                wanted = split_url(wanted, schemes=None, what="domain").hostname or wanted
            except InvalidURLError as exc:
                raise ActionError("ERROR_INVALID_INPUT", str(exc)) from exc
        cookies = []
        for c in await call.session.context.cookies():
            domain = str(c.get("domain", "")).lower().lstrip(".")
            if domain == wanted or domain.endswith("." + wanted) or wanted.endswith("." + domain):
                cookies.append(
                    {
                        k: c.get(k)
                        for k in ("name", "value", "domain", "path", "expires", "httpOnly", "secure")
                    }
                )
        return {"cookies": cookies}


def download_target(settings: Settings, save_path: str | None, suggested: str) -> Path:
    """Where a download goes: `save_path` (a folder keeps the suggested name), else the scratch folder."""
    if save_path is None:
        return settings.scratch_path / (_safe_name(suggested) or "download")
    try:
        raw = Path(save_path).expanduser()
        target = raw if raw.is_absolute() else settings.project_root / raw
        if save_path.endswith(("/", os.sep)) or target.is_dir():
            target = target / (_safe_name(suggested) or "download")
        real = Path(os.path.realpath(target))
    except (ValueError, OSError) as exc:
        # A NUL byte, an unknown ~user or a path the OS rejects outright (too long, a loop).
        raise ActionError(
            "ERROR_INVALID_INPUT", f"save_path {save_path!r} is not a usable path: {exc}"
        ) from exc
    require_allowed(real, settings, f"'{save_path}'")
    return real


def _sandbox_write(settings: Settings, target: Path, data: bytes) -> Path:
    """Write through the file sandbox (atomic, no symlink escapes), creating the folder if needed."""
    from udm.errors import UdmError

    # The tools' sandbox: a download can never land in the engine's state folder (#17.3).
    sandbox = tool_sandbox(settings)
    try:
        sandbox.mkdir(target.parent, parents=True)
        return Path(sandbox.write(target, data).path)
    except UdmError as exc:
        raise ActionError("ERROR_PATH_NOT_ALLOWED", str(exc)) from exc
    except OSError as exc:
        raise ActionError("ERROR_WRITE_FAILED", f"cannot save {target}: {exc.strerror or exc}") from exc


def _safe_name(name: str) -> str:
    return re.sub(r"[^\w.\-]+", "_", os.path.basename(name)).strip("._")[:200]


class DownloadInput(PageInput):
    """Input of browser_download."""

    url: str | None = Field(
        default=None, min_length=1, description="URL to download (with the session's cookies)."
    )
    selector: str | None = Field(
        default=None, min_length=1, description="Or: an element to click that starts a download."
    )
    selector_type: SelectorType = Field(default="css", description="css or xpath.")
    save_path: str | None = Field(
        default=None,
        min_length=1,
        description="File or folder (inside an allowed directory, never the state folder) to save into; "
        "default: the scratch folder, under the suggested name.",
    )
    max_bytes: int = Field(
        strict=True,
        default=MAX_DOWNLOAD_BYTES,
        ge=1,
        le=1024 * 1024 * 1024,
        description="Largest download accepted, in bytes (default 100 MB); a larger one is ERROR_TOO_LARGE.",
    )

    @model_validator(mode="after")
    def _one_source(self) -> DownloadInput:
        if (self.url is None) == (self.selector is None):
            raise ValueError("give exactly one of url or selector")
        return self


class DownloadOutput(BrowserOutput):
    """A saved download."""

    path: str | None = Field(default=None, description="Where the file was saved.")
    size_bytes: int | None = Field(default=None, description="Its size.")
    mime_type: str | None = Field(default=None, description="Its content type.")


class BrowserDownloadTool(BrowserTool):
    """browser_download."""

    name = "browser_download"
    description = (
        "Download a URL, or the file a click starts, into an allowed directory (destructive: writes files)."
    )
    Input = DownloadInput
    Output = DownloadOutput
    permission = Permission.DESTRUCTIVE
    needs_page = False
    creates_session = True

    async def act(self, call: Call) -> dict[str, Any]:
        """Fetch through the session (or catch the click's download) and save atomically."""
        data = call.data
        settings = call.ctx.settings
        if data.selector:
            call.tab_id, call.page = call.session.page(data.tab_id)
            async with call.page.expect_download(timeout=call.timeout_ms) as info:
                await locate(call.page, data.selector, data.selector_type).first.click(
                    timeout=call.timeout_ms
                )
            download = await info.value
            target = download_target(settings, data.save_path, download.suggested_filename)
            # Playwright keeps the download in its own temp folder; the sandbox writes it into place.
            source = await download.path()
            size = os.path.getsize(source)
            if size > data.max_bytes:
                await download.delete()
                raise _too_large(
                    f"the download {download.suggested_filename!r}", f"{size:,} bytes", data.max_bytes
                )
            target = _sandbox_write(settings, target, Path(source).read_bytes())
            guessed = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
            return {"path": str(target), "size_bytes": target.stat().st_size, "mime_type": guessed}
        url = normalize_url(data.url, settings)
        body, headers, final_url = await _fetch_capped(call, url, data.max_bytes)
        disposition = headers.get("content-disposition", "")
        match = re.search(r"filename\*?=(?:UTF-8'')?\"?([^\";]+)", disposition)
        suggested = unquote(match.group(1)) if match else unquote(Path(urlsplit(final_url).path).name)
        target = _sandbox_write(settings, download_target(settings, data.save_path, suggested), body)
        mime: str | None = (headers.get("content-type") or "").split(";")[0]
        mime = mime or mimetypes.guess_type(target.name)[0]
        return {"path": str(target), "size_bytes": len(body), "mime_type": mime or "application/octet-stream"}


def _too_large(what: str, size: str, max_bytes: int) -> ActionError:
    return ActionError("ERROR_TOO_LARGE", f"{what} is {size}, more than max_bytes ({max_bytes:,} bytes)")


def _fill_jar(jar: CookieJar, cookies: list[Any]) -> None:
    """Put the session's cookies in `jar` (secure, path and host-only kept, so each goes only where it may)."""
    # A cookie set without a leading-dot domain belongs to that host alone (RFC 6265's host-only
    # flag); the lenient default policy would send it to every subdomain too.
    jar.set_policy(DefaultCookiePolicy(strict_ns_domain=DefaultCookiePolicy.DomainStrictNonDomain))
    for c in cookies:
        domain = str(c.get("domain") or "")
        dotted = domain.startswith(".")
        jar.set_cookie(
            Cookie(
                version=0,
                name=str(c.get("name")),
                value=str(c.get("value")),
                port=None,
                port_specified=False,
                domain=domain,
                domain_specified=dotted,
                domain_initial_dot=dotted,
                path=str(c.get("path") or "/"),
                path_specified=True,
                secure=bool(c.get("secure")),
                expires=None,
                discard=True,
                comment=None,
                comment_url=None,
                rest={},
            )
        )


async def _fetch_capped(call: Call, url: str, max_bytes: int) -> tuple[bytes, httpx.Headers, str]:
    """GET `url` with the session's cookies, refusing a body over `max_bytes` before it is all read.

    Playwright's request API buffers the whole body inside its driver first, so one huge response
    could exhaust the driver's memory; streaming here stops at the cap.
    """
    if urlsplit(url).scheme not in {"http", "https"}:
        raise ActionError(
            "ERROR_INVALID_INPUT", f"browser_download fetches only http and https URLs, not '{url}'"
        )
    guard = call.session.guard
    if guard is None:
        raise ActionError("ERROR_BROWSER", f"session '{call.session.id}' has no SSRF guard")
    reason = await guard.verdict(url)
    if reason is not None:
        raise ActionError("ERROR_URL_BLOCKED", f"refused {url}: {reason}")
    cookies = await call.session.context.cookies()
    try:
        # Through the session's guard proxy, like the browser itself: every redirect hop is vetted
        # and connected to the address that was checked.
        async with httpx.AsyncClient(
            follow_redirects=True,
            timeout=call.timeout_s,
            verify=verified_ssl_context(),
            trust_env=False,
            proxy=guard.proxy_url,
        ) as client:
            # Filled in place: httpx copies a jar passed to the client into one with the default policy.
            _fill_jar(client.cookies.jar, cookies)
            async with client.stream("GET", url) as response:
                if response.is_error:
                    raise ActionError(
                        "ERROR_HTTP", f"GET {url} answered {response.status_code} {response.reason_phrase}"
                    )
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > max_bytes:
                    raise _too_large(f"GET {url}", f"{int(declared):,} bytes (Content-Length)", max_bytes)
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > max_bytes:
                        raise _too_large(f"GET {url}", f"over {len(body):,} bytes", max_bytes)
                return bytes(body), response.headers, str(response.url)
    except httpx.TimeoutException as exc:
        raise ActionError(
            "ERROR_TIMEOUT", timeout_message(call.timeout_s, f"GET {url}"), transient=True
        ) from exc
    except httpx.HTTPError as exc:
        raise ActionError("ERROR_NAVIGATION", f"GET {url} failed: {exc}", transient=True) from exc
