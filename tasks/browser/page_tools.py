"""Page tools: getPageText, searchOnPage, getPageStructure, getImage, getLinks, getTabs, openInNewTab, getFullPageScreenshot."""

from __future__ import annotations

import base64
import mimetypes
import re
from typing import Any, Literal
from urllib.parse import unquote_to_bytes

from pydantic import Field

from tasks.base import Permission
from tasks.browser.actions import ActionError, artifact_path, normalize_url
from tasks.browser.common import (
    BrowserOutput,
    BrowserTool,
    Call,
    PageInput,
    SelectorType,
    locate,
    write_atomic,
)
from tasks.browser.extraction import LINKS_JS, ScreenshotInput, ScreenshotTool
from udm.errors import InvalidURLError
from udm.net import split_url

__all__ = [
    "GetFullPageScreenshotTool",
    "GetImageTool",
    "GetLinksTool",
    "GetPageStructureTool",
    "GetPageTextTool",
    "GetTabsTool",
    "OpenInNewTabTool",
    "SearchOnPageTool",
    "page_markdown",
    "tab_list",
]


async def page_markdown(call: Call) -> tuple[str, str]:
    """The page's main text as Markdown (trafilatura on the live DOM) and how it was obtained."""
    import trafilatura

    page = call.require_page()
    html = await page.content()
    text = trafilatura.extract(
        html,
        url=page.url,
        output_format="markdown",
        include_comments=False,
        include_tables=True,
        favor_recall=True,
    )
    if text and text.strip():
        return text, "trafilatura"
    # Tiny or app-like pages have no "main content" for trafilatura; their visible text is the answer.
    return (await page.inner_text("body", timeout=call.timeout_ms)).strip(), "innerText"


def _netloc_scheme(url: str) -> tuple[str, str]:
    """(netloc, scheme) of a URL a page gave, or ("", "") when it does not parse."""
    try:
        parts = split_url(url, schemes=None, what="link")
    except InvalidURLError:
        return "", ""
    return parts.netloc, parts.scheme.lower()


class PageTextInput(PageInput):
    """Input of getPageText."""

    max_chars: int = Field(
        strict=True, default=100_000, ge=100, le=5_000_000, description="Cut the text at this length."
    )


class PageTextOutput(BrowserOutput):
    """The page's text."""

    page_title: str | None = Field(default=None, description="The page's title.")
    markdown: str = Field(default="", description="Main text as Markdown.")
    method: str | None = Field(
        default=None, description="trafilatura, or innerText when it found no main text."
    )
    length: int = Field(default=0, description="Length before truncation.")
    truncated: bool = Field(default=False, description="Whether the text was cut at max_chars.")


class GetPageTextTool(BrowserTool):
    """getPageText."""

    name = "getPageText"
    description = "The current page's main text as Markdown (boilerplate such as menus and footers removed)."
    Input = PageTextInput
    Output = PageTextOutput
    permission = Permission.SAFE

    async def act(self, call: Call) -> dict[str, Any]:
        """Extract and truncate."""
        text, method = await page_markdown(call)
        limit = call.data.max_chars
        return {
            "page_title": await call.require_page().title(),
            "markdown": text[:limit],
            "method": method,
            "length": len(text),
            "truncated": len(text) > limit,
        }


class SearchInput(PageInput):
    """Input of searchOnPage."""

    query: str = Field(min_length=1, description="Text (or a regular expression with regex=true) to find.")
    regex: bool = Field(default=False, description="Treat the query as a regular expression.")
    case_sensitive: bool = Field(default=False, description="Match case.")
    context_chars: int = Field(
        strict=True, default=80, ge=0, le=2000, description="Characters of context on each side."
    )
    max_results: int = Field(strict=True, default=20, ge=1, le=1000, description="Most matches returned.")


class SearchOutput(BrowserOutput):
    """Matches in the page text."""

    matches: list[dict[str, Any]] = Field(
        default_factory=list, description="offset, match and its surrounding context."
    )
    total: int = Field(default=0, description="All matches, including those beyond max_results.")


class SearchOnPageTool(BrowserTool):
    """searchOnPage."""

    name = "searchOnPage"
    description = "Find text in the page's visible text; each match comes with its surrounding context."
    Input = SearchInput
    Output = SearchOutput
    permission = Permission.SAFE

    async def act(self, call: Call) -> dict[str, Any]:
        """Search the body's innerText."""
        data = call.data
        text = await call.require_page().inner_text("body", timeout=call.timeout_ms)
        flags = 0 if data.case_sensitive else re.IGNORECASE
        try:
            pattern = re.compile(data.query if data.regex else re.escape(data.query), flags)
        except re.error as exc:
            raise ActionError(
                "ERROR_INVALID_QUERY", f"query is not a valid regular expression: {exc}"
            ) from exc
        found = list(pattern.finditer(text))
        n = data.context_chars
        matches = [
            {
                "offset": m.start(),
                "match": m.group(0),
                "context": " ".join(text[max(0, m.start() - n) : m.end() + n].split()),
            }
            for m in found[: data.max_results]
        ]
        return {"matches": matches, "total": len(found)}


