"""Link checking: every internal link and #fragment of the UDM as the index resolved it (the site's
routes, udm.site.routes), every external one over HTTP.

External links are checked concurrently with httpx over keep-alive connections pooled per origin
(udm.net.httppool): a global and a per-host concurrency limit,
HEAD first (GET when a server refuses HEAD), retries with backoff for 5xx and connection errors,
429 honoured with its Retry-After (capped), and the fetch tool's SSRF guard on every hop (the
request goes to the vetted address, so DNS rebinding cannot swap in another one). Results are
cached in <state>/link-cache.json and reused while younger than `max_age_s`.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.cookiejar import DefaultCookiePolicy
from pathlib import Path
from typing import Any
from urllib.parse import urlunsplit

import httpx
from filelock import FileLock
from pydantic import BaseModel, Field

from udm.config import Settings
from udm.errors import BlockedAddressError, InvalidURLError
from udm.markdown import liquid_target
from udm.net import (
    AllowList,
    OriginPoolTransport,
    VettedAddress,
    join_url,
    resolve_and_vet,
    split_url,
    url_port,
)
from udm.site import (
    NOT_PUBLISHED,
    Site,
    display_target,
    excluded,
    is_reference,
    no_holder,
    outside_root,
    settings_site,
)

__all__ = [
    "LinkReport",
    "LinkResult",
    "LinkSource",
    "check_external",
    "check_links",
    "collect_links",
]

CACHE_FILE = "link-cache.json"
MAX_RETRY_AFTER_S = 30.0
MAX_REDIRECTS = 5


class LinkResult(BaseModel):
    """The verdict on one link occurrence."""

    file: str = Field(description="UDM file holding the link.")
    line: int = Field(description="1-based line of the link.")
    text: str = Field(default="", description="The link text.")
    target: str = Field(description="The link target as written.")
    kind: str = Field(description="internal, anchor or external.")
    status: str = Field(description="ok, broken, error, blocked or skipped.")
    http_status: int | None = Field(default=None, description="Final HTTP status (external links).")
    reason: str | None = Field(default=None, description="Why it is not ok.")
    final_url: str | None = Field(default=None, description="Where redirects ended.")
    cached: bool = Field(default=False, description="Whether the verdict came from the cache.")


class LinkReport(BaseModel):
    """All link verdicts of a run."""

    results: list[LinkResult] = Field(default_factory=list, description="One per link occurrence.")
    counts: dict[str, int] = Field(default_factory=dict, description="Occurrences per status.")
    external_urls: int = Field(default=0, description="Distinct external URLs checked.")
    seconds: float = Field(default=0.0, description="Wall time.")


@dataclass(frozen=True)
class LinkSource:
    """One link occurrence in the UDM."""

    file: str
    line: int
    text: str
    target: str
    kind: str
    target_file: str | None = None
    fragment: str | None = None
    resolved: bool | None = None
    form: str = ""  # how it is written (udm.markdown.Link.form)


def collect_links(settings: Settings) -> list[LinkSource]:
    """Every link of the UDM, from the (refreshed) index; internal ones already resolved there."""
    from udm.index.core import read_fresh

    rows = read_fresh(
        settings,
        "SELECT file, line, text, target, kind, target_file, fragment, resolved, form FROM links "
        "ORDER BY file, line",
    )
    return [
        LinkSource(
            str(f),
            int(ln),
            str(t or ""),
            str(tg),
            str(k),
            tf,
            fr,
            None if res is None else bool(res),
            str(fm or ""),
        )
        for f, ln, t, tg, k, tf, fr, res, fm in rows
    ]


def _internal_verdict(settings: Settings, site: Site, link: LinkSource) -> LinkResult:
    """The index's verdict on an internal link or anchor (resolved there with the site's rules, udm.site.routes)."""
    base = {"file": link.file, "line": link.line, "text": link.text, "target": link.target, "kind": link.kind}
    if link.resolved is None:
        if excluded(link.target, tuple(settings.link_exclude)):
            return LinkResult(**base, status="skipped", reason="excluded by link_exclude")
        if link.target.strip() in site.link_keywords:
            why = f"the site's link render hook renders the destination {link.target.strip()} itself, not checked"
            return LinkResult(**base, status="skipped", reason=why)
        if link.target_file is not None and link.fragment is not None:
            why = f"#{link.fragment} is not known: {link.target_file} has headings only its site's templates render"
            return LinkResult(**base, status="skipped", reason=why)
        if link.form == "autoref":
            why = (
                f"cross-reference {link.target} names no heading or anchor of the site: it may name an API "
                "object (mkdocstrings) or another site's inventory entry, which are not checked"
            )
            return LinkResult(**base, status="skipped", reason=why)
        shown = display_target(link.file, link.target)
        if site.unpublished_page(link.file) and not link.target.startswith("/"):
            why = (
                f"{link.file} is no page of the site (a partial, a snippet, a draft or an excluded file): its "
                "relative links resolve where it is rendered, not checked"
            )
            return LinkResult(**base, status="skipped", reason=why)
        if not outside_root(shown) and site.build_output(shown):
            why = f"{shown} is ignored by the repository's .gitignore: a file the build writes, not checked"
            return LinkResult(**base, status="skipped", reason=why)
        # The target reads as a URL although the link's kind says otherwise (a redirect to a URL).
        return LinkResult(**base, status="skipped", reason="not a file of the manual")
    if link.resolved:
        return LinkResult(**base, status="ok")
    if link.target_file is not None:
        reason = f"no heading with anchor #{link.fragment} in {link.target_file}"
    elif link.form == "autoref":
        reason = no_holder(display_target(link.file, link.target))
    elif site.labels and is_reference(link.target, link.fragment):
        reason = no_holder(str(link.fragment))  # MyST: a reference to a target no page names
    elif site.unpublished_page(shown := display_target(link.file, link.target)):
        reason = f"{shown} {NOT_PUBLISHED}"
    elif site.generator == "gitbook" and _GITBOOK_LOST.search(link.target.partition("#")[0]):
        reason = (
            f"{link.target} is what GitBook writes for a link whose page it lost (moved or deleted in "
            "GitBook): no page is there"
        )
    elif (tag := _liquid_tag(link.target)) == "post_url":
        reason = f"no post {shown} in a _posts folder (Jekyll's build fails on it)"
    else:
        reason = f"no such file {shown}" + (" (Jekyll's build fails on it)" if tag == "link" else "")
    return LinkResult(**base, status="broken", reason=reason)


# GitBook's Git Sync writes these in place of a link whose target page it no longer has.
_GITBOOK_LOST = re.compile(r"(?:^|/)broken-reference/?$|^/broken/(?:spaces/[^/]+/)?pages/")


def _liquid_tag(target: str) -> str | None:
    """`link` or `post_url` when the target is that Jekyll tag, else None."""
    found = liquid_target(target) if target.startswith("{%") or "}}{%" in target else None
    return found.kind if found is not None and found.kind != "url" else None


@dataclass
class _Verdict:
    status: str
    http_status: int | None = None
    reason: str | None = None
    final_url: str | None = None
    cached: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


class _Checker:
    """The state of one external check run: client, limits, SSRF allow list, vetted hosts."""

    def __init__(
        self,
        settings: Settings,
        per_host: int,
        concurrency: int,
        retries: int,
        timeout_s: float,
        transport: httpx.AsyncBaseTransport | None,
    ) -> None:
        self.settings = settings
        self.per_host = per_host
        self.retries = retries
        self.allow = AllowList.parse(settings.fetch_allow)
        self.global_limit = asyncio.Semaphore(concurrency)
        self.hosts: dict[str, asyncio.Semaphore] = {}
        self.vetted: dict[tuple[str, int], VettedAddress | BlockedAddressError] = {}
        self.vet_locks: dict[tuple[str, int], asyncio.Lock] = {}
        # Concurrency is bounded by the semaphores above; the pool keeps keep-alive connections per
        # origin at O(1) cost per request (httpcore's own pool rescans them all on every request).
        # No cookies kept (as lychee by default): requests go to vetted IPs, so a kept cookie would be
        # filed under the IP and sent to every site behind it (a CDN); the jar also cost ~12% of CPU.
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout_s),
            follow_redirects=False,
            transport=transport or OriginPoolTransport(max_idle=concurrency),
            headers={"User-Agent": settings.fetch_user_agent},
        )
        self.client.cookies.jar.set_policy(DefaultCookiePolicy(allowed_domains=[]))

    async def vet(self, host: str, port: int) -> VettedAddress:
        """The vetted address of host:port, resolved once per run (concurrent callers wait for it)."""
        key = (host, port)
        if key not in self.vetted:
            # Without the lock, every request the per-host limit lets through at once would resolve
            # the same name in its own thread before the first answer is stored.
            async with self.vet_locks.setdefault(key, asyncio.Lock()):
                if key not in self.vetted:
                    try:
                        self.vetted[key] = await asyncio.to_thread(resolve_and_vet, host, port, self.allow)
                    except BlockedAddressError as exc:
                        self.vetted[key] = exc
        found = self.vetted[key]
        if isinstance(found, BlockedAddressError):
            raise found
        return found

    async def request(self, method: str, url: str) -> httpx.Response:
        """One request sent to the vetted address of the URL's host (Host header and SNI kept).

        The response is streamed: its body is not read, and the caller closes it.
        """
        parts = split_url(url)
        host = parts.hostname or ""
        vetted = await self.vet(host, url_port(parts))
        ip = f"[{vetted.ip}]" if ":" in vetted.ip else vetted.ip
        netloc = f"{ip}:{parts.port}" if parts.port else ip
        direct = urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))
        extensions = {"sni_hostname": host} if parts.scheme == "https" else {}
        request = self.client.build_request(
            method, direct, headers={"Host": parts.netloc}, extensions=extensions
        )
        return await self.client.send(request, stream=True)

    async def check(self, url: str) -> _Verdict:
        """Follow redirects (vetting each hop), retrying transient failures."""
        try:
            host = split_url(url).netloc.lower()
        except InvalidURLError as exc:
            return _Verdict("broken", reason=str(exc))
        limit = self.hosts.setdefault(host, asyncio.Semaphore(self.per_host))
        async with self.global_limit, limit:
            return await self._check(url)

    async def _check(self, url: str) -> _Verdict:
        attempt = 0
        while True:
            try:
                return await self._follow(url)
            except InvalidURLError as exc:
                return _Verdict("broken", reason=str(exc))
            except BlockedAddressError as exc:
                return _Verdict("blocked", reason=str(exc))
            except _RetryLater as exc:
                if attempt >= self.retries:
                    return _Verdict("error", http_status=exc.status, reason=exc.reason)
                await asyncio.sleep(exc.delay)
            except httpx.HTTPError as exc:
                if attempt >= self.retries:
                    return _Verdict(
                        "error", reason=f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                    )
                await asyncio.sleep(0.2 * 2**attempt)
            attempt += 1

    async def _follow(self, url: str) -> _Verdict:
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            response = await self.request("HEAD", current)
            # A HEAD response has no body: reading it completes the exchange, so the connection stays alive.
            try:
                await response.aread()
            finally:
                await response.aclose()
            if response.status_code in (403, 405, 501) or (
                response.status_code >= 400
                and response.status_code not in (404, 410, 429)
                and response.status_code < 500
            ):
                # Some servers refuse HEAD; a streamed GET is the fair second try. Its body is never
                # downloaded: closing it unread costs one connection, reading it could cost megabytes.
                response = await self.request("GET", current)
                await response.aclose()
            code = response.status_code
            if code in (301, 302, 303, 307, 308) and response.headers.get("location"):
                current = join_url(current, response.headers["location"])
                continue
            if code == 429:
                delay = min(_retry_after(response.headers.get("retry-after")) or 1.0, MAX_RETRY_AFTER_S)
                raise _RetryLater(code, "429 Too Many Requests", delay)
            if code >= 500:
                raise _RetryLater(code, f"HTTP {code}", 0.2)
            if code >= 400:
                return _Verdict("broken", http_status=code, reason=f"HTTP {code}", final_url=current)
            return _Verdict("ok", http_status=code, final_url=current)
        return _Verdict("broken", reason=f"more than {MAX_REDIRECTS} redirects", final_url=current)


class _RetryLater(Exception):
    def __init__(self, status: int, reason: str, delay: float) -> None:
        super().__init__(reason)
        self.status, self.reason, self.delay = status, reason, delay


def _load_cache(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, json.JSONDecodeError):
        return {}


def _save_cache(path: Path, updates: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock", timeout=10):
        data = _load_cache(path)
        data.update(updates)
        tmp = path.with_suffix(f".tmp-{os.getpid()}")
        tmp.write_text(json.dumps(data, indent=0, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)


async def check_external(
    urls: Iterable[str],
    settings: Settings,
    *,
    per_host: int = 8,
    concurrency: int = 64,
    retries: int = 2,
    timeout_s: float | None = None,
    max_age_s: float = 86_400,
    use_cache: bool = True,
    transport: httpx.AsyncBaseTransport | None = None,
) -> dict[str, _Verdict]:
    """Verdicts for distinct external URLs (http/https; others are skipped)."""
    wanted = list(dict.fromkeys(urls))
    cache_path = settings.state_path / CACHE_FILE
    cache = _load_cache(cache_path) if use_cache else {}
    now = time.time()
    out: dict[str, _Verdict] = {}
    todo: list[str] = []
    for url in wanted:
        try:
            scheme = split_url(url, schemes=None, what="link").scheme.lower()
        except InvalidURLError as exc:
            out[url] = _Verdict("broken", reason=str(exc))
            continue
        if scheme not in ("http", "https"):
            out[url] = _Verdict("skipped", reason=f"{scheme}: links are not checked")
            continue
        hit = cache.get(url)
        if hit and now - float(hit.get("checked_at", 0)) <= max_age_s:
            out[url] = _Verdict(
                hit["status"], hit.get("http_status"), hit.get("reason"), hit.get("final_url"), True
            )
            continue
        todo.append(url)
    if todo:
        checker = _Checker(
            settings, per_host, concurrency, retries, timeout_s or settings.fetch_timeout_s, transport
        )
        try:
            verdicts = await asyncio.gather(*(checker.check(u) for u in todo))
        finally:
            await checker.client.aclose()
        updates = {}
        for url, verdict in zip(todo, verdicts, strict=True):
            out[url] = verdict
            if verdict.status in ("ok", "broken"):
                updates[url] = {
                    "status": verdict.status,
                    "http_status": verdict.http_status,
                    "reason": verdict.reason,
                    "final_url": verdict.final_url,
                    "checked_at": now,
                }
        if updates and use_cache:
            _save_cache(cache_path, updates)
    return out


def check_links(
    settings: Settings,
    *,
    external: bool = True,
    internal: bool = True,
    links: list[LinkSource] | None = None,
    **options: Any,
) -> LinkReport:
    """Check every link of the UDM; `options` go to `check_external` (per_host, max_age_s ...)."""
    started = time.perf_counter()
    site: Site | None = None  # read once, on the first internal link
    found = collect_links(settings) if links is None else links
    results: list[LinkResult] = []
    skip = tuple(settings.link_exclude)
    left_out = {lk.target for lk in found if lk.kind == "external" and excluded(lk.target, skip)}
    ext = [lk for lk in found if lk.kind == "external" and lk.target not in left_out]
    verdicts: dict[str, _Verdict] = {}
    if external and ext:
        verdicts = asyncio.run(check_external([lk.target for lk in ext], settings, **options))
    for link in found:
        if link.kind == "external":
            if not external:
                continue
            if link.target in left_out:
                v = _Verdict("skipped", reason="excluded by link_exclude")
            else:
                v = verdicts[link.target]
            results.append(
                LinkResult(
                    file=link.file,
                    line=link.line,
                    text=link.text,
                    target=link.target,
                    kind=link.kind,
                    status=v.status,
                    http_status=v.http_status,
                    reason=v.reason,
                    final_url=v.final_url,
                    cached=v.cached,
                )
            )
        elif internal:
            site = site if site is not None else settings_site(settings)
            results.append(_internal_verdict(settings, site, link))
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    return LinkReport(
        results=results,
        counts=counts,
        external_urls=len(verdicts),
        seconds=round(time.perf_counter() - started, 3),
    )