class StructureOutput(BrowserOutput):
    """The heading outline."""

    page_title: str | None = Field(default=None, description="The page's title.")
    headings: list[dict[str, Any]] = Field(
        default_factory=list, description="level, text and id of every heading, in order."
    )
    landmarks: list[dict[str, Any]] = Field(
        default_factory=list, description="header/nav/main/aside/footer/section elements."
    )


class GetPageStructureTool(BrowserTool):
    """getPageStructure."""

    name = "getPageStructure"
    description = (
        "The page's outline from a fresh DOM query: headings h1-h6 with level, text and id, plus landmarks."
    )
    Input = PageInput
    Output = StructureOutput
    permission = Permission.SAFE

    async def act(self, call: Call) -> dict[str, Any]:
        """Query headings and landmarks."""
        page = call.require_page()
        found = await page.evaluate(
            """() => ({
              headings: Array.from(document.querySelectorAll('h1,h2,h3,h4,h5,h6')).map(h => ({
                level: Number(h.tagName[1]), text: (h.innerText || h.textContent || '').trim(), id: h.id || null})),
              landmarks: Array.from(document.querySelectorAll('header,nav,main,aside,footer,section[aria-label],[role]'))
                .slice(0, 200).map(e => ({tag: e.tagName.toLowerCase(), role: e.getAttribute('role'),
                  label: e.getAttribute('aria-label'), id: e.id || null})),
            })"""
        )
        return {"page_title": await page.title(), **found}


class ImageInput(PageInput):
    """Input of getImage."""

    selector: str = Field(min_length=1, description="CSS selector (or XPath) of the image.")
    selector_type: SelectorType = Field(default="css", description="css or xpath.")
    return_base64: bool = Field(default=False, description="Also return the image as base64.")


class ImageOutput(BrowserOutput):
    """An image saved to a file."""

    image_path: str | None = Field(default=None, description="The saved file.")
    src: str | None = Field(default=None, description="The image's URL.")
    alt: str | None = Field(default=None, description="Its alt text.")
    mime_type: str | None = Field(default=None, description="Content type.")
    natural_width: int | None = Field(default=None, description="Intrinsic width, pixels.")
    natural_height: int | None = Field(default=None, description="Intrinsic height, pixels.")
    size_bytes: int | None = Field(default=None, description="File size.")
    method: str | None = Field(
        default=None, description="download (the original bytes) or screenshot (of the element)."
    )
    image_base64: str | None = Field(default=None, description="The image, when asked for.")


_EXT = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/gif": "gif",
    "image/webp": "webp",
    "image/svg+xml": "svg",
}


class GetImageTool(BrowserTool):
    """getImage."""

    name = "getImage"
    description = "Save the image matched by a CSS selector to a file under <state>/images/ (its original bytes when reachable)."
    Input = ImageInput
    Output = ImageOutput
    permission = Permission.SAFE

    async def act(self, call: Call) -> dict[str, Any]:
        """Fetch the image's bytes through the session (cookies apply), else screenshot the element."""
        page = call.require_page()
        element = locate(page, call.data.selector, call.data.selector_type).first
        await element.wait_for(state="attached", timeout=call.timeout_ms)
        info = await element.evaluate(
            "e => ({src: e.currentSrc || e.src || null, alt: e.getAttribute('alt'),"
            " w: e.naturalWidth || null, h: e.naturalHeight || null})"
        )
        src: str | None = info["src"]
        body: bytes | None = None
        mime: str | None = None
        if src and src.startswith("data:"):
            header, _, payload = src.partition(",")
            mime = header[5:].split(";")[0] or None
            body = base64.b64decode(payload) if ";base64" in header else unquote_to_bytes(payload)
        elif src and _netloc_scheme(src)[1] in {"http", "https"}:
            response = await call.session.context.request.get(src, timeout=call.timeout_ms)
            if response.ok:
                body = await response.body()
                mime = (response.headers.get("content-type") or "").split(";")[0] or None
        method = "download"
        if body is None:
            body = await element.screenshot(timeout=call.timeout_ms)
            mime, method = "image/png", "screenshot"
        mime = mime or mimetypes.guess_type(src or "")[0] or "application/octet-stream"
        path = artifact_path(call.ctx.settings, "images", call.session.id, _EXT.get(mime, "bin"))
        write_atomic(path, body)
        result = {
            "image_path": str(path),
            "src": src,
            "alt": info["alt"],
            "mime_type": mime,
            "natural_width": info["w"],
            "natural_height": info["h"],
            "size_bytes": len(body),
            "method": method,
        }
        if call.data.return_base64:
            result["image_base64"] = base64.b64encode(body).decode("ascii")
        return result


class GetLinksInput(PageInput):
    """Input of getLinks."""

    scope: Literal["all", "internal", "external"] = Field(
        default="all", description="All links, or only same-host / other-host ones."
    )
    max_links: int = Field(strict=True, default=500, ge=1, le=20_000, description="Most links returned.")


class GetLinksOutput(BrowserOutput):
    """Links of the page."""

    links: list[dict[str, Any]] = Field(
        default_factory=list, description="text, absolute href, title, target."
    )
    total: int = Field(default=0, description="Links matching the scope, before max_links.")


class GetLinksTool(BrowserTool):
    """getLinks."""

    name = "getLinks"
    description = "Every link of the page (text and absolute URL), optionally only internal or external ones."
    Input = GetLinksInput
    Output = GetLinksOutput
    permission = Permission.SAFE

    async def act(self, call: Call) -> dict[str, Any]:
        """Read every a[href] and filter by host."""
        page = call.require_page()
        links = await page.locator("a[href]").evaluate_all(LINKS_JS)
        host = _netloc_scheme(page.url)[0]
        if call.data.scope != "all":
            internal = call.data.scope == "internal"
            # A page's href may be any text (`http://[::1` stays as written): it is then nobody's host.
            links = [lk for lk in links if (_netloc_scheme(lk["href"])[0] == host) == internal]
        return {"links": links[: call.data.max_links], "total": len(links)}


async def tab_list(call: Call) -> list[dict[str, Any]]:
    """Every tab of the session: id, url, title, active."""
    tabs = []
    for tab_id, page in sorted(call.session.tabs.items()):
        title = ""
        if not page.is_closed():
            try:
                title = await page.title()
            except Exception:  # a tab in the middle of navigating has no title yet
                title = ""
        tabs.append(
            {"tab_id": tab_id, "url": page.url, "title": title, "active": tab_id == call.session.active}
        )
    return tabs


class TabsOutput(BrowserOutput):
    """The session's tabs."""

    tabs: list[dict[str, Any]] = Field(default_factory=list, description="tab_id, url, title, active.")
    active_tab: int | None = Field(default=None, description="The active tab's ID.")


class GetTabsTool(BrowserTool):
    """getTabs."""

    name = "getTabs"
    description = (
        "List the session's open tabs with their stable IDs, URLs and titles, and which one is active."
    )
    Input = PageInput
    Output = TabsOutput
    permission = Permission.SAFE
    needs_page = False

    async def act(self, call: Call) -> dict[str, Any]:
        """List tabs."""
        return {"tabs": await tab_list(call), "active_tab": call.session.active}


class OpenTabInput(PageInput):
    """Input of openInNewTab."""

    url: str = Field(min_length=1, description="URL to open; https:// is added when no scheme is given.")
    activate: bool = Field(default=True, description="Make the new tab the active one.")


class OpenTabOutput(TabsOutput):
    """A new tab."""

    page_title: str | None = Field(default=None, description="The new page's title.")
    http_status: int | None = Field(default=None, description="HTTP status of its main document.")


class OpenInNewTabTool(BrowserTool):
    """openInNewTab."""

    name = "openInNewTab"
    description = "Open a URL in a new tab of the session and return the tab's ID."
    Input = OpenTabInput
    Output = OpenTabOutput
    permission = Permission.MODERATE
    needs_page = False
    creates_session = True

    async def act(self, call: Call) -> dict[str, Any]:
        """Open, navigate, and restore the previous active tab unless asked to activate."""
        previous = call.session.active
        url = normalize_url(call.data.url, call.ctx.settings)
        tab_id = await call.session.new_tab(url, call.timeout_s)
        call.tab_id, call.page = call.session.page(tab_id)
        if not call.data.activate and previous in call.session.tabs:
            call.session.active = previous
        return {
            "page_title": await call.page.title(),
            "http_status": call.session.last_status.get(tab_id),
            "tabs": await tab_list(call),
            "active_tab": call.session.active,
        }


class FullShotInput(ScreenshotInput):
    """Input of getFullPageScreenshot."""

    full_page: bool = Field(default=True, description="The whole scrollable page (false: the viewport).")


class GetFullPageScreenshotTool(ScreenshotTool):
    """getFullPageScreenshot: `screenshot` with the whole page as the default."""

    name = "getFullPageScreenshot"
    description = (
        "A PNG of the whole page (or the viewport) written to <state>/screenshots/; base64 only on request."
    )
    Input = FullShotInput
